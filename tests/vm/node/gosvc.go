// SPDX-License-Identifier: GPL-2.0-or-later
// gosvc: a Go HTTP service with an allocating handler (Go's GC) for scenarios/70-node.sh, built
// at test time with Debian's golang (CGO_ENABLED=0: static, runs in the initramfs). The same
// operations as pysvc.py over HTTP: /grow?g=G&n=N&s=S, /shrink?g=G&m=M, /work?n=N, /gc
// (runtime.GC and debug.FreeOSMemory), /check.
// Usage: gosvc PORT
package main

import (
	"crypto/sha1"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
)

type rec struct {
	ID   int
	G    int
	Name string
	Tags []string
	Blob string
	S    int
}

var (
	mu   sync.Mutex
	recs = map[int]map[int]*rec{}
)

func mk(g, i, s int) *rec {
	tags := make([]string, 8)
	for k := range tags {
		tags[k] = "t" + strconv.Itoa(i*k+g)
	}
	h := fmt.Sprintf("%08x", uint32(uint64(i)*2654435761))
	return &rec{i, g, fmt.Sprintf("rec-%d-%d", g, i), tags, strings.Repeat(h, s/8), s}
}

func q(r *http.Request, k string) int { v, _ := strconv.Atoi(r.URL.Query().Get(k)); return v }

func main() {
	http.HandleFunc("/grow", func(w http.ResponseWriter, r *http.Request) {
		g, n, s := q(r, "g"), q(r, "n"), q(r, "s")
		mu.Lock()
		d := recs[g]
		if d == nil {
			d = map[int]*rec{}
			recs[g] = d
		}
		for i := 0; i < n; i++ {
			d[i] = mk(g, i, s)
		}
		l := len(d)
		mu.Unlock()
		fmt.Fprintf(w, "ok %d\n", l)
	})
	http.HandleFunc("/shrink", func(w http.ResponseWriter, r *http.Request) {
		g, m := q(r, "g"), q(r, "m")
		gone := 0
		mu.Lock()
		for i := range recs[g] {
			if i%m != 0 {
				delete(recs[g], i)
				gone++
			}
		}
		mu.Unlock()
		fmt.Fprintf(w, "ok %d\n", gone)
	})
	http.HandleFunc("/work", func(w http.ResponseWriter, r *http.Request) {
		n := q(r, "n")
		h := sha1.New()
		for j := 0; j < n; j++ {
			items := make([]map[string]interface{}, 40)
			for x := range items {
				items[x] = map[string]interface{}{"k": "k" + strconv.Itoa(x), "v": x * j}
			}
			b, _ := json.Marshal(map[string]interface{}{"req": j, "items": items})
			h.Write(b)
		}
		fmt.Fprintf(w, "ok %x\n", h.Sum(nil)[:6])
	})
	http.HandleFunc("/gc", func(w http.ResponseWriter, r *http.Request) {
		runtime.GC()
		debug.FreeOSMemory()
		fmt.Fprintf(w, "ok gc\n")
	})
	http.HandleFunc("/check", func(w http.ResponseWriter, r *http.Request) {
		cnt, bad := 0, ""
		mu.Lock()
		for g, d := range recs {
			for i, v := range d {
				cnt++
				if bad == "" && !reflect.DeepEqual(v, mk(g, i, v.S)) {
					bad = fmt.Sprintf("record %d/%d differs", g, i)
				}
			}
		}
		mu.Unlock()
		if bad != "" {
			fmt.Fprintf(w, "bad %s\n", bad)
		} else {
			fmt.Fprintf(w, "ok %d\n", cnt)
		}
	})
	fmt.Println("READY", os.Args[1])
	if err := http.ListenAndServe("127.0.0.1:"+os.Args[1], nil); err != nil {
		fmt.Println("gosvc:", err)
		os.Exit(1)
	}
}
