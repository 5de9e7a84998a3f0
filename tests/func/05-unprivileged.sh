#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 05-unprivileged: an ordinary user runs an array, no root involved.
#
# As an unprivileged user: raidfuse create makes the members, raidfuse
# mount serves the image through the setuid fusermount3, the image belongs
# to that user, fio writes and reads it back, fusermount3 -u stops the
# daemon, and after a second mount the data is still there.
#
# Run by root, the test switches to nobody (uid 65534) with setpriv.  A
# /dev/fuse that only root may open (a container or VM without udev's
# 0666 rule) is worked around the way the system would: in a private mount
# namespace a 0666 node for the same device is bound over /dev/fuse, so
# nothing outside the test changes.  Run by an ordinary user, it runs as
# that user.  Skips when neither is possible.
. "$(dirname "$0")/lib.sh"
requires fio

if [ -z "${RF_UNPRIV_INNER:-}" ] && [ "$(id -u)" = 0 ]; then
	# Root: become nobody.
	[ -c /dev/fuse ] || skip "no /dev/fuse"
	command -v fusermount3 >/dev/null || skip "fusermount3 not installed (Debian: fuse3)"
	[ -u "$(command -v fusermount3)" ] || skip "fusermount3 is not setuid root"
	command -v setpriv >/dev/null || skip "setpriv not installed (util-linux)"
	getent passwd nobody >/dev/null || skip "no user 'nobody' to switch to"
	AS_NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all)
	# The tree may sit where nobody cannot look (a home directory of mode
	# 0700): nobody runs copies of the binary and of these scripts.
	U=$WORK/unpriv
	mkdir -m 755 "$U"
	cp "$RAIDFUSE" "$U/raidfuse"
	cp "$0" "$FUNC_DIR/lib.sh" "$U/"
	if [[ ${LSAN_OPTIONS:-} == *suppressions=* ]]; then
		supp=${LSAN_OPTIONS#*suppressions=}
		supp=${supp%%:*}
		cp "$supp" "$U/lsan.supp"
		export LSAN_OPTIONS=${LSAN_OPTIONS/suppressions=$supp/suppressions=$U/lsan.supp}
	fi
	chmod -R a+rX "$U"
	"${AS_NOBODY[@]}" test -x "$U/raidfuse" || skip "nobody cannot run programs in $U"
	inner=(env RF_UNPRIV_INNER=1 RAIDFUSE="$U/raidfuse" bash "$U/$(basename "$0")")
	rc=0
	if [ "$(stat -c %a /dev/fuse)" = 666 ] && [ -z "${RF_UNPRIV_NS:-}" ]; then
		log "as nobody"
		"${AS_NOBODY[@]}" "${inner[@]}" || rc=$?
	else
		command -v unshare >/dev/null || skip "/dev/fuse is $(stat -c %a /dev/fuse) (not open to others) and no unshare(1)"
		log "as nobody, /dev/fuse opened to others in a private mount namespace"
		dev=$(stat -c '%t %T' /dev/fuse)
		mkdir "$WORK/dev"
		unshare --mount --propagation private -- bash -c '
			set -e
			mount -t tmpfs -o mode=755,size=64k raidfuse-dev "$1"
			mknod -m 666 "$1/fuse" c $((0x$2)) $((0x$3))
			mount --bind "$1/fuse" /dev/fuse
			shift 3
			exec "$@"' rf "$WORK/dev" ${dev} "${AS_NOBODY[@]}" "${inner[@]}" || rc=$?
	fi
	exit $rc
fi

# --- from here on: the unprivileged user (nobody, or whoever ran the test) ---
requires fuse
[ "$(id -u)" != 0 ] || fail "still root"
D=$WORK/a
MNT=$WORK/mnt
IMG=$MNT/array.img
mkdir -p "$D" "$MNT"
log "$(id -un) (uid $(id -u)): create, mount through fusermount3, fio, fusermount3 -u"
mk_conf "$D/raid.conf" level=5 chunk_size=64K members="$(members 3)" member_size=64M
create_array "$D/raid.conf"
check '[ "$(stat -c %u "$D/d0.img")" = "$(id -u)" ]' "members belong to the user"

start_array "$D/raid.conf" "$MNT"
check '[ "$(stat -c %u:%g "$IMG")" = "$(id -u):$(id -g)" ]' "the image belongs to the user who mounted it"
check 'grep -q " $MNT fuse" /proc/mounts' "$MNT is a FUSE mount"
fio_verify "$IMG" --name=rand --rw=randwrite --bsrange=4k-64k --size=16M \
	--name=seq --rw=write --bs=1M --offset=16M --size=16M
stop_array "$MNT"

start_array "$D/raid.conf" "$MNT"
fio_verify --verify_only "$IMG" --name=rand --rw=randwrite --bsrange=4k-64k --size=16M \
	--name=seq --rw=write --bs=1M --offset=16M --size=16M
stop_array "$MNT"
