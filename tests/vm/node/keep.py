# SPDX-License-Identifier: GPL-2.0-or-later
# keep.py CONF < TRACKED: what became of the well-used THPs a run followed. TRACKED holds one
# "SVC PID START PAGES PFN" line per folio that scan-dump --all-ranges found >= 90 % used
# earlier in the same run. Each is now, by its process's pagemap and /proc/kpageflags:
#   thp      still the same huge folio at START (its head at PFN)
#   rebuilt  a huge folio at START again, another one: freed and faulted in again, or split
#            and collapsed again by khugepaged (thpshrinkd counts those as re-collapsed)
#   split    every page still mapped, in small pages: something split it (thpshrinkd, or the
#            kernel's underused-THP shrinker) while it was still >= 90 % used
#   drained  split too, but >= 10 % of its pages map the shared zero page: it was < 90 % used
#            when it was split (6.12+ maps a split folio's zero subpages to the zero page), so
#            its service had zeroed part of it since the fill (G1 reuses and clears regions)
#   partial  >= 90 % of its pages still mapped, the rest unmapped by the service itself (an
#            allocator's or a collector's MADV_DONTNEED of part of it): that took its PMD
#            mapping, whoever splits the folio afterwards (thpshrinkd frees the holes)
#   freed    < 90 % of its pages still mapped: the service gave most of it back itself (a
#            collector's uncommit, an allocator's purge)
#   gone     its process exited
# Only "split" is a well-used THP lost to someone else. Prints "# node-keep conf=C svc=S
# tracked=N thp=N rebuilt=N split=N drained=N partial=N freed=N gone=N" per service and for the
# node. Reads page frame numbers and flags, never memory contents.
import struct, sys

KPF_HEAD, KPF_THP, KPF_ZERO_PAGE = 15, 22, 24
FATES = ("tracked", "thp", "rebuilt", "split", "drained", "partial", "freed", "gone")
conf = sys.argv[1]
kf = open("/proc/kpageflags", "rb")
counts = {}


def flags(pfn):
    kf.seek(pfn * 8)
    return struct.unpack("<Q", kf.read(8))[0]


def fate(pid, start, pages, head):
    try:
        with open("/proc/%d/pagemap" % pid, "rb") as pm:
            pm.seek(start // 4096 * 8)
            raw = pm.read(pages * 8)
    except OSError:
        return "gone"
    pfns = [e & ((1 << 55) - 1) for (e,) in struct.iter_unpack("<Q", raw) if e >> 63 & 1]
    if len(pfns) * 10 < pages * 9:
        return "freed"
    if len(pfns) < pages:
        return "partial"
    if pfns == list(range(pfns[0], pfns[0] + pages)):
        f = flags(pfns[0])
        if f >> KPF_HEAD & 1 and f >> KPF_THP & 1:
            return "thp" if pfns[0] == head else "rebuilt"
    zero_pfns = {p for p in set(pfns) if flags(p) >> KPF_ZERO_PAGE & 1}
    zero = sum(1 for p in pfns if p in zero_pfns)
    return "drained" if zero * 10 >= pages else "split"


for line in sys.stdin:
    svc, pid, start, pages, head = line.split()
    c = counts.setdefault(svc, dict.fromkeys(FATES, 0))
    c["tracked"] += 1
    c[fate(int(pid), int(start, 16), int(pages), int(head, 16))] += 1
node = dict.fromkeys(FATES, 0)
for svc, c in sorted(counts.items()):
    for k in node:
        node[k] += c[k]
    print("# node-keep conf=%s svc=%s %s" % (conf, svc, " ".join("%s=%d" % kv for kv in c.items())))
print("# node-keep conf=%s svc=node %s" % (conf, " ".join("%s=%d" % kv for kv in node.items())))
