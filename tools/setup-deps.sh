#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# setup-deps.sh - install what building and testing raidfuse needs, from
# Debian 12's packages.  Safe to run again: packages already installed are
# left alone, and with nothing missing it does not touch apt at all.
#
#   tools/setup-deps.sh           (as root, or through sudo otherwise)
#
# build:      build-essential pkg-config libfuse3-dev liburing-dev
#             libisal-dev libconfig-dev uuid-dev libnbd-dev libsystemd-dev
# unit tests: libcmocka-dev, nbdkit (NBD members' servers)
# functional: fuse3 (fusermount3), fio, xz-utils (md-images), mdadm
#             (reads the superblocks raidfuse create writes), e2fsprogs
#             (mkfs.ext4, fsck.ext4), mount (losetup, mount), util-linux
#             (mountpoint, findmnt, flock, setpriv, unshare, taskset,
#             fincore), procps (pgrep, pkill, ps), jq (the --json tests),
#             bsdutils (script), python3-minimal (test 31's pausing
#             server), coreutils, diffutils, sed, mawk, file
# bench:      jq (reads fio's JSON output; tools/bench.sh, drain test),
#             gnuplot-nox (its plot)
# fuzzing:    clang (libFuzzer)
# man pages:  groff-base (make man-check)
# The Debian package (dpkg-buildpackage) needs debhelper besides: README,
# "Debian package"; nothing here installs it.
set -euo pipefail

PKGS=(
	build-essential pkg-config
	libfuse3-dev liburing-dev libisal-dev libconfig-dev uuid-dev libnbd-dev libsystemd-dev
	libcmocka-dev nbdkit
	fuse3 fio xz-utils mdadm e2fsprogs mount util-linux coreutils diffutils
	procps bsdutils python3-minimal sed mawk file
	jq gnuplot-nox clang groff-base
)

SUDO=()
if [ "$(id -u)" != 0 ]; then
	command -v sudo >/dev/null || { echo "setup-deps.sh: not root and no sudo" >&2; exit 1; }
	SUDO=(sudo)
fi

missing=()
for p in "${PKGS[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
if [ ${#missing[@]} = 0 ]; then
	echo "setup-deps.sh: all ${#PKGS[@]} packages installed"
	exit 0
fi
echo "setup-deps.sh: installing ${missing[*]}"
"${SUDO[@]}" apt-get update
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
