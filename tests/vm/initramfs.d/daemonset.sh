# SPDX-License-Identifier: GPL-2.0-or-later
# Sourced by run-vm.sh: what scenarios/48-daemonset.sh needs, only when it is part of this boot
# and the kernel is k612 or k73 (it skips elsewhere; node.sh adds the share of /usr it also uses):
# - /ds/: the DaemonSet's pod template as podman arguments (daemonset-args.py reads
#   deploy/kubernetes/daemonset.yaml, the single source), the ConfigMap's keys
#   (deploy/kubernetes/configmap.yaml), and the two Secrets' files, made here: a self-signed
#   certificate for localhost and a token (the operator's Secrets, which podman cannot mount);
# - the project's image as an OCI directory with uncompressed layers (243 MB; an oci-archive
#   is 99 MB but gunzipping it made podman load take 130 s under TCG) in $builddir/tests/vm/image/,
#   saved from the host's
#   podman storage (make image or tests/ship/image.sh builds it) when its id changed, shared
#   read-only over 9p (mount tag thpsimage). No image: /ds/missing says why, and the scenario FAILs.
case $KERNEL in
k61 | rfc) ;;
*)
	# shellcheck disable=SC2053
	if [[ 48-daemonset == ${THPS_VM_SCENARIOS:-*} ]]; then
		_d=$S/ds
		mkdir -p "$_d/cm" "$_d/secret"
		: > "$_d/missing"
		python3 "$here/initramfs.d/daemonset-args.py" "$srcdir/deploy/kubernetes/daemonset.yaml" "$_d" \
			2>> "$_d/missing" || echo "daemonset-args.py failed on deploy/kubernetes/daemonset.yaml" >> "$_d/missing"
		python3 - "$srcdir/deploy/kubernetes/configmap.yaml" "$_d/cm" <<'PY' 2>> "$_d/missing" || echo "configmap.yaml unreadable" >> "$_d/missing"
import sys, yaml
cm = yaml.safe_load(open(sys.argv[1]))
for k, v in cm["data"].items():
    open(f"{sys.argv[2]}/{k}", "w").write(v)
PY
		# The Secrets: each file the daemon's command names, by its name
		while read -r _sn _mode _files; do
			[ -n "$_sn" ] || continue
			mkdir -p "$_d/secret/$_sn"
			echo "$_mode" > "$_d/secret/$_sn/..mode"
			for _f in $_files; do
				case $_f in
				*.crt) ;; # made with its key
				*.key)
					openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
						-subj /CN=localhost -addext 'subjectAltName=DNS:localhost,IP:127.0.0.1' \
						-keyout "$_d/secret/$_sn/$_f" -out "$_d/secret/$_sn/${_f%.key}.crt" 2>> "$outdir/$KERNEL.fetch.log" ||
						echo "openssl could not make the TLS Secret" >> "$_d/missing" ;;
				*) od -An -N24 -tx1 /dev/urandom | tr -d ' \n' > "$_d/secret/$_sn/$_f" ;;
				esac
			done
		done < "$_d/secrets"
		_img=$(cat "$_d/image" 2>/dev/null)
		_a=$builddir/tests/vm/image
		if ! command -v podman >/dev/null; then
			echo "podman missing on the host (package podman): no image to load" >> "$_d/missing"
		elif ! _id=$(podman image inspect --format '{{.Id}}' "$_img" 2>/dev/null); then
			echo "image $_img not built on the host: run 'make image' (or tests/ship/image.sh, make check-ship) first" >> "$_d/missing"
		else
			mkdir -p "$_a"
			# two boots at once (run-lanes.sh) share the saved image: one saves, the other waits
			exec 8> "$_a.lock" && flock 8
			if [ "$(cat "$_a/id" 2>/dev/null)" != "$_id" ] || [ ! -s "$_a/thpshrink.oci/index.json" ]; then
				_t0=$(date +%s)
				rm -rf "$_a/thpshrink.oci" "$_a/id"
				if podman save --quiet --format oci-dir --uncompressed -o "$_a/thpshrink.oci" "$_img" 2>> "$outdir/$KERNEL.fetch.log"; then
					echo "$_id" > "$_a/id"
					echo "vm: saved $_img as $_a/thpshrink.oci in $(($(date +%s) - _t0)) s"
				else
					echo "podman save of $_img failed (see $KERNEL.fetch.log)" >> "$_d/missing"
				fi
			fi
			exec 8>&-
			echo "$_img $_id" > "$_d/image"
			QEMU_EXTRA="${QEMU_EXTRA:-} -virtfs local,path=$_a,mount_tag=thpsimage,security_model=none,readonly=on"
			progs="$progs image(9p)"
		fi
	fi
	;;
esac
unset _d _sn _mode _files _f _img _a _id _t0
