# SPDX-License-Identifier: GPL-2.0-or-later
"""NRI's wire format written by hand, independently of the plugin's C (protobuf-c, plugins/nri):
protobuf fields, ttrpc frames (length u32 BE, stream id u32 BE, type u8, flags u8) and NRI's mux
chunks (conn id u32 BE, length u32 BE). The fake runtime of tests/integration/nri-plugin.sh and
the fuzz corpus's seeds are made with it."""
import struct

REQUEST, RESPONSE = 1, 2
CONN_PLUGIN, CONN_RUNTIME = 1, 2
PLUGIN_SVC = "nri.pkg.api.v1alpha1.Plugin"
RUNTIME_SVC = "nri.pkg.api.v1alpha1.Runtime"


def varint(v):
    out = bytearray()
    v &= (1 << 64) - 1
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field_varint(num, v):
    return varint(num << 3) + varint(v)


def field_bytes(num, b):
    if isinstance(b, str):
        b = b.encode()
    return varint(num << 3 | 2) + varint(len(b)) + b


def field_map(num, d):
    return b"".join(field_bytes(num, field_bytes(1, k) + field_bytes(2, v)) for k, v in d.items())


def parse(buf):
    """Decodes one message's fields: {num: [values]} (varints as int, the rest as bytes)."""
    out, i = {}, 0
    while i < len(buf):
        key, i = _read_varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _read_varint(buf, i)
        elif wt == 2:
            n, i = _read_varint(buf, i)
            v, i = buf[i:i + n], i + n
        elif wt == 1:
            v, i = buf[i:i + 8], i + 8
        elif wt == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % wt)
        out.setdefault(num, []).append(v)
    return out


def _read_varint(buf, i):
    v = shift = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, i


def frame(stream_id, mtype, payload, flags=0):
    return struct.pack(">IIBB", len(payload), stream_id, mtype, flags) + payload


def chunk(conn, data):
    return struct.pack(">II", conn, len(data)) + data


def request(service, method, payload):
    return field_bytes(1, service) + field_bytes(2, method) + field_bytes(3, payload)


def response(payload=b"", code=0):
    st = field_bytes(1, field_varint(1, code)) if code else b""
    return st + (field_bytes(2, payload) if payload else b"")


def pod(pid, name, namespace, uid, labels=None, annotations=None):
    return (field_bytes(1, pid) + field_bytes(2, name) + field_bytes(3, uid) +
            field_bytes(4, namespace) + field_map(5, labels or {}) +
            field_map(6, annotations or {}))


def container(cid, pod_id, name, cgroups_path, pid=0, annotations=None, state=1):
    linux = field_bytes(5, cgroups_path)  # LinuxContainer.cgroups_path
    return (field_bytes(1, cid) + field_bytes(2, pod_id) + field_bytes(3, name) +
            field_varint(4, state) + field_map(6, annotations or {}) +
            field_bytes(11, linux) + (field_varint(12, pid) if pid else b""))


def pod_container(p, c):
    """CreateContainerRequest / StopContainerRequest: pod = 1, container = 2."""
    return field_bytes(1, p) + field_bytes(2, c)


def state_change(event, p, c=None):
    return field_varint(1, event) + field_bytes(2, p) + (field_bytes(3, c) if c is not None else b"")


EVENTS = {"RUN_POD_SANDBOX": 1, "STOP_POD_SANDBOX": 2, "REMOVE_POD_SANDBOX": 3,
          "CREATE_CONTAINER": 4, "POST_CREATE_CONTAINER": 5, "START_CONTAINER": 6,
          "POST_START_CONTAINER": 7, "UPDATE_CONTAINER": 8, "POST_UPDATE_CONTAINER": 9,
          "STOP_CONTAINER": 10, "REMOVE_CONTAINER": 11}
