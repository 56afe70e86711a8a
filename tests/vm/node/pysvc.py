# SPDX-License-Identifier: GPL-2.0-or-later
# pysvc.py PORT: a Python service whose dicts and lists grow and shrink (pymalloc arenas), for
# scenarios/70-node.sh. One command per line on 127.0.0.1:PORT, one reply line:
#   grow G N S   N records of generation G (a dict of small strings, ints and a list; ~S bytes)
#   shrink G M   drops the records of G whose index is not a multiple of M
#   work N       N requests: build a temporary dict/list structure, serialize, hash it
#   gc           a full collection (the steady state the scenario measures)
#   check        every kept record equals its recomputation: "ok COUNT" or "bad DETAIL"
import gc, hashlib, json, socketserver, sys

recs = {}

def make(g, i, s):
    return {"id": i, "g": g, "name": "rec-%d-%d" % (g, i),
            "tags": ["t%d" % (i * k + g) for k in range(8)],
            "blob": ("%08x" % (i * 2654435761 % 2**32)) * (s // 8), "s": s}

def work(n):
    h = hashlib.sha1()
    for j in range(n):
        d = {"req": j, "items": [{"k": "k%d" % x, "v": x * j} for x in range(40)]}
        h.update(json.dumps(d).encode())
    return h.hexdigest()[:12]

class H(socketserver.StreamRequestHandler):
    def handle(self):
        for line in self.rfile:
            a = line.split()
            if not a:
                continue
            c = a[0].decode()
            try:
                if c == "grow":
                    g, n, s = int(a[1]), int(a[2]), int(a[3])
                    d = recs.setdefault(g, {})
                    for i in range(n):
                        d[i] = make(g, i, s)
                    r = "ok %d" % len(d)
                elif c == "shrink":
                    g, m = int(a[1]), int(a[2])
                    d = recs.get(g, {})
                    gone = [i for i in d if i % m]
                    for i in gone:
                        del d[i]
                    r = "ok %d" % len(gone)
                elif c == "gc":
                    r = "ok %d" % gc.collect()
                elif c == "work":
                    r = "ok " + work(int(a[1]))
                elif c == "check":
                    bad, cnt = None, 0
                    for g, d in recs.items():
                        for i, v in d.items():
                            cnt += 1
                            if v != make(g, i, v["s"]) and bad is None:
                                bad = "record %d/%d differs" % (g, i)
                    r = ("bad " + bad) if bad else "ok %d" % cnt
                else:
                    r = "bad unknown command " + c
            except Exception as e:  # noqa: BLE001 - report it to the client
                r = "bad %r" % e
            self.wfile.write((r + "\n").encode())
            self.wfile.flush()

class S(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True

srv = S(("127.0.0.1", int(sys.argv[1])), H)
print("READY", sys.argv[1], flush=True)
srv.serve_forever()
