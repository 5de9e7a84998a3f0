#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 11-control: the control files beside the image, as md's sysfs.
#
# 1. Read: MOUNTPOINT/mdstat is /proc/mdstat for this array (md0), and
#    every file under MOUNTPOINT/md holds md's value in md's unit, with
#    mode 0444 or 0644 as the attribute is read-only or writable.
# 2. Bad writes: a value out of range or not a number fails with EINVAL,
#    changes nothing and leaves a log line naming attribute and value; a
#    read-only attribute cannot be written at all.
# 3. Live changes: while fio writes and verifies, another process turns
#    stripe_cache_size, group_thread_cnt, rmw_level and worker_groups and
#    suspends/resumes the array several times a second; every block
#    verifies.
# 4. Suspended means writes wait and reads go on; active lets the held
#    writes through.
# 5. raidfuse status and raidfuse ctl read and write the same files.
# 6. Other arrays: what md shows for a degraded raid5, for members with
#    1.2 superblocks, and for raid1 (no stripe cache attributes there).
# 7. Devices: md/dev-NAME/ per member file (state, errors, slot, offset,
#    size, recovery_start), md/rdN -> dev-NAME links, write-only
#    md/new_dev; "faulty" written to a member's state while fio verifies
#    degrades the array (mdstat [UU_U]) and every block still verifies;
#    a spare added with raidfuse ctl add appears as dev-spare.img, takes
#    the slot (rd2 -> dev-spare.img) and is rebuilt; after remove, the
#    failed device's files answer ENOENT, even through an open descriptor;
#    raidfuse ctl fail reaches the same files.
# 8. write_mostly and failfast (config, md/dev-NAME/state) are written in
#    the superblocks as md's devflags, which mdadm --examine shows, and
#    assemble reads them back.
. "$(dirname "$0")/lib.sh"
requires fuse fio

D=$WORK/a
MNT=$WORK/mnt
IMG=$MNT/array.img
mkdir -p "$D"

# set_ok ATTR VALUE: echo VALUE > md/ATTR succeeds and reads back.
set_ok() {
	echo "$2" >"$MNT/md/$1" || fail "echo $2 > md/$1 failed"
	[ "$(val "$1")" = "$2" ] || fail "md/$1 reads '$(val "$1")' after writing '$2'"
}

# set_bad ATTR VALUE: the write fails with EINVAL, the value stays, and the
# daemon logged the refusal.
set_bad() {
	local attr=$1 v=$2 before
	before=$(val "$attr")
	expect_fail bash -c 'echo "$1" >"$2"' bash "$v" "$MNT/md/$attr"
	[[ $OUT == *"Invalid argument"* ]] || fail "md/$attr <- '$v': expected EINVAL, got: $OUT"
	[ "$(val "$attr")" = "$before" ] || fail "md/$attr changed to '$(val "$attr")' by the refused '$v'"
	grep -qF "md/$attr: refused '$v'" "$(daemon_log_file "$MNT")" ||
		fail "no log line for md/$attr <- '$v'; log:"$'\n'"$(cat "$(daemon_log_file "$MNT")")"
}

# --- 1. read ----------------------------------------------------------------

log "raid5, 4 members: mdstat and md/"
mk_conf "$D/r5.conf" level=5 chunk_size=64K members="$(members 4)" member_size=32M
create_array "$D/r5.conf"
start_array "$D/r5.conf" "$MNT"

[ "$(ls "$MNT" | tr '\n' ' ')" = "array.img md mdstat " ] || fail "mount point holds: $(ls "$MNT")"
want_rw="array_state consistency_policy raid_disks group_thread_cnt rmw_level stripe_cache_size worker_groups sync_action sync_speed_min sync_speed_max resync_start level layout chunk_size array_size component_size backup_file"
want_ro="creation_time events set_name uuid degraded metadata_version reshape_position reshape_direction stripe_cache_active mismatch_cnt sync_completed sync_speed"
for f in $want_rw; do
	[ "$(stat -c %a "$MNT/md/$f")" = 644 ] || fail "md/$f: mode $(stat -c %a "$MNT/md/$f"), want 644"
done
for f in $want_ro; do
	[ "$(stat -c %a "$MNT/md/$f")" = 444 ] || fail "md/$f: mode $(stat -c %a "$MNT/md/$f"), want 444"
done
[ "$(stat -c %a "$MNT/mdstat")" = 444 ] || fail "mdstat: mode $(stat -c %a "$MNT/mdstat")"
want_dev="bitmap dev-d0.img dev-d1.img dev-d2.img dev-d3.img new_dev rd0 rd1 rd2 rd3"
[ "$(ls "$MNT/md" | sort | tr '\n' ' ')" = "$(echo $want_rw $want_ro $want_dev | tr ' ' '\n' | sort | tr '\n' ' ')" ] ||
	fail "md/ holds: $(ls "$MNT/md" | tr '\n' ' ')"
# md's bitmap group, there without a bitmap too
[ "$(ls "$MNT/md/bitmap" | tr '\n' ' ')" = "backlog can_clear chunksize location metadata time_base " ] ||
	fail "md/bitmap/ holds: $(ls "$MNT/md/bitmap" | tr '\n' ' ')"
[ "$(cat "$MNT/md/bitmap/location")" = none ] || fail "md/bitmap/location: $(cat "$MNT/md/bitmap/location")"

check '[ "$(val level)" = raid5 ]' "level"
check '[ "$(val layout)" = 2 ]' "layout (md's default, left-symmetric)"
check '[ "$(val chunk_size)" = 65536 ]' "chunk_size in bytes"
check '[ "$(val raid_disks)" = 4 ]' "raid_disks"
# component_size is KiB per member; the image holds three members' worth
check '[ $(($(val component_size) * 1024 * 3)) = "$(fsize "$IMG")" ]' "component_size in KiB"
check '[ "$(val array_state)" = clean ]' "an idle array is clean"
check '[ "$(val degraded)" = 0 ]' "degraded"
check '[ "$(val stripe_cache_size)" = 256 ]' "md's default stripe cache"
check '[[ "$(val stripe_cache_active)" =~ ^[0-9]+$ ]]' "stripe_cache_active is a count"
check '[ "$(val group_thread_cnt)" = 0 ]' "group_thread_cnt default with members in memory (0: submitters do the work)"
check '[ "$(val worker_groups)" -ge 1 ]' "worker_groups"
check '[ "$(val rmw_level)" = 2 ]' "rmw_level default (2: on a tie, read-modify-write)"
check '[ "$(val metadata_version)" = none ]' "metadata_version"
# Each file is one line.
for f in $want_rw $want_ro "$MNT"/md/dev-*/*; do
	[[ $f == /* ]] || f=$MNT/md/$f
	[[ $f == */fault ]] && continue        # raidfuse's own: setting, then counts
	[ "$(wc -l <"$f")" = 1 ] || fail "$f is not one line: $(cat "$f")"
done

blocks=$(($(fsize "$IMG") / 1024))
expected="Personalities : [raid0] [raid1] [raid10] [raid6] [raid5] [raid4] 
md0 : active raid5 d3.img[3] d2.img[2] d1.img[1] d0.img[0]
      $blocks blocks super non-persistent level 5, 64k chunk, algorithm 2 [4/4] [UUUU]
      
unused devices: <none>"
[ "$(cat "$MNT/mdstat")" = "$expected" ] ||
	fail "mdstat:"$'\n'"$(cat -A "$MNT/mdstat")"$'\n'"expected:"$'\n'"$(cat -A <<<"$expected")"

# Read in small pieces, one open: the same text (pieces of one version).
[ "$(dd if="$MNT/mdstat" bs=7 status=none)" = "$(cat "$MNT/mdstat")" ] || fail "mdstat read in 7-byte pieces differs"
check '[ "$(stat -c %h "$MNT")" = 3 ]' "the root's link count counts md/"
check '[ "$(stat -c %h "$MNT/md")" = 7 ]' "md/'s link count counts bitmap/ and the dev-NAME directories"

# --- 2. bad writes ----------------------------------------------------------

log "bad values fail with EINVAL and change nothing"
for v in 16 32769 abc "" -1 1e3 "256 512"; do
	set_bad stripe_cache_size "$v"
done
set_bad group_thread_cnt 65
set_bad group_thread_cnt x
set_bad rmw_level 3
set_bad worker_groups 0
set_bad array_state bogus
set_bad array_state clean
set_bad level raid7
set_bad level 7
set_bad layout left-symmetric-6 # a raid6 layout
set_bad chunk_size 1000
for f in $want_ro; do
	before=$(val "$f")
	expect_fail bash -c 'echo 7 >"$1"' bash "$MNT/md/$f"
	[[ $OUT == *"Permission denied"* ]] || fail "md/$f is read-only, but writing it said: $OUT"
	[ "$(val "$f")" = "$before" ] || fail "md/$f changed by a refused write"
done
expect_fail bash -c 'echo raid6 >"$1"' bash "$MNT/md/level"
grep -q "md/level: raid6: no superblocks to record its position in" "$(daemon_log_file "$MNT")" ||
	fail "md/level raid6 without superblocks: no reason in the log"
[ "$(val level)" = raid5 ] || fail "a refused level change left md/level '$(val level)'"
expect_fail bash -c 'echo x >"$1"' bash "$MNT/mdstat"
expect_fail bash -c 'echo max >"$1"' bash "$MNT/md/component_size"
grep -q "md/component_size: max: no superblocks to record the size in" "$(daemon_log_file "$MNT")" ||
	fail "md/component_size max without superblocks: no reason in the log"
expect_fail truncate -s 0 "$MNT/md/degraded"
expect_fail truncate -s 5 "$MNT/md/stripe_cache_size"
truncate -s 0 "$MNT/md/stripe_cache_size" || fail "truncating a writable control file to 0 (what echo > does) failed"
check '[ "$(val stripe_cache_size)" = 256 ]' "truncate to 0 changes nothing"

log "good values take effect at once"
set_ok stripe_cache_size 17
set_ok stripe_cache_size 32768
set_ok stripe_cache_size 1024
set_ok group_thread_cnt 0
set_ok group_thread_cnt 2
set_ok rmw_level 2
set_ok rmw_level 0
set_ok worker_groups 3
# a value without a newline is one value too
printf 300 >"$MNT/md/stripe_cache_size"
check '[ "$(val stripe_cache_size)" = 300 ]' "printf without newline"

# --- 3. changes while fio verifies ------------------------------------------

log "fio verify while the knobs turn and the array suspends/resumes"
changer() {
	local i=0 sizes=(17 64 256 1024 4096 100) threads=(0 1 2 1 0 2)
	while :; do
		echo "${sizes[i % 6]}" >"$MNT/md/stripe_cache_size"
		echo "${threads[i % 6]}" >"$MNT/md/group_thread_cnt"
		echo $((i % 3)) >"$MNT/md/rmw_level"
		echo $((1 + i % 4)) >"$MNT/md/worker_groups"
		echo suspended >"$MNT/md/array_state"
		sleep 0.02
		echo active >"$MNT/md/array_state"
		i=$((i + 1))
		echo $i >"$WORK/changes"
		sleep 0.1
	done
}
changer &
CHANGER=$!
# fio runs again until the changer has gone round at least 5 times: on a
# fast machine one run can end first.
for run in $(seq 20); do
	fio_verify "$IMG" --rw=randwrite --bs=4k --iodepth=32 --size=64M --name=w1 --offset=0 \
		--name=w2 --rw=randwrite --bsrange=4k-256k --offset=64M --size=16M
	[ "$(cat "$WORK/changes" 2>/dev/null || echo 0)" -ge 5 ] && break
done
vlog "$run fio run(s)"
kill "$CHANGER"
wait "$CHANGER" 2>/dev/null || true
echo active >"$MNT/md/array_state"
changes=$(cat "$WORK/changes")
log "$changes rounds of changes during the run"
[ "$changes" -ge 5 ] || fail "only $changes rounds of changes ran during fio"
check '[ "$(val array_state)" != suspended ]' "active again"
fio_verify --verify_only "$IMG" --rw=randwrite --bs=4k --iodepth=32 --size=64M --name=w1 --offset=0 \
	--name=w2 --rw=randwrite --bsrange=4k-256k --offset=64M --size=16M

# --- 4. suspended ------------------------------------------------------------

log "suspended: writes wait, reads go on; active releases them"
set_ok array_state suspended
dd if=/dev/urandom of="$WORK/blk" bs=64k count=1 status=none
dd if="$WORK/blk" of="$IMG" bs=64k seek=10 count=1 oflag=direct conv=notrunc status=none &
WRITER=$!
timeout 10 dd if="$IMG" of=/dev/null bs=64k count=16 iflag=direct status=none ||
	fail "a read did not complete while suspended"
sleep 0.5
kill -0 $WRITER 2>/dev/null || fail "a write completed while the array was suspended"
echo active >"$MNT/md/array_state"
for ((i = 0; i < 100; i++)); do
	kill -0 $WRITER 2>/dev/null || break
	sleep 0.05
done
kill -0 $WRITER 2>/dev/null && fail "the held write did not complete 5 s after active"
wait $WRITER || fail "the held write failed"
cmp -s <(dd if="$IMG" bs=64k skip=10 count=1 iflag=direct status=none) "$WORK/blk" ||
	fail "the held write's data is not there"

# --- 5. raidfuse status / ctl ------------------------------------------------

log "raidfuse status and ctl"
out=$("$RAIDFUSE" status "$MNT") || fail "raidfuse status failed: $out"
[[ $out == *"$(cat "$MNT/mdstat")"* ]] || fail "status does not show mdstat: $out"
grep -qE "^stripe_cache_size +$(val stripe_cache_size)$" <<<"$out" || fail "status lacks stripe_cache_size: $out"
grep -qE "^array_state +clean$|^array_state +active$" <<<"$out" || fail "status lacks array_state: $out"
for f in $want_rw $want_ro; do
	grep -q "^$f " <<<"$out" || fail "status lacks $f: $out"
done
[ "$("$RAIDFUSE" ctl "$MNT" level)" = raid5 ] || fail "ctl level"
"$RAIDFUSE" ctl "$MNT" stripe_cache_size 512 || fail "ctl stripe_cache_size 512 failed"
[ "$(val stripe_cache_size)" = 512 ] || fail "ctl did not set stripe_cache_size"
[ "$("$RAIDFUSE" ctl "$MNT" stripe_cache_size)" = 512 ] || fail "ctl read"
expect_fail "$RAIDFUSE" ctl "$MNT" stripe_cache_size 5
[ $RC = 1 ] && [[ $OUT == *"stripe_cache_size"*"refused"* ]] || fail "ctl with a bad value ($RC): $OUT"
[ "$(val stripe_cache_size)" = 512 ] || fail "a refused ctl changed the value"
expect_fail "$RAIDFUSE" ctl "$MNT" degraded 7
[ $RC = 1 ] && [[ $OUT == *"read-only"* ]] || fail "ctl on a read-only attribute ($RC): $OUT"
expect_fail "$RAIDFUSE" ctl "$MNT" no_such_thing
[ $RC = 1 ] && [[ $OUT == *"no such attribute"* ]] || fail "ctl on an unknown attribute ($RC): $OUT"
expect_fail "$RAIDFUSE" ctl "$WORK" level
[ $RC = 1 ] && [[ $OUT == *"not a raidfuse mount"* ]] || fail "ctl on a plain directory ($RC): $OUT"
expect_fail "$RAIDFUSE" status "$WORK"
[ $RC = 1 ] || fail "status on a plain directory exited $RC"
expect_fail "$RAIDFUSE" ctl "$MNT"
[ $RC = 2 ] || fail "ctl without ATTR: expected a usage error (2), got $RC"
stop_array "$MNT"

# --- 6. other levels ---------------------------------------------------------

log "degraded raid5, 1.2 superblocks, raid1"
mk_conf "$D/r5d.conf" level=5 chunk_size=64K members="d0.img missing d2.img d3.img"
start_array "$D/r5d.conf" "$MNT"
check '[ "$(val degraded)" = 1 ]' "degraded raid5"
grep -q "^md0 : active raid5 d3.img\[3\] d2.img\[2\] d0.img\[0\]$" "$MNT/mdstat" || fail "mdstat: $(cat "$MNT/mdstat")"
grep -q " \[4/3\] \[U_UU\]$" "$MNT/mdstat" || fail "mdstat: $(cat "$MNT/mdstat")"
stop_array "$MNT"

mk_conf "$D/sb.conf" level=5 chunk_size=64K members="$(members 3 s)" member_size=16M metadata=1.2
create_array "$D/sb.conf"
start_array "$D/sb.conf" "$MNT"
check '[ "$(val metadata_version)" = 1.2 ]' "members with 1.2 superblocks"
grep -q "^      $(($(fsize "$MNT/array.img") / 1024)) blocks super 1.2 level 5, 64k chunk, algorithm 2 \[3/3\] \[UUU\]$" \
	"$MNT/mdstat" || fail "mdstat of a 1.2 array: $(cat "$MNT/mdstat")"
stop_array "$MNT"

mk_conf "$D/r1.conf" level=1 members="$(members 2 m)" member_size=8M
create_array "$D/r1.conf"
start_array "$D/r1.conf" "$MNT"
check '[ "$(val level)" = raid1 ]' "raid1 level"
check '[ ! -e "$MNT/md/stripe_cache_size" ]' "raid1 has no stripe cache (as md)"
check '[ -e "$MNT/md/group_thread_cnt" ]' "raid1 has worker groups"
grep -q "^      $(($(fsize "$MNT/array.img") / 1024)) blocks super non-persistent \[2/2\] \[UU\]$" "$MNT/mdstat" ||
	fail "raid1 mdstat: $(cat "$MNT/mdstat")"
stop_array "$MNT"
# --- 7. devices ----------------------------------------------------------------

log "md/dev-NAME, md/rdN, md/new_dev"
start_array "$D/r5.conf" "$MNT"
dev() { cat "$MNT/md/dev-$1/$2"; }
for i in 0 1 2 3; do
	[ "$(ls "$MNT/md/dev-d$i.img" | tr '\n' ' ')" = "errors fault io_mode offset path recovery_start size slot state timeout " ] ||
		fail "dev-d$i.img holds: $(ls "$MNT/md/dev-d$i.img" | tr '\n' ' ')"
	check "[ \"\$(dev d$i.img state)\" = in_sync ]" "dev-d$i.img/state"
	check "[ \"\$(dev d$i.img slot)\" = $i ]" "dev-d$i.img/slot"
	check "[ \"\$(readlink "$MNT/md/rd$i")\" = dev-d$i.img ]" "rd$i -> dev-d$i.img"
	check "[ -L \"$MNT/md/rd$i\" ]" "rd$i is a symbolic link"
done
check '[ "$(dev d1.img errors)" = 0 ]' "errors"
check '[ "$(dev d1.img offset)" = 0 ]' "offset (sectors; no superblock)"
check '[ "$(dev d1.img size)" = "$(val component_size)" ]' "size is component_size, KiB"
check '[ "$(dev d1.img recovery_start)" = none ]' "recovery_start of an in-sync device"
check '[ "$(cat "$MNT/md/rd2/slot")" = 2 ]' "rd2/ reads through the link"
check '[ "$(stat -c %a "$MNT/md/dev-d0.img/state")" = 644 ]' "state is writable"
check '[ "$(stat -c %a "$MNT/md/dev-d0.img/errors")" = 444 ]' "errors is read-only"
check '[ "$(stat -c %a "$MNT/md/new_dev")" = 200 ]' "new_dev is write-only (as md's)"
check '[ ! -e "$MNT/md/dev-nosuch.img" ]' "no directory for a file that is not a member"
check '[ ! -e "$MNT/md/rd4" ]' "no rd4 in a 4-slot array"
expect_fail cat "$MNT/md/new_dev"
[[ $OUT == *"Permission denied"* ]] || fail "reading new_dev: $OUT"
expect_fail bash -c 'echo 1 >"$1"' bash "$MNT/md/dev-d0.img/slot"
[[ $OUT == *"Permission denied"* ]] || fail "writing dev-d0.img/slot: $OUT"
expect_fail bash -c 'echo in-sync >"$1"' bash "$MNT/md/dev-d0.img/state"
[[ $OUT == *"Invalid argument"* ]] || fail "a bad state word: expected EINVAL, got: $OUT"
grep -qF "md/dev-d0.img/state: refused 'in-sync'" "$(daemon_log_file "$MNT")" || fail "no log line for the bad state word"
check '[ "$(dev d0.img state)" = in_sync ]' "a refused word changes nothing"
expect_fail "$RAIDFUSE" ctl "$MNT" add "$D/nosuch.img"
[[ $OUT == *"nosuch.img"* ]] || fail "ctl add of a file that does not exist: $OUT"

log "faulty under fio verify: degraded, every block verifies"
# paced so the write phase lasts about 3 s: the member fails in the middle
( fio_verify "$IMG" --rw=randwrite --bs=4k --iodepth=16 --size=48M --name=fw --rate_iops=4000 ) &
FIO=$!
sleep 1
kill -0 $FIO 2>/dev/null || fail "fio ended before the member was failed"
echo faulty >"$MNT/md/dev-d2.img/state" || fail "echo faulty > dev-d2.img/state failed"
wait $FIO || fail "fio verify failed after d2.img was failed"
check '[ "$(dev d2.img state)" = faulty ]' "dev-d2.img/state says faulty"
check '[ "$(val degraded)" = 1 ]' "degraded"
grep -q " \[4/3\] \[UU_U\]$" "$MNT/mdstat" || fail "mdstat: $(cat "$MNT/mdstat")"
grep -q " d2.img\[2\](F)" "$MNT/mdstat" || fail "mdstat does not mark d2.img (F): $(cat "$MNT/mdstat")"
check '[ "$(dev d1.img state)" = in_sync ]' "the others stay in sync"
fio_verify --verify_only "$IMG" --rw=randwrite --bs=4k --iodepth=16 --size=48M --name=fw

# The device set changes under the mount: a spare added with ctl add
# gets its dev-NAME/ at once, takes the failed slot and is rebuilt; rd2
# then names it, and the failed device has no slot.
truncate -s 32M "$D/spare.img"
"$RAIDFUSE" ctl "$MNT" add "$D/spare.img" || fail "ctl add spare.img failed"
check '[ -d "$MNT/md/dev-spare.img" ]' "dev-spare.img appears when the spare is added"
for ((i = 0; i < 300; i++)); do
	[ "$(val degraded)" = 0 ] && [ "$(val sync_action)" = idle ] && break
	sleep 0.1
done
check '[ "$(val degraded)" = 0 ]' "the spare rebuilt the failed slot within 30 s"
check '[ "$(dev spare.img state)" = in_sync ]' "dev-spare.img/state after the rebuild"
check '[ "$(dev spare.img slot)" = 2 ]' "the spare serves slot 2"
check '[ "$(readlink "$MNT/md/rd2")" = dev-spare.img ]' "rd2 names the device now in slot 2"
check '[ "$(dev d2.img state)" = faulty ]' "the failed device stays, faulty"
check '[ "$(dev d2.img slot)" = none ]' "the failed device has no slot"
grep -qF " [4/4] [UUUU]" "$MNT/mdstat" || fail "mdstat after the rebuild: $(cat "$MNT/mdstat")"
fio_verify --verify_only "$IMG" --rw=randwrite --bs=4k --iodepth=16 --size=48M --name=fw

# A removed device's files answer ENOENT, also through a descriptor opened
# before (never another device's state).
exec 3<"$MNT/md/dev-d2.img/state"
echo remove >"$MNT/md/dev-d2.img/state" || fail "echo remove > dev-d2.img/state failed"
check '[ ! -e "$MNT/md/dev-d2.img" ]' "dev-d2.img is gone after remove"
[[ " $(ls "$MNT/md" | tr '\n' ' ') " == *" dev-d2.img "* ]] && fail "md/ still lists dev-d2.img"
expect_fail cat <&3
[[ $OUT == *"No such file or directory"* ]] || fail "reading a removed device's state: $OUT"
exec 3<&-
check '[ "$(dev spare.img state)" = in_sync ]' "the others are still there"
grep -q "d2.img" "$MNT/mdstat" && fail "mdstat still lists d2.img: $(cat "$MNT/mdstat")"
stop_array "$MNT"

log "raidfuse ctl fail NAME (raid6)"
mk_conf "$D/r6.conf" level=6 chunk_size=64K members="$(members 5 s6)" member_size=8M
create_array "$D/r6.conf"
start_array "$D/r6.conf" "$MNT"
"$RAIDFUSE" ctl "$MNT" fail s61.img || fail "ctl fail s61.img failed"
check '[ "$(cat "$MNT/md/dev-s61.img/state")" = faulty ]' "ctl fail wrote faulty"
grep -q " \[5/4\] \[U_UUU\]$" "$MNT/mdstat" || fail "mdstat: $(cat "$MNT/mdstat")"
"$RAIDFUSE" ctl "$MNT" remove s61.img || fail "ctl remove s61.img failed"
check '[ ! -e "$MNT/md/dev-s61.img" ]' "ctl remove took the failed device out"
grep -q " \[5/4\] \[U_UUU\]$" "$MNT/mdstat" || fail "mdstat after remove: $(cat "$MNT/mdstat")"
expect_fail "$RAIDFUSE" ctl "$MNT" remove s62.img
[[ $OUT == *"busy"* ]] || fail "ctl remove of an active member: $OUT"
expect_fail "$RAIDFUSE" ctl "$MNT" fail nosuch.img
[ $RC = 1 ] || fail "ctl fail of no device: exit $RC"
expect_fail "$RAIDFUSE" ctl "$MNT" fail a/b
[ $RC = 1 ] && [[ $OUT == *"a/b is not a device of the array"* ]] || fail "ctl fail of no device's path: $RC: $OUT"
fio_verify "$MNT/array.img" --rw=randwrite --bs=16k --size=8M
stop_array "$MNT"

# --- 8. md's device flags in the superblocks ----------------------------------
log "write_mostly and failfast are kept in the superblocks, as md's devflags"
mk_conf "$D/wm.conf" level=1 members="$(members 3 w)" member_size=8M metadata=1.2
sed -i 's/^array: {$/array: {\n\tfailfast = ( 2 );/' "$D/wm.conf"
create_array "$D/wm.conf"
flags() { "$RAIDFUSE" examine "$D/$1" | sed -n 's/^ *Flags : //p'; }
check '[ "$(flags w2.img)" = failfast ] && [ -z "$(flags w1.img)" ]' "create writes the config's failfast"
mdadm --examine "$D/w2.img" | grep -q "Flags : failfast" || fail "mdadm --examine: $(mdadm --examine "$D/w2.img")"
start_array "$D/wm.conf" "$MNT"
echo writemostly >"$MNT/md/dev-w1.img/state"
stop_array "$MNT"
check '[ "$(flags w1.img)" = write-mostly ] && [ "$(flags w2.img)" = failfast ]' "writemostly written to the state is kept"
mdadm --examine "$D/w1.img" | grep -q "Flags : write-mostly" || fail "mdadm --examine: $(mdadm --examine "$D/w1.img")"
# Found again from the superblocks alone, by assemble.
start_assemble array.img "$MNT" "$D/w0.img" "$D/w1.img" "$D/w2.img"
check '[ "$(cat "$MNT/md/dev-w1.img/state")" = in_sync,write_mostly ]' "assemble reads write-mostly back"
check '[ "$(cat "$MNT/md/dev-w2.img/state")" = in_sync,failfast ]' "assemble reads failfast back"
echo -failfast >"$MNT/md/dev-w2.img/state"
stop_array "$MNT"
check '[ -z "$(flags w2.img)" ] && [ "$(flags w1.img)" = write-mostly ]' "-failfast is kept too"

# --- 9. the lock order, checked (make asan, make tsan) -------------------------
# A build that checks the lock order (LOCKCHECK=1 wraps pthread's mutex
# calls) stops a daemon that takes reconf_lock under dev_lock, the
# inversion RAIDFUSE_TEST_BREAK=lock-order plants, naming both; every other
# test is the proof that the order holds where it is kept.
if raidfuse_has __wrap_pthread_mutex_lock; then
	log "lock order: a planted inversion stops the daemon, naming both locks"
	# The inversion may come before the image is served (the superblock
	# update at start takes dev_lock) or after (the check below), so the
	# daemon is started bare: either way it must stop and name both locks.
	mkdir -p "$MNT"
	logf=$WORK/daemon.lock-order.log
	RAIDFUSE_TEST_BREAK=lock-order "$RAIDFUSE" mount "$D/wm.conf" "$MNT" -f >"$logf" 2>&1 &
	lpid=$!
	for ((i = 0; i < 600; i++)); do
		kill -0 "$lpid" 2>/dev/null || break
		{ [ -f "$MNT/array.img" ] && echo check >"$MNT/md/sync_action"; } 2>/dev/null || true
		sleep 0.1
	done
	if kill -0 "$lpid" 2>/dev/null; then
		kill -9 "$lpid"
		fusermount3 -u -z "$MNT" 2>/dev/null || true
		fail "lock order: the daemon went on for 60 s after the inversion: $(tail -n 5 "$logf")"
	fi
	lrc=0
	wait "$lpid" || lrc=$?
	fusermount3 -u -z "$MNT" 2>/dev/null || true
	# Taken under dev_lock alone, the report names dev_lock as the lock
	# held; taken where this thread holds reconf_lock already (a
	# reconfiguration's superblock update), it names the recursion and
	# lists dev_lock among the held.
	grep -Eq "lock order: taking reconf_lock \(rank 2\) while holding (dev_lock \(rank 3\)|reconf_lock \(rank 2\): it is held already by this thread; held: .*dev_lock)" "$logf" ||
		fail "lock order: the planted inversion was not reported (exit $lrc): $(tail -n 5 "$logf")"
	[ "$lrc" != 0 ] || fail "lock order: the daemon exited 0 after the inversion"
else
	log "lock order: this build does not check it (make asan and make tsan do)"
fi

log "ok"
