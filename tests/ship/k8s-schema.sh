#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# deploy/kubernetes validates against the Kubernetes API schemas (the kubernetes-models npm
# package, installed by scripts/install-deps.sh test into /var/cache/thpshrink-npm), and the
# DaemonSet runs the image `make image` builds: ghcr.io/thpshrink/thpshrink:VERSION. /metrics
# is protected as docs/deploy.md says: TLS and a bearer token from Secrets mounted 0400 (the
# daemon refuses anything looser), and a NetworkPolicy that admits only the monitoring
# namespace, to the metrics port only, of exactly the DaemonSet's pods.
set -eu
: "${top_srcdir:?}" "${top_builddir:?}"
M=${THPS_NPM_DIR:-/var/cache/thpshrink-npm}/node_modules
command -v node >/dev/null 2>&1 || { echo "SKIP: node is missing (Debian package nodejs)"; exit 77; }
[ -d "$M/kubernetes-models" ] && [ -d "$M/js-yaml" ] ||
	{ echo "SKIP: $M lacks kubernetes-models/js-yaml (scripts/install-deps.sh test installs them)"; exit 77; }
V=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"/\1/p' "$top_builddir/config.h")
NODE_PATH=$M exec node - "$V" "$top_srcdir"/deploy/kubernetes/*.yaml <<'EOF_JS'
const fs = require('fs');
const yaml = require('js-yaml');
const kinds = {
  DaemonSet: require('kubernetes-models/apps/v1').DaemonSet,
  ConfigMap: require('kubernetes-models/v1').ConfigMap,
  NetworkPolicy: require('kubernetes-models/networking.k8s.io/v1').NetworkPolicy,
};
const docs = {};
const [version, ...files] = process.argv.slice(2);
let fails = 0, seen = [];
const check = (ok, what) => { console.log((ok ? 'ok: ' : 'FAIL: ') + what); if (!ok) fails++; };
for (const f of files) {
  for (const d of yaml.loadAll(fs.readFileSync(f, 'utf8')).filter(Boolean)) {
    const K = kinds[d.kind];
    check(K, `${f}: kind ${d.kind} known`);
    if (!K) continue;
    seen.push(d.kind);
    docs[d.kind] = d;
    try { new K(d).validate(); check(true, `${d.kind} ${d.metadata.name} validates (${K.apiVersion || d.apiVersion})`); }
    catch (e) { check(false, `${d.kind} ${d.metadata.name}: ${e.message}`); }
    if (d.kind === 'DaemonSet') {
      const spec = d.spec.template.spec;
      for (const c of [...(spec.initContainers || []), ...spec.containers])
        check(c.image === `ghcr.io/thpshrink/thpshrink:${version}`, `${c.name}: image ${c.image} is the versioned one (${version})`);
    }
  }
}
check(['DaemonSet', 'ConfigMap', 'NetworkPolicy'].every(k => seen.includes(k)), `kinds seen: ${seen}`);
const ds = docs.DaemonSet, np = docs.NetworkPolicy;
if (ds && np) {
  const spec = ds.spec.template.spec, c = spec.containers.find(c => c.name === 'thpshrinkd');
  const arg = name => (c.command.find(a => a.startsWith(`--${name}=`)) || '').slice(name.length + 3);
  // Each protected file is in a Secret volume mounted 0400 at the path the argument names.
  for (const [opt, secret] of [['metrics-tls-cert', 'thpshrink-metrics-tls'],
                               ['metrics-tls-key', 'thpshrink-metrics-tls'],
                               ['metrics-token-file', 'thpshrink-metrics-token']]) {
    const path = arg(opt);
    const m = c.volumeMounts.find(m => path && path.startsWith(m.mountPath + '/'));
    const v = m && spec.volumes.find(v => v.name === m.name);
    check(v && v.secret && v.secret.secretName === secret && v.secret.defaultMode === 0o400 &&
          !v.secret.optional,
          `--${opt}=${path || '(missing)'}: in Secret ${secret}, mode 0400, not optional`);
  }
  const port = (c.ports.find(p => p.name === 'metrics') || {}).containerPort;
  check(arg('listen') === `0.0.0.0:${port}`, `--listen=${arg('listen')} is the metrics port ${port}`);
  check(ds.metadata.namespace === np.metadata.namespace &&
        JSON.stringify(np.spec.podSelector.matchLabels) === JSON.stringify(ds.spec.selector.matchLabels),
        'the NetworkPolicy selects exactly the DaemonSet\'s pods, in its namespace');
  const ing = np.spec.ingress || [];
  check(JSON.stringify(np.spec.policyTypes) === '["Ingress"]' && ing.length === 1 &&
        ing[0].from.length === 1 && !ing[0].from[0].podSelector && !ing[0].from[0].ipBlock &&
        JSON.stringify(ing[0].from[0].namespaceSelector) ===
          '{"matchLabels":{"kubernetes.io/metadata.name":"monitoring"}}',
        'the NetworkPolicy admits only the monitoring namespace');
  check(ing.length === 1 && ing[0].ports.length === 1 && ing[0].ports[0].port === port &&
        ing[0].ports[0].protocol === 'TCP', `... and only to TCP port ${port}`);
  check(ds.spec.template.metadata.annotations['prometheus.io/scheme'] === 'https',
        'the scrape annotation says https');
  // The NRI plugin writes where the daemon reads, and reaches the runtime's socket.
  const n = spec.containers.find(c => c.name === 'thpshrink-nri');
  const narg = name => n ? (n.command.find(a => a.startsWith(`--${name}=`)) || '').slice(name.length + 3) : '';
  const hostOf = (ctr, path) => {
    const m = ctr && ctr.volumeMounts.find(m => path && (path + '/').startsWith(m.mountPath + '/'));
    const v = m && spec.volumes.find(v => v.name === m.name);
    return v && v.hostPath ? v.hostPath.path + path.slice(m.mountPath.length) : null;
  };
  check(n && n.command[0] === '/usr/libexec/thpshrink/thpshrink-nri', 'thpshrink-nri runs beside thpshrinkd');
  check(n && hostOf(n, narg('registrations-dir')) !== null &&
        hostOf(n, narg('registrations-dir')) === hostOf(c, arg('registrations-dir')),
        `thpshrink-nri writes ${hostOf(n, narg('registrations-dir'))}, where thpshrinkd reads`);
  check(hostOf(n, narg('socket')) === '/var/run/nri/nri.sock', `thpshrink-nri reaches the host's ${hostOf(n, narg('socket'))}`);
  check(n && n.securityContext.capabilities.drop.includes('ALL') && n.securityContext.readOnlyRootFilesystem,
        'thpshrink-nri holds no capability and a read-only root');
}
process.exit(fails ? 1 : 0);
EOF_JS
