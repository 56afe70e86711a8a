# SPDX-License-Identifier: GPL-2.0-or-later
# loadgen.py KIND PORT PHASE [ARGS]: the load generator of one service of scenarios/70-node.sh.
# KIND: line (pysvc.py, nodesvc.js, Svc.java), http (gosvc), memcached; calib (PORT unused,
# phase bench only: a pure-Python loop, the machine's speed at that moment).
# PHASE:
#   fill GENS N S   line/http: per generation, grow N records of ~S bytes, then keep every 4th;
#                   memcached: N values of S bytes (every 4th kept, the others deleted or set
#                   to expire after 2 s), then waits for the expiry
#   bench SECS      requests for SECS seconds (line/http: work 20 + grow/shrink of a scratch
#                   generation; memcached: set+get pairs); prints ops/s
#   gc              line/http: a full collection in the service (Python gc.collect, Go runtime.GC +
#                   debug.FreeOSMemory, System.gc, V8's gc)
#   check           line/http: the service's own check; memcached: every kept value, every
#                   deleted or expired key gone
# Prints one line: "LG KIND PHASE ok|bad key=value..." and exits 0 on ok.
import http.client, socket, sys, time

kind, port, phase = sys.argv[1], int(sys.argv[2]), sys.argv[3]
args = [int(x) for x in sys.argv[4:]]
out = {}

class Line:
    def __init__(self):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=600)
        self.f = self.s.makefile("rwb")
    def __call__(self, *a):
        self.f.write((" ".join(str(x) for x in a) + "\n").encode()); self.f.flush()
        r = self.f.readline().decode().strip()
        if not r.startswith("ok"):
            raise RuntimeError("%s -> %s" % (a, r))
        return r

class Http:
    def __init__(self):
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    def __call__(self, op, *a):
        names = {"grow": "gns", "shrink": "gm", "work": "n", "check": "", "gc": ""}[op]
        self.c.request("GET", "/%s?%s" % (op, "&".join("%s=%s" % kv for kv in zip(names, a))))
        r = self.c.getresponse().read().decode().strip()
        if not r.startswith("ok"):
            raise RuntimeError("%s %s -> %s" % (op, a, r))
        return r

class Memc:
    def __init__(self):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=600)
        self.f = self.s.makefile("rwb")
    def set(self, k, v, exp=0):
        self.set_many([(k, v, exp)])
    def set_many(self, items):
        # pipelined: one write of every command, then the replies (one round trip per batch;
        # one per value made the fill 60-90 s under TCG, the longest of the six)
        self.f.write(b"".join(b"set %s 0 %d %d\r\n%s\r\n" % (k, exp, len(v), v) for k, v, exp in items))
        self.f.flush()
        for k, _, _ in items:
            r = self.f.readline()
            if r != b"STORED\r\n":
                raise RuntimeError("set %s -> %r" % (k, r))
    def delete_many(self, keys):
        self.f.write(b"".join(b"delete %s\r\n" % k for k in keys)); self.f.flush()
        for k in keys:
            r = self.f.readline()
            if r not in (b"DELETED\r\n", b"NOT_FOUND\r\n"):
                raise RuntimeError("delete %s -> %r" % (k, r))
    def get(self, k):
        self.f.write(b"get %s\r\n" % k); self.f.flush()
        h = self.f.readline()
        if h == b"END\r\n":
            return None
        n = int(h.split()[3]); v = self.f.read(n + 2)[:-2]
        if self.f.readline() != b"END\r\n":
            raise RuntimeError("get %s: no END" % k)
        return v

def mval(i, s):
    return (b"%08d" % i) * (s // 8)

def mkey(i):
    return b"key:%d" % i

try:
    t0 = time.time()
    if kind in ("line", "http"):
        c = Line() if kind == "line" else Http()
        if phase == "fill":
            gens, n, s = args
            for g in range(gens):
                c("grow", g, n, s)
                c("shrink", g, 4)
            out["records"] = gens * ((n + 3) // 4)
        elif phase == "bench":
            ops, g = 0, 1000
            while time.time() - t0 < args[0]:
                c("work", 20); c("grow", g, 200, 64); c("shrink", g, 1 << 30)
                ops += 1
            out["ops"] = ops
        elif phase == "check":
            out["service"] = c("check").replace(" ", "=", 1)
        elif phase == "gc":
            out["service"] = c("gc").replace(" ", "=", 1)
    elif kind == "memcached":
        c = Memc()
        if phase == "fill":
            n, s = args
            for b in range(0, n, 100):
                c.set_many([(mkey(i), mval(i, s), 2 if i % 4 == 1 else 0) for i in range(b, min(n, b + 100))])
            for b in range(0, n, 100):
                c.delete_many([mkey(i) for i in range(b, min(n, b + 100)) if i % 4 in (2, 3)])
            time.sleep(3)
            out["kept"] = (n + 3) // 4
        elif phase == "bench":
            ops = 0
            while time.time() - t0 < args[0]:
                k = b"bench:%d" % (ops % 500)
                c.set(k, mval(ops, 512)); c.get(k)
                ops += 1
            out["ops"] = ops
        elif phase == "check":
            n, s = args
            good = gone = 0
            for i in range(n):
                v = c.get(mkey(i))
                if i % 4 == 0:
                    if v != mval(i, s):
                        raise RuntimeError("key:%d lost or wrong" % i)
                    good += 1
                elif v is not None:
                    raise RuntimeError("key:%d should be gone (%s)" % (i, "expired" if i % 4 == 1 else "deleted"))
                else:
                    gone += 1
            out["kept"] = good; out["gone"] = gone
    elif kind == "calib" and phase == "bench":
        # the machine's speed right now (TCG follows the host's load): a pure-Python loop
        ops = 0
        while time.time() - t0 < args[0]:
            sum(i * i for i in range(1000))
            ops += 1
        out["ops"] = ops
    else:
        raise RuntimeError("unknown kind " + kind)
    dt = time.time() - t0
    out["secs"] = "%.1f" % dt
    if "ops" in out:
        out["rate"] = "%.2f" % (out["ops"] / dt)
    print("LG %s %s ok %s" % (kind, phase, " ".join("%s=%s" % kv for kv in out.items())), flush=True)
except Exception as e:  # noqa: BLE001
    print("LG %s %s bad %s" % (kind, phase, str(e).replace("\n", " ")), flush=True)
    sys.exit(1)
