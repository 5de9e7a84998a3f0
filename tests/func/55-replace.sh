#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 55-replace: hot replace (mdadm --replace, md's want_replacement): a
# spare is filled with a member's data while the member serves and fio
# writes, then takes its slot; the array never loses redundancy.
#
# For raid1 (2 + 1 spare), raid5 (4 + 1), raid6 (5 + 1) and raid10 (near 2,
# 4 + 1), daemonized (as users run it), the copy paced slow so that fio's
# random writes (crc32c verify) land in rows copied and rows not copied yet:
# 1. `raidfuse ctl MNT replace PATH`: state reads in_sync,want_replacement
#    on the member and spare,replacement on the spare, mdstat marks it (R),
#    status --detail says "spare rebuilding" (mdadm's words), sync_action
#    reads recover, and degraded stays 0 all along (sampled).
# 2. Once copied: the spare in the member's slot, in sync; the member
#    listed faulty without a slot; a check counts 0; fio's verify passes.
# 3. The replacement holds the data on its own: another member fails and
#    the data still verifies; assembled again from the files (the spare in
#    the member's place), it verifies.  With RF_MD_JUDGE=1 kernel md
#    assembles the raid5 members, reads the same bytes and counts 0.
# 4. Negative control: RAIDFUSE_TEST_BREAK=replace-no-twin (writes of the
#    slot no longer reach the replacement during the copy) on raid5: the
#    same steps find what is lost (a check counts mismatches).
# Then what breaks a replacement, on raid5 without fio:
# - the replacement's writes fail (fault injection): it is detached,
#   faulty; the slot keeps its member; degraded 0; the data verifies;
# - the member being replaced fails: the replacement becomes a spare
#   again and rebuilds the slot; the data verifies;
# - no spare yet: the replacement starts when one is added.
# And the refusals: raid0, a spare, a check while a copy runs.
. "$(dirname "$0")/lib.sh"
requires fuse fio
array_dirs
WAIT_SECS=90

judge=0
md_judge && judge=1

# serve CONF: mount CONF on MNT daemonized, its log in a file (--log).
serve() {
	local logf=$WORK/$(basename "$1" .conf).log
	start_array_daemon "$1" "$MNT" --log "$logf"
	_LOG_OF[$MNT]=$logf
}

# round NAME LEVEL N VICTIM [LAYOUT] [broken]
round() {
	local name=$1 level=$2 n=$3 v=$4 layout=${5:-} broken=${6:-} fio_pid i deg_seen=0 st
	local extra=()
	[ -z "$layout" ] || extra=(layout="$layout")
	log "$name: replace member $v while fio writes${broken:+ (RAIDFUSE_TEST_BREAK=replace-no-twin)}"
	mk_conf "$D/$name.conf" level="$level" members="$(members "$n" "$name-")" \
		spares="$(members 1 "$name-s")" member_size=24M chunk_size=64K metadata=1.2 "${extra[@]}"
	create_array --assume-clean "$D/$name.conf"
	if [ -n "$broken" ]; then
		RAIDFUSE_TEST_BREAK=replace-no-twin serve "$D/$name.conf"
	else
		serve "$D/$name.conf"
	fi
	# Slow: the copy overlaps the writes (16 MiB a member at 3 MiB/s).
	echo 3000 >"$MNT/md/sync_speed_max"
	local mib=$(($(fsize "$IMG") / 1048576 - 1))
	local job=(--rw=randwrite --bs=4k --size="${mib}M" --iodepth=8 --name=w)
	fio_verify "$IMG" --rw=write --bs=1M --size="${mib}M" --name=fill
	# Paced to last about as long as the copy (8 s), so that writes land
	# in rows copied and in rows not yet copied.
	(fio_verify "$IMG" "${job[@]}" --rate_iops=$((mib * 256 / 8))) &
	fio_pid=$!
	sleep 1
	"$RAIDFUSE" ctl "$MNT" replace "$D/$name-$v.img" || fail "$name: raidfuse ctl replace $name-$v.img"
	wait_for "$name: copy under way" '[ "$(val sync_action)" = recover ]'
	check '[ "$(dev_state "$name-$v.img")" = in_sync,want_replacement ]' \
		"$name: the member reads $(dev_state "$name-$v.img")"
	check '[ "$(dev_state "$name-s0.img")" = spare,replacement ]' \
		"$name: the spare reads $(dev_state "$name-s0.img")"
	check 'grep -q " $name-s0.img\[$n\](R)" "$MNT/mdstat"' "$name: mdstat marks the replacement (R): $(cat "$MNT/mdstat")"
	check '"$RAIDFUSE" status --detail "$MNT" | grep -q "spare rebuilding .*$name-s0.img"' \
		"$name: status --detail lists the replacement as mdadm does: $("$RAIDFUSE" status --detail "$MNT")"
	vlog "$name: mdstat during the copy:"$'\n'"$(cat "$MNT/mdstat")"
	# Redundancy all along: sampled while fio runs.
	while kill -0 "$fio_pid" 2>/dev/null; do
		[ "$(val degraded)" = 0 ] || deg_seen=1
		sleep 0.2
	done
	wait "$fio_pid" || fail "$name: fio failed during the replacement"
	check '[ $deg_seen = 0 ]' "$name: degraded stayed 0 during the copy"
	echo 0 >"$MNT/md/sync_speed_max"
	wait_for "$name: replaced" '[ "$(cat "$MNT/md/dev-$name-s0.img/slot")" = "$v" ] && [ "$(val sync_action)" = idle ]'
	check '[ "$(dev_state "$name-s0.img")" = in_sync ]' "$name: the replacement reads $(dev_state "$name-s0.img")"
	check '[ "$(dev_state "$name-$v.img")" = faulty ]' "$name: the old member reads $(dev_state "$name-$v.img")"
	check '[ "$(cat "$MNT/md/dev-$name-$v.img/slot")" = none ]' "$name: the old member has no slot"
	check '[ "$(val degraded)" = 0 ]' "$name: degraded 0 after the replacement"
	echo check >"$MNT/md/sync_action"
	wait_sync_idle "$MNT" "$name: check"
	if [ -n "$broken" ]; then
		# The control: writes that missed the replacement show.
		[ "$(val mismatch_cnt)" != 0 ] ||
			fail "$name: with writes kept from the replacement, a check still counts 0 (the test cannot see a lost write)"
		log "$name: without the replacement's writes a check counts $(val mismatch_cnt): the test sees it"
		stop_array "$MNT"
		return 0
	fi
	check '[ "$(val mismatch_cnt)" = 0 ]' "$name: check after the replacement counts $(val mismatch_cnt)"
	fio_verify --verify_only "$IMG" "${job[@]}"
	# The replacement alone holds its slot's data: another member fails.
	local other=$(((v + 1) % n))
	echo faulty >"$MNT/md/dev-$name-$other.img/state"
	check '[ "$(val degraded)" = 1 ]' "$name: degraded 1 after member $other fails"
	fio_verify --verify_only "$IMG" "${job[@]}"
	stop_array "$MNT"
	# Assembled from the files, the spare in the member's place.
	local files=() m
	for ((i = 0; i < n; i++)); do
		m=$D/$name-$i.img
		[ "$i" != "$v" ] || m=$D/$name-s0.img
		files+=("$m")
	done
	start_assemble array.img "$MNT" "${files[@]}"
	fio_verify --verify_only "$IMG" "${job[@]}"
	if [ $judge = 1 ] && [ "$level" = 5 ]; then
		sum=$(dd if="$IMG" bs=1M iflag=direct status=none | sha256sum | cut -d' ' -f1)
		stop_array "$MNT"
		# the member failed in step 3 is faulty now: kernel md leaves it out
		"$MDJUDGE" --check "${files[@]}" >"$D/judge.txt" 2>&1 || fail "$name: md-judge: $(cat "$D/judge.txt")"
		grep -q "JUDGE sha256=$sum " "$D/judge.txt" || fail "$name: kernel md reads other bytes: $(cat "$D/judge.txt")"
		log "$name: kernel md assembles the replaced array, same sha256"
	else
		stop_array "$MNT"
	fi
}

round r1 1 2 1
round r5 5 4 1
full round r6 6 5 2
full round r10 10 4 2 n2
round r5x 5 4 1 "" broken

# fill NAME: raid5 4 + 1 spare, served, written (crc32c headers).
fill() {
	mk_conf "$D/$1.conf" level=5 members="$(members 4 "$1-")" spares="$(members "${2:-1}" "$1-s")" \
		member_size=16M chunk_size=64K metadata=1.2
	create_array --assume-clean "$D/$1.conf"
	serve "$D/$1.conf"
	fio_verify "$IMG" --rw=write --bs=64k --size=40M --name=fill
}

log "the replacement's writes fail: it is detached, faulty; the slot keeps its member"
fill rf
echo 2000 >"$MNT/md/sync_speed_max"
echo "error=EIO ops=write" >"$MNT/md/dev-rf-s0.img/fault" || fail "rf: fault injection on the spare"
"$RAIDFUSE" ctl "$MNT" replace rf-2.img
wait_for "rf: the replacement detached" '[ "$(dev_state rf-s0.img)" = faulty ]'
check '[ "$(dev_state rf-2.img)" = in_sync,want_replacement ]' "rf: the member reads $(dev_state rf-2.img)"
check '[ "$(val degraded)" = 0 ]' "rf: degraded 0"
log_has "$MNT" "replacement .*rf-s0.img of slot 2: .*(failed|error)" || fail "rf: no log line names the failed replacement"
fio_verify --verify_only "$IMG" --rw=write --bs=64k --size=40M --name=fill
# -want_replacement: taken back, nothing more is tried.
echo -want_replacement >"$MNT/md/dev-rf-2.img/state"
check '[ "$(dev_state rf-2.img)" = in_sync ]' "rf: -want_replacement: $(dev_state rf-2.img)"
stop_array "$MNT"

log "the member being replaced fails: the replacement rebuilds its slot"
fill rm
echo 2000 >"$MNT/md/sync_speed_max"
"$RAIDFUSE" ctl "$MNT" replace rm-1.img
wait_for "rm: copy under way" '[ "$(dev_state rm-s0.img)" = spare,replacement ]'
echo faulty >"$MNT/md/dev-rm-1.img/state"
echo 0 >"$MNT/md/sync_speed_max"
wait_for "rm: rebuilt" '[ "$(val degraded)" = 0 ] && [ "$(val sync_action)" = idle ] &&
	[ "$(cat "$MNT/md/dev-rm-s0.img/slot")" = 1 ]'
check '[ "$(dev_state rm-s0.img)" = in_sync ]' "rm: the spare reads $(dev_state rm-s0.img)"
fio_verify --verify_only "$IMG" --rw=write --bs=64k --size=40M --name=fill
echo check >"$MNT/md/sync_action"
wait_sync_idle "$MNT" "rm: check"
check '[ "$(val mismatch_cnt)" = 0 ]' "rm: check counts $(val mismatch_cnt)"
stop_array "$MNT"

log "no spare yet: the replacement starts when one is added; a check waits for it"
fill rn 0
echo 2000 >"$MNT/md/sync_speed_max"
"$RAIDFUSE" ctl "$MNT" replace rn-3.img
check '[ "$(dev_state rn-3.img)" = in_sync,want_replacement ]' "rn: the member reads $(dev_state rn-3.img)"
check '[ "$(val sync_action)" = idle ]' "rn: nothing runs without a spare"
truncate -s 16M "$D/rn-new.img"
"$RAIDFUSE" ctl "$MNT" add "$D/rn-new.img" || fail "rn: ctl add"
wait_for "rn: copy under way" '[ "$(dev_state rn-new.img)" = spare,replacement ]'
expect_fail "$RAIDFUSE" ctl "$MNT" check
echo 0 >"$MNT/md/sync_speed_max"
wait_for "rn: replaced" '[ "$(cat "$MNT/md/dev-rn-new.img/slot")" = 3 ] && [ "$(val sync_action)" = idle ]'
fio_verify --verify_only "$IMG" --rw=write --bs=64k --size=40M --name=fill
"$RAIDFUSE" ctl --wait "$MNT" check >/dev/null 2>&1 || fail "rn: check after the replacement"
check '[ "$(val mismatch_cnt)" = 0 ]' "rn: check counts $(val mismatch_cnt)"

log "refusals: a spare; raid0"
truncate -s 16M "$D/rn-s9.img"
"$RAIDFUSE" ctl "$MNT" add "$D/rn-s9.img" || fail "rn: ctl add"
expect_fail "$RAIDFUSE" ctl "$MNT" replace rn-s9.img
[[ $OUT == *"busy"* ]] || fail "replace of a spare: $OUT"
log_has "$MNT" "want_replacement: .*rn-s9.img is not in a slot" || fail "replace of a spare: no log line says why"
stop_array "$MNT"

mk_conf "$D/z.conf" level=0 members="$(members 2 z-)" member_size=8M chunk_size=64K metadata=1.2
create_array "$D/z.conf"
serve "$D/z.conf"
expect_fail "$RAIDFUSE" ctl "$MNT" replace z-0.img
[[ $OUT == *"not supported"* ]] || fail "replace on raid0: $OUT"
log_has "$MNT" "raid0 has no redundancy" || fail "raid0: no log line says why replace was refused"
stop_array "$MNT"
