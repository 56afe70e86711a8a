# SPDX-License-Identifier: GPL-2.0-or-later
# Sourced by run-vm.sh: Debian's crun (an OCI runtime) for 40-oci.sh, with its libraries.
if tp=$(command -v crun); then
	copy_with_libs "$tp"
	progs="$progs crun"
else
	echo "vm: crun not found on the host (Debian package crun): 40-oci will report SKIP"
fi
unset tp
