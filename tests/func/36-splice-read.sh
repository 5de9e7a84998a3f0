#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 36-splice-read: large reads answered by splice (libfuse's transport).
#
# 1. raid0, raid5 and raid10 (raid1 and raid6 too outside quick runs):
#    fio writes and verifies with 1 MiB reads, 192 KiB reads crossing
#    chunks and 66 KiB reads starting inside pages; the daemon says at
#    its end that it spliced reads and that none fell back.
# 2. raid5 with a member failed through md/dev-*/state: the same data
#    verifies (chunks of the failed member rebuilt the usual way, the
#    others spliced), and again mounted with that member missing.
# 3. A member read error (fault injection) met by a splice: the read goes
#    the usual way, the member fails and the data read is right.  The
#    negative control: with the fallback switched off (the test-only
#    RAIDFUSE_SPLICE=nofallback) the same error reaches the reader, and
#    the member is not failed; without a fault that mount reads right.
# 4. RAIDFUSE_SPLICE=0 splices nothing.
. "$(dirname "$0")/lib.sh"
requires fuse fio
# Members on tmpfs would be read through their mappings (37-mapped-read):
# splice serves the others, as these members are with mapping off.
export RAIDFUSE_MAP=0
# libfuse's transport, whatever FUSE over io_uring's module switch says
# (with it on, io_uring=auto takes the ring, which does not splice).
XPORT=(-o io_uring=off)
EACH_LEVEL_OPTS=("${XPORT[@]}")

MNT=$WORK/mnt IMG=$WORK/mnt/array.img D=$WORK/a
mkdir -p "$D"

# state NAME: md/dev-NAME/state.
state() { cat "$MNT/md/dev-$1/state"; }
# counts: "SPLICED FELLBACK" from the last daemon's log (after its stop).
counts() { sed -n 's/.* \([0-9]*\) reads spliced, \([0-9]*\) went the usual way.*/\1 \2/p' "${_LOG_OF[$MNT]}"; }

JOBS=(--name=seq1m --rw=write --bs=1M --size=8M --offset=0
	--name=odd192k --rw=write --bs=192k --size=6M --offset=8M
	--name=rand66k --rw=randwrite --bs=66k --size=3M --offset=16M)

# --- 1. levels ------------------------------------------------------------------

each_level "$D" "$MNT" "large reads spliced, none failed" 'read -r spliced fellback <<<"$(counts)"; [ "${spliced:-0}" -gt 0 ] && [ "$fellback" = 0 ]' "${JOBS[@]}"

# --- 2. degraded raid5 ------------------------------------------------------------

log "raid5 with member 1 failed through md/dev-r5-1.img/state: reads verify"
start_array "$D/r5.conf" "$MNT" "${XPORT[@]}"
fio_verify "$IMG" "${JOBS[@]}"
echo faulty >"$MNT/md/dev-r5-1.img/state"
check '[ "$(state r5-1.img)" = faulty ]' "member 1 failed"
fio_verify --verify_only "$IMG" "${JOBS[@]}"
stop_array "$MNT"
mk_conf "$D/r5m.conf" level=5 chunk_size=64K members="r5-0.img missing r5-2.img r5-3.img" member_size=24M
start_array "$D/r5m.conf" "$MNT" "${XPORT[@]}"
check '[ "$(cat "$MNT/md/degraded")" = 1 ]' "mounted with member 1 missing"
fio_verify --verify_only "$IMG" "${JOBS[@]}"
stop_array "$MNT"
read -r spliced fellback <<<"$(counts)"
check '[ "${spliced:-0}" -gt 0 ]' "degraded raid5: the in-sync members' chunks were spliced ($(counts))"
check '[ "$fellback" = 0 ]' "degraded raid5: no splice failed"

# --- 3. a member read error under a splice ----------------------------------------

# left-symmetric, 4 members, 64 KiB chunks: chunk 2 is on member 2, chunk
# 0 on member 0.
mk_conf "$D/f5.conf" level=5 chunk_size=64K members="$(members 4 f5-)" member_size=16M
create_array "$D/f5.conf"
head -c 4M /dev/urandom >"$WORK/data"

log "raid5: EIO on member 2's reads met by a splice: the member fails, the data reads right"
start_array "$D/f5.conf" "$MNT" "${XPORT[@]}"
dd if="$WORK/data" of="$IMG" bs=1M oflag=direct conv=notrunc status=none
echo "error=EIO ops=read" >"$MNT/md/dev-f5-2.img/fault"
cmp <(dd if="$IMG" bs=1M count=4 iflag=direct status=none) "$WORK/data" ||
	fail "the data read with member 2 failing differs"
check '[ "$(state f5-2.img)" = faulty ]' "member 2 failed by the read"
check '[ "$(state f5-0.img)" = in_sync ]' "member 0 stays in sync"
stop_array "$MNT"
read -r spliced fellback <<<"$(counts)"
check '[ "${fellback:-0}" -ge 1 ]' "the failed splice went the usual way ($(counts))"

log "negative control: the same error with the fallback off reaches the reader"
rm -f "$D"/f5-*.img
create_array "$D/f5.conf"
RAIDFUSE_SPLICE=nofallback start_array "$D/f5.conf" "$MNT" "${XPORT[@]}"
dd if="$WORK/data" of="$IMG" bs=1M oflag=direct conv=notrunc status=none
cmp <(dd if="$IMG" bs=1M count=4 iflag=direct status=none) "$WORK/data" ||
	fail "nofallback, no fault: the data read differs"
echo "error=EIO ops=read" >"$MNT/md/dev-f5-2.img/fault"
dd if="$IMG" of=/dev/null bs=64k count=1 iflag=direct status=none ||
	fail "nofallback: chunk 0 (member 0, no fault) did not read"
expect_fail dd if="$IMG" of=/dev/null bs=64k skip=2 count=1 iflag=direct status=none
[[ $OUT == *"Input/output error"* ]] || fail "nofallback: chunk 2 on member 2 with EIO: $OUT"
check '[ "$(state f5-2.img)" = in_sync ]' "nofallback: the splice's error did not fail member 2"
echo off >"$MNT/md/dev-f5-2.img/fault"
stop_array "$MNT"

# --- 4. switched off ------------------------------------------------------------------

log "RAIDFUSE_SPLICE=0: nothing is spliced"
RAIDFUSE_SPLICE=0 start_array "$D/f5.conf" "$MNT" "${XPORT[@]}"
cmp <(dd if="$IMG" bs=1M count=4 iflag=direct status=none) "$WORK/data" || fail "splice off: the data differs"
stop_array "$MNT"
check '[ -z "$(counts)" ]' "splice off: no splice count in the log"
log "ok"
