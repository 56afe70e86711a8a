#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# deploy/kubernetes validates against the Kubernetes API schemas (the kubernetes-models npm
# package, installed by scripts/install-deps.sh test into /var/cache/thpshrink-npm), and the
# DaemonSet runs the image `make image` builds: ghcr.io/thpshrink/thpshrink:VERSION.
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
};
const [version, ...files] = process.argv.slice(2);
let fails = 0, seen = [];
const check = (ok, what) => { console.log((ok ? 'ok: ' : 'FAIL: ') + what); if (!ok) fails++; };
for (const f of files) {
  for (const d of yaml.loadAll(fs.readFileSync(f, 'utf8')).filter(Boolean)) {
    const K = kinds[d.kind];
    check(K, `${f}: kind ${d.kind} known`);
    if (!K) continue;
    seen.push(d.kind);
    try { new K(d).validate(); check(true, `${d.kind} ${d.metadata.name} validates (${K.apiVersion || d.apiVersion})`); }
    catch (e) { check(false, `${d.kind} ${d.metadata.name}: ${e.message}`); }
    if (d.kind === 'DaemonSet') {
      const spec = d.spec.template.spec;
      for (const c of [...(spec.initContainers || []), ...spec.containers])
        check(c.image === `ghcr.io/thpshrink/thpshrink:${version}`, `${c.name}: image ${c.image} is the versioned one (${version})`);
    }
  }
}
check(seen.includes('DaemonSet') && seen.includes('ConfigMap'), `kinds seen: ${seen}`);
process.exit(fails ? 1 : 0);
EOF_JS
