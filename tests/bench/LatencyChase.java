// SPDX-License-Identifier: GPL-2.0-or-later
// The JVM service of the latency benchmark (tests/bench/latency.sh): latency-chase.c's requests
// (--loads dependent random reads over its hot data, one int[] in the heap, each request timed)
// in a JVM that asks for THPs itself (-XX:+UseTransparentHugePages: the heap is advised
// MADV_HUGEPAGE). The heap is sized larger than the data and pre-touched (-XX:+AlwaysPreTouch):
// the unused part is THPs of zeros, the classic JVM waste a split gives back. The same control on
// stdin ("reset", "print NAME", "quit") and the same phase line as latency-hist.h.
// Usage: java [JVM options] LatencyChase.java HOT_MB LOADS
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.SplittableRandom;

public class LatencyChase {
    static final int BUCKETS = 2900;
    static long[] count = new long[BUCKETS];
    static long n, maxNs, startNs;

    static void reset() {
        java.util.Arrays.fill(count, 0);
        n = 0;
        maxNs = 0;
        startNs = System.nanoTime();
    }

    static double quantileUs(double q) {
        long want = Math.max(1, (long) Math.ceil(q * n)), seen = 0;
        for (int b = 0; b < BUCKETS; b++) {
            seen += count[b];
            if (seen >= want)
                return Math.exp((b + 1) / 100.0) / 1000.0;
        }
        return maxNs / 1000.0;
    }

    static void print(String name) {
        double secs = (System.nanoTime() - startNs) / 1e9;
        // one write of the whole line: the script reads the file while it is written
        System.out.print(String.format("phase %s n=%d secs=%.3f ops_per_s=%.0f p50_us=%.2f p99_us=%.2f p999_us=%.2f max_us=%.2f end%n",
                name, n, secs, secs > 0 ? n / secs : 0.0, quantileUs(0.50), quantileUs(0.99),
                quantileUs(0.999), maxNs / 1000.0));
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        int hotMb = Integer.parseInt(args[0]), loads = Integer.parseInt(args[1]);
        int lines = hotMb * (1 << 20) / 64; // one 64-byte line = 16 ints, the first the next line
        int[] data = new int[lines * 16];
        int[] order = new int[lines];
        SplittableRandom rnd = new SplittableRandom(42);
        for (int i = 0; i < lines; i++)
            order[i] = i;
        for (int i = lines - 1; i > 0; i--) {
            int j = rnd.nextInt(i + 1), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        for (int i = 0; i < lines; i++) {
            data[order[i] * 16] = order[(i + 1) % lines] * 16;
            for (int k = 1; k < 16; k++)
                data[order[i] * 16 + k] = i | 1;
        }
        order = null;
        System.gc();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        System.out.println("ready pid=" + ProcessHandle.current().pid());
        System.out.flush();
        reset();
        int p = 0;
        for (long r = 0;; r++) {
            if (r % 64 == 0 && in.ready()) {
                String line = in.readLine();
                if (line == null || line.equals("quit"))
                    break;
                if (line.startsWith("print ")) {
                    print(line.substring(6));
                    reset();
                } else if (line.equals("reset")) {
                    reset();
                }
            }
            long t0 = System.nanoTime();
            for (int i = 0; i < loads; i++)
                p = data[p];
            long ns = System.nanoTime() - t0;
            int b = ns > 0 ? (int) (Math.log(ns) * 100.0) : 0;
            count[Math.min(b, BUCKETS - 1)]++;
            n++;
            if (ns > maxNs)
                maxNs = ns;
        }
        System.exit(p == -1 ? 1 : 0);
    }
}
