#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 35-fuse-uring: the FUSE over io_uring transport (-o io_uring=auto|on|off).
#
# With the fuse module's enable_uring on (saved and restored):
# 1. raid0, raid5 and raid1 mounted with io_uring=on say "FUSE over
#    io_uring: N queues x M entries" (the transport is in use); fio
#    verifies 4 KiB and 1 MiB random writes at QD32 and reads them back
#    (randread); control files read and take values through it (md/level,
#    md/stripe_cache_size, md/sync_action check -> idle, mismatch_cnt 0);
#    ls, stat and mdstat work; md/array_size cut by 1 MiB and set back
#    shows in stat at once (raid5, raid1); the unmount is clean (the
#    daemon exits 0);
#    the 1 MiB requests went to the bulk threads (their count at the end),
#    and with RAIDFUSE_URING_BULK=0 none are started (the control).
#    raid0 and raid5 again with members on the disk (/var/tmp), where
#    group threads take the member IO (md/group_thread_cnt >= 1).
# 2. kill -9 of the daemon while dd (acknowledged, numbered blocks) and fio
#    write: the next mount (io_uring=on again) reads back every
#    acknowledged block.
# With enable_uring off:
# 3. io_uring=on refuses to serve, with one line saying how to enable it.
# 4. io_uring=auto serves through libfuse (no "FUSE over io_uring" line: the
#    negative control of 1), and fio verifies.
# And a bad value (io_uring=maybe) is refused by name.
. "$(dirname "$0")/lib.sh"
requires fuse fio root
PARAM=/sys/module/fuse/parameters/enable_uring
[ -w $PARAM ] || skip "$PARAM missing: this kernel has no FUSE over io_uring (Linux 6.14+, CONFIG_FUSE_IO_URING)"

OLD_PARAM=$(cat $PARAM)
# Restore the parameter, then lib.sh's cleanup (with the test's status).
trap 'rc=$?; _main_shell || exit $rc; set +e; echo "$OLD_PARAM" >$PARAM; (exit $rc); _cleanup' EXIT

MNT=$WORK/mnt
IMG=$MNT/array.img
NBLK=2048
STEP=7919
URING_LINE="FUSE over io_uring: [0-9]+ queues x [0-9]+ entries"

uring_in_use() { log_has "$MNT" "$URING_LINE"; }

echo 1 >$PARAM

# serve NAME LEVEL N [DIR]: io_uring=on, fio, control files, clean
# unmount; members in DIR/NAME (default $WORK/NAME).
serve() {
	local name=$1 level=$2 n=$3 D=${4:-$WORK}/$1
	mkdir -p "$D"
	mk_conf "$D/raid.conf" level="$level" chunk_size=64K members="$(members "$n")" member_size=32M
	create_array "$D/raid.conf"
	start_array "$D/raid.conf" "$MNT" -o io_uring=on
	uring_in_use || fail "$name: io_uring=on: no '$URING_LINE' in the log: $(cat "$(daemon_log_file "$MNT")")"
	if [ -n "${4:-}" ]; then
		# Members on a disk: group threads take member IO from the rings.
		check '[ "$(cat "$MNT/md/group_thread_cnt")" -ge 1 ]' \
			"$name: members on a disk, group_thread_cnt $(cat "$MNT/md/group_thread_cnt")"
	fi
	fio_verify "$IMG" --name=w4k --rw=randwrite --bs=4k --size=8M --iodepth=32
	fio_verify "$IMG" --name=w1m --rw=randwrite --bs=1M --offset=8M --size=16M --iodepth=32
	fio_verify --verify_only "$IMG" --name=r4k --rw=randread --bs=4k --size=8M --iodepth=32
	check '[ "$(cat "$MNT/md/level")" = raid'"$level"' ]' "$name: md/level says $(cat "$MNT/md/level")"
	ls "$MNT/md" >/dev/null
	grep -q "^md" "$MNT/mdstat" || fail "$name: mdstat: $(cat "$MNT/mdstat")"
	if [ "$level" = 5 ]; then
		echo 512 >"$MNT/md/stripe_cache_size"
		check '[ "$(cat "$MNT/md/stripe_cache_size")" = 512 ]' "$name: stripe_cache_size did not take 512"
		expect_fail sh -c "echo nonsense >'$MNT/md/stripe_cache_size'"
	fi
	if [ "$level" != 0 ]; then
		# A size change reaches the kernel at once (INIT was answered
		# here, not by libfuse: the notification is the transport's).
		size=$(fsize "$IMG")
		echo $((size / 1024 - 1024)) >"$MNT/md/array_size"
		check '[ "$(fsize "$IMG")" = $((size - 1048576)) ]' "$name: md/array_size cut 1 MiB: stat says $(fsize "$IMG")"
		echo default >"$MNT/md/array_size"
		check '[ "$(fsize "$IMG")" = "$size" ]' "$name: md/array_size default: stat says $(fsize "$IMG"), not $size"
		echo check >"$MNT/md/sync_action"
		wait_sync_idle "$MNT" "$name: check" 60
		check '[ "$(cat "$MNT/md/mismatch_cnt")" = 0 ]' "$name: mismatch_cnt $(cat "$MNT/md/mismatch_cnt")"
	fi
	stop_array "$MNT"
	# The 1 MiB writes and their verify reads went to the bulk threads.
	bulk=$(sed -n 's/.*io_uring: \([0-9]*\) reads and writes of .* served by [0-9]* bulk threads.*/\1/p' \
		"$(daemon_log_file "$MNT")")
	check '[ "${bulk:-0}" -ge 32 ]' "$name: ${bulk:-no} large requests served by the bulk threads"
	log "$name: served through io_uring, fio verified, control files work, clean unmount"
}

serve raid0 0 2
serve raid5 5 3
serve raid1 1 2
# On a disk the rings hand member IO to group threads (a ring working
# through a batch never waits for one request's member IO).
DISK=$(mktemp -d /var/tmp/rf35.XXXXXX)
_RM_DIRS+=("$DISK")
serve disk-raid0 0 2 "$DISK"
serve disk-raid5 5 3 "$DISK"

log "RAIDFUSE_URING_BULK=0: no bulk threads, the rings serve 1 MiB requests themselves"
D=$WORK/nobulk
mkdir -p "$D"
mk_conf "$D/raid.conf" level=0 chunk_size=64K members="$(members 2)" member_size=32M
create_array "$D/raid.conf"
RAIDFUSE_URING_BULK=0 start_array "$D/raid.conf" "$MNT" -o io_uring=on
uring_in_use || fail "RAIDFUSE_URING_BULK=0: not served through io_uring"
fio_verify "$IMG" --name=w1m --rw=randwrite --bs=1M --size=16M --iodepth=32
stop_array "$MNT"
grep -q "bulk threads" "$(daemon_log_file "$MNT")" && fail "RAIDFUSE_URING_BULK=0 still started bulk threads"

log "kill -9 under writes, remount: every acknowledged write reads back"
D=$WORK/crash
mkdir -p "$D"
acked=$D/acked
mk_conf "$D/raid.conf" metadata=1.2 level=5 chunk_size=64K members="$(members 3)" member_size=32M
create_array "$D/raid.conf" --assume-clean
start_array "$D/raid.conf" "$MNT" -o io_uring=on
uring_in_use || fail "crash: io_uring=on not in use"
ack_start "$acked" --iodepth=32
kill -9 "$DAEMON_PID"
wait_daemon_exit "$MNT" --any-status
fusermount3 -u -z "$MNT" 2>/dev/null || true
ack_wait "$acked" crash
start_array "$D/raid.conf" "$MNT" -o io_uring=on
uring_in_use || fail "crash: remount: io_uring=on not in use"
ack_verify "$acked" "crash"
wait_sync_idle "$MNT" "crash: the resync" 60
stop_array "$MNT"

log "a bad value is refused by name"
D=$WORK/raid0
expect_fail "$RAIDFUSE" mount "$D/raid.conf" "$MNT" -f -o io_uring=maybe
[[ $OUT == *"io_uring=maybe"* ]] || fail "io_uring=maybe: $OUT"
mountpoint -q "$MNT" && fail "io_uring=maybe left a mount behind"

echo 0 >$PARAM
log "enable_uring 0: io_uring=on refuses, saying how to enable it"
expect_fail timeout 20 "$RAIDFUSE" mount "$D/raid.conf" "$MNT" -f -o io_uring=on
[ "$(echo "$OUT" | grep -c .)" = 1 ] || fail "io_uring=on refused in more than one line: $OUT"
[[ $OUT == *"does not offer FUSE over io_uring"*"enable_uring"* ]] || fail "io_uring=on without the param: $OUT"
mountpoint -q "$MNT" && fail "the refused io_uring=on left a mount behind"

log "enable_uring 0: io_uring=auto serves through libfuse"
start_array "$D/raid.conf" "$MNT"
! log_has "$MNT" "$URING_LINE" 2 || fail "auto without the param: io_uring claimed in use"
fio_verify "$IMG" --rw=randwrite --bs=4k --size=8M --iodepth=32
stop_array "$MNT"
log "auto fell back to libfuse"
