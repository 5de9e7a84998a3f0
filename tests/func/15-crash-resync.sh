#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 15-crash-resync: the daemon is killed (kill -9) while writes run; the next
# mount finds the superblocks dirty and resyncs by itself, as md does.
#
# For raid1, raid5 and raid6 (RF_QUICK=1: raid5 only), members with 1.2
# superblocks, created --assume-clean:
# 1. The mount starts no resync (none due).  Two writers run at once: a
#    loop of dd (O_DIRECT, fsync) writing numbered 4 KiB blocks, each
#    holding its own number, and logging the number only after dd returned
#    (the write was acknowledged); fio writing random data elsewhere (16-24 MiB).
#    kill -9 mid-writes: the superblocks say active (dirty).
# 2. The next mount says the array was not cleanly shut down and starts a
#    resync from sector 0 without being asked; it ends (sync_action idle,
#    resync_start none, superblocks clean); a check counts 0 mismatches;
#    every acknowledged block reads back with its number.
# 3. (full runs, and raid5 always) --freeze: the resync that is due (set
#    with resync_start 0) does not start; started by hand at a slow speed,
#    idle stops it and resync_start says where; started again, it resumes
#    there; the daemon is killed once a later checkpoint is recorded: the
#    next mount says where it stopped and resumes there, not at 0; check
#    0, blocks still right.
# 4. raid6 with one member failed and the daemon killed: mount --force
#    resyncs with that member missing (r6_one_missing, below).
# Then: create without --assume-clean makes the first mount resync; with
# --freeze it stays due (frozen) across a clean unmount.
. "$(dirname "$0")/lib.sh"
requires fuse fio

MNT=$WORK/mnt
IMG=$MNT/array.img
NBLK=2048               # numbered blocks in the first 8 MiB of the image
STEP=7919               # block k goes to (k * STEP) % NBLK: each once
MEMBER=32M

# field FILE LABEL: the value after "LABEL : " in examine output.
field() {
	sed -n "s/^ *$2 : //p" "$1" | head -n 1
}

wait_idle() { wait_sync_idle "$MNT" "$1" 120; }

check_zero() {
	echo check >"$MNT/md/sync_action"
	wait_idle "$1: check"
	check '[ "$(val mismatch_cnt)" = 0 ]' "$1: check after the resync: mismatch_cnt $(val mismatch_cnt)"
}

# kill_daemon: kill -9 the daemon serving $MNT, then clear the dead mount.
kill_daemon() {
	kill -9 "$DAEMON_PID"
	wait_daemon_exit "$MNT" --any-status
	fusermount3 -u -z "$MNT" 2>/dev/null || true
}

# states D N [FIRST]: the examine State of members FIRST (0) to N - 1, one word each.
states() {
	local i out=""
	for ((i = ${3:-0}; i < $2; i++)); do
		"$RAIDFUSE" examine "$1/d$i.img" >"$1/ex.txt" || fail "examine $1/d$i.img failed"
		out+="${out:+ }$(field "$1/ex.txt" State)"
	done
	echo "$out"
}

# round NAME N conf keys...: one level's crash, resync and resume.
round() {
	local name=$1 n=$2 D=$WORK/$1 logf acked i cp st
	shift 2
	mkdir -p "$D"
	acked=$D/acked
	: >"$acked"
	mk_conf "$D/raid.conf" metadata=1.2 members="$(members "$n")" member_size=$MEMBER "$@"
	create_array "$D/raid.conf" --assume-clean

	log "$name: kill -9 while dd and fio write"
	start_array "$D/raid.conf" "$MNT"
	logf=$(daemon_log_file "$MNT")
	check '[ "$(val resync_start)" = none ]' "$name: created --assume-clean: no resync due"
	# md's 0: once written the array stays active until the daemon goes,
	# so the kill finds it dirty whatever pace fio keeps on a loaded machine.
	echo 0 >"$MNT/md/safe_mode_delay"
	ack_start "$acked" --iodepth=8
	sleep 0.5
	kill_daemon
	ack_wait "$acked" "$name"
	! grep -q "resync due" "$logf" || fail "$name: a resync started on a clean array: $(cat "$logf")"
	st=$(states "$D" "$n")
	[[ $st == *active* ]] || fail "$name: superblocks after kill -9 during writes: $st, want active (dirty)"
	log "$name: $(wc -l <"$acked") blocks acknowledged, superblocks: $st"

	start_array "$D/raid.conf" "$MNT"
	logf=$(daemon_log_file "$MNT")
	wait_idle "$name: the automatic resync"
	grep -q "was not cleanly shut down: resync needed (due from sector 0)" "$logf" ||
		fail "$name: the mount did not find the array dirty: $(cat "$logf")"
	grep -q "resync due from sector 0: starting it" "$logf" && grep -q "resync started at sector 0 of" "$logf" ||
		fail "$name: no automatic resync: $(cat "$logf")"
	grep -q "resync done at sector" "$logf" || fail "$name: the resync did not complete: $(cat "$logf")"
	check '[ "$(val resync_start)" = none ]' "$name: resync_start after the resync"
	st=$(states "$D" "$n")
	[[ $st != *active* ]] || fail "$name: superblocks after the resync: $st, want clean"
	check_zero "$name"
	ack_verify "$acked" "$name"
	stop_array "$MNT"
	log "$name: resynced by itself, check 0"

	[ "${RF_QUICK:-0}" = 1 ] && [ "$name" != raid5 ] && return 0
	log "$name: frozen keeps a due resync; a killed resync resumes at its checkpoint"
	start_array "$D/raid.conf" "$MNT" --freeze
	logf=$(daemon_log_file "$MNT")
	echo 0 >"$MNT/md/resync_start"
	check '[ "$(val sync_action)" = frozen ]' "$name: --freeze"
	sleep 0.5
	check '[ "$(val sync_action)" = frozen ] && [ "$(val resync_start)" = 0 ]' "$name: frozen: nothing started"
	echo 8000 >"$MNT/md/sync_speed_max"
	echo resync >"$MNT/md/sync_action"
	sleep 0.3
	# idle stops it and records where: the next resync starts there.
	echo idle >"$MNT/md/sync_action"
	check '[ "$(val sync_action)" = idle ]' "$name: idle stops the resync"
	cp=$(val resync_start)
	[[ $cp =~ ^[1-9][0-9]*$ ]] || fail "$name: resync_start after idle: '$cp', want where it stopped"
	echo resync >"$MNT/md/sync_action"
	for ((i = 0; i < 100; i++)); do
		[ "$(grep -c "resync started at sector" "$logf")" = 2 ] && break
		sleep 0.05
	done
	grep -q "resync started at sector $cp of" "$logf" || fail "$name: the resync did not resume at $cp: $(cat "$logf")"
	for ((i = 0; i < 200; i++)); do
		[ "$(val resync_start)" != "$cp" ] && break
		sleep 0.05
	done
	cp=$(val resync_start)
	[[ $cp =~ ^[1-9][0-9]*$ ]] && [ "$(val sync_action)" = resync ] ||
		fail "$name: no checkpoint while the resync runs (resync_start $cp, sync_action $(val sync_action))"
	kill_daemon
	start_array "$D/raid.conf" "$MNT"
	logf=$(daemon_log_file "$MNT")
	wait_idle "$name: the resumed resync"
	grep -q "a resync was stopped at sector $cp: it resumes there" "$logf" ||
		grep -q "a resync was stopped at sector [1-9][0-9]*: it resumes there" "$logf" ||
		fail "$name: the mount did not find the checkpoint ($cp): $(cat "$logf")"
	grep -q "resync started at sector [1-9][0-9]* of" "$logf" ||
		fail "$name: the resync did not resume at its checkpoint: $(cat "$logf")"
	grep -q "resync done at sector" "$logf" || fail "$name: the resumed resync did not complete: $(cat "$logf")"
	check_zero "$name (resumed)"
	ack_verify "$acked" "$name (resumed)"
	stop_array "$MNT"
	st=$(states "$D" "$n")
	[[ $st != *active* ]] || fail "$name: superblocks after the resumed resync: $st, want clean"
	log "$name: $(grep -o 'resync started at sector [0-9]*' "$logf")"
	rm -f "$D"/d*.img
}

full round raid1 2 level=1
round raid5 4 level=5 chunk_size=64K
full round raid6 5 level=6 chunk_size=64K

# r6_one_missing: raid6 (5 members, left-symmetric, chunk 64K), member
# d0 failed, the daemon (detached, as a user starts it) killed mid-writes.
# Tears of that crash are made behind the array: in 24 rows of the
# pattern's first 8 MiB, the parity the resync compares (Q where d0 holds
# data or P, P where d0 holds Q) is overwritten, in rows where d2 (the
# second to fail) holds neither.  mount --force: the resync runs with d0
# missing, as md's does while fewer members than max_degraded are gone
# (d0's blocks from P, Q rewritten), check counts 0; then d2 fails and
# every byte of the pattern reads back.  The control, first, on copies
# of the same members: --freeze keeps the resync due, d2 fails, and the
# pattern reads wrong: the tears are there to find.
r6_one_missing() {
	local D=$WORK/r6miss off row m k=0 w dsec fio_pid
	mkdir -p "$D"
	mk_conf "$D/raid.conf" metadata=1.2 level=6 layout=left-symmetric chunk_size=64K members="$(members 5)" \
		member_size=$MEMBER
	create_array "$D/raid.conf" --assume-clean
	truncate -s 8M "$D/ref"
	"$RFHELPER" fill "$D/ref" $((8 << 11)) >/dev/null || fail "r6miss: writing the reference failed"
	start_array_daemon "$D/raid.conf" "$MNT" --log "$D/log1"
	# Active from the first write until the kill (md's 0).
	echo 0 >"$MNT/md/safe_mode_delay"
	"$RFHELPER" fill "$IMG" $((8 << 11)) >/dev/null || fail "r6miss: writing the pattern failed"
	"$RAIDFUSE" ctl "$MNT" fail d0.img || fail "r6miss: ctl fail d0.img refused"
	fio --name=bg --filename="$IMG" --rw=randwrite --bs=4k --offset=16M --size=8M --direct=1 \
		--ioengine=libaio --iodepth=8 --time_based --runtime=30 >/dev/null 2>&1 &
	fio_pid=$!
	# Killed once writes are under way: the superblocks of the members in
	# service say active (d0's, failed, is written no more).
	for ((w = 0; w < 300; w++)); do
		[ "$(states "$D" 5 1)" = "active active active active" ] && break
		sleep 0.1
	done
	sleep 0.5
	kill_daemon
	kill "$fio_pid" 2>/dev/null || true
	wait "$fio_pid" 2>/dev/null || true
	[ "$(states "$D" 5 1)" = "active active active active" ] ||
		fail "r6miss: superblocks of d1-d4 after kill -9 during writes: $(states "$D" 5 1)"
	dsec=$("$RAIDFUSE" examine "$D/d1.img" | sed -n 's/^ *Data Offset : \([0-9]*\) sectors.*/\1/p')
	[[ $dsec =~ ^[0-9]+$ ]] || fail "r6miss: no Data Offset in examine d1.img"
	# Row r: P on member 4 - r % 5, Q on the next (md's left-symmetric
	# raid6); d0 is Q where r % 5 = 0, P where r % 5 = 4.
	for ((row = 0; row < 40; row++)); do
		case $((row % 5)) in
		0) m=4 ;;                       # d0 holds Q: P is compared
		3) continue ;;                  # Q on d2
		*) m=$(((5 - row % 5) % 5)) ;;  # Q, on member (4 - r % 5 + 1) % 5
		esac
		off=$(((dsec + row * 128 + 8 * (row % 16)) * 512))
		dd if=/dev/urandom of="$D/d$m.img" bs=4096 count=1 seek=$((off / 4096)) conv=notrunc status=none ||
			fail "r6miss: tearing row $row on d$m failed"
		k=$((k + 1))
	done
	for m in 0 1 2 3 4; do cp --sparse=always "$D/d$m.img" "$D/c$m.img"; done

	log "r6miss: control: --freeze leaves the resync due; d2 fails; the pattern reads the tears"
	start_array_daemon "$D/raid.conf" "$MNT" --force --freeze --log "$D/log2"
	check '[ "$(val sync_action)" = frozen ] && [ "$(val resync_start)" != none ]' \
		"r6miss: --freeze: the resync is due and waits"
	"$RAIDFUSE" ctl "$MNT" fail d2.img || fail "r6miss: ctl fail d2.img refused"
	"$RFHELPER" same "$IMG" "$D/ref" $((8 << 20)) >"$D/same" 2>&1 &&
		fail "r6miss: control: with $k rows torn and no resync, the pattern read back whole"
	stop_array "$MNT"
	for m in 0 1 2 3 4; do mv "$D/c$m.img" "$D/d$m.img"; done

	log "r6miss: mount --force resyncs with d0 missing; then d2 fails"
	start_array_daemon "$D/raid.conf" "$MNT" --force --log "$D/log3"
	wait_idle "r6miss: the resync with d0 missing"
	grep -q "resync done at sector" "$D/log3" || fail "r6miss: the resync did not run to the end: $(cat "$D/log3")"
	check '[ "$(val resync_start)" = none ]' "r6miss: resync_start after the resync"
	check_zero "r6miss (d0 missing)"
	"$RAIDFUSE" ctl "$MNT" fail d2.img || fail "r6miss: ctl fail d2.img refused"
	"$RFHELPER" same "$IMG" "$D/ref" $((8 << 20)) >"$D/same" 2>&1 ||
		fail "r6miss: after the resync and d2's failure the pattern reads wrong: $(cat "$D/same")"
	stop_array "$MNT"
	log "r6miss: $k torn rows resynced with one member missing; a second failure reads them right"
}
build_helper
r6_one_missing

log "create without --assume-clean: the first mount resyncs; --freeze keeps it due"
D=$WORK/fresh
mkdir -p "$D"
mk_conf "$D/raid.conf" metadata=1.2 level=5 chunk_size=64K members="$(members 4)" member_size=$MEMBER
create_array "$D/raid.conf"
start_array "$D/raid.conf" "$MNT" --freeze
sleep 0.5
check '[ "$(val sync_action)" = frozen ] && [ "$(val resync_start)" = 0 ]' "created, --freeze: frozen, due from 0"
stop_array "$MNT"
! grep -q "resync started" "$(daemon_log_file "$MNT")" || fail "--freeze: a resync started"
check '[ "$(states "$D" 4)" = "active active active active" ]' "--freeze: still due after the unmount"
start_array "$D/raid.conf" "$MNT"
wait_idle "created: the first resync"
grep -q "resync due from sector 0: starting it" "$(daemon_log_file "$MNT")" ||
	fail "created: no automatic resync: $(cat "$(daemon_log_file "$MNT")")"
check '[ "$(val resync_start)" = none ]' "created: resync_start after the first resync"
check '[ "$(states "$D" 4)" = "clean clean clean clean" ]' "created: superblocks clean once resynced"
check_zero "created"
log "md/safe_mode_delay: 0 keeps a written array active; a delay marks it clean again"
check '[ "$(val safe_mode_delay)" = 0.200 ]' "safe_mode_delay by default: $(val safe_mode_delay)"
! echo 200ms 2>/dev/null >"$MNT/md/safe_mode_delay" || fail "safe_mode_delay took '200ms'"
echo 0 >"$MNT/md/safe_mode_delay"
check '[ "$(val safe_mode_delay)" = 0.000 ]' "safe_mode_delay after 0: $(val safe_mode_delay)"
dd if=/dev/urandom of="$IMG" bs=4k count=1 seek=9 conv=notrunc oflag=direct status=none || fail "a write failed"
sleep 1
check '[ "$(states "$D" 4)" = "active active active active" ]' "safe_mode_delay 0: idle 1 s after a write"
echo 0.05 >"$MNT/md/safe_mode_delay"
WAIT_SECS=10 wait_for "safe_mode_delay 0.05: clean again" '[ "$(states "$D" 4)" = "clean clean clean clean" ]'
stop_array "$MNT"
log "ok"
