#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 32-mount-overlay: raidfuse mount --overlay DIR serves a config's array with
# every write in DIR's copy-on-write files, never on the members.
#
# 1. An array with md superblocks (create): mounted with --overlay, the
#    pattern written over the whole image reads back, and again after a
#    second mount with the same DIR (the experiment continues); the
#    members' sha256 stay what they were.  Negative control: mounted
#    without the overlay the image does not hold the pattern.
# 2. What detect --write-config prepares: the superblocks zeroed, detect
#    writes a config (metadata "none"), mount --overlay of it serves the
#    pattern, takes a write, and the members stay byte for byte the same;
#    the write is there at the next mount with DIR and not without it.
#    A member changed in a block the overlay's record samples is refused
#    ("changed since").
. "$(dirname "$0")/lib.sh"
requires fuse
build_helper

MNT=$WORK/mnt
D=$WORK/a
mkdir -p "$D"
sums() { sha256sum "$D"/d*.img | cut -d' ' -f1 | tr '\n' ' '; }

log "1. an array with md superblocks"
mk_conf "$D/raid.conf" metadata=1.2 level=5 layout=left-symmetric chunk_size=64K member_size=8M \
	members="$(members 4)"
create_array --assume-clean "$D/raid.conf"
before=$(sums)
start_array "$D/raid.conf" "$MNT" --overlay "$WORK/ovl1"
sectors=$(($(fsize "$MNT/array.img") / 512))
"$RFHELPER" fill "$MNT/array.img" "$sectors" >/dev/null || fail "fill through the overlay"
"$RFHELPER" pattern "$MNT/array.img" "$sectors" >"$WORK/p.out" || fail "overlay: $(cat "$WORK/p.out")"
stop_array "$MNT"
[ "$(sums)" = "$before" ] || fail "writes through mount --overlay changed the members"
start_array "$D/raid.conf" "$MNT" --overlay "$WORK/ovl1"
"$RFHELPER" pattern "$MNT/array.img" "$sectors" >"$WORK/p.out" || fail "overlay again: $(cat "$WORK/p.out")"
stop_array "$MNT"
start_array "$D/raid.conf" "$MNT" --freeze
expect_fail "$RFHELPER" pattern "$MNT/array.img" "$sectors"
stop_array "$MNT"
[ "$(sums)" = "$before" ] || fail "a read-only look changed the members"
log "members unchanged ($sectors sectors written through the overlay, there again with the same DIR, not without it)"

log "2. a config detect wrote (no superblocks)"
rm -f "$D"/d*.img
create_array --assume-clean "$D/raid.conf"
start_array "$D/raid.conf" "$MNT"
"$RFHELPER" fill "$MNT/array.img" "$sectors" >/dev/null || fail "fill"
stop_array "$MNT"
for f in "$D"/d*.img; do
	dd if=/dev/zero of="$f" bs=4096 seek=1 count=1 conv=notrunc status=none
done
"$RAIDFUSE" detect --write-config "$D/found.conf" "$D"/d2.img "$D"/d0.img "$D"/d3.img "$D"/d1.img >"$D/detect.out" ||
	fail "detect: $(cat "$D/detect.out")"
grep -q 'metadata = "none"' "$D/found.conf" || fail "detect's config: $(cat "$D/found.conf")"
before=$(sums)
start_array "$D/found.conf" "$MNT" --overlay "$WORK/ovl2"
"$RFHELPER" pattern "$MNT/array.img" "$sectors" >"$WORK/p.out" || fail "found.conf --overlay: $(cat "$WORK/p.out")"
# one 4 KiB write at sector 2048 (0xa5 bytes)
out=$("$RFHELPER" pwrite "$MNT/array.img" $((2048 * 512)) 4096 direct)
[ "$out" = ret=4096 ] || fail "write through the overlay: $out"
stop_array "$MNT"
[ "$(sums)" = "$before" ] || fail "writes through mount --overlay of detect's config changed the members"
start_array "$D/found.conf" "$MNT" --overlay "$WORK/ovl2"
expect_fail "$RFHELPER" pattern "$MNT/array.img" "$sectors"
[[ $OUT == "pattern: sector 2048 word"* && $OUT == *" 8 bad sector(s) "* ]] || fail "the overlay's write is not where it was made: $OUT"
stop_array "$MNT"
start_array "$D/found.conf" "$MNT" --freeze
"$RFHELPER" pattern "$MNT/array.img" "$sectors" >"$WORK/p.out" || fail "without the overlay: $(cat "$WORK/p.out")"
stop_array "$MNT"
log "members unchanged; the write is in the overlay only"

# A member changed since the overlay was made (its first block, which the
# record samples): refused before anything is served or written.
printf 'X' | dd of="$D/d1.img" bs=1 seek=100 conv=notrunc status=none
mkdir -p "$MNT"
expect_fail timeout 30 "$RAIDFUSE" mount "$D/found.conf" "$MNT" -f --overlay "$WORK/ovl2"
[[ $OUT == *"changed since"* ]] || fail "a changed member under the overlay: $OUT"
mountpoint -q "$MNT" && fail "served over a changed member"
log "a changed member is refused: ${OUT#raidfuse: }"
