#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 57-stuck-member: a member that stops answering (a hung disk: its IO
# never ends, nothing fails) is failed within member_timeout, and the
# array goes on degraded, served as users run it (the daemon detaches,
# members on a disk file system, an internal bitmap).
#
# raid5 of 4, member_timeout 2 s; members 0-2 are files on disk, member 3
# is a file served by stallfs (tools/stallfs: FUSE, so that the stuck IO
# waits in the kernel, in an io_uring request or a pread(), as on a hung
# disk).  8 MiB of pattern A are written and fsynced, then the member
# stalls:
# 1. a write already under way (pattern B, O_DIRECT + fsync) returns
#    within member_timeout + 6 s, and mdstat says [UUU_] by then (each
#    read of it must answer within 5 s);
# 2. with the member still stalled: a new write (pattern C) and fio
#    write+verify run and end in time; A, B and C read back;
# 3. the stalled member returns; stop: the other members' superblocks
#    record it missing (Array State AAA.); the array served again from
#    its config leaves it out ([UUU_]) and A, B, C read back.
# Negative control: RAIDFUSE_TEST_BREAK=member-deadline (no deadline):
# the write under way is still waiting when the first round had ended
# it.
. "$(dirname "$0")/lib.sh"
requires fuse fio

STALLFS=${STALLFS:-$(dirname "$RAIDFUSE")/stallfs}
if [ ! -x "$STALLFS" ]; then
	STALLFS=$WORK/stallfs
	"${CC:-cc}" -O2 -std=gnu11 -Wall -D_GNU_SOURCE $(pkg-config --cflags fuse3) -o "$STALLFS" \
		"$TOP_DIR/tools/stallfs/stallfs.c" $(pkg-config --libs fuse3) ||
		fail "cannot build tools/stallfs/stallfs.c"
fi
DISK=$(mktemp -d /var/tmp/rf57.XXXXXX)
_RM_DIRS+=("$DISK")
SFS_PID=
# The stalled member is let go and unmounted before lib.sh's cleanup
# (a daemon waiting on it could not be stopped otherwise).
trap '_rc=$?; _main_shell || exit $_rc; [ -z "$SFS_PID" ] || kill -USR2 "$SFS_PID" 2>/dev/null;
      sleep 0.2; (exit $_rc); _cleanup; fusermount3 -u -z "$DISK/sfs" 2>/dev/null; rm -rf "$DISK"' EXIT
case $(stat -f -c %T "$DISK") in
tmpfs | ramfs) skip "/var/tmp is in memory: no disk file system to test on" ;;
esac

MNT=$WORK/mnt
IMG=$MNT/array.img
TMO=2

# mdstat_line: the array's [U_] mdstat word (the read must answer).
mdstat_line() {
	timeout 5 cat "$MNT/mdstat" 2>/dev/null | grep -o '\[[U_]*\]' | tail -n 1 || echo "(no answer)"
}

# put PATTERN_FILE MIB_OFFSET: O_DIRECT write + fsync into the image.
put() {
	dd if="$1" of="$IMG" bs=1M seek="$2" oflag=direct conv=fsync,notrunc,nocreat status=none
}

# same PATTERN_FILE MIB_OFFSET WHAT: the image holds it there (read within 20 s).
same() {
	local n=$(($(stat -c %s "$1") >> 20))
	cmp -s "$1" <(timeout 20 dd if="$IMG" bs=1M skip="$2" count="$n" iflag=direct status=none) ||
		fail "$3: the image at $2 MiB does not read back what was written"
}

setup() {
	local D=$DISK/$1
	mkdir -p "$D" "$DISK/sfs"
	truncate -s 64M "$D/d3.img"
	"$STALLFS" "$D/d3.img" "$DISK/sfs" || fail "stallfs did not start"
	SFS_PID=$(pgrep -f "^$STALLFS $D/d3.img ") || fail "no stallfs process"
	mk_conf "$D/raid.conf" metadata=1.2 level=5 chunk_size=64K member_size=64M member_timeout="${TMO}s" \
		bitmap=internal members="d0.img d1.img d2.img $DISK/sfs/member"
	# (-f: the member through FUSE cannot say it is all holes)
	create_array "$D/raid.conf" --assume-clean -f
	start_array_daemon "$D/raid.conf" "$MNT"
	put "$DISK/A" 0
}

release() {
	kill -USR2 "$SFS_PID"
}

head -c 8M /dev/urandom >"$DISK/A"
head -c 1M /dev/urandom >"$DISK/B"
head -c 1M /dev/urandom >"$DISK/C"

log "a stalled member fails within member_timeout; the array goes on degraded"
setup ok
D=$DISK/ok
kill -USR1 "$SFS_PID"
t0=$SECONDS
put "$DISK/B" 32 &
bpid=$!
lim=$((TMO + 6))
while kill -0 "$bpid" 2>/dev/null && ((SECONDS - t0 <= lim)); do
	sleep 0.2
done
kill -0 "$bpid" 2>/dev/null && fail "a write under way when the member stalled still waits after $lim s"
wait "$bpid" || fail "the write under way when the member stalled failed"
st=$(mdstat_line)
[ "$st" = "[UUU_]" ] || fail "after $((SECONDS - t0)) s mdstat says $st, not [UUU_]"
log "write under way returned, member failed, after $((SECONDS - t0)) s"
grep -q "member 3 .*timed out" "$(daemon_log_file "$MNT")" 2>/dev/null ||
	vlog "(the detached daemon logs to syslog)"

t0=$SECONDS
put "$DISK/C" 64 || fail "a write with the member stalled failed"
fio_verify "$IMG" --rw=randwrite --bs=4k --offset=96M --size=8M --iodepth=16
same "$DISK/A" 0 "stalled"
same "$DISK/B" 32 "stalled"
same "$DISK/C" 64 "stalled"
((SECONDS - t0 <= 60)) || fail "IO with the member stalled took $((SECONDS - t0)) s"
log "with the member stalled: writes, fio verify and reads of A, B, C within $((SECONDS - t0)) s"

release
stop_array "$MNT"
as=$("$RAIDFUSE" examine "$D/d0.img" | sed -n 's/.*Array State : \([A-Z.]*\).*/\1/p')
[ "$as" = "AAA." ] || fail "member 0's superblock says Array State $as, not AAA."
start_array_daemon "$D/raid.conf" "$MNT"
st=$(mdstat_line)
[ "$st" = "[UUU_]" ] || fail "served again from its config: mdstat says $st, not [UUU_]"
same "$DISK/A" 0 "served again"
same "$DISK/B" 32 "served again"
same "$DISK/C" 64 "served again"
stop_array "$MNT"
fusermount3 -u "$DISK/sfs"
SFS_PID=
log "served again: the member stays out, A, B, C read back"

log "negative control: without the deadline the array waits with the member"
export RAIDFUSE_TEST_BREAK=member-deadline
setup break
unset RAIDFUSE_TEST_BREAK
kill -USR1 "$SFS_PID"
t0=$SECONDS
put "$DISK/B" 32 &
bpid=$!
sleep $((TMO + 6))
kill -0 "$bpid" 2>/dev/null || fail "negative control: the write ended without the deadline"
# (mdstat is not read here: a read the daemon took and cannot answer
# cannot be killed either)
release
wait "$bpid" || fail "negative control: the write failed once the member answered"
same "$DISK/B" 32 "negative control, member back"
stop_array "$MNT"
fusermount3 -u "$DISK/sfs"
SFS_PID=
log "ok"
