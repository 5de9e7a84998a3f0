#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 07-bounds: the image behaves like a block device of fixed size.
#
#   - its size is the array's, and nothing changes it: truncate to another
#     size fails, truncate to the same size is a no-op, and O_TRUNC is
#     ignored as a block device ignores it (`> image` wipes nothing)
#   - a write that starts at or past the end fails with ENOSPC; one that
#     crosses the end is cut short there and writes what fits
#   - a read at or past the end returns 0 bytes; one across it is short
#   - IO of any size at any byte offset works (without O_DIRECT)
#   - fsync works and data written with it reads back
. "$(dirname "$0")/lib.sh"
requires fuse fio
build_helper

D=$WORK/a
MNT=$WORK/mnt
IMG=$MNT/array.img
mkdir -p "$D"
# raid5, 4 x 64M, 64K chunk: 3 x 64M of data.
SIZE=$((3 * 64 << 20))
mk_conf "$D/raid.conf" level=5 chunk_size=64K members="$(members 4)" member_size=64M
create_array "$D/raid.conf"
start_array "$D/raid.conf" "$MNT"
H=$RFHELPER

# expect "COMMAND" RESULT: rfhelper's one-line result must be RESULT.
expect() {
	local got
	got=$($H $1) || fail "rfhelper $1 failed"
	[ "$got" = "$2" ] || fail "$1: got $got, expected $2"
}

log "size: $SIZE bytes"
check '[ "$(fsize "$IMG")" = $SIZE ]' "image is $(fsize "$IMG") bytes, expected $SIZE"

log "the last block takes data; writes from the end on fail with ENOSPC"
fio_verify "$IMG" --rw=write --bs=64k --offset=$((SIZE - (1 << 20))) --size=1M
expect "pwrite $IMG $((SIZE - 4096)) 4096 direct" ret=4096
expect "pwrite $IMG $SIZE 4096 direct" err=ENOSPC
expect "pwrite $IMG $SIZE 4096" err=ENOSPC
expect "pwrite $IMG $((SIZE + (1 << 20))) 4096 direct" err=ENOSPC
expect "pwrite $IMG $((SIZE + 1)) 1" err=ENOSPC

log "a write across the end is short, and writes the part that fits"
expect "pwrite $IMG $((SIZE - 2048)) 4096 direct" ret=2048
expect "pwrite $IMG $((SIZE - 100)) 4096" ret=100
tail_bytes=$(dd if="$IMG" bs=512 skip=$((SIZE / 512 - 4)) count=4 iflag=direct status=none | tr -d '\245' | wc -c)
[ "$tail_bytes" = 0 ] || fail "the last 2048 bytes do not hold what the short write wrote ($tail_bytes other bytes)"

log "reads at or past the end return 0 bytes; across the end, short"
expect "pread $IMG $SIZE 4096 direct" ret=0
expect "pread $IMG $SIZE 4096" ret=0
expect "pread $IMG $((SIZE + (1 << 20))) 4096 direct" ret=0
expect "pread $IMG $((SIZE - 2048)) 4096 direct" ret=2048
expect "pread $IMG $((SIZE - 1)) 10" ret=1
check '[ "$(fsize "$IMG")" = $SIZE ]' "the size changed to $(fsize "$IMG")"

log "the size is fixed: truncate fails, O_TRUNC is ignored, the data stays"
fio_verify "$IMG" --rw=randwrite --bs=4k --size=4M
expect "truncate $IMG 0" err=EPERM
expect "truncate $IMG $((SIZE - 4096))" err=EPERM
expect "truncate $IMG $((SIZE + 4096))" err=EPERM
expect "truncate $IMG $SIZE" ret=0
expect "open-trunc $IMG" ret=0
: >"$IMG"
check '[ "$(fsize "$IMG")" = $SIZE ]' "the size changed to $(fsize "$IMG")"
fio_verify --verify_only "$IMG" --rw=randwrite --bs=4k --size=4M

log "IO at any byte offset and length (no O_DIRECT)"
# A stripe-aligned 1M region (a stripe is 3 x 64K) of random data, a copy
# of it here; small writes at odd places go to both, then they must match.
REG=$((40 * 3 * 64 * 1024))
head -c $((1 << 20)) /dev/urandom >"$WORK/ref"
dd if="$WORK/ref" of="$IMG" bs=1M seek=$REG oflag=seek_bytes,direct conv=notrunc status=none
poke() {  # poke OFFSET-IN-REGION FILE-WITH-BYTES
	dd if="$2" of="$IMG" bs=64k seek=$((REG + $1)) oflag=seek_bytes conv=notrunc status=none
	dd if="$2" of="$WORK/ref" bs=64k seek=$1 oflag=seek_bytes conv=notrunc status=none
}
printf 'raidfuse-odd-bytes' >"$WORK/p1"
printf 'X' >"$WORK/p2"
printf 'YZ' >"$WORK/p3"
head -c 5000 /dev/urandom >"$WORK/p4"
poke 12345 "$WORK/p1"                   # inside a chunk
poke $((64 * 1024 - 1)) "$WORK/p2"      # the last byte of a chunk
poke $((3 * 64 * 1024 - 1)) "$WORK/p3"  # across a stripe boundary
poke $((128 * 1024 - 2100)) "$WORK/p4"  # across a chunk boundary, odd length
cmp "$WORK/ref" <(dd if="$IMG" bs=1M skip=$REG count=1 iflag=skip_bytes,direct status=none) ||
	fail "small writes at odd offsets: the region differs from what was written"
got=$(dd if="$IMG" bs=18 skip=$((REG + 12345)) count=1 iflag=skip_bytes status=none)
[ "$got" = raidfuse-odd-bytes ] || fail "18 bytes read at an odd offset: '$got'"

log "fsync"
expect "fsync $IMG" ret=0
dd if=/dev/urandom of="$WORK/blob" bs=64k count=16 status=none
dd if="$WORK/blob" of="$IMG" bs=64k seek=100 conv=notrunc,fsync oflag=direct status=none ||
	fail "dd conv=fsync failed"
fio_verify "$IMG" --rw=randwrite --bs=16k --offset=32M --size=2M --fsync=1
stop_array "$MNT"
start_array "$D/raid.conf" "$MNT"
cmp -s -n $((1 << 20)) "$WORK/blob" <(dd if="$IMG" bs=64k skip=100 count=16 iflag=direct status=none) ||
	fail "data written with fsync differs after a remount"
fio_verify --verify_only "$IMG" --rw=randwrite --bs=16k --offset=32M --size=2M
stop_array "$MNT"
