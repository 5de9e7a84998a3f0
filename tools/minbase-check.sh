#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# minbase-check.sh - the README's two commands on a fresh minimal Debian 12.
#
#   tools/minbase-check.sh [--keep] [--example-only | --func "NN ..."] DIR
#
# As root: debootstrap --variant=minbase bookworm into DIR (which must not
# exist yet), made a mount point of its own (as a booted root is: unshare
# --propagation and /proc/self/mountinfo's "/" need one), with /dev, /proc,
# /sys and a /dev/shm of its own bound in (mounts made slaves, so that
# taking them down leaves the host's alone), and /etc/mtab the link to
# /proc/self/mounts that a booted Debian gets from systemd-tmpfiles;
# this tree's committed HEAD cloned into DIR/src, and ../shared, when the
# tree has one beside it, bound at DIR/shared.  Then, inside, as a new
# user of a machine with nothing but the base system would:
#   1. tools/example.sh (installs the packages, builds, creates the
#      example's members, serves /tmp/raidfuse/array.img); the image must
#      be served and read end to end; fusermount3 -u stops it
#   2. make test (unless --example-only; --func runs make and only the
#      functional tests named)
# Every functional test must pass with none skipped.  The chroot's mounts
# are taken down at the end, and DIR removed unless --keep.  Logs:
# DIR.log/.  Exit status: 0 all passed, 1 something failed or skipped,
# 2 usage or setup error.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
keep=0 example_only=0 func=
while [ $# -gt 0 ]; do
	case $1 in
	--keep) keep=1 ;;
	--example-only) example_only=1 ;;
	--func) func=$2; shift ;;
	-h | --help) sed -n '3,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "minbase-check.sh: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
	shift
done
[ $# = 1 ] || { echo "usage: tools/minbase-check.sh [--keep] [--example-only | --func \"NN ...\"] DIR" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "minbase-check.sh: debootstrap and chroot need root" >&2; exit 2; }
dir=$(realpath -m "$1")
[ ! -e "$dir" ] || { echo "minbase-check.sh: $dir exists: give a new directory" >&2; exit 2; }
logs=$dir.log
mkdir -p "$logs"

command -v debootstrap >/dev/null || apt-get install -y --no-install-recommends debootstrap >"$logs/debootstrap-install" 2>&1 ||
	{ echo "minbase-check.sh: no debootstrap, and apt-get could not install it: $logs/debootstrap-install" >&2; exit 2; }
# The host's Debian mirror, if it names one.
mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)
mirror=${mirror:-http://deb.debian.org/debian}

mounted=()
cleanup() {
	local i
	[ "$BASHPID" = "$$" ] || return 0
	# Anything still served inside goes first.
	if [ -d "$dir/tmp/raidfuse" ] && mountpoint -q "$dir/tmp/raidfuse"; then
		fusermount3 -u -z "$dir/tmp/raidfuse" 2>/dev/null || umount -l "$dir/tmp/raidfuse" 2>/dev/null || true
	fi
	for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
		umount -R -l "${mounted[i]}" 2>/dev/null || true
	done
	if [ $keep = 0 ] && [ -d "$dir" ]; then
		# Only once nothing is mounted beneath it.
		if ! grep -q -e " $dir/" -e " $dir " /proc/self/mounts; then
			rm -rf --one-file-system "$dir"
		else
			echo "minbase-check.sh: $dir still has mounts; left in place" >&2
		fi
	fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

step() { echo "=== $* ($(date +%T))"; }

step "debootstrap --variant=minbase bookworm $dir ($mirror)"
debootstrap --variant=minbase bookworm "$dir" "$mirror" >"$logs/debootstrap" 2>&1 ||
	{ echo "minbase-check.sh: debootstrap failed: $logs/debootstrap" >&2; exit 2; }
cp /etc/resolv.conf "$dir/etc/resolv.conf"
[ -e "$dir/etc/mtab" ] || ln -s ../proc/self/mounts "$dir/etc/mtab"

bind() { # SRC DST [rbind]
	mkdir -p "$2"
	if [ "${3:-}" = rbind ]; then
		mount --rbind "$1" "$2"
	else
		mount --bind "$1" "$2"
	fi
	mount --make-rslave "$2"
	mounted+=("$2")
}
mount --bind "$dir" "$dir"
mount --make-private "$dir"
mounted+=("$dir")
mount -t proc proc "$dir/proc"
mounted+=("$dir/proc")
bind /sys "$dir/sys" rbind
bind /dev "$dir/dev" rbind
mount -t tmpfs -o mode=1777 tmpfs "$dir/dev/shm"
mounted+=("$dir/dev/shm")
git clone -q "$here" "$dir/src"
if [ -d "$here/../shared" ]; then
	bind "$(cd "$here/../shared" && pwd)" "$dir/shared"
fi
echo "src: $(git -C "$dir/src" log --oneline -1)"

inside() { chroot "$dir" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin TERM=dumb bash -c "$1"; }

rc=0
step "1. tools/example.sh"
if inside 'cd /src && tools/example.sh' >"$logs/example" 2>&1 &&
	inside 'test -f /tmp/raidfuse/array.img && dd if=/tmp/raidfuse/array.img of=/dev/null bs=1M status=none' \
		>>"$logs/example" 2>&1; then
	echo "served and read: $(inside 'stat -c "%n %s bytes" /tmp/raidfuse/array.img')"
else
	echo "FAILED: tools/example.sh (its output: $logs/example)"
	tail -n 20 "$logs/example"
	rc=1
fi
inside 'fusermount3 -u /tmp/raidfuse' >>"$logs/example" 2>&1 || true

if [ $example_only = 0 ]; then
	cmd='cd /src && make test'
	[ -z "$func" ] || cmd="cd /src && make && make build/crash-states build/lcblocks && \
RAIDFUSE=/src/build/raidfuse CRASH_STATES=/src/build/crash-states LCBLOCKS=/src/build/lcblocks tests/func/run.sh $func"
	step "2. ${func:+functional tests $func: }$cmd"
	if inside "$cmd" >"$logs/make-test" 2>&1; then
		grep -E '^[0-9]+ passed' "$logs/make-test"
	else
		echo "FAILED: make test (its output: $logs/make-test)"
		grep -E '^FAIL |^\[  FAILED  \]|^failed:|^[0-9]+ passed' "$logs/make-test" || tail -n 20 "$logs/make-test"
		rc=1
	fi
	if grep -E '^SKIP ' "$logs/make-test"; then
		echo "FAILED: functional tests skipped (above): a minimal system must run them all"
		rc=1
	fi
fi
step "done: $([ $rc = 0 ] && echo "all passed" || echo "something failed")"
exit $rc
