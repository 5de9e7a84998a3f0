#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 17-fault: built-in fault injection, and what the array does with the
# failures it makes (md's semantics, without broken disks).
#
# 1. raid5, raid6, raid1 under fio random writes with verify: EIO armed
#    at run time on one member through md/dev-NAME/fault.  fio sees no
#    error and every block verifies; the member reads faulty in
#    dev-NAME/state and (F) / "_" in mdstat, its errors count is up and
#    its fault file counts what was injected.  raid6: a second member
#    too, and fio still verifies.
# 2. raid5 with two members failed: writes fail with EIO, and so do reads
#    of data on a failed member; reads of data on the members that work
#    go on, as md serves them.
# 3. The config's faults list arms injection at mount: member 2's writes
#    fail after 100 of them; fio verifies; the member is faulty.
#    A device's fault goes with it when a spare takes its slot.
# 4. A delay slows the member's reads by the time asked; "off" disarms;
#    a spec the file does not take fails with EINVAL and a log line.
. "$(dirname "$0")/lib.sh"
requires fuse fio

D=$WORK/a
MNT=$WORK/mnt
IMG=$MNT/array.img
mkdir -p "$D"

dev() { cat "$MNT/md/dev-$1/$2"; }

# injected NAME: the errors count of NAME's fault file.
injected() { sed -n 's/.*errors=\([0-9]*\).*/\1/p' "$MNT/md/dev-$1/fault"; }

FIO_ARGS=(--rw=randwrite --bs=4k --iodepth=16 --size=12M --name=fw)

# fail_under_fio NAME...: fio random-writes and verifies, paced so the
# write phase lasts about 3 s; one second in, EIO is armed on each NAME
# in turn (half a second apart); fio must see no error.
fail_under_fio() {
	local name
	(fio_verify "$IMG" "${FIO_ARGS[@]}" --rate_iops=1000) &
	FIO=$!
	sleep 1
	for name; do
		kill -0 $FIO 2>/dev/null || fail "fio ended before $name's fault was armed"
		echo "error=EIO" >"$MNT/md/dev-$name/fault" || fail "arming dev-$name/fault failed"
		sleep 0.5
	done
	wait $FIO || fail "fio saw an error or a bad block with ${*} failing"
	fio_verify --verify_only "$IMG" "${FIO_ARGS[@]}"
}

# member_failed NAME SLOT: what md shows of a member that failed.
member_failed() {
	local name=$1 slot=$2
	check "[ \"\$(dev $name state)\" = faulty ]" "dev-$name/state after injected errors"
	check "[ \"\$(dev $name errors)\" -ge 1 ]" "dev-$name/errors counts the failed IO"
	check "[ \"\$(injected $name)\" -ge 1 ]" "dev-$name/fault counts what it injected"
	grep -q " $name\[$slot\](F)" "$MNT/mdstat" || fail "mdstat does not mark $name (F): $(cat "$MNT/mdstat")"
}

# --- 1. one member (two for raid6) fails under fio ------------------------------

for spec in "5 4 [4/3] [U_UU]" "6 5 [5/3] [U_U_U]" "1 2 [2/1] [U_]"; do
	read -r level n want_count want_map <<<"$spec"
	log "raid$level, $n members: EIO injected at run time under fio verify"
	mk_conf "$D/r$level.conf" level="$level" chunk_size=64K members="$(members "$n" "r$level-")" member_size=16M
	create_array "$D/r$level.conf"
	start_array "$D/r$level.conf" "$MNT"
	check '[ "$(dev r$level-1.img fault | head -n 1)" = off ]' "fault injection is off by default"
	if [ "$level" = 6 ]; then
		fail_under_fio "r$level-1.img" "r$level-3.img"
		member_failed "r$level-3.img" 3
	else
		fail_under_fio "r$level-1.img"
	fi
	member_failed "r$level-1.img" 1
	check '[ "$(dev r$level-0.img state)" = in_sync ]' "the others stay in sync"
	check '[ "$(injected r$level-0.img)" = 0 ]' "nothing injected where nothing was armed"
	grep -qF " $want_count $want_map" "$MNT/mdstat" || fail "mdstat: want $want_count $want_map: $(cat "$MNT/mdstat")"
	# and the degraded array takes new writes
	fio_verify "$IMG" --rw=randwrite --bs=16k --size=8M --offset=8M --name=after
	stop_array "$MNT"
done

# --- 2. raid5, two failed ----------------------------------------------------------

log "raid5 with two members failed: EIO"
start_array "$D/r5.conf" "$MNT"
dd if=/dev/urandom of="$IMG" bs=1M count=4 oflag=direct conv=notrunc status=none
# left-symmetric, 4 members: chunk 1 is on member 1; stripe 10 has
# parity on member 1 and chunks 30, 31, 32 on members 2, 3, 0.  Reading
# chunk 1 fails member 1 (rebuilt from the others: no error); then a
# read of chunk 31 fails member 3, and the array.
echo "error=EIO" >"$MNT/md/dev-r5-1.img/fault"
dd if="$IMG" of=/dev/null bs=64k skip=1 count=1 iflag=direct status=none ||
	fail "reading chunk 1 with only member 1 failing failed"
check '[ "$(dev r5-1.img state)" = faulty ]' "member 1 failed by the read"
echo "error=EIO" >"$MNT/md/dev-r5-3.img/fault"
expect_fail dd if="$IMG" of=/dev/null bs=64k skip=31 count=1 iflag=direct status=none
[[ $OUT == *"Input/output error"* ]] || fail "reading chunk 31 (on failed member 3): $OUT"
check '[ "$(dev r5-3.img state)" = faulty ]' "member 3 failed"
check '[ "$(cat "$MNT/md/degraded")" = 2 ]' "degraded 2"
grep -qF " [4/2] [U_U_]" "$MNT/mdstat" || fail "mdstat: $(cat "$MNT/mdstat")"
expect_fail dd if=/dev/zero of="$IMG" bs=64k seek=40 count=1 oflag=direct conv=notrunc status=none
[[ $OUT == *"Input/output error"* ]] || fail "a write to a failed raid5: $OUT"
dd if="$IMG" of=/dev/null bs=64k skip=32 count=1 iflag=direct status=none ||
	fail "reading chunk 32 (on working member 0) of the failed array failed: md serves it"
stop_array "$MNT"

# --- 3. from the config ---------------------------------------------------------------

log "faults in the config: member 2's writes fail after 100"
mk_conf "$D/cf.conf" level=5 chunk_size=64K members="$(members 4 cf)" member_size=16M
cat >>"$D/cf.conf" <<'EOF'
faults = (
	{ member = 2; error = "EIO"; ops = "write"; after = 100; }
);
EOF
create_array "$D/cf.conf"
start_array "$D/cf.conf" "$MNT"
check '[ "$(dev cf2.img fault | head -n 1)" = "error=EIO ops=write after=100" ]' "the config's spec is armed"
check '[ "$(dev cf2.img state)" = in_sync ]' "nothing failed before any IO"
fio_verify "$IMG" "${FIO_ARGS[@]}"
check '[ "$(dev cf2.img state)" = faulty ]' "cf2.img failed by its 101st write"
matched=$(sed -n 's/.*matched=\([0-9]*\).*/\1/p' "$MNT/md/dev-cf2.img/fault")
check '[ "$matched" -gt 100 ]' "100 writes let through first (matched $matched)"
grep -qF " [4/3] [UU_U]" "$MNT/mdstat" || fail "mdstat: $(cat "$MNT/mdstat")"
stop_array "$MNT"

log "a bad faults entry stops the mount with file, line and key"
sed -i 's/after = 100/after = 100; rate = 2.0/' "$D/cf.conf"
expect_fail "$RAIDFUSE" mount "$D/cf.conf" "$MNT" -f
[[ $OUT == *"cf.conf:"*"key 'faults.[0].rate'"*"not a probability"* ]] || fail "bad faults entry: $OUT"

# --- 3b. a spare in a failed slot ------------------------------------------------------

# A device's fault goes with the device: once a spare serves the slot, the
# spare's fault file arms its IO, and the failed device's no longer
# reaches the slot.
log "fault injection follows the device when a spare takes the slot"
mk_conf "$D/sp.conf" level=5 chunk_size=64K members="$(members 4 sp)" spares="sps.img" member_size=16M
create_array "$D/sp.conf"
truncate -s 16M "$D/sps.img"
start_array "$D/sp.conf" "$MNT"
check '[ "$(dev sps.img fault | head -n 1)" = off ]' "a spare's fault file reads off"
echo "error=EIO ops=write" >"$MNT/md/dev-sp1.img/fault"
fio_verify "$IMG" --rw=randwrite --bs=16k --size=8M --name=sp
for ((i = 0; i < 300; i++)); do
	[ "$(dev sps.img slot)" = 1 ] && [ "$(cat "$MNT/md/sync_action")" = idle ] && break
	sleep 0.1
done
check '[ "$(dev sps.img slot)" = 1 ]' "the spare took slot 1"
check '[ "$(dev sp1.img state)" = faulty ]' "sp1.img failed by its injected errors"
# sp1.img's fault is still armed: the spare in its old slot must not meet it
check '[ "$(dev sps.img state)" = in_sync ]' "the spare in the failed device's slot does not meet its fault"
echo "error=EIO ops=read" >"$MNT/md/dev-sps.img/fault" || fail "a spare's fault file takes a spec"
check '[[ "$(dev sps.img fault | head -n 1)" == *error=EIO* ]]' "the spare's fault reads back"
echo off >"$MNT/md/dev-sps.img/fault"
stop_array "$MNT"

# --- 4. delay, off, refusals ---------------------------------------------------------

log "delay, off, refusals"
start_array "$D/r5.conf" "$MNT"
# (r5.conf's members hold what the failed array left: only timing and the
# fault file's words matter here)
echo "delay_us=200000 ops=read" >"$MNT/md/dev-r5-0.img/fault"
t0=${EPOCHREALTIME/./}
dd if="$IMG" of=/dev/null bs=4k skip=3 count=1 iflag=direct status=none   # in chunk 0: member 0
t1=${EPOCHREALTIME/./}
check '[ $((t1 - t0)) -ge 200000 ]' "a read of member 0 waited the delay ($((t1 - t0)) us)"
check '[ "$(dev r5-0.img state)" = in_sync ]' "a delay fails nothing"
grep -q "delays=1" "$MNT/md/dev-r5-0.img/fault" || fail "delays not counted: $(dev r5-0.img fault)"
echo off >"$MNT/md/dev-r5-0.img/fault"
check '[ "$(dev r5-0.img fault | head -n 1)" = off ]' "off"
# With the delay on every read of member 0 takes 200 ms or more: off, the
# fastest of a few reads (a loaded machine may hold one back) takes less.
best=''
for skip in 5 6 7 8 9; do
	t0=${EPOCHREALTIME/./}
	dd if="$IMG" of=/dev/null bs=4k skip=$skip count=1 iflag=direct status=none
	t1=${EPOCHREALTIME/./}
	[ -n "$best" ] && [ "$best" -le $((t1 - t0)) ] || best=$((t1 - t0))
	[ "$best" -lt 200000 ] && break
done
check '[ $best -lt 200000 ]' "no delay once off (the fastest read: $best us)"
for bad in "error=EAGAIN" "rate=3" "ops=trim" "frequency=2"; do
	expect_fail bash -c 'echo "$1" >"$2"' bash "$bad" "$MNT/md/dev-r5-0.img/fault"
	[[ $OUT == *"Invalid argument"* ]] || fail "fault <- '$bad': expected EINVAL, got: $OUT"
	grep -qF "md/dev-r5-0.img/fault: refused '$bad'" "$(daemon_log_file "$MNT")" ||
		fail "no log line for fault <- '$bad'"
done
check '[ "$(dev r5-0.img fault | head -n 1)" = off ]' "refused specs change nothing"
"$RAIDFUSE" ctl "$MNT" dev-r5-2.img/fault "error=ENOSPC ops=fsync count=1" || fail "ctl dev-r5-2.img/fault failed"
check '[ "$(dev r5-2.img fault | head -n 1)" = "error=ENOSPC ops=fsync count=1" ]' "ctl sets a fault"
stop_array "$MNT"
log "ok"
