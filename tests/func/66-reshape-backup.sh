#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 66-reshape-backup: a raid5 grown from 3 to 4 members with no room before
# the data (data offset 12K: the superblock and nothing free), as mdadm
# --grow --backup-file has md grow one in place; members in a directory on
# the disk, the daemonized default, a model file of what every sector must
# hold.
#  1. raid5 of 3 x 32 MiB and a spare, filled with random data: `grow
#     --raid-devices 4` is refused, the daemon's log naming grow
#     --backup-file; a backup file in a directory that does not exist is
#     refused at once, naming it; raid_disks stays 3.
#  2. `grow --raid-devices 4 --backup-file FILE` is taken: raid_disks reads
#     "4 (3)", md/backup_file names FILE, the data offsets stay (examine: no
#     new offset).  The walk is halted right after the new rows of its first
#     window (RAIDFUSE_TEST_HALT=reshape-backup: test-only, the rows its old
#     data lay on overwritten, the position neither moved nor recorded), and
#     the daemon is killed -9 there: a crash inside the critical section.
#     FILE holds that window (mdadm's header: md_backup_data-1).
#  3. mounted again by the same config without the file: refused, naming
#     --backup-file (md: reshape_position too early for auto-recovery).
#  4. mounted with --backup-file FILE (frozen): the window is written back
#     in the new geometry before the array serves, the position recorded at
#     its end; the image is the model.  To the end: the grown size, the
#     model with zeros after it, check finds mismatch_cnt 0; FILE removed
#     once the walk passed its critical section (as mdadm removes it; it
#     was there after the kill -9) and md/backup_file reads none; every superblock says 4 devices, data
#     offset 24 sectors; mounted again without the file, the model.
#  5. a relayout in place (left-symmetric -> right-asymmetric, no room):
#     refused without a backup file; with one, every window goes through it:
#     the model, check 0, layout 1, data offsets kept, FILE removed at the end
#     and md/backup_file none.
#  6. (RF_MD_JUDGE=1) kernel md finishes a grow in place raidfuse began:
#     md's pattern over a fresh array of step 1's shape, grown with FILE,
#     halted in its first window and killed -9 as in step 2; mdpeer's guest
#     assembles snapshots of the members by mdadm --assemble
#     --backup-file=FILE (mdadm restores the critical section, its
#     Grow_restart), and md goes on to the end: the pattern, check 0, data
#     offsets kept (tools/md-golden-job.sh reshape-verify).  Controls: without
#     the file mdadm refuses the assembly; with the file's data damaged at
#     array sector 1024, md's pattern check fails.
#  7. (RF_MD_JUDGE=1) raidfuse finishes a grow in place kernel md began:
#     mdpeer's guest makes a raid5 of 3 (512K chunks, data offset 12K: no
#     room) over the first partition of each disk, writes md's pattern, and
#     runs mdadm --grow --raid-devices=4 --backup-file until md records a
#     position inside the critical section, where it stops it
#     (tools/md-golden-job.sh reshape-backup); raidfuse assembles copies of
#     those partitions with mdadm's file: its rows written back, the position
#     at its end, the pattern; to the end: zeros after it, check 0, data
#     offsets kept.  Controls: without the file, refused; with its data
#     damaged, the image differs from the pattern.  (Where md stops, one new
#     row past the start, the old rows the file holds are still on the
#     members too, so only a damaged file shows the rows come from it.)
# Negative controls: RAIDFUSE_TEST_BREAK=reshape-backup (the window goes on
# without writing the backup file) and RAIDFUSE_TEST_BREAK=reshape-restore
# (assembly does not write the backup back): the same steps leave an image
# that differs from the model.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/model.sh"
requires fuse
build_helper
model_setup

G=$DISK/g
BK=$DISK/grow.backup

# grown_halted [GROW_BREAK]: a fresh raid5 of 3 + a spare in G (data at
# 12K), filled; the grow with BK (step 2) halted in its first window and
# killed -9.  Sets GOLD, GNEW (sectors before and after).
grown_halted() {
	rm -rf "$G" "$BK" "$WORK/g1.log"      # (--log appends)
	mkdir -p "$G"
	mk_conf "$G/r.conf" metadata=1.2 level=5 chunk_size=64K members="$G/d0.img $G/d1.img $G/d2.img" \
		spares="$G/d3.img" member_size=32M data_offset=12K
	create_array "$G/r.conf" --assume-clean
	RAIDFUSE_TEST_BREAK=$1 RAIDFUSE_TEST_HALT=reshape-backup start_array_daemon "$G/r.conf" "$MNT" \
		--log "$WORK/g1.log"
	GOLD=$(($(fsize "$IMG") / 512))
	GNEW=$((GOLD * 3 / 2))
	model_fill
	truncate -s $((GNEW * 512)) "$MODEL"
	"$RAIDFUSE" grow "$MNT" --raid-devices 4 --backup-file "$BK" ||
		fail "grow --backup-file refused: $(tail -n 3 "$WORK/g1.log")"
	wait_for "the walk did not halt in its critical section" 'grep -q RAIDFUSE_TEST_HALT "$WORK/g1.log"'
	kill_daemon
}

# ---- 1. no room, no backup file: refused
rm -rf "$G"
mkdir -p "$G"
mk_conf "$G/r.conf" metadata=1.2 level=5 chunk_size=64K members="$G/d0.img $G/d1.img $G/d2.img" \
	spares="$G/d3.img" member_size=32M data_offset=12K
create_array "$G/r.conf" --assume-clean
start_array_daemon "$G/r.conf" "$MNT" --log "$WORK/g0.log"
expect_fail "$RAIDFUSE" grow "$MNT" --raid-devices 4
wait_for "the refusal does not name grow --backup-file" 'grep -q "grow --backup-file FILE" "$WORK/g0.log"'
expect_fail "$RAIDFUSE" grow "$MNT" --raid-devices 4 --backup-file "$DISK/no/such/grow.backup"
[[ $OUT == *"backup file $DISK/no/such/grow.backup: No such file or directory"* ]] ||
	fail "an unwritable backup file, refused for another reason: $OUT"
[ "$(val raid_disks)" = 3 ] && [ "$(val backup_file)" = none ] ||
	fail "after the refusals: raid_disks $(val raid_disks), backup_file $(val backup_file)"
stop_array "$MNT"
log "no room before the data: grow refused without --backup-file (the log says so), a FILE that cannot be made refused"

# ---- 2. grown with the backup file, halted in its critical section, kill -9
grown_halted ""
grep -q "mdadm's backup file holds its critical section" "$WORK/g1.log" ||
	fail "no word of the grow in place: $(tail -n 5 "$WORK/g1.log")"
[ "$(head -c 16 "$BK")" = md_backup_data-1 ] || fail "no mdadm backup header in $BK"
"$RAIDFUSE" examine "$G/d0.img" >"$WORK/ex.txt"
grep -q "Raid Devices : 4" "$WORK/ex.txt" && grep -q "Data Offset : 24 sectors" "$WORK/ex.txt" &&
	grep -q "Reshape pos'n : 0" "$WORK/ex.txt" && ! grep -q "New Offset" "$WORK/ex.txt" ||
	fail "killed in the critical section: $(cat "$WORK/ex.txt")"
log "grow 3 -> 4 in place with $BK: halted after its first window's new rows, killed -9 (position 0 recorded)"

# ---- 3. without the file: refused
expect_fail "$RAIDFUSE" mount "$G/r.conf" "$MNT"
[[ $OUT == *"--backup-file"* && $OUT == *"critical section"* ]] || fail "refused for another reason: $OUT"
log "mounted again without the backup file: refused (${OUT##*: })"

# ---- 4. with it: restored, to the end
start_array_daemon "$G/r.conf" "$MNT" --freeze --backup-file "$BK" --log "$WORK/g2.log"
# (said before the daemon detached: the mount's own output)
grep -q "restored array sectors \[0, " "$(daemon_log_file "$MNT")" ||
	fail "nothing restored: $(tail -n 5 "$(daemon_log_file "$MNT")")"
P=$(pos)
[ "$P" -gt 0 ] || fail "restored: position $P"
same_model "restored from the backup file (position $P)" "$GOLD"
to_end "the grow in place"
[ "$(val backup_file)" = none ] || fail "the grow in place ended, md/backup_file names $(val backup_file)"
[ "$(fsize "$IMG")" = $((GNEW * 512)) ] || fail "grown image of $(fsize "$IMG") bytes, 4 members give $((GNEW * 512))"
same_model "grown in place" "$GNEW"
check_clean "check after the grow in place"
stop_array "$MNT"
[ ! -e "$BK" ] || fail "the grow in place ended, its backup file $BK is still there"
grep -q "backup file $BK removed (past the critical section)" "$WORK/g2.log" ||
	fail "no word of the backup file's removal: $(grep "backup file" "$WORK/g2.log" | tail -n 3)"
for i in 0 1 2 3; do
	"$RAIDFUSE" examine "$G/d$i.img" >"$WORK/ex.txt" || fail "examine d$i failed"
	for want in "Raid Devices : 4" "Data Offset : 24 sectors"; do
		grep -q "$want" "$WORK/ex.txt" || fail "d$i after the grow: no '$want' in: $(cat "$WORK/ex.txt")"
	done
	! grep -q "Reshape" "$WORK/ex.txt" || fail "d$i: a reshape still recorded: $(cat "$WORK/ex.txt")"
done
start_array_daemon "$G/r.conf" "$MNT"
same_model "grown in place, mounted again" "$GNEW"
stop_array "$MNT"
log "mounted with --backup-file: restored to $P before serving, the model; grown to 4, check 0, data offsets kept"

# ---- 5. a relayout in place
rm -rf "$G" "$BK"
mkdir -p "$G"
mk_conf "$G/r.conf" metadata=1.2 level=5 chunk_size=64K members="$G/d0.img $G/d1.img $G/d2.img" \
	member_size=32M data_offset=12K
create_array "$G/r.conf" --assume-clean
start_array_daemon "$G/r.conf" "$MNT" --log "$WORK/l.log"
S=$(($(fsize "$IMG") / 512))
model_fill
expect_fail "$RAIDFUSE" grow "$MNT" --layout 1
"$RAIDFUSE" grow "$MNT" --layout 1 --backup-file "$BK" --wait >/dev/null ||
	fail "relayout with --backup-file refused: $(tail -n 3 "$WORK/l.log")"
[ "$(val layout)" = 1 ] || fail "relayout in place: layout $(val layout)"
# (the walk removes the file as it ends, just after the layout changes)
for _ in $(seq 50); do [ "$(val backup_file)" = none ] && break; sleep 0.1; done
[ "$(val backup_file)" = none ] || fail "the relayout in place ended, md/backup_file names $(val backup_file)"
same_model "relayout in place" "$S"
check_clean "check after the relayout in place"
stop_array "$MNT"
[ ! -e "$BK" ] || fail "the relayout in place ended, its backup file $BK is still there"
"$RAIDFUSE" examine "$G/d0.img" >"$WORK/ex.txt"
grep -q "Data Offset : 24 sectors" "$WORK/ex.txt" || fail "relayout in place: $(cat "$WORK/ex.txt")"
log "relayout in place with the backup file: $(grep -c "backup file" "$WORK/l.log") log lines of it, the model, check 0"

# damage FILE SECTOR: 4 KiB of random bytes over the data of mdadm's backup
# file FILE (its header's devstart: 8) that array SECTOR is kept in.
damage() {
	head -c 4096 /dev/urandom | dd of="$1" bs=512 seek=$((8 + $2)) conv=notrunc status=none ||
		fail "cannot damage $1"
}

# ---- 6. (RF_MD_JUDGE=1) kernel md finishes the grow in place raidfuse began
if md_judge; then
	K=$DISK/k
	rm -rf "$K"
	mkdir -p "$K/share"
	mk_conf "$K/r.conf" metadata=1.2 level=5 chunk_size=64K members="$K/d0.img $K/d1.img $K/d2.img" \
		spares="$K/d3.img" member_size=32M data_offset=12K
	create_array "$K/r.conf" --assume-clean
	RAIDFUSE_TEST_HALT=reshape-backup start_array_daemon "$K/r.conf" "$MNT" --log "$WORK/k.log"
	N=$(($(fsize "$IMG") / 512))
	"$RFHELPER" fill "$IMG" "$N" >/dev/null || fail "cannot write md's pattern"
	"$RAIDFUSE" grow "$MNT" --raid-devices 4 --backup-file "$K/share/rf.backup" ||
		fail "grow --backup-file refused: $(tail -n 3 "$WORK/k.log")"
	wait_for "the walk did not halt in its critical section" 'grep -q RAIDFUSE_TEST_HALT "$WORK/k.log"'
	kill_daemon
	if md_verify "$K" "$N"; then fail "control: mdadm assembled the members without the backup file: $V"; fi
	[[ $V == *"assemble failed"*"critical section"* ]] || fail "control without the backup file: $V"
	log "control: mdadm --assemble without the backup file refuses: ${V#*assemble failed: }"
	cp "$K/share/rf.backup" "$K/share/bad.backup"
	damage "$K/share/bad.backup" 1024
	if JOB_BACKUP=bad.backup md_verify "$K" "$N"; then fail "control: a damaged backup file read back right: $V"; fi
	[[ $V == *"restoring critical section"* && $V == *"mdpeer-pattern check"* && $V != *" OK"* ]] ||
		fail "control with a damaged backup file: $V"
	log "control: mdadm restored a damaged backup file, md's pattern check fails: $(grep -m1 'pattern check' <<<"$V")"
	JOB_BACKUP=rf.backup md_continues "$K" "$N"
	[[ $V == *"restoring critical section"* && $V == *"reshape finished: reshape_position none, raid_disks 4"* &&
		$V == *" OK"* && $V == *"mismatch_cnt=0"* && $V == *"vda=24 vdb=24 vdc=24 vdd=24"* ]] ||
		fail "kernel md's run of the grow in place raidfuse began: $V"
	log "kernel md finished the grow in place raidfuse began: mdadm restored $K/share/rf.backup" \
		"($(grep -o 'assembled at reshape_position [0-9]*' <<<"$V")), pattern OK, mismatch_cnt 0"
	rm -rf "$K"
fi

# ---- 7. (RF_MD_JUDGE=1) raidfuse finishes a grow in place kernel md began
# le32 N: N as 4 little-endian bytes, in printf %b's escapes.
le32() { printf '\\x%02x' $(($1 & 255)) $((($1 >> 8) & 255)) $((($1 >> 16) & 255)) $((($1 >> 24) & 255)); }
# mbr FILE: a disk of 35 MiB, an MBR with two partitions (type fd): 32 MiB
# at 1 MiB and 2 MiB after it.
mbr() {
	local e='\x00\xfe\xff\xff\xfd\xfe\xff\xff'     # status, CHS (unused), type, CHS
	truncate -s 35M "$1"
	printf '%b' "$e$(le32 2048)$(le32 65536)$e$(le32 67584)$(le32 4096)" |
		dd of="$1" bs=1 seek=446 conv=notrunc status=none
	printf '\x55\xaa' | dd of="$1" bs=1 seek=510 conv=notrunc status=none
}
if md_judge; then
	K=$DISK/m
	rm -rf "$K"
	mkdir -p "$K/share"
	for i in 0 1 2 3; do mbr "$K/disk$i.img"; done
	JOB_KIND=reshape-backup JOB_NDEV0=3 JOB_GROW_ARGS="--raid-devices=4" \
		JOB_CREATE_OPTS="--level=5 --chunk=512 --raid-devices=3 --metadata=1.2 --bitmap=none --data-offset=12K" \
		TMPDIR=$K "$(dirname "$MDJUDGE")/run-guest.sh" --share "$K/share" --timeout 900 \
		"$TOP_DIR/tools/md-golden-job.sh" "$K"/disk?.img >"$WORK/guest-md.out" 2>&1 ||
		fail "kernel md's grow in place: $(tail -n 20 "$WORK/guest-md.out")"
	N=$(sed -n 's/^array_sectors before the reshape=//p' "$K/share/job.log")
	MDPOS=$(sed -n 's/.*md frozen at reshape_position \([0-9]*\).*/\1/p' "$K/share/job.log")
	[ -n "$N" ] && [ -n "$MDPOS" ] || fail "the guest's job.log: $(cat "$K/share/job.log")"
	HDR=$(grep -o "mdadm's backup header: .*" "$K/share/job.log")
	for i in 0 1 2 3; do
		dd if="$K/disk$i.img" of="$K/d$i.img" bs=1M skip=1 count=32 status=none || fail "cannot copy partition 1 of disk$i"
	done
	M=$((N * 3 / 2))
	truncate -s 0 "$MODEL"
	truncate -s $((M * 512)) "$MODEL"
	"$RFHELPER" fill "$MODEL" "$N" >/dev/null || fail "cannot make the model"
	expect_fail "$RAIDFUSE" assemble "$MNT" "$K"/d?.img
	[[ $OUT == *"--backup-file"* && $OUT == *"critical section"* ]] || fail "refused for another reason: $OUT"
	log "kernel md's grow stopped at reshape_position $MDPOS ($HDR): assembled without the file, refused"
	mkdir -p "$K/c"
	for i in 0 1 2 3; do cp "$K/d$i.img" "$K/c/d$i.img"; done
	cp "$K/share/md.backup" "$K/c/bad.backup"
	damage "$K/c/bad.backup" 1024
	start_assemble_daemon array.img "$MNT" --freeze --backup-file "$K/c/bad.backup" "$K"/c/d?.img
	expect_fail "$RFHELPER" same "$IMG" "$MODEL" $((N * 512))
	stop_array "$MNT"
	log "control: mdadm's backup file damaged at array sector 1024, restored: the image differs from md's pattern: ${OUT##*: }"
	start_assemble_daemon array.img "$MNT" --freeze --backup-file "$K/share/md.backup" "$K"/d?.img
	P=$(pos)
	[[ $HDR == *"array sectors [0, $P)" && $P -gt $MDPOS ]] ||
		fail "restored: position $P, md stopped at $MDPOS, $HDR"
	same_model "md's grow in place, restored from mdadm's backup file (position $P)" "$N"
	to_end "md's grow in place, continued"
	[ "$(fsize "$IMG")" = $((M * 512)) ] || fail "grown image of $(fsize "$IMG") bytes, 4 members give $((M * 512))"
	same_model "md's grow in place, continued by raidfuse" "$M"
	check_clean "check after md's grow in place, continued"
	stop_array "$MNT"
	for i in 0 1 2 3; do
		"$RAIDFUSE" examine "$K/d$i.img" >"$WORK/ex.txt" || fail "examine d$i failed"
		grep -q "Data Offset : 24 sectors" "$WORK/ex.txt" && ! grep -q "Reshape" "$WORK/ex.txt" ||
			fail "d$i after the grow: $(cat "$WORK/ex.txt")"
	done
	log "kernel md's grow in place, stopped at array sector $MDPOS, continued by raidfuse with mdadm's file:" \
		"restored to $P, $N -> $M sectors, md's pattern, zeros after, check 0"
	rm -rf "$K"
fi

# ---- negative controls
# control GROW_BREAK MOUNT_BREAK: steps 2 and 4 with one safety step left
# out; the image must differ from the model.
control() {
	grown_halted "$1"
	RAIDFUSE_TEST_BREAK=$2 start_array_daemon "$G/r.conf" "$MNT" --freeze --backup-file "$BK" \
		--log "$WORK/c.log"
	if "$RFHELPER" same "$IMG" "$MODEL" $((GOLD * 512)) >"$WORK/same.out"; then
		to_end "control ($1$2)"
		! "$RFHELPER" same "$IMG" "$MODEL" $((GNEW * 512)) >"$WORK/same.out" ||
			fail "control RAIDFUSE_TEST_BREAK=$1$2: the image is the model all the same"
	fi
	stop_array "$MNT"
	log "negative control (RAIDFUSE_TEST_BREAK=$1$2): the image differs from the model: $(head -n 1 "$WORK/same.out")"
}
control reshape-backup ""
control "" reshape-restore
