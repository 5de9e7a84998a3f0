#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 13-overlay-state: experiments that leave the members alone, the array's
# clean/dirty state in md's superblocks, and members no two servers share.
#
# 1. --overlay: an array kernel md made (tests/data/md-images) is assembled
#    with an overlay directory and takes a fio verify job and mkfs.ext4 +
#    fsck; every member's sha256 stays the same.  A second assemble with
#    the same directory reads back what was written (fio verify_only,
#    fsck); without the overlay the original pattern is there.  --ro and
#    --overlay together are refused, and a second server on the same
#    overlay is told it is in use.
# 2. clean/dirty: a raidfuse-made array written and unmounted cleanly is
#    "State : clean" to mdadm --examine with higher Events; killed (-9)
#    while writing it is "State : active" (dirty), and the next assemble
#    says it was not cleanly shut down.
# 3. locks: a second server of the same members is told they are in use;
#    the same file twice (hard link) is named as such; a block device
#    member is claimed exclusively (loop device, when root).
#
# RF_MD_IMAGES=DIR picks the md-images directory (as 03-md-images).
. "$(dirname "$0")/lib.sh"
requires fuse xz fio mdadm
build_helper
md_images

MNT=$WORK/mnt
MNT2=$WORK/mnt2

# field FILE LABEL: the value after "LABEL : " in examine output.
field() {
	sed -n "s/^ *$2 : //p" "$1" | head -n 1
}

sums() {
	sha256sum "$@" | cut -d' ' -f1
}

log "1. --overlay keeps the members as they are"
name=r5-ls-4d-64k
line=$(grep "\"name\": \"$name\"" "$IMAGES/manifest.jsonl")
sectors=$(jval "$line" array_sectors)
D=$WORK/$name
OV=$WORK/overlay
mkdir -p "$D"
members=()
for i in 0 1 2 3; do
	xz -dc "$IMAGES/$name/role$i.img.xz" >"$D/role$i.img"
	members+=("$D/role$i.img")
done
before=$(sums "${members[@]}")

expect_fail "$RAIDFUSE" assemble -f --ro --overlay "$OV" "$MNT" "${members[@]}"
grep -q "exclude each other" <<<"$OUT" || fail "--ro with --overlay: '$OUT'"

start_assemble array.img "$MNT" --overlay "$OV" "${members[@]}"
check "[ \"\$(stat -c %a '$MNT/array.img')\" = 600 ]" "--overlay image is writable"
fio_verify "$MNT/array.img" --rw=randwrite --bs=4k --size=24M --iodepth=8
# A second server on the same overlay directory (members shared read-only).
expect_fail "$RAIDFUSE" assemble -f --overlay "$OV" "$MNT2" "${members[@]}"
grep -q "overlay .* is in use by another raidfuse" <<<"$OUT" || fail "overlay in use: '$OUT'"
stop_array "$MNT"
check "[ \"$before\" = \"$(sums "${members[@]}")\" ]" "--overlay: a member changed"
ls "$OV"/*.cow >/dev/null || fail "no .cow files in $OV"

start_assemble array.img "$MNT" --overlay "$OV" "${members[@]}"
fio_verify --verify_only "$MNT/array.img" --rw=randwrite --bs=4k --size=24M --iodepth=8
if command -v mkfs.ext4 >/dev/null && command -v e2fsck >/dev/null; then
	mkfs.ext4 -q -F "$MNT/array.img" || fail "mkfs.ext4 on the overlaid image failed"
	e2fsck -fn "$MNT/array.img" >"$WORK/fsck.out" 2>&1 || fail "e2fsck after mkfs: $(cat "$WORK/fsck.out")"
	stop_array "$MNT"
	check "[ \"$before\" = \"$(sums "${members[@]}")\" ]" "--overlay (mkfs): a member changed"
	start_assemble array.img "$MNT" --overlay "$OV" "${members[@]}"
	e2fsck -fn "$MNT/array.img" >"$WORK/fsck.out" 2>&1 ||
		fail "e2fsck on the reassembled overlay: $(cat "$WORK/fsck.out")"
	log "mkfs.ext4 + e2fsck through the overlay, and again after reassembly"
else
	log "mkfs.ext4/e2fsck not installed: ext4 part left out"
fi
stop_array "$MNT"
check "[ \"$before\" = \"$(sums "${members[@]}")\" ]" "--overlay: a member changed"
# Without the overlay: kernel md's pattern, untouched.
start_assemble ro.img "$MNT" --ro --name ro.img "${members[@]}"
"$RFHELPER" pattern "$MNT/ro.img" "$sectors" >"$WORK/pattern.out" ||
	fail "$name without the overlay: $(cat "$WORK/pattern.out")"
stop_array "$MNT"
log "overlay: $(du -sk "$OV" | cut -f1) KiB in $OV, members unchanged"

log "2. clean/dirty and events in the superblocks"
C=$WORK/state
mkdir -p "$C"
mk_conf "$C/raid.conf" metadata=1.2 level=5 members="$(members 4)" member_size=64M chunk_size=64K
create_array "$C/raid.conf" --assume-clean
mdadm --examine "$C/d0.img" >"$C/ex0.txt"
check "[ \"$(field "$C/ex0.txt" State)\" = clean ]" "created --assume-clean: clean"
ev0=$(field "$C/ex0.txt" Events)
start_array "$C/raid.conf" "$MNT"
fio_verify "$MNT/array.img" --rw=randwrite --bs=4k --size=8M --iodepth=8
stop_array "$MNT"
for i in 0 1 2 3; do
	mdadm --examine "$C/d$i.img" >"$C/ex.txt" 2>&1 || fail "mdadm --examine d$i.img: $(cat "$C/ex.txt")"
	grep -q "Checksum : .* - correct" "$C/ex.txt" || fail "d$i: mdadm: checksum not correct"
	check "[ \"$(field "$C/ex.txt" State)\" = clean ]" "d$i clean after a clean unmount"
	ev=$(field "$C/ex.txt" Events)
	check "[ $ev -ge $((ev0 + 2)) ]" "d$i: events $ev after writes (were $ev0)"
done
log "clean unmount: State clean, Events $ev0 -> $ev"

start_array "$C/raid.conf" "$MNT"
pid=$DAEMON_PID
fio --name=crash --filename="$MNT/array.img" --rw=randwrite --bs=4k --size=32M --direct=1 \
	--ioengine=psync --time_based --runtime=20 >/dev/null 2>&1 &
fiopid=$!
# Killed once fio's writes made the superblocks dirty (ASan's daemon beside
# make test may take more than a second to serve the first one).
wait_for "fio's writes did not mark the superblocks dirty" \
	'mdadm --examine "$C/d0.img" 2>/dev/null | grep -Eq "State : active"'
sleep 0.5
kill -9 "$pid"
wait_daemon_exit "$MNT" --any-status
fusermount3 -u -z "$MNT" 2>/dev/null || true
wait "$fiopid" 2>/dev/null || true
for i in 0 1 2 3; do
	mdadm --examine "$C/d$i.img" >"$C/ex.txt" 2>&1 || fail "mdadm --examine d$i.img: $(cat "$C/ex.txt")"
	check "[ \"$(field "$C/ex.txt" State)\" = active ]" "d$i dirty (active) after kill -9 during writes"
done
log "kill -9 while writing: State active (dirty), Events $(field "$C/ex.txt" Events)"
# shellcheck disable=SC2046
start_assemble array.img "$MNT" --freeze $(printf "$C/d%d.img " 0 1 2 3)
grep -q "was not cleanly shut down: resync needed" "$(daemon_log_file "$MNT")" ||
	fail "assemble after a crash did not say so: $(cat "$(daemon_log_file "$MNT")")"
check '[ "$(cat "$MNT/md/sync_action")" = frozen ]' "--freeze: sync_action frozen"
stop_array "$MNT"
# Still due after a clean unmount: only a resync clears it (15-crash-resync
# lets it run).
mdadm --examine "$C/d0.img" >"$C/ex.txt"
check "[ \"$(field "$C/ex.txt" State)\" = active ]" "a crash's resync stays due"

if md_judge; then
	mk_conf "$C/j.conf" metadata=1.2 level=1 members="j0.img j1.img" member_size=32M
	create_array "$C/j.conf" --assume-clean
	start_array "$C/j.conf" "$MNT"
	fio_verify "$MNT/array.img" --rw=randwrite --bs=4k --size=4M --iodepth=4
	stop_array "$MNT"
	"$MDJUDGE" --check "$C"/j*.img >"$C/judge.txt" 2>&1 || fail "md-judge: $(cat "$C/judge.txt")"
	grep -q "JUDGE assemble=ok" "$C/judge.txt" || fail "kernel md did not assemble: $(cat "$C/judge.txt")"
	log "kernel md assembles the cleanly unmounted array"
fi

log "3. members are locked"
start_array "$C/raid.conf" "$MNT"
mkdir -p "$MNT2"
expect_fail "$RAIDFUSE" mount "$C/raid.conf" "$MNT2" -f
# (the daemon holding it named with its mount, or the lock's own refusal)
grep -Eq "member 0 \(.*d0.img\) is in use by (another raidfuse or process|the raidfuse \(pid [0-9]+\) serving $MNT)" \
	<<<"$OUT" || fail "second server: '$OUT'"
# shellcheck disable=SC2046
expect_fail "$RAIDFUSE" assemble -f "$MNT2" $(printf "$C/d%d.img " 0 1 2 3)
grep -Eq "is in use by (another raidfuse or process|the raidfuse \(pid [0-9]+\) serving $MNT)" <<<"$OUT" ||
	fail "second assemble: '$OUT'"
stop_array "$MNT"
# The same file twice, by a hard link.
ln "$C/d1.img" "$C/link.img"
# shellcheck disable=SC2046
expect_fail "$RAIDFUSE" assemble -f "$MNT2" $(printf "$C/d%d.img " 0 1 2 3) "$C/link.img"
grep -q "are the same file twice" <<<"$OUT" || fail "hard link to a member, assemble: '$OUT'"
N=$WORK/none
mkdir -p "$N"
mk_conf "$N/raid.conf" level=1 members="n0.img n1.img hard.img" member_size=16M
create_array "$N/raid.conf"
rm "$N/hard.img"
ln "$N/n0.img" "$N/hard.img"
expect_fail "$RAIDFUSE" mount "$N/raid.conf" "$MNT2" -f
grep -q "member 0 (.*n0.img) and member 2 (.*hard.img) are the same file" <<<"$OUT" ||
	fail "hard link to a member, mount: '$OUT'"
if [ "$(id -u)" = 0 ] && command -v losetup >/dev/null && [ -e /dev/loop-control ]; then
	loop_attach "$N/n1.img"
	mk_conf "$N/blk.conf" level=1 members="n0.img $LOOP"
	mk_conf "$N/blk2.conf" level=1 members="$LOOP hard.img"
	rm "$N/hard.img"
	truncate -s 16M "$N/hard.img"
	start_array "$N/blk.conf" "$MNT"
	expect_fail "$RAIDFUSE" mount "$N/blk2.conf" "$MNT2" -f
	grep -Eq "member 0 \($LOOP\) is in use by (another raidfuse or process|the raidfuse \(pid [0-9]+\) serving $MNT)" \
		<<<"$OUT" ||
		fail "a claimed block device: '$OUT'"
	stop_array "$MNT"
	loop_detach "$LOOP"
	log "a block device member is claimed (O_EXCL)"
fi
log "overlay, clean/dirty and locks as md has them"
