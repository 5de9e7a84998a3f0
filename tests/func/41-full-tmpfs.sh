#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 41-full-tmpfs: members on a tmpfs that is full.
#
# Members in memory are mapped into the daemon, and reading a hole through
# a shared mapping of tmpfs allocates a page: on a full tmpfs the touch
# faults.  pread of the same hole returns zeros.
# Bug: reads of never-written blocks of a healthy raid5 failed with EIO
# (the kernel's copy from the mapping, answering the read, faulted).
# Expected:
# 1. never-written blocks read back as zeros, with no error, through 4 KiB
#    and 1 MiB reads; written blocks still verify; the array stays
#    [3/3] [UUU] and every member in_sync.
# 2. Negative control: the same reads before the tmpfs is full read zeros
#    too (the test's reads and checks are sound), and a genuine fault is
#    still one: a member truncated under its mapping is failed (mdstat
#    [UU_]) and the data reads right from the others.
# 3. Writes into holes while it is full: the member writes fail with
#    ENOSPC and md's answer is the member failed (two of them: the array
#    fails and the writer gets EIO), not the daemon ended; what happened
#    is printed.
# Daemonized mount (the default transport), a tmpfs this test mounts in
# WORK (root), unmounted at cleanup.
. "$(dirname "$0")/lib.sh"
requires fuse root
export RAIDFUSE_MAP=1

T=$WORK/tmpfs
mkdir -p "$T"
mount -t tmpfs -o size=40M,mode=755 raidfuse-test "$T" || skip "cannot mount a tmpfs"
_FSMOUNTS+=("$T")

MNT=$WORK/mnt IMG=$WORK/mnt/array.img

# zeros WHAT OFF_KIB LEN_KIB BS: the image's [OFF, OFF + LEN) reads as zeros
# with O_DIRECT reads of BS, without an error.
zeros() {
	local what=$1 off=$2 len=$3 bs=$4 out
	out=$(dd if="$IMG" of="$WORK/got" bs="$bs" skip=$((off / ${bs%k})) count=$((len / ${bs%k})) iflag=direct \
		status=none 2>&1) || fail "$what: [$off KiB, +$len KiB) in $bs reads: $out"
	cmp -s "$WORK/got" <(head -c $((len * 1024)) /dev/zero) ||
		fail "$what: [$off KiB, +$len KiB) in $bs reads does not read back as zeros"
}

# members 16 MiB each, sparse: 48 MiB apparent on a 40 MiB tmpfs.
mk_conf "$T/raid.conf" level=5 chunk_size=64K members="$(members 3)" member_size=16M
create_array "$T/raid.conf" --assume-clean
start_array_daemon "$T/raid.conf" "$MNT"

# Written data at 0-4 MiB, numbered; the rest of the 32 MiB image never written.
awk 'BEGIN { for (k = 0; k < 1024; k++) for (i = 0; i < 512; i++) printf "%07d\n", k }' >"$WORK/pat"
dd if="$WORK/pat" of="$IMG" bs=1M count=4 oflag=direct conv=notrunc status=none
zeros "control, before the tmpfs is full" 8192 4096 4k
zeros "control, before the tmpfs is full" 12288 4096 1024k

log "filling the tmpfs"
dd if=/dev/zero of="$T/fill" bs=1M status=none 2>/dev/null || true
check '[ "$(df --output=avail -k "$T" | tail -n 1)" -lt 64 ]' "the tmpfs is not full: $(df -k "$T" | tail -n 1)"

log "full: never-written blocks read as zeros, written ones verify"
zeros "full tmpfs" 16384 4096 4k
zeros "full tmpfs" 20480 8192 1024k
zeros "full tmpfs" 28672 4096 64k
cmp <(dd if="$IMG" bs=1M count=4 iflag=direct status=none) "$WORK/pat" ||
	fail "full tmpfs: the written blocks read back wrong"
grep -qF "[3/3] [UUU]" "$MNT/mdstat" || fail "full tmpfs: reads of holes failed a member: $(cat "$MNT/mdstat")"
for m in d0 d1 d2; do
	check '[ "$(cat "$MNT/md/dev-$m.img/state")" = in_sync ]' "full tmpfs: $m.img is $(cat "$MNT/md/dev-$m.img/state")"
done

log "full: writes into holes"
rc=0
out=$(dd if="$WORK/pat" of="$IMG" bs=64k seek=$((24 * 16)) count=16 oflag=direct conv=notrunc status=none 2>&1) ||
	rc=$?
kill -0 "$DAEMON_PID" 2>/dev/null || fail "full tmpfs: the daemon ended on a write into a hole"
st=$(cat "$MNT/mdstat")
log "a 1 MiB write into holes of a full tmpfs: dd exit $rc${out:+ ($out)}; mdstat: $(grep -o '\[[0-9]/[0-9]\] \[[U_]*\]' <<<"$st")"
case $st in
*"[3/3] [UUU]"*)
	# Nothing failed: then the write must have failed, or reached the members.
	[ $rc != 0 ] || cmp -s <(dd if="$IMG" bs=64k skip=$((24 * 16)) count=16 iflag=direct status=none) \
		<(head -c 1M "$WORK/pat") || fail "full tmpfs: a write acknowledged, no member failed, the data is not there"
	;;
*"[3/2]"* | *"[3/1]"*)
	# md's answer to a member write error: the member is faulty.
	grep -q '(F)' <<<"$st" || fail "full tmpfs: degraded, no member marked faulty: $st"
	;;
*) fail "full tmpfs: after writes into holes: $st" ;;
esac
rm -f "$T/fill"

log "a genuine fault: a member truncated under its mapping fails"
fusermount3 -u "$MNT"
wait_daemon_exit "$MNT"
rm -f "$T"/d*.img "$T"/*.img
create_array "$T/raid.conf" --assume-clean
start_array_daemon "$T/raid.conf" "$MNT"
dd if="$WORK/pat" of="$IMG" bs=1M count=4 oflag=direct conv=notrunc status=none
truncate -s 1M "$T/d1.img"
cmp <(dd if="$IMG" bs=1M count=4 iflag=direct status=none) "$WORK/pat" ||
	fail "truncated member: the data reads back wrong"
wait_mdstat "$MNT" "[3/2] [U_U]" "a member truncated under its mapping" 20
stop_array "$MNT"
log "holes of a full tmpfs read as zeros; a truncated member still fails"
