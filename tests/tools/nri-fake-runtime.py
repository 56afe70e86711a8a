#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""nri-fake-runtime.py SOCKET REGDIR PLUGIN_PID: a runtime's side of NRI, without containerd.

Listens on SOCKET, where thpshrink-nri (pid PLUGIN_PID) connects, and plays what containerd
does: takes RegisterPlugin, calls Configure, Synchronize, CreateContainer, StateChange and
StopContainer, and checks each registration the plugin writes in REGDIR. Then hostile input:
an oversized frame, an unknown method, a CreateContainer that is not one, control characters
in an annotation, a registrations directory that cannot be written, a truncated frame and a
mux chunk no NRI writes (both end the connection: the plugin must come back). Prints one
"ok: ..." per check and "FAIL: ..." for each failed one; exit 1 if any failed. The wire format
is tests/tools/nri_wire.py, written from NRI's and ttrpc's sources, not from the plugin's C."""
import json
import os
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nri_wire import (CONN_PLUGIN, CONN_RUNTIME, EVENTS, PLUGIN_SVC, REQUEST, RESPONSE,  # noqa: E402
                      RUNTIME_SVC, chunk, container, field_bytes, frame, parse, pod,
                      pod_container, request, response, state_change)

SOCK, REGDIR, PLUGIN_PID = sys.argv[1], sys.argv[2], int(sys.argv[3])
failed = 0
latencies = []


def check(cond, what):
    global failed
    print(("ok: " if cond else "FAIL: ") + what, flush=True)
    if not cond:
        failed += 1
    return cond


class Conn:
    def __init__(self, sock):
        self.s = sock
        self.s.settimeout(10)
        self.buf = b""
        self.streams = {CONN_PLUGIN: b"", CONN_RUNTIME: b""}
        self.next_id = 1

    def send(self, conn, data):
        self.s.sendall(chunk(conn, data))

    def _fill(self):
        d = self.s.recv(65536)
        if not d:
            raise EOFError("the plugin closed the connection")
        self.buf += d
        while len(self.buf) >= 8:
            cid, n = struct.unpack(">II", self.buf[:8])
            if len(self.buf) < 8 + n:
                break
            self.streams.setdefault(cid, b"")
            self.streams[cid] += self.buf[8:8 + n]
            self.buf = self.buf[8 + n:]

    def frame(self, conn):
        """The next ttrpc frame on conn: (stream id, type, payload)."""
        while True:
            st = self.streams.get(conn, b"")
            if len(st) >= 10:
                n, sid, t, _flags = struct.unpack(">IIBB", st[:10])
                if len(st) >= 10 + n:
                    self.streams[conn] = st[10 + n:]
                    return sid, t, st[10:10 + n]
            self._fill()

    def call(self, method, payload):
        """Calls the plugin on connection 1; returns (status code, payload, seconds)."""
        sid = self.next_id
        self.next_id += 2
        t0 = time.monotonic()
        self.send(CONN_PLUGIN, frame(sid, REQUEST, request(PLUGIN_SVC, method, payload)))
        rsid, t, body = self.frame(CONN_PLUGIN)
        dt = time.monotonic() - t0
        check(rsid == sid and t == RESPONSE, "%s answered on its stream (%d) as a response" % (method, sid))
        f = parse(body)
        code = parse(f[1][0]).get(1, [0])[0] if 1 in f else 0
        return code, f.get(2, [b""])[0], dt


def accept(srv):
    c, _ = srv.accept()
    conn = Conn(c)
    sid, t, body = conn.frame(CONN_RUNTIME)
    req = parse(body)
    check(t == REQUEST and req[1][0].decode() == RUNTIME_SVC and req[2][0] == b"RegisterPlugin",
          "the plugin calls Runtime/RegisterPlugin on connection 2")
    args = parse(req.get(3, [b""])[0])
    check(args.get(1, [b""])[0] == b"thpshrink" and args.get(2, [b""])[0] == b"50",
          "it registers as 50-thpshrink")
    conn.send(CONN_RUNTIME, frame(sid, RESPONSE, response()))
    code, body, _ = conn.call("Configure", field_bytes(2, "fake-runtime") + field_bytes(3, "0.1"))
    events = parse(body).get(2, [0])[0]
    want = sum(1 << (EVENTS[e] - 1) for e in
               ("CREATE_CONTAINER", "START_CONTAINER", "STOP_CONTAINER", "REMOVE_CONTAINER"))
    check(code == 0 and events == want,
          "Configure subscribes to create, start, stop, remove (events 0x%x, want 0x%x)" % (events, want))
    return conn


def reg(cid):
    try:
        with open(os.path.join(REGDIR, cid + ".json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def own_cgroup(pid):
    with open("/proc/%d/cgroup" % pid) as f:
        for line in f:
            if line.startswith("0::"):
                return line[3:].strip()
    return None


def alive():
    try:
        os.kill(PLUGIN_PID, 0)
        return True
    except OSError:
        return False


UID = "0f0e0d0c-0b0a-4908-8706-050403020100"
SLICE = "kubepods-besteffort-pod" + UID.replace("-", "_") + ".slice"
POD = pod("pod-1", "web-0", "batch", UID, {"tier": "db", "app.kubernetes.io/name": "redis"},
          {"io.thpshrink.policy": "redis"})
OTHER_POD = pod("pod-2", "api", "default", "1f0e0d0c-0b0a-4908-8706-050403020100", {}, {})


def main():
    if os.path.exists(SOCK):
        os.unlink(SOCK)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(SOCK)
    srv.listen(4)
    srv.settimeout(20)
    conn = accept(srv)

    # Synchronize: a container that ran before the plugin came (pid: this process).
    me = os.getpid()
    old = container("old-1", "pod-2", "api", "/kubepods/besteffort/pod2/old-1", pid=me, state=3)
    code, _, _ = conn.call("Synchronize", field_bytes(1, OTHER_POD) + field_bytes(2, old))
    r = reg("old-1")
    check(code == 0 and r is not None, "Synchronize registers the running container old-1")
    if r:
        check(r["cgroup"] == own_cgroup(me) and r["pid"] == me and r["stage"] == "startContainer"
              and r["namespace"] == "default" and r["pod"] == "api",
              "old-1: cgroup from its pid's /proc/PID/cgroup (%s), pid %d, namespace default" % (r["cgroup"], me))

    # CreateContainer: the pod's identity and annotations, the cgroup from systemd's form.
    c1 = container("c1", "pod-1", "app", SLICE + ":cri-containerd:c1", annotations={"io.thpshrink.mode": "enforce"})
    code, body, dt = conn.call("CreateContainer", pod_container(POD, c1))
    latencies.append(dt)
    check(code == 0 and body == b"", "CreateContainer answered OK with no adjustment (%.1f ms)" % (dt * 1000))
    r = reg("c1")
    if check(r is not None, "CreateContainer wrote c1.json"):
        want_cg = "/kubepods.slice/kubepods-besteffort.slice/%s/cri-containerd-c1.scope" % SLICE
        check(r["cgroup"] == want_cg, "c1: cgroup %s" % r["cgroup"])
        check(r.get("namespace") == "batch" and r.get("pod") == "web-0" and r.get("pod_uid") == UID
              and r.get("container") == "app", "c1: namespace batch, pod web-0, its UID, container app")
        check(r.get("labels") == {"tier": "db", "app.kubernetes.io/name": "redis"}, "c1: the pod's labels")
        check(r.get("policy") == "redis" and r.get("mode") == "enforce",
              "c1: policy from the pod's annotation, mode from the container's")
        check(r["stage"] == "createContainer" and r["status"] == "created" and r["pid"] == 0,
              "c1: stage createContainer, status created, no pid yet")

    # StartContainer (a StateChange): the pid arrives and the cgroup is read from it.
    c1s = container("c1", "pod-1", "app", SLICE + ":cri-containerd:c1", pid=me, state=3)
    code, _, dt = conn.call("StateChange", state_change(EVENTS["START_CONTAINER"], POD, c1s))
    latencies.append(dt)
    r = reg("c1")
    check(code == 0 and r is not None and r["pid"] == me and r["stage"] == "startContainer"
          and r["status"] == "running" and r.get("namespace") == "batch",
          "StartContainer refreshes c1 with its pid and keeps its identity")

    # Hostile: a frame over ttrpc's 4 MiB, its bytes sent in full; answered, then life goes on.
    big = (4 << 20) + 1
    sid = conn.next_id
    conn.next_id += 2
    conn.s.sendall(chunk(CONN_PLUGIN, struct.pack(">IIBB", big, sid, REQUEST, 0)))
    left = big
    while left:
        n = min(left, 1 << 20)
        conn.s.sendall(chunk(CONN_PLUGIN, b"\0" * n))
        left -= n
    rsid, t, body = conn.frame(CONN_PLUGIN)
    f = parse(body)
    code = parse(f[1][0]).get(1, [0])[0] if 1 in f else 0
    check(rsid == sid and code == 8, "an oversized frame is answered ResourceExhausted (code %d)" % code)

    code, _, _ = conn.call("Frobnicate", b"\x08\x01")
    check(code == 12, "an unknown method is answered Unimplemented (code %d)" % code)

    code, _, dt = conn.call("CreateContainer", b"\x0a\xff\xff\xff\x0f")
    check(code == 0 and reg("c1") is not None,
          "a CreateContainer that does not decode is still answered OK (%.1f ms)" % (dt * 1000))

    p3 = pod("pod-3", "evil", "batch", UID, {"bad key!": "x", "ok": "y"}, {"io.thpshrink.policy": "re\x01dis"})
    c3 = container("c3", "pod-3", "Bad_Name", "/kubepods/pod3/c3")
    code, _, _ = conn.call("CreateContainer", pod_container(p3, c3))
    r = reg("c3")
    check(code == 0 and r is not None and "policy" not in r and "container" not in r
          and r.get("labels") == {"ok": "y"},
          "a control character in the policy annotation, a bad name and a bad label key are dropped, the rest registered")

    # A NUL inside the policy annotation: protobuf-c would cut it to "g-split"; refused whole.
    p5 = pod("pod-5", "nul", "batch", UID, {}, {"io.thpshrink.policy": "g-split\0x"})
    c5 = container("c5", "pod-5", "app", "/kubepods/pod5/c5")
    code, _, _ = conn.call("CreateContainer", pod_container(p5, c5))
    check(code == 0 and reg("c5") is None,
          "a NUL inside an annotation: answered OK, not registered with a cut value")

    # A registrations directory that cannot be written: logged, answered OK all the same.
    os.rename(REGDIR, REGDIR + ".away")
    with open(REGDIR, "w") as f:
        f.write("not a directory\n")
    c4 = container("c4", "pod-1", "side", SLICE + ":cri-containerd:c4")
    code, _, dt = conn.call("CreateContainer", pod_container(POD, c4))
    check(code == 0, "with the registrations directory unwritable, CreateContainer still answered OK (%.1f ms)" % (dt * 1000))
    os.unlink(REGDIR)
    os.rename(REGDIR + ".away", REGDIR)

    # StopContainer removes, as the hook's poststop; RemoveContainer too (a missed stop).
    code, _, _ = conn.call("StopContainer", pod_container(POD, c1s))
    check(code == 0 and reg("c1") is None, "StopContainer removes c1.json")
    code, _, _ = conn.call("StateChange", state_change(EVENTS["REMOVE_CONTAINER"], OTHER_POD, old))
    check(code == 0 and reg("old-1") is None, "RemoveContainer removes old-1.json")

    # A truncated frame, then the runtime goes away (a containerd restart): the plugin comes back.
    conn.s.sendall(chunk(CONN_PLUGIN, struct.pack(">IIBB", 100, 99, REQUEST, 0) + b"abc"))
    conn.s.close()
    check(alive(), "the plugin runs on after a truncated frame and a closed connection")
    t0 = time.monotonic()
    conn = accept(srv)
    check(True, "it reconnected and registered again in %.1f s" % (time.monotonic() - t0))

    # A mux chunk longer than NRI ever writes: the plugin drops the connection and returns.
    conn.s.sendall(struct.pack(">II", CONN_PLUGIN, 0x7FFFFFFF))
    try:
        while conn.s.recv(65536):
            pass
        gone = True
    except OSError:
        gone = True
    check(gone and alive(), "a mux chunk over NRI's bound: the plugin drops that connection and runs on")
    conn = accept(srv)
    code, _, _ = conn.call("CreateContainer", pod_container(POD, c1))
    check(code == 0 and reg("c1") is not None, "after it, CreateContainer registers again")
    print("latency: CreateContainer/StartContainer answered in %s ms" %
          " ".join("%.2f" % (x * 1000) for x in latencies))
    conn.s.close()
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (EOFError, OSError, KeyError, IndexError) as e:
        print("FAIL: the exchange broke: %r" % (e,))
        sys.exit(1)
