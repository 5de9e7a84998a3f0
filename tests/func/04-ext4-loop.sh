#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 04-ext4-loop: a file system on the image, through a loop device.
#
# A raid5 image backs a loop device (direct IO: the image takes O_DIRECT),
# mkfs.ext4 makes a file system on it, and files of random data go in.
# After umount, losetup -d, unmount of the array and a fresh daemon, the
# same file system mounts clean (fsck finds nothing) and every file has
# its checksum.
#
# And the other way round: loop devices as members.  A raid5 of three
# block devices with 4096-byte logical sectors (so 512-byte writes to the
# image need read-modify-write of whole member sectors): create has nothing
# to make, fio's blocks of 512 B to 64K read back, and the backing files
# are in sync (XOR zero).
. "$(dirname "$0")/lib.sh"
requires fuse loop ext4 fio
build_helper

D=$WORK/a
MNT=$WORK/mnt
FS=$WORK/fs
IMG=$MNT/array.img
mkdir -p "$D" "$FS"
mk_conf "$D/raid.conf" level=5 layout=left-symmetric chunk_size=64K \
	members="$(members 4)" member_size=64M
create_array "$D/raid.conf"

# attach: a loop device (LOOP) on the image; detach: away with it, and it
# must really be gone.
attach() {
	loop_attach "$IMG" --direct-io=on
}
detach() {
	local i
	loop_detach "$LOOP"
	for ((i = 0; i < 100; i++)); do
		losetup "$LOOP" 2>/dev/null | grep -qF "$IMG" || return 0
		sleep 0.05
	done
	fail "$LOOP still attached to the image after losetup -d"
}
_FSMOUNTS+=("$FS")

start_array "$D/raid.conf" "$MNT"
attach
# The image takes O_DIRECT, so the loop device really runs direct IO.
[ "$(losetup -n -O DIO "$LOOP" | tr -d ' ')" = 1 ] || fail "$LOOP did not get direct IO on the image"
log "loop $LOOP on a raid5 image: mkfs.ext4, write files"
mkfs.ext4 -q -F -b 4096 -E lazy_itable_init=0,lazy_journal_init=0 "$LOOP" || fail "mkfs.ext4 on $LOOP failed"
mount -t ext4 "$LOOP" "$FS" || fail "cannot mount the new ext4 on $LOOP"
mkdir "$FS/dir"
for i in 1 2 3 4 5 6; do
	head -c $((i * 1536 * 1024 + i * 777)) /dev/urandom >"$FS/dir/f$i"
done
dd if=/dev/urandom of="$FS/big" bs=1M count=24 status=none
(cd "$FS" && sha256sum big dir/*) >"$WORK/sums"
umount "$FS" || fail "umount $FS failed"
detach
stop_array "$MNT"

log "new daemon: the file system is clean and the files are intact"
start_array "$D/raid.conf" "$MNT"
attach
fsck.ext4 -n -f "$LOOP" >"$WORK/fsck.out" 2>&1 || fail "fsck.ext4 -n found problems:"$'\n'"$(cat "$WORK/fsck.out")"
mount -t ext4 -o ro "$LOOP" "$FS" || fail "cannot mount the ext4 again"
(cd "$FS" && sha256sum -c --quiet "$WORK/sums") || fail "files changed across the remount"
umount "$FS"
detach
stop_array "$MNT"

log "members on block devices with 4K sectors"
B=$WORK/b
mkdir -p "$B"
devs=()
for i in 0 1 2; do
	truncate -s 32M "$B/b$i.img"
	loop_attach "$B/b$i.img" -b 4096 --direct-io=on
	devs+=("$LOOP")
done
mk_conf "$B/raid.conf" level=5 chunk_size=64K members="${devs[*]}"
out=$("$RAIDFUSE" create "$B/raid.conf" 2>&1) || fail "create with block device members failed: $out"
start_array "$B/raid.conf" "$MNT"
check '[ "$(fsize "$IMG")" = $((64 << 20)) ]' "the image over 2 x 32M of data is $(fsize "$IMG") bytes"
fio_verify "$IMG" --name=small --rw=randwrite --bssplit=512/30:1536/20:6k/20:64k/30 --size=8M \
	--name=seq --rw=write --bs=1M --offset=8M --size=8M
stop_array "$MNT"
for l in "${devs[@]}"; do
	loop_detach "$l"
done
"$RFHELPER" xor-zero 0 $((32 << 20)) "$B"/b?.img >"$WORK/xor.out" ||
	fail "block device members: parity out of sync: $(cat "$WORK/xor.out")"
