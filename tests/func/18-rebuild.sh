#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 18-rebuild: members fail while fio writes with verify; spares take their
# slots and are rebuilt while the writes go on; nothing is lost.
#
# For raid1 (2 members, 1 spare), raid5 (4 + 1) and raid6 (5 + 2), with md
# 1.2 superblocks and the spares named in the config:
# 1. fio random writes with crc32c verify run; meanwhile a member is failed
#    (echo faulty > md/dev-NAME/state; on raid6 a second one too).  fio
#    sees no IO error and its verify pass reads every block right.
# 2. The spare takes the failed slot by itself and is rebuilt, paced to
#    sync_speed_max while fio runs: mdstat shows md's recovery line and
#    [n/n-1] on the way (captured to the log), sync_action reads recover.
# 3. When the rebuild ends: degraded 0, the failed device is listed faulty
#    without a slot, the spare in_sync in its slot (mdstat gives it its own
#    device number, as md does, not the slot's); a check counts 0.
# 4. Another member fails: the data still verifies, degraded is 1.
# 5. After unmount, mdadm --examine (mdadm 4.2) shows the spare in the
#    failed member's role; assembled again from the files with the spare
#    in place of the failed member, the data verifies.
# Then two rounds without fio running:
# - raid6 (5 + 2) with sync_action frozen while two members fail: on idle
#   both spares take their slots and are rebuilt in one pass (one
#   "recover started" in the log), the data verifies and a check counts 0.
# - raid6 (5 + 2): a rebuild of slot 1 stopped at P, then slots 1 and 3
#   rebuilt in one pass stopped at Q < P: each spare keeps its own
#   recovery_offset, and the next assembly resumes slot 1 at P, slot 3 at
#   Q, in one pass from Q.
# - raid6 (5 + 1): a rebuild killed (kill -9) half-way resumes at the
#   checkpoint the rebuild wrote into the spare's superblock on its way.
# - raid10 (near 2, far 2 and, in full runs, offset 2; 4 + 1): a rebuild
#   stopped by an unmount half-way resumes at its checkpoint on the next
#   mount (md's recovery_offset, "recover started at sector N" with N > 0),
#   not at 0, and completes with the data right.
# Then the refusals: a spare too small, a member twice, remove of an
# active member, a word md does not take.
. "$(dirname "$0")/lib.sh"
requires fuse fio

D=$WORK/a
MNT=$WORK/mnt
IMG=$MNT/array.img
mkdir -p "$D"

# round NAME LEVEL N NSPARES VICTIMS...
round() {
	local name=$1 level=$2 n=$3 nsp=$4 v fio_pid seen=0 i mdstat_log
	mdstat_log=$WORK/$1.mdstat
	shift 4
	local victims=("$@")
	log "$name: fail ${victims[*]} under fio, rebuild onto $nsp spare(s)"
	mk_conf "$D/$name.conf" level="$level" members="$(members "$n" "$name-")" \
		spares="$(members "$nsp" "$name-s")" member_size=24M chunk_size=64K metadata=1.2
	create_array --assume-clean "$D/$name.conf"
	# create made the spares, with superblocks that say spare
	if [ -n "$(command -v mdadm)" ]; then
		mdadm --examine "$D/$name-s0.img" 2>&1 | grep -q "Device Role : spare" ||
			fail "$name: mdadm does not see $name-s0.img as a spare: $(mdadm --examine "$D/$name-s0.img" 2>&1)"
	fi
	start_array "$D/$name.conf" "$MNT"
	# Slow enough that the rebuild overlaps the writes.
	echo 4000 >"$MNT/md/sync_speed_max"
	local size=$(($(fsize "$IMG") / 1048576 - 1))M
	local job=(--rw=randwrite --bs=4k --size="$size" --iodepth=8 --name=w)
	(fio_verify "$IMG" "${job[@]}") &
	fio_pid=$!
	sleep 1
	for v in "${victims[@]}"; do
		echo faulty >"$MNT/md/dev-$name-$v.img/state" || fail "$name: echo faulty > dev-$name-$v.img/state"
		check '[[ "$(dev_state "$name-$v.img")" == *faulty* ]]' "$name: member $v reads faulty"
		sleep 0.5
	done
	# The rebuild, as mdstat shows it while fio runs.
	for ((i = 0; i < 100 && !seen; i++)); do
		cat "$MNT/mdstat" >"$mdstat_log"
		grep -q 'recovery =' "$mdstat_log" && seen=1
		sleep 0.05
	done
	check '[ $seen = 1 ]' "$name: mdstat showed a recovery line"
	vlog "$name: mdstat during the rebuild:"$'\n'"$(cat "$mdstat_log")"
	grep -q "\[$n/$((n - 1))\]" "$mdstat_log" || grep -q "\[$n/$((n - 2))\]" "$mdstat_log" ||
		fail "$name: mdstat did not show the array degraded during the rebuild: $(cat "$mdstat_log")"
	wait "$fio_pid" || fail "$name: fio failed while members failed and spares were rebuilt"
	echo 0 >"$MNT/md/sync_speed_max"
	wait_for "$name: rebuild" '[ "$(val degraded)" = 0 ] && [ "$(val sync_action)" = idle ]'
	for v in "${victims[@]}"; do
		check '[[ "$(dev_state "$name-$v.img")" == faulty* ]]' "$name: member $v stays listed faulty"
		check '[ "$(cat "$MNT/md/dev-$name-$v.img/slot")" = none ]' "$name: member $v has no slot"
	done
	for ((i = 0; i < nsp; i++)); do
		check '[ "$(dev_state "$name-s$i.img")" = in_sync ]' "$name: spare $i in sync"
		check '[ "$(cat "$MNT/md/dev-$name-s$i.img/slot")" = "${victims[$i]}" ]' "$name: spare $i in slot ${victims[$i]}"
		# md's mdstat numbers a device by its superblock's dev_number,
		# which a spare keeps when it takes a slot (here n + i)
		check 'grep -q " $name-s$i.img\[$((n + i))\]" "$MNT/mdstat"' "$name: mdstat numbers spare $i as device $((n + i)): $(cat "$MNT/mdstat")"
	done
	echo check >"$MNT/md/sync_action"
	wait_for "$name: check" '[ "$(val sync_action)" = idle ]'
	check '[ "$(val mismatch_cnt)" = 0 ]' "$name: check after the rebuild counts 0"
	fio_verify --verify_only "$IMG" "${job[@]}"
	# One more failure: the rebuilt spare carries the data.
	local last=$((n - 1))
	[ "$last" != "${victims[0]}" ] || last=0
	echo faulty >"$MNT/md/dev-$name-$last.img/state"
	check '[ "$(val degraded)" = 1 ]' "$name: degraded 1 after another failure"
	fio_verify --verify_only "$IMG" "${job[@]}"
	stop_array "$MNT"
	if [ -n "$(command -v mdadm)" ]; then
		mdadm --examine "$D/$name-s0.img" >"$WORK/examine" 2>&1 || fail "mdadm --examine $name-s0.img failed"
		grep -q "Device Role : Active device ${victims[0]}" "$WORK/examine" ||
			fail "$name: mdadm does not see the spare in role ${victims[0]}: $(cat "$WORK/examine")"
	fi
	# Assembled from the files, spares in the failed members' places.
	local files=() m
	for ((i = 0; i < n; i++)); do
		m=$D/$name-$i.img
		for ((v = 0; v < nsp; v++)); do
			[ "$i" != "${victims[$v]}" ] || m=$D/$name-s$v.img
		done
		files+=("$m")
	done
	start_assemble array.img "$MNT" "${files[@]}"
	fio_verify --verify_only "$IMG" "${job[@]}"
	stop_array "$MNT"
}

round r1 1 2 1 1
round r5 5 4 1 1
full round r6 6 5 2 1 3

# fill NAME N NSPARES LEVEL: a fresh array of N members and NSPARES
# spares, served on MNT, its first 8 MiB written (crc32c verify headers).
fill() {
	mk_conf "$D/$1.conf" level="$4" members="$(members "$2" "$1-")" spares="$(members "$3" "$1-s")" \
		member_size=16M chunk_size=64K metadata=1.2
	create_array --assume-clean "$D/$1.conf"
	start_array "$D/$1.conf" "$MNT"
	fio_verify "$IMG" --rw=write --bs=64k --size=8M --name=fill
}

log "r6two: two members fail while frozen; both spares are rebuilt in one pass"
fill r6two 5 2 6
echo frozen >"$MNT/md/sync_action"
echo faulty >"$MNT/md/dev-r6two-1.img/state"
echo faulty >"$MNT/md/dev-r6two-3.img/state"
check '[ "$(val degraded)" = 2 ]' "r6two: degraded 2 while frozen"
echo idle >"$MNT/md/sync_action"
wait_for "r6two: rebuild" '[ "$(val degraded)" = 0 ] && [ "$(val sync_action)" = idle ]'
logf=$(daemon_log_file "$MNT")
vlog "r6two: $(grep -E 'recover|takes slot' "$logf")"
check '[ "$(grep -c "recover started" "$logf")" = 1 ]' "r6two: one rebuild pass: $(grep recover "$logf")"
check '[ "$(cat "$MNT/md/dev-r6two-s0.img/slot")" = 1 ] && [ "$(cat "$MNT/md/dev-r6two-s1.img/slot")" = 3 ]' \
	"r6two: the spares in slots 1 and 3"
echo check >"$MNT/md/sync_action"
wait_sync_idle "$MNT" "r6two: check"
check '[ "$(val mismatch_cnt)" = 0 ]' "r6two: check after the rebuild counts 0"
fio_verify --verify_only "$IMG" --rw=write --bs=64k --size=8M --name=fill
stop_array "$MNT"

log "r6own: two spares rebuilt in one pass keep a checkpoint each"
# Slot 1's rebuild stops (frozen) at P; slot 3 fails and both are rebuilt
# in one pass from 0, stopped (unmount) at Q < P: each spare's superblock
# keeps its own recovery_offset (P and Q), as md's rdev->recovery_offset,
# and the next assembly resumes each from there.
fill r6own 5 2 6
# 1000 KiB/s: the whole rebuild (15 MiB a member) takes 15 s.
echo 1000 >"$MNT/md/sync_speed_min"
echo 1000 >"$MNT/md/sync_speed_max"
echo faulty >"$MNT/md/dev-r6own-1.img/state"
wait_for "r6own: first rebuild under way" \
	'done=$(cut -d/ -f1 <"$MNT/md/sync_completed" 2>/dev/null); [ "${done:-0}" -gt 6144 ] 2>/dev/null'
echo frozen >"$MNT/md/sync_action"
check '[ "$(val degraded)" = 1 ]' "r6own: slot 1 still being rebuilt when frozen (degraded $(val degraded))"
echo faulty >"$MNT/md/dev-r6own-3.img/state"
echo idle >"$MNT/md/sync_action"
wait_for "r6own: second rebuild under way" \
	'[ "$(val sync_action)" = recover ] && done=$(cut -d/ -f1 <"$MNT/md/sync_completed" 2>/dev/null) &&
	[ "${done:-0}" -gt 1024 ] && [ "$done" -lt 4096 ] 2>/dev/null'
stop_array "$MNT"
logf=$(daemon_log_file "$MNT")
vlog "r6own: $(grep -E 'recover|takes slot' "$logf")"
# recovery_offset N: what the daemon logged when each resumed.
start_assemble array.img "$MNT" "$D/r6own-0.img" "$D/r6own-s0.img" "$D/r6own-2.img" "$D/r6own-s1.img" \
	"$D/r6own-4.img"
wait_for "r6own: resumed rebuild" '[ "$(val degraded)" = 0 ] && [ "$(val sync_action)" = idle ]'
logf=$(daemon_log_file "$MNT")
vlog "r6own: $(grep -E 'recover|rebuil' "$logf")"
p=$(sed -n 's/.*r6own-s0.img in slot 1 was being rebuilt: resuming at sector \([0-9]*\)$/\1/p' "$logf")
q=$(sed -n 's/.*r6own-s1.img in slot 3 was being rebuilt: resuming at sector \([0-9]*\)$/\1/p' "$logf")
check '[ -n "$p" ] && [ -n "$q" ] && [ "$q" -gt 0 ] && [ "$p" -gt "$q" ]' \
	"r6own: slot 1 resumes past slot 3 (P '$p' > Q '$q' > 0): $(grep -E 'resuming|recover started' "$logf")"
grep -q "recover started at sector $q of" "$logf" ||
	fail "r6own: the pass did not start at the lower checkpoint $q: $(grep -i recover "$logf")"
echo check >"$MNT/md/sync_action"
wait_sync_idle "$MNT" "r6own: check"
check '[ "$(val mismatch_cnt)" = 0 ]' "r6own: check after the resumed rebuild counts 0"
fio_verify --verify_only "$IMG" --rw=write --bs=64k --size=8M --name=fill
stop_array "$MNT"

log "r6crash: a rebuild killed half-way resumes at the checkpoint its superblock holds"
# The rebuild writes its checkpoint into the spare's superblock as it goes
# (md's recovery_offset): after kill -9 the next assembly resumes there.
fill r6crash 5 1 6
echo 2000 >"$MNT/md/sync_speed_min"
echo 2000 >"$MNT/md/sync_speed_max"
echo faulty >"$MNT/md/dev-r6crash-2.img/state"
wait_for "r6crash: rebuild under way" \
	'done=$(cut -d/ -f1 <"$MNT/md/sync_completed" 2>/dev/null); [ "${done:-0}" -gt 12288 ] 2>/dev/null'
kill -9 "$DAEMON_PID"
wait_daemon_exit "$MNT" --any-status
fusermount3 -u -z "$MNT" 2>/dev/null || true
start_assemble array.img "$MNT" "$D/r6crash-0.img" "$D/r6crash-1.img" "$D/r6crash-s0.img" "$D/r6crash-3.img" \
	"$D/r6crash-4.img"
wait_for "r6crash: resumed rebuild" '[ "$(val degraded)" = 0 ] && [ "$(val sync_action)" = idle ]'
logf=$(daemon_log_file "$MNT")
vlog "r6crash: $(grep -E 'recover|rebuil|resum' "$logf")"
grep -q "r6crash-s0.img in slot 2 was being rebuilt: resuming at sector [1-9][0-9]*$" "$logf" ||
	fail "r6crash: the rebuild did not resume at a checkpoint: $(grep -iE 'recover|resum' "$logf")"
echo check >"$MNT/md/sync_action"
wait_sync_idle "$MNT" "r6crash: check"
check '[ "$(val mismatch_cnt)" = 0 ]' "r6crash: check after the resumed rebuild counts 0"
fio_verify --verify_only "$IMG" --rw=write --bs=64k --size=8M --name=fill
stop_array "$MNT"

# r10resume LAYOUT: a raid10 rebuild (4 + 1) stopped by an unmount half-way
# resumes at its checkpoint on the next mount.  The rebuild goes by member
# sector, as md's does, so far copies resume as near ones do.
r10resume() {
	local t=r10$1 logf
	log "$t: a raid10 $1 rebuild stopped half-way resumes at its checkpoint"
	mk_conf "$D/$t.conf" level=10 layout="$1" members="$(members 4 "$t-")" spares="$t-s0.img" \
		member_size=16M chunk_size=64K metadata=1.2
	create_array --assume-clean "$D/$t.conf"
	start_array "$D/$t.conf" "$MNT"
	fio_verify "$IMG" --rw=write --bs=64k --size=8M --name=fill
	echo 2000 >"$MNT/md/sync_speed_min"
	echo 2000 >"$MNT/md/sync_speed_max"
	echo faulty >"$MNT/md/dev-$t-2.img/state"
	wait_for "$t: rebuild under way" \
		'done=$(cut -d/ -f1 <"$MNT/md/sync_completed" 2>/dev/null); [ "${done:-0}" -gt 4096 ] 2>/dev/null'
	stop_array "$MNT"
	if [ -n "$(command -v mdadm)" ]; then
		mdadm --examine "$D/$t-s0.img" >"$WORK/examine" 2>&1
		grep -q "Recovery Offset" "$WORK/examine" ||
			fail "$t: mdadm sees no recovery offset on the spare: $(cat "$WORK/examine")"
	fi
	start_assemble array.img "$MNT" "$D/$t-0.img" "$D/$t-1.img" "$D/$t-s0.img" "$D/$t-3.img"
	wait_for "$t: resumed rebuild" '[ "$(val degraded)" = 0 ] && [ "$(val sync_action)" = idle ]'
	logf=$(daemon_log_file "$MNT")
	vlog "$t: $(grep -E 'recover|rebuil' "$logf")"
	grep -q "recover started at sector [1-9][0-9]* of" "$logf" ||
		fail "$t: the rebuild did not resume at its checkpoint: $(grep -i recover "$logf")"
	echo check >"$MNT/md/sync_action"
	wait_sync_idle "$MNT" "$t: check"
	check '[ "$(val mismatch_cnt)" = 0 ]' "$t: check after the resumed rebuild counts 0"
	fio_verify --verify_only "$IMG" --rw=write --bs=64k --size=8M --name=fill
	stop_array "$MNT"
}
r10resume n2
r10resume f2
full r10resume o2

log "refusals"
mk_conf "$D/bad.conf" level=5 members="$(members 4 bad-)" spares="bad-s0.img" member_size=16M chunk_size=64K metadata=1.2
create_array --assume-clean "$D/bad.conf"
truncate -s 1M "$D/bad-s0.img"
expect_fail "$RAIDFUSE" mount -f "$D/bad.conf" "$MNT"
# Its superblock (read as every file the config names is) records more
# than the file holds now.
check '[[ "$OUT" == *"spare 0 ("*bad-s0.img* && "$OUT" == *"past the end of the member"* ]]' \
	"a small spare is refused by name: $OUT"
truncate -s 16M "$D/bad-s0.img"
start_array "$D/bad.conf" "$MNT"
expect_fail sh -c "echo remove >'$MNT/md/dev-bad-0.img/state'"
expect_fail sh -c "echo bogus >'$MNT/md/dev-bad-0.img/state'"
expect_fail sh -c "echo '$D/bad-1.img' >'$MNT/md/new_dev'"
truncate -s 1M "$D/small.img"
expect_fail sh -c "echo '$D/small.img' >'$MNT/md/new_dev'"
check '[ "$(val degraded)" = 0 ]' "refusals change nothing"
stop_array "$MNT"
exit 0
