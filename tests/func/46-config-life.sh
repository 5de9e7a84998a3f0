#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 46-config-life: `raidfuse mount CONFIG` assembles as md does, from the
# superblocks, through the array's life; the config names the files.
#
# Every mount here is the daemonized default (no -f).
# 1. raid5, 4 members: a member fails (ctl fail) while writes run, 12 MiB
#    are then written with conv=fsync, and the daemon is killed (kill -9)
#    while the array is still dirty.  The others record the failed member
#    as faulty at events E; its own superblock stays at E - 1, saying it is
#    active.  mount CONFIG leaves it out, as md's super_1_validate does (the
#    freshest superblock's dev_roles): the array is served degraded and
#    every byte written after the failure reads back (degraded and dirty,
#    it is served with --force only, as md).  (Its own role, the
#    rule md does not use, took it back and resynced parity to its stale
#    chunks: a third of those bytes read back old.)
# 2. The config gains a spare; mount CONFIG rebuilds onto it; once rebuilt,
#    the array is stopped and mount CONFIG serves it again, [4/4], the
#    spare in the failed member's role, although the config still lists
#    the failed member in that place; check counts 0 mismatches.
# 3. A config listing the members out of role order serves the same data
#    (the order matters to create only); one that says "missing" for two
#    roles, one of them the role the listed spare took, serves 3 of 4.
# 4. create makes degraded arrays as mdadm does: raid5 with a member
#    missing and raid6 with two are clean (served at once, no --force);
#    raid6 with one missing has its last member written as a spare, which
#    the first mount rebuilds (both syndromes computed: the data verifies
#    with one more member failed).
# 5. A resync that is due but not running (frozen here) reads
#    "resync=PENDING" in mdstat, as md prints it, until it has run.
. "$(dirname "$0")/lib.sh"
requires fuse fio

D=$WORK/a
MNT=$WORK/mnt
IMG=$MNT/array.img
mkdir -p "$D"

examine_field() { "$RAIDFUSE" examine "$1" | sed -n "s/^ *$2 : //p"; }

# pattern TAG MIB: MIB MiB of blocks, each 4 KiB naming TAG and its number.
pattern() {
	local tag=$1 mib=$2 k
	for ((k = 0; k < mib * 256; k++)); do
		printf '%-4095s\n' "$tag $k"
	done
}

kill_daemon() {
	kill -9 "$DAEMON_PID"
	wait_daemon_exit "$MNT" --any-status
	fusermount3 -u -z "$MNT" 2>/dev/null || true
}

log "1. a member failed one event before a crash is left out"
mk_conf "$D/r5.conf" level=5 members="$(members 4)" member_size=32M chunk_size=64K metadata=1.2
create_array --assume-clean "$D/r5.conf"
start_array_daemon "$D/r5.conf" "$MNT"
pattern A 12 | dd of="$IMG" bs=1M iflag=fullblock oflag=direct conv=fsync,notrunc status=none
# wait_state STATE: the superblocks say STATE (clean, active) within 10 s.
wait_state() {
	for ((i = 0; i < 100; i++)); do
		[ "$(examine_field "$D/d0.img" State)" = "$1" ] && return 0
		sleep 0.1
	done
	fail "the superblocks do not say $1 within 10 s: $(examine_field "$D/d0.img" State)"
}
wait_state clean
# A writer beside keeps the array dirty (no clean/dirty event) to the kill,
# and so does a long safe_mode_delay, should the writer stall (a busy
# machine) longer than md's 200 ms.
echo 60 >"$MNT/md/safe_mode_delay"
fio --name=bg --filename="$IMG" --rw=randwrite --bs=4k --offset=16M --size=8M --direct=1 \
	--ioengine=libaio --iodepth=4 --time_based --runtime=60 >/dev/null 2>&1 &
bg=$!
wait_state active
sleep 0.5
"$RAIDFUSE" ctl "$MNT" fail d1.img
wait_mdstat "$MNT" "[4/3] [U_UU]" "after ctl fail"
pattern B 12 | dd of="$IMG" bs=1M iflag=fullblock oflag=direct conv=fsync,notrunc status=none
kill_daemon
wait "$bg" 2>/dev/null || true
e0=$(examine_field "$D/d0.img" Events)
e1=$(examine_field "$D/d1.img" Events)
log "events: d0 $e0, d1 (failed) $e1"
check "[ $((e0 - e1)) = 1 ]" "the failed member is one event behind (the case md's dev_roles rule is for)"
check "[ \"$(examine_field "$D/d1.img" 'Device Role')\" = 'Active device 1' ]" \
	"the failed member's own superblock still says active"
# Degraded and dirty: md starts it only when forced (start_dirty_degraded).
if OUT=$("$RAIDFUSE" mount "$D/r5.conf" "$MNT" 2>&1); then
	fusermount3 -u "$MNT"
	fail "mount CONFIG served the dirty array whole again, the failed member taken back: $OUT"
fi
grep -q "degraded (role(s) 1 missing) and not clean" <<<"$OUT" || fail "dirty degraded, unforced: $OUT"
start_array_daemon "$D/r5.conf" "$MNT" --force
grep -q "d1.img.*records it as faulty: left out" "${_LOG_OF[$MNT]}" ||
	fail "mount CONFIG did not say why d1.img is left out: $(cat "${_LOG_OF[$MNT]}")"
grep -q '\[4/3\] \[U_UU\]' "$MNT/mdstat" || fail "mount CONFIG took the failed member back: $(cat "$MNT/mdstat")"
cmp <(pattern B 12) <(dd if="$IMG" bs=1M count=12 iflag=direct status=none) ||
	fail "bytes written with fsync after the failure read back old"
log "d1.img left out, [4/3] [U_UU], the 12 MiB written after the failure read back"

log "2. the config gains a spare: rebuilt, then mount CONFIG serves it whole"
stop_array "$MNT"
mk_conf "$D/r5.conf" level=5 members="$(members 4)" spares=d4.img member_size=32M chunk_size=64K metadata=1.2
truncate -s 32M "$D/d4.img"
start_array_daemon "$D/r5.conf" "$MNT"
wait_mdstat "$MNT" "[4/4] [UUUU]" "rebuild onto the config's spare"
wait_sync_idle "$MNT" "rebuild"
stop_array "$MNT"
check "[ \"$(examine_field "$D/d4.img" 'Device Role')\" = 'Active device 1' ]" "the spare holds role 1"
start_array_daemon "$D/r5.conf" "$MNT"
grep -q '\[4/4\] \[UUUU\]' "$MNT/mdstat" || fail "after the rebuild, mount CONFIG: $(cat "$MNT/mdstat")"
grep -q "spare 0 (.*d4.img) holds role 1" "${_LOG_OF[$MNT]}" ||
	fail "mount CONFIG did not say where the spare went: $(cat "${_LOG_OF[$MNT]}")"
cmp <(pattern B 12) <(dd if="$IMG" bs=1M count=12 iflag=direct status=none) || fail "data after the rebuild"
"$RAIDFUSE" ctl --wait "$MNT" check >/dev/null
check '[ "$(val mismatch_cnt)" = 0 ]' "check after the rebuild: mismatch_cnt $(val mismatch_cnt)"
stop_array "$MNT"
log "rebuilt onto d4.img; mount CONFIG: [4/4] [UUUU], data right, mismatch_cnt 0"

log "3. members listed out of role order: the superblocks place them"
mk_conf "$D/swap.conf" level=5 members="d4.img d3.img d0.img d2.img" member_size=32M chunk_size=64K metadata=1.2
start_array_daemon "$D/swap.conf" "$MNT"
grep -q '\[4/4\] \[UUUU\]' "$MNT/mdstat" || fail "out-of-order config: $(cat "$MNT/mdstat")"
cmp <(pattern B 12) <(dd if="$IMG" bs=1M count=12 iflag=direct status=none) || fail "out-of-order config: data"
stop_array "$MNT"
# Two "missing" in a raid5 config, one of them the role the spare took:
# the superblocks place the spare, three of four are there (before: the
# config was refused as "2 of 4 members are missing", a count that knows
# no superblock).
mk_conf "$D/two.conf" level=5 members="d0.img missing d2.img missing" spares=d4.img member_size=32M \
	chunk_size=64K metadata=1.2
start_array_daemon "$D/two.conf" "$MNT"
grep -q '\[4/3\] \[UUU_\]' "$MNT/mdstat" || fail "two missing, the spare in one's role: $(cat "$MNT/mdstat")"
cmp <(pattern B 12) <(dd if="$IMG" bs=1M count=12 iflag=direct status=none) || fail "two missing: data"
stop_array "$MNT"

log "4. create makes degraded arrays as mdadm does"
# LEVEL N MEMBERS... (missing among them)
for spec in "5 4 d0 missing d2 d3" "6 5 d0 missing d2 missing d4" "6 5 d0 d1 missing d3 d4"; do
	read -r level n list <<<"$spec"
	E=$WORK/c-$level-$(wc -w <<<"${list//[^m ]/}")
	rm -rf "$E"
	mkdir -p "$E"
	ms=""
	for m in $list; do
		[ "$m" = missing ] && ms+=" missing" || ms+=" $m.img"
	done
	mk_conf "$E/c.conf" level="$level" members="$ms" member_size=32M chunk_size=64K metadata=1.2
	out=$("$RAIDFUSE" create "$E/c.conf" 2>&1) || fail "raid$level ($list): create: $out"
	missing=$(grep -o missing <<<"$list" | wc -l)
	if [ "$level" = 6 ] && [ "$missing" = 1 ]; then
		grep -q "member 4 (.*d4.img): raid6 with one member missing: written as a spare" <<<"$out" ||
			fail "raid6 with one missing: create did not make its last member a spare: $out"
		check "[ \"$(examine_field "$E/d4.img" 'Device Role')\" = spare ]" "raid6, one missing: d4.img a spare"
	fi
	grep -q "clean, degraded" <<<"$out" || fail "raid$level ($list): not created clean: $out"
	check "[ \"$(examine_field "$E/d0.img" State)\" = clean ]" "raid$level ($list): d0 clean"
	start_array_daemon "$E/c.conf" "$MNT"
	if [ "$level" = 6 ] && [ "$missing" = 1 ]; then
		wait_sync_idle "$MNT" "raid6 with one missing: rebuild of the spare" 120
		grep -q '\[5/4\]' "$MNT/mdstat" || fail "raid6 with one missing after the rebuild: $(cat "$MNT/mdstat")"
	fi
	fio_verify "$IMG" --rw=randwrite --bs=4k --size=8M --iodepth=8
	if [ "$level" = 6 ] && [ "$missing" = 1 ]; then
		# Both syndromes right: without one more member every row is
		# rebuilt from P and Q, and the data still verifies.
		"$RAIDFUSE" ctl "$MNT" fail d0.img
		fio_verify --verify_only "$IMG" --rw=randwrite --bs=4k --size=8M --iodepth=8
	fi
	log "raid$level ($list): $(sed -n 2p "$MNT/mdstat" | tr -s ' ')"
	stop_array "$MNT"
done
log "5. a resync that is due and not running shows in mdstat as md shows it"
E=$WORK/pending
mkdir -p "$E"
mk_conf "$E/p.conf" level=5 members="$(members 4)" member_size=32M chunk_size=64K metadata=1.2
create_array "$E/p.conf"
start_array_daemon "$E/p.conf" "$MNT" --freeze
grep -q 'resync=PENDING' "$MNT/mdstat" || fail "a frozen due resync: $(cat "$MNT/mdstat")"
echo resync >"$MNT/md/sync_action"
wait_sync_idle "$MNT" "the resync"
! grep -q 'resync=PENDING' "$MNT/mdstat" || fail "after the resync: $(cat "$MNT/mdstat")"
check '[ "$(val resync_start)" = none ]' "resync_start after the resync"
stop_array "$MNT"
log "done"
