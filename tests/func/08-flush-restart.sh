#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 08-flush-restart: what was written is on the members once raidfuse stops,
# however it is stopped, and a new daemon serves it back.
#
# 1. raidfuse detached (as users run it): fio writes, sync; fusermount3 -u
#    ends the daemon; at rest the raid5 members are in sync (their XOR is
#    zero); a new daemon serves the same bytes (sha256) and fio checks them.
# 2. fusermount3 -u -z while fio is still writing: fio finishes with every
#    block verified, the daemon exits when it is done, nothing is lost.
# 3. SIGTERM to the daemon: it unmounts and exits 0, nothing is lost.
# 4. raid1: after a stop each member holds the image, byte for byte.
# 5. In an ASan build: a daemon that served IO and stopped leaks nothing.
. "$(dirname "$0")/lib.sh"
requires fuse fio
build_helper

D=$WORK/a
MNT=$WORK/mnt
IMG=$MNT/array.img
mkdir -p "$D"
mk_conf "$D/raid.conf" level=5 layout=left-symmetric chunk_size=64K \
	members="$(members 4)" member_size=64M
create_array "$D/raid.conf"
MEMBERS=("$D/d0.img" "$D/d1.img" "$D/d2.img" "$D/d3.img")
JOB1="--name=rand --rw=randwrite --bsrange=4k-128k --size=16M
	--name=seq --rw=write --bs=1M --offset=16M --size=16M
	--name=odd --rw=randwrite --bs=6k --offset=32M --size=3M"

in_sync() {
	"$RFHELPER" xor-zero 0 $((64 << 20)) "${MEMBERS[@]}" >"$WORK/xor.out" ||
		fail "$1: the members are not in sync: $(cat "$WORK/xor.out")"
}

log "1. detached daemon: write, sync, fusermount3 -u; the daemon exits, the data stays"
start_array_daemon "$D/raid.conf" "$MNT"
check '[ "$(awk "{print \$4}" /proc/$DAEMON_PID/stat)" != $$ ]' "raidfuse did not detach (its parent is this test)"
fio_verify "$IMG" $JOB1 --end_fsync=1
sync
sum1=$(sha256sum <"$IMG")
stop_array "$MNT"
in_sync "after fusermount3 -u"
start_array "$D/raid.conf" "$MNT"
[ "$(sha256sum <"$IMG")" = "$sum1" ] || fail "the image changed across a restart"
fio_verify --verify_only "$IMG" $JOB1
stop_array "$MNT"

log "2. lazy unmount while fio writes: fio still verifies, the daemon exits after"
# fio opens the image again for its verify pass; by name it would find the
# empty directory under the mount (and create a file there), so it gets
# the image through a descriptor this shell holds: /dev/fd/7.
JOB2="--name=late --rw=randwrite --bsrange=4k-64k --offset=40M --size=16M --rate=16m"
start_array "$D/raid.conf" "$MNT"
exec 7<>"$IMG"
fio_verify /dev/fd/7 $JOB2 &
fio_pid=$!
sleep 0.4
fusermount3 -u -z "$MNT" || fail "fusermount3 -u -z failed"
mountpoint -q "$MNT" && fail "$MNT still mounted after a lazy unmount"
wait $fio_pid || fail "fio failed after the lazy unmount (see above)"
kill -0 "$DAEMON_PID" 2>/dev/null || fail "the daemon exited while the image was still open"
exec 7>&-
wait_daemon_exit "$MNT"
[ -z "$(ls -A "$MNT")" ] || fail "something was created under the mount point: $(ls -A "$MNT")"
in_sync "after a lazy unmount"
start_array "$D/raid.conf" "$MNT"
fio_verify --verify_only "$IMG" $JOB1
fio_verify --verify_only "$IMG" $JOB2
stop_array "$MNT"

log "3. SIGTERM: the daemon unmounts, exits 0, and nothing is lost"
JOB3="--name=term --rw=randwrite --bs=8k --offset=60M --size=4M"
start_array "$D/raid.conf" "$MNT"
fio_verify "$IMG" $JOB3
kill -TERM "$DAEMON_PID"
wait_daemon_exit "$MNT" --any-status
mountpoint -q "$MNT" && fail "$MNT still mounted after the daemon got SIGTERM"
# SIGTERM is how service managers stop a daemon; a clean stop is exit 0
# (systemd counts 1 as a failure).  Regression: libfuse returns the signal
# number when a signal ended the loop, which was once reported as exit 1.
sigterm_status() {
	[ "$1" = 0 ] || fail "raidfuse mount -f exited $1 after SIGTERM (a clean stop), expected 0"
}
sigterm_status "$DAEMON_RC"
in_sync "after SIGTERM"
start_array "$D/raid.conf" "$MNT"
fio_verify --verify_only "$IMG" $JOB1
fio_verify --verify_only "$IMG" $JOB3
stop_array "$MNT"

log "4. raid1: each member holds the image byte for byte after a stop"
R=$WORK/r1
mkdir -p "$R"
mk_conf "$R/raid.conf" level=1 members="$(members 2 m)" member_size=32M
create_array "$R/raid.conf"
start_array "$R/raid.conf" "$MNT"
fio_verify "$IMG" --name=r1 --rw=randwrite --bsrange=4k-64k --size=8M
dd if=/dev/urandom of="$IMG" bs=1M seek=20 count=4 conv=notrunc status=none
sum=$(sha256sum <"$IMG")
stop_array "$MNT"
for m in "$R/m0.img" "$R/m1.img"; do
	[ "$(sha256sum <"$m")" = "$sum" ] || fail "raid1 member ${m##*/} differs from the image it served"
done

if grep -qa __asan_init "$RAIDFUSE"; then
	log "5. ASan build: serve IO, stop; LeakSanitizer finds nothing (no suppressions)"
	LSAN_OPTIONS=detect_leaks=1 start_array "$R/raid.conf" "$MNT"
	fio_verify "$IMG" --name=r1 --rw=randwrite --bsrange=4k-64k --size=8M
	fusermount3 -u "$MNT"
	wait_daemon_exit "$MNT" --any-status
	no_leaks() {
		if [ "$1" != 0 ] || grep -q LeakSanitizer "$2"; then
			grep -E 'LeakSanitizer|leak of|^ *#[0-9] .* in (rf_|fuse_)' "$2" | head -n 12
			fail "the daemon exited $1 with leaks (full report: an ASan run with RF_KEEP=1)"
		fi
	}
	no_leaks "$DAEMON_RC" "$(daemon_log_file "$MNT")"
else
	log "5. skipped: not an ASan build (make asan runs it)"
fi
