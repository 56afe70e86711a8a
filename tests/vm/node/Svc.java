// SPDX-License-Identifier: GPL-2.0-or-later
// Svc PORT THREADS: a JVM service (G1, a few hundred threads) for scenarios/70-node.sh; the same
// line protocol as pysvc.py: grow G N S, shrink G M, work N, gc, check. "work N" fans N requests out
// over the pool of THREADS threads (all started at once), each building and hashing garbage.
import java.io.*;
import java.net.*;
import java.security.MessageDigest;
import java.util.*;
import java.util.concurrent.*;

public class Svc {
    static final ConcurrentHashMap<Integer, ConcurrentHashMap<Integer, Rec>> recs = new ConcurrentHashMap<>();
    static ThreadPoolExecutor pool;

    record Rec(int id, int g, String name, List<String> tags, String blob, int s) {}

    static Rec make(int g, int i, int s) {
        List<String> tags = new ArrayList<>();
        for (int k = 0; k < 8; k++) tags.add("t" + (i * k + g));
        String h = String.format("%08x", (i * 2654435761L) & 0xffffffffL);
        return new Rec(i, g, "rec-" + g + "-" + i, tags, h.repeat(s / 8), s);
    }

    static String work1(int j) throws Exception {
        MessageDigest md = MessageDigest.getInstance("SHA-1");
        Map<String, Object> d = new HashMap<>();
        List<Map<String, Object>> items = new ArrayList<>();
        for (int x = 0; x < 40; x++) { Map<String, Object> it = new HashMap<>(); it.put("k", "k" + x); it.put("v", x * j); items.add(it); }
        d.put("req", j); d.put("items", items);
        md.update(d.toString().getBytes());
        return String.format("%02x", md.digest()[0]);
    }

    static String cmd(String[] a) throws Exception {
        switch (a[0]) {
        case "grow": {
            int g = Integer.parseInt(a[1]), n = Integer.parseInt(a[2]), s = Integer.parseInt(a[3]);
            ConcurrentHashMap<Integer, Rec> d = recs.computeIfAbsent(g, k -> new ConcurrentHashMap<>());
            for (int i = 0; i < n; i++) d.put(i, make(g, i, s));
            return "ok " + d.size();
        }
        case "shrink": {
            int g = Integer.parseInt(a[1]), m = Integer.parseInt(a[2]);
            ConcurrentHashMap<Integer, Rec> d = recs.getOrDefault(g, new ConcurrentHashMap<>());
            int gone = 0;
            for (Integer i : new ArrayList<>(d.keySet())) if (i % m != 0) { d.remove(i); gone++; }
            return "ok " + gone;
        }
        case "work": {
            int n = Integer.parseInt(a[1]);
            List<Future<String>> fs = new ArrayList<>();
            for (int j = 0; j < n; j++) { final int jj = j; fs.add(pool.submit(() -> work1(jj))); }
            StringBuilder sb = new StringBuilder();
            for (Future<String> f : fs) sb.append(f.get());
            return "ok " + Integer.toHexString(sb.toString().hashCode());
        }
        case "gc": System.gc(); return "ok gc";
        case "check": {
            int cnt = 0; String bad = null;
            for (Map.Entry<Integer, ConcurrentHashMap<Integer, Rec>> e : recs.entrySet())
                for (Map.Entry<Integer, Rec> r : e.getValue().entrySet()) {
                    cnt++;
                    if (bad == null && !r.getValue().equals(make(e.getKey(), r.getKey(), r.getValue().s())))
                        bad = "record " + e.getKey() + "/" + r.getKey() + " differs";
                }
            return bad != null ? "bad " + bad : "ok " + cnt;
        }
        default: return "bad unknown command " + a[0];
        }
    }

    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]), threads = Integer.parseInt(args[1]);
        pool = new ThreadPoolExecutor(threads, threads, 1, TimeUnit.HOURS, new LinkedBlockingQueue<>());
        pool.prestartAllCoreThreads();
        ServerSocket ss = new ServerSocket(port, 50, InetAddress.getByName("127.0.0.1"));
        System.out.println("READY " + port + " threads=" + pool.getPoolSize());
        System.out.flush();
        while (true) {
            Socket c = ss.accept();
            new Thread(() -> {
                try (BufferedReader in = new BufferedReader(new InputStreamReader(c.getInputStream()));
                     PrintWriter out = new PrintWriter(c.getOutputStream(), true)) {
                    String line;
                    while ((line = in.readLine()) != null) {
                        String[] a = line.trim().split("\\s+");
                        if (a[0].isEmpty()) continue;
                        String r;
                        try { r = cmd(a); } catch (Exception e) { r = "bad " + e; }
                        out.println(r);
                    }
                } catch (IOException e) { /* client gone */ }
            }).start();
        }
    }
}
