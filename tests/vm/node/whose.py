# SPDX-License-Identifier: GPL-2.0-or-later
# whose.py CONF NAME=INO[:PID,...] ...: which memory cgroup each resident page of the services'
# file mappings is charged to (/proc/PID/pagemap -> PFN -> /proc/kpagecgroup). The page cache is
# charged to whichever cgroup touches a page first, so a service's memory.stat "file" depends on
# who got to its libraries first; what it maps does not. Prints per service (NAME with PIDs) its
# distinct mapped file pages by charged cgroup and its largest (file, other cgroup) pairs, and
# for the node the distinct pages the services map that a cgroup other than theirs was charged
# for (memory.current does not count them).
import os, struct, sys

conf = sys.argv[1]
names, pids = {}, {}
for a in sys.argv[2:]:
    name, rest = a.split("=", 1)
    ino, _, pl = rest.partition(":")
    names[int(ino)] = name
    if pl:
        pids[name] = [int(p) for p in pl.split(",") if p]
svcs = set(pids)
node_outside = set()
kc = open("/proc/kpagecgroup", "rb")
for svc, plist in pids.items():
    seen, per_file = {}, {}
    for pid in plist:
        try:
            m = open("/proc/%d/maps" % pid)
            pm = open("/proc/%d/pagemap" % pid, "rb")
        except OSError:
            continue
        with m, pm:
            for line in m:
                f = line.split()
                if len(f) < 6 or not f[5].startswith("/"):
                    continue
                lo, hi = (int(x, 16) for x in f[0].split("-"))
                pm.seek(lo // 4096 * 8)
                raw = pm.read((hi - lo) // 4096 * 8)
                for (e,) in struct.iter_unpack("<Q", raw):
                    if not e >> 63 & 1:
                        continue
                    pfn = e & ((1 << 55) - 1)
                    if pfn in seen:
                        continue
                    kc.seek(pfn * 8)
                    cg = names.get(struct.unpack("<Q", kc.read(8))[0], "other")
                    seen[pfn] = cg
                    key = (os.path.basename(f[5]), cg)
                    per_file[key] = per_file.get(key, 0) + 1
    by_cg = {}
    for pfn, cg in seen.items():
        by_cg[cg] = by_cg.get(cg, 0) + 1
        if cg not in svcs:
            node_outside.add(pfn)
    print("# node-whose conf=%s svc=%s mapped_file_kb=%d %s" % (conf, svc, 4 * len(seen),
          " ".join("%s_kb=%d" % (cg, 4 * n) for cg, n in sorted(by_cg.items(), key=lambda kv: -kv[1]))))
    for (fn, cg), n in sorted(per_file.items(), key=lambda kv: -kv[1])[:6]:
        if cg != svc:
            print("# node-whose conf=%s svc=%s file=%s cgroup=%s kb=%d" % (conf, svc, fn, cg, 4 * n))
print("# node-whose conf=%s svc=node outside_bytes=%d" % (conf, 4096 * len(node_outside)))
