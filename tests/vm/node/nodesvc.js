// SPDX-License-Identifier: GPL-2.0-or-later
// nodesvc.js PORT: a Node.js service (V8 heap churn) for scenarios/70-node.sh; the same line
// protocol as pysvc.py: grow G N S, shrink G M, work N, gc (needs --expose-gc; answers
// V8's heap after it), check.
'use strict';
const net = require('net');
const crypto = require('crypto');
const v8 = require('v8');
const recs = new Map();
function make(g, i, s) {
  const tags = [];
  for (let k = 0; k < 8; k++) tags.push('t' + (i * k + g));
  const h = (Math.imul(i, 2654435761) >>> 0).toString(16).padStart(8, '0');
  return { id: i, g: g, name: 'rec-' + g + '-' + i, tags: tags, blob: h.repeat(Math.floor(s / 8)), s: s };
}
function same(a, b) { return JSON.stringify(a) === JSON.stringify(b); }
function work(n) {
  const h = crypto.createHash('sha1');
  for (let j = 0; j < n; j++) {
    const items = [];
    for (let x = 0; x < 40; x++) items.push({ k: 'k' + x, v: x * j });
    h.update(JSON.stringify({ req: j, items: items }));
  }
  return h.digest('hex').slice(0, 12);
}
function cmd(a) {
  switch (a[0]) {
  case 'grow': {
    const g = +a[1], n = +a[2], s = +a[3];
    if (!recs.has(g)) recs.set(g, new Map());
    const d = recs.get(g);
    for (let i = 0; i < n; i++) d.set(i, make(g, i, s));
    return 'ok ' + d.size;
  }
  case 'shrink': {
    const g = +a[1], m = +a[2], d = recs.get(g) || new Map();
    let gone = 0;
    for (const i of [...d.keys()]) if (i % m) { d.delete(i); gone++; }
    return 'ok ' + gone;
  }
  case 'work': return 'ok ' + work(+a[1]);
  case 'gc': {
    if (!global.gc) return 'bad run node with --expose-gc';
    global.gc();
    // what V8 holds afterwards: its heap's resident KiB and the KiB of objects in it
    let phys = 0, used = 0;
    for (const sp of v8.getHeapSpaceStatistics()) { phys += sp.physical_space_size; used += sp.space_used_size; }
    return 'ok gc heap_kb=' + (phys >> 10) + ' used_kb=' + (used >> 10);
  }
  case 'check': {
    let cnt = 0, bad = null;
    for (const [g, d] of recs) for (const [i, v] of d) {
      cnt++;
      if (!bad && !same(v, make(g, i, v.s))) bad = 'record ' + g + '/' + i + ' differs';
    }
    return bad ? 'bad ' + bad : 'ok ' + cnt;
  }
  default: return 'bad unknown command ' + a[0];
  }
}
net.createServer((c) => {
  let buf = '';
  c.on('data', (d) => {
    buf += d;
    let k;
    while ((k = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, k).trim(); buf = buf.slice(k + 1);
      if (line) c.write(cmd(line.split(/\s+/)) + '\n');
    }
  });
}).listen(+process.argv[2], '127.0.0.1', () => console.log('READY ' + process.argv[2]));
