#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# oci-image.py NAME:TAG OUT.tar ENTRYPOINT FILE:PATH...: an OCI image archive (oci-layout,
# index.json, blobs) of one uncompressed layer holding each FILE at PATH (mode 0755, root-owned,
# symlinks given as "@TARGET:PATH"), for `ctr images import` in the VM: 49-containerd's pause
# and workload images, made from static binaries, no registry. The index names the image with
# io.containerd.image.name (what ctr import uses) and org.opencontainers.image.ref.name.
# Deterministic (mtime 0, sorted): the same inputs give the same digests.
import hashlib
import io
import json
import sys
import tarfile


def add_blob(blobs, data):
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    blobs[digest] = data
    return digest


def layer(entries):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        dirs = set()
        for _, path in entries:
            parts = path.strip("/").split("/")[:-1]
            for i in range(1, len(parts) + 1):
                dirs.add("/".join(parts[:i]))
        for d in ["dev", "proc", "sys", "tmp", "etc"]:
            dirs.add(d)
        for d in sorted(dirs):
            ti = tarfile.TarInfo(d)
            ti.type, ti.mode, ti.mtime = tarfile.DIRTYPE, 0o1777 if d == "tmp" else 0o755, 0
            tar.addfile(ti)
        for src, path in sorted(entries, key=lambda e: e[1]):
            ti = tarfile.TarInfo(path.strip("/"))
            ti.mtime = 0
            if src.startswith("@"):
                ti.type, ti.linkname, ti.mode = tarfile.SYMTYPE, src[1:], 0o777
                tar.addfile(ti)
            else:
                with open(src, "rb") as f:
                    data = f.read()
                ti.size, ti.mode = len(data), 0o755
                tar.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def main():
    if len(sys.argv) < 5:
        sys.exit("usage: oci-image.py NAME:TAG OUT.tar ENTRYPOINT FILE:PATH...")
    name, out, entrypoint = sys.argv[1:4]
    entries = [tuple(a.rsplit(":", 1)) for a in sys.argv[4:]]
    blobs = {}
    tar = layer(entries)
    diff_id = "sha256:" + hashlib.sha256(tar).hexdigest()
    ldig = add_blob(blobs, tar)
    config = {
        "architecture": "amd64", "os": "linux", "created": "1970-01-01T00:00:00Z",
        "config": {"Entrypoint": [entrypoint], "Env": ["PATH=/bin"], "WorkingDir": "/"},
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
    }
    cdata = json.dumps(config, sort_keys=True).encode()
    cdig = add_blob(blobs, cdata)
    manifest = {
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cdig, "size": len(cdata)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": ldig, "size": len(tar)}],
    }
    mdata = json.dumps(manifest, sort_keys=True).encode()
    mdig = add_blob(blobs, mdata)
    index = {
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{
            "mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": mdig, "size": len(mdata),
            "platform": {"architecture": "amd64", "os": "linux"},
            "annotations": {"io.containerd.image.name": name,
                            "org.opencontainers.image.ref.name": name.rsplit(":", 1)[1]},
        }],
    }
    files = {"oci-layout": json.dumps({"imageLayoutVersion": "1.0.0"}).encode(),
             "index.json": json.dumps(index, sort_keys=True).encode()}
    for dig, data in blobs.items():
        files["blobs/sha256/" + dig.split(":")[1]] = data
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as t:
        for d in ["blobs", "blobs/sha256"]:
            ti = tarfile.TarInfo(d)
            ti.type, ti.mode, ti.mtime = tarfile.DIRTYPE, 0o755, 0
            t.addfile(ti)
        for path in sorted(files):
            ti = tarfile.TarInfo(path)
            ti.size, ti.mode, ti.mtime = len(files[path]), 0o644, 0
            t.addfile(ti, io.BytesIO(files[path]))


if __name__ == "__main__":
    main()
