#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 56-replace-resume: a hot replace cut short resumes where md's superblocks
# say it stood, and the superblocks say it as kernel md does.
#
# raid5, 4 members + 1 spare, daemonized (as users run it): member 1 is
# being replaced by the spare, slowly, while numbered blocks are written
# with O_DIRECT and fsync (each acknowledged one logged) and fio writes
# beside them; the daemon is killed (kill -9) once the replacement's
# superblock records a checkpoint.  Then:
#  - examine (mdadm's words): the spare reads "Replacement device 1" with
#    md's replacement feature bit (0x10) and a Recovery Offset R > 0; the
#    member still "Active device 1".  md's own mdadm --examine, where
#    installed, reads the same;
#  1. mount CONFIG: the copy resumes at R (the log says so), the spare is
#     spare,replacement until it takes slot 1; the member is then faulty,
#     the resync the crash made due runs after, a check counts 0, every
#     acknowledged block and the untouched regions read back, also with
#     member 2 failed (the replacement holds slot 1's data by itself);
#  2. assemble (--force: dirty and degraded) without the member being
#     replaced: the replacement takes slot 1 and is rebuilt from R (md's
#     raid5_run does the same); same checks;
#  3. control: RAIDFUSE_TEST_BREAK=replace-resume-late resumes the copy
#     past R: the regions nobody wrote no longer read back, so the test
#     sees a resume point that skips data (a check cannot: the resync the
#     kill made due computes parity from the replacement);
#  4. kernel md's own mid-replace array (tests/data/md-images,
#     r5-ls-4d-64k-midreplace: mdadm --replace stopped at ~40 %):
#     raidfuse assemble resumes the copy at md's recovery_offset, the
#     pattern reads back, the replacement takes slot 1, a check counts 0,
#     the pattern reads back with another member failed.
# With RF_MD_JUDGE=1 kernel md (mdpeer, in QEMU) assembles the members a
# killed raidfuse left mid-copy and reads what raidfuse reads.
. "$(dirname "$0")/lib.sh"
requires fuse fio xz
array_dirs
build_helper
WAIT_SECS=90
NBLK=2048               # numbered blocks in the first 8 MiB of the image
STEP=7919               # block k goes to (k * STEP) % NBLK: each once

judge=0
md_judge && judge=1

# serve CONF [env]: mount CONF on MNT daemonized, its log in a file.
serve() {
	local logf=$WORK/$(basename "$1" .conf).$RANDOM.log
	start_array_daemon "$1" "$MNT" --log "$logf"
	_LOG_OF[$MNT]=$logf
}

# exam FILE KEY: what raidfuse examine prints for KEY.
exam() {
	"$RAIDFUSE" examine "$1" | sed -n "s/^ *$2 : //p"
}

# untouched: sha256 of the image's regions no writer touches after the
# fill (8-16 MiB and 24 MiB to the end).
untouched() {
	{
		dd if="$IMG" bs=1M skip=8 count=8 iflag=direct status=none
		dd if="$IMG" bs=1M skip=24 iflag=direct status=none
	} | sha256sum
}

# mid_copy NAME: the array killed in the middle of member 1's replacement,
# with acknowledged writes logged in $WORK/NAME.acked; R is where the
# replacement's superblock says its copy stood.
mid_copy() {
	local name=$1 i
	mk_conf "$D/$name.conf" level=5 members="$(members 4 "$name-")" spares="$(members 1 "$name-s")" \
		member_size=32M chunk_size=64K metadata=1.2
	create_array --assume-clean "$D/$name.conf"
	serve "$D/$name.conf"
	dd if=/dev/urandom of="$IMG" bs=1M count=$(($(fsize "$IMG") >> 20)) oflag=direct conv=notrunc,fsync \
		status=none
	SUM=$(untouched)
	echo 200 >"$MNT/md/sync_speed_max"
	"$RAIDFUSE" ctl "$MNT" replace "$D/$name-1.img" || fail "$name: ctl replace"
	wait_for "$name: the replacement records a checkpoint" \
		'[ "$(exam "$D/$name-s0.img" "Recovery Offset" | cut -d" " -f1)" -gt 0 ] 2>/dev/null'
	ack_start "$WORK/$name.acked"
	sleep 1
	[ "$(val sync_action)" = recover ] || fail "$name: the copy ended before the kill ($(val sync_completed))"
	kill -9 "$DAEMON_PID"
	wait_daemon_exit "$MNT" --any-status
	ack_wait "$WORK/$name.acked" "$name"
	fusermount3 -u -z "$MNT" 2>/dev/null || true
	R=$(exam "$D/$name-s0.img" "Recovery Offset" | cut -d' ' -f1)
	check '[ "$(exam "$D/$name-s0.img" "Device Role")" = "Replacement device 1" ]' \
		"$name: the spare's superblock: $(exam "$D/$name-s0.img" "Device Role")"
	check '[ $(($(exam "$D/$name-s0.img" "Feature Map") & 0x12)) = $((0x12)) ]' \
		"$name: the spare's feature map $(exam "$D/$name-s0.img" "Feature Map") lacks replacement and recovery offset"
	check '[ "$(exam "$D/$name-0.img" "Array State" | cut -d" " -f1)" = ARAA ]' \
		"$name: array state $(exam "$D/$name-0.img" "Array State") (mdadm marks a slot being replaced R)"
	check '[ "$(exam "$D/$name-1.img" "Device Role")" = "Active device 1" ]' \
		"$name: the member's superblock: $(exam "$D/$name-1.img" "Device Role")"
	if command -v mdadm >/dev/null; then
		mdadm --examine "$D/$name-s0.img" 2>&1 | grep -q "Device Role : Replacement device 1" ||
			fail "$name: mdadm --examine: $(mdadm --examine "$D/$name-s0.img" 2>&1)"
		mdadm --examine "$D/$name-s0.img" 2>&1 | grep -q "Recovery Offset : $R sectors" ||
			fail "$name: mdadm --examine does not read recovery offset $R: $(mdadm --examine "$D/$name-s0.img" 2>&1)"
	fi
	log "$name: killed mid-copy; the replacement's superblock says it stood at sector $R"
}

# settled NAME SLOT1: the replacement (or the rebuilt device) in slot 1, no
# sync running, nothing due; then the checks every round makes.
settled() {
	local name=$1
	echo 0 >"$MNT/md/sync_speed_max"
	wait_for "$name: slot 1 taken, everything synced" \
		'[ "$(cat "$MNT/md/dev-$name-s0.img/slot")" = 1 ] && [ "$(val sync_action)" = idle ] &&
		 [ "$(val resync_start)" = none ] && [ "$(val degraded)" = 0 ]'
	check '[ "$(dev_state "$name-s0.img")" = in_sync ]' "$name: the replacement reads $(dev_state "$name-s0.img")"
	"$RAIDFUSE" ctl --wait "$MNT" check >/dev/null 2>&1 || fail "$name: check"
	check '[ "$(val mismatch_cnt)" = 0 ]' "$name: check counts $(val mismatch_cnt)"
	# Read with member 2 failed: slot 1's data from the replacement, and
	# member 2's computed with it.
	echo faulty >"$MNT/md/dev-$name-2.img/state"
	check '[ "$(val degraded)" = 1 ]' "$name: degraded 1 after member 2 fails"
	ack_verify "$WORK/$name.acked" "$name with member 2 failed"
	check '[ "$(untouched)" = "$SUM" ]' "$name with member 2 failed: the regions nobody wrote changed"
	stop_array "$MNT"
}

# ---- 1
log "a: mount CONFIG after a kill mid-copy: the copy resumes where the superblock says"
mid_copy a
serve "$D/a.conf"
log_has "$MNT" "recover started at sector $R of " ||
	fail "a: no log line says the copy resumes at $R: $(tail -n 5 "$(daemon_log_file "$MNT")")"
check '[ "$(dev_state a-s0.img)" = spare,replacement ] || [ "$(cat "$MNT/md/dev-a-s0.img/slot")" = 1 ]' \
	"a: the spare reads $(dev_state a-s0.img)"
settled a
check '[ "$(exam "$D/a-s0.img" "Device Role")" = "Active device 1" ]' "a: afterwards the spare's superblock: $(exam "$D/a-s0.img" "Device Role")"
check '[ "$(exam "$D/a-0.img" "Array State" | cut -d" " -f1)" = AA.A ]' \
	"a: with member 2 failed: array state $(exam "$D/a-0.img" "Array State")"

# ---- 2 (not in quick runs)
round_b() {
	log "b: assembled without the member being replaced: the replacement takes its slot, rebuilt from its checkpoint"
	mid_copy b
	# Degraded (slot 1 being rebuilt) and dirty (killed mid-write): md
	# and raidfuse want --force for that (the write hole).
	start_assemble array.img "$MNT" --force "$D/b-0.img" "$D/b-s0.img" "$D/b-2.img" "$D/b-3.img"
	log_has "$MNT" "b-s0.img: slot 1's replacement, its device not here: it takes the slot" ||
		fail "b: no log line says the replacement takes the slot"
	settled b
}
full round_b

# ---- 3
log "c: control: a resume past the checkpoint (RAIDFUSE_TEST_BREAK=replace-resume-late) is seen"
mid_copy c
RAIDFUSE_TEST_BREAK=replace-resume-late serve "$D/c.conf"
echo 0 >"$MNT/md/sync_speed_max"
wait_for "c: slot 1 taken" '[ "$(cat "$MNT/md/dev-c-s0.img/slot")" = 1 ] && [ "$(val sync_action)" = idle ] &&
	[ "$(val resync_start)" = none ]'
# (A check cannot see it: the resync the kill made due recomputes parity
# from what the replacement holds.)
[ "$(untouched)" != "$SUM" ] ||
	fail "c: a copy resumed past its checkpoint still reads back the data (the test cannot see a skipped region)"
log "c: resumed past its checkpoint, the data no longer reads back: the test sees it"
stop_array "$MNT"

# ---- RF_MD_JUDGE=1: kernel md reads what raidfuse left mid-copy
if [ $judge = 1 ]; then
	log "j: kernel md assembles an array raidfuse left mid-copy"
	mid_copy j
	start_assemble array.img "$MNT" --ro "$D/j-0.img" "$D/j-1.img" "$D/j-2.img" "$D/j-3.img" "$D/j-s0.img"
	sum=$(dd if="$IMG" bs=1M iflag=direct status=none | sha256sum | cut -d' ' -f1)
	stop_array "$MNT"
	"$MDJUDGE" --check "$D/j-0.img" "$D/j-1.img" "$D/j-2.img" "$D/j-3.img" "$D/j-s0.img" >"$D/judge.txt" 2>&1 ||
		fail "j: md-judge: $(cat "$D/judge.txt")"
	grep -q "JUDGE sha256=$sum " "$D/judge.txt" || fail "j: kernel md reads other bytes: $(cat "$D/judge.txt")"
	grep -q "JUDGE member=4 .*role=1 " "$D/judge.txt" ||
		fail "j: kernel md does not take the replacement for slot 1: $(cat "$D/judge.txt")"
	log "j: kernel md assembles it with the replacement in slot 1, same sha256: $(grep 'member=4' "$D/judge.txt")"
fi

# ---- 4
md_images
line=$(grep '"name": "r5-ls-4d-64k-midreplace"' "$IMAGES/manifest-pending.jsonl" || true)
[ -n "$line" ] || fail "no r5-ls-4d-64k-midreplace row in $IMAGES/manifest-pending.jsonl"
log "k: kernel md's array stopped mid-replace: raidfuse resumes the copy"
K=$WORK/k
md_unpack "$line" "$K"
rep=$(grep -o '"replacement": {[^}]*}' <<<"$line")
rfile=$(jval "$rep" file)
roff=$(jval "$rep" recovery_offset_sectors)
xz -dc "$IMAGES/$rfile" >"$K/replacement.img"
sectors=$(jval "$line" array_sectors)
check '[ "$(exam "$K/replacement.img" "Device Role")" = "Replacement device 1" ]' \
	"k: md's replacement: $(exam "$K/replacement.img" "Device Role")"
start_assemble array.img "$MNT" "${MEMBERS[@]}" "$K/replacement.img"
log_has "$MNT" "recover started at sector $roff of " ||
	fail "k: no log line says the copy resumes at md's $roff: $(tail -n 5 "$(daemon_log_file "$MNT")")"
"$RFHELPER" pattern "$IMG" "$sectors" >"$WORK/pattern.out" || fail "k: during the copy: $(cat "$WORK/pattern.out")"
wait_for "k: slot 1 taken" '[ "$(cat "$MNT/md/dev-replacement.img/slot")" = 1 ] && [ "$(val sync_action)" = idle ]'
check '[ "$(dev_state role1.img)" = faulty ]' "k: md's replaced member reads $(dev_state role1.img)"
"$RAIDFUSE" ctl --wait "$MNT" check >/dev/null 2>&1 || fail "k: check"
check '[ "$(val mismatch_cnt)" = 0 ]' "k: check counts $(val mismatch_cnt)"
echo faulty >"$MNT/md/dev-role2.img/state"
"$RFHELPER" pattern "$IMG" "$sectors" >"$WORK/pattern.out" ||
	fail "k: the replacement with role 2 failed: $(cat "$WORK/pattern.out")"
stop_array "$MNT"
check '[ "$(exam "$K/replacement.img" "Device Role")" = "Active device 1" ]' \
	"k: afterwards: $(exam "$K/replacement.img" "Device Role")"
log "ok"
