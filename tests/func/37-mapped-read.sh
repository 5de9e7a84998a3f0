#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 37-mapped-read: reads answered from the members' mappings, and writes
# made through them (members on tmpfs).
#
# 1. raid0, raid5 and raid10 (raid1 and raid6 too outside quick runs):
#    fio writes and verifies with 4 KiB random reads, 1 MiB reads, 192 KiB
#    reads crossing chunks and 66 KiB reads starting inside pages; the
#    daemon says at its end that it answered reads from the mappings.
# 2. Reads beside writes: one fio job rewrites a region while another
#    verifies a region written before, and then the rewritten one
#    verifies: a mapped read sees what the members hold.
# 3. A member read error (fault injection) on a mapped read: the read goes
#    the usual way, the member fails, the data reads right; then, degraded,
#    its chunks are rebuilt the usual way, the others come from the
#    mappings, and the data verifies again.
# 4. A member truncated under its mapping (another process): the daemon
#    survives, the member fails (the member watch), and the data verifies
#    from the others.
#    Writes through the mappings are in the member files (raid1: each
#    member holds the bytes written, while mounted and after).
# 5. The negative control: RAIDFUSE_MAP=0 answers no read from a mapping,
#    and the same data verifies.
# 6. FUSE over io_uring (as root, where the kernel has it; the fuse
#    module's enable_uring saved and restored): the bytes are copied from
#    the mappings into the ring entries; fio verifies, reads were answered
#    from the mappings, and a member truncated under them while 4 KiB reads
#    run fails, the daemon survives (the copy is guarded) and the data
#    verifies from the others.
. "$(dirname "$0")/lib.sh"
requires fuse fio
# Mapping on whatever the environment says (CI's ASan pass turns it off
# for the other tests); part 5 turns it off itself.
export RAIDFUSE_MAP=1

MNT=$WORK/mnt IMG=$WORK/mnt/array.img D=$WORK/a
mkdir -p "$D"
case "$(stat -f -c %T "$D")" in
tmpfs | ramfs) ;;
*) echo "skip: $D is not on tmpfs (members elsewhere are not mapped)"; exit 77 ;;
esac

# state NAME: md/dev-NAME/state.
state() { cat "$MNT/md/dev-$1/state"; }
# mapped: how many reads the last daemon answered from mappings (after its stop).
mapped() { sed -n 's/.* \([0-9]*\) reads answered from the members. mappings.*/\1/p' "${_LOG_OF[$MNT]}"; }

JOBS=(--name=rand4k --rw=randwrite --bs=4k --size=4M --offset=0
	--name=seq1m --rw=write --bs=1M --size=8M --offset=4M
	--name=odd192k --rw=write --bs=192k --size=6M --offset=12M
	--name=rand66k --rw=randwrite --bs=66k --size=3M --offset=18M)

# --- 1. levels ------------------------------------------------------------------

each_level "$D" "$MNT" "reads answered from the mappings" '[ "$(mapped)" -gt 0 ]' "${JOBS[@]}"

# --- 2. reads beside writes -------------------------------------------------------

log "raid5: a region verified from the mappings while another is rewritten"
start_array "$D/r5.conf" "$MNT"
fio_verify "$IMG" --name=a --rw=write --bs=64k --size=8M --offset=0
fio --filename="$IMG" --direct=1 --ioengine=io_uring --iodepth=8 --verify=crc32c --verify_fatal=1 \
	--verify_state_save=0 --randrepeat=1 --output="$WORK/beside.out" \
	--name=a --rw=write --bs=64k --size=8M --offset=0 --verify_only --loops=3 \
	--name=rewrite --rw=randwrite --bs=4k --size=8M --offset=8M --loops=2 ||
	{ cat "$WORK/beside.out" >&2; fail "fio beside the writes failed"; }
grep -q '^verify:\|err= *[1-9-]' "$WORK/beside.out" && { cat "$WORK/beside.out" >&2; fail "a read beside the writes did not verify"; }
[ "$(grep -c 'READ:' "$WORK/beside.out")" -ge 1 ] || fail "nothing was read beside the writes"
stop_array "$MNT"

# --- 3. a member read error -------------------------------------------------------

log "raid5: EIO on member 2's reads met by mapped reads: the member fails, fio verifies"
start_array "$D/r5.conf" "$MNT"
fio_verify "$IMG" "${JOBS[@]}"
echo "error=EIO ops=read" >"$MNT/md/dev-r5-2.img/fault"
fio_verify --verify_only "$IMG" "${JOBS[@]}"
check '[ "$(state r5-2.img)" = faulty ]' "member 2 failed by a read"
check '[ "$(state r5-0.img)" = in_sync ]' "member 0 stays in sync"
log "degraded: member 2's chunks rebuilt, the others' read from the mappings"
fio_verify --verify_only "$IMG" "${JOBS[@]}"
stop_array "$MNT"
check '[ "$(mapped)" -gt 0 ]' "degraded raid5: the in-sync members' reads came from the mappings"

# --- 4. a member truncated under its mapping ----------------------------------------

log "raid5: member 3 truncated by another process: it fails, the data verifies"
# left-symmetric, 4 members, 64 KiB chunks: chunk 3 is on member 3.
mk_conf "$D/f5.conf" level=5 chunk_size=64K members="$(members 4 f5-)" member_size=16M
create_array "$D/f5.conf"
head -c 4M /dev/urandom >"$WORK/data"
start_array "$D/f5.conf" "$MNT"
dd if="$WORK/data" of="$IMG" bs=1M oflag=direct conv=notrunc status=none
cmp <(dd if="$IMG" bs=4k count=1024 iflag=direct status=none) "$WORK/data" || fail "before: the data differs"
truncate -s 0 "$D/f5-3.img"
for _ in $(seq 100); do
	[ "$(state f5-3.img)" = faulty ] && break
	sleep 0.05
done
check '[ "$(state f5-3.img)" = faulty ]' "the truncated member failed"
cmp <(dd if="$IMG" bs=4k count=1024 iflag=direct status=none) "$WORK/data" ||
	fail "after the truncation: the data read from the others differs"
check 'kill -0 "$DAEMON_PID"' "the daemon is alive"
stop_array "$MNT"

# --- 4b. writes land in the member files ------------------------------------------

log "raid1: writes through the mappings are in the member files, at once and after the unmount"
mk_conf "$D/w1.conf" level=1 members="$(members 2 w1-)" member_size=16M
create_array "$D/w1.conf"
start_array "$D/w1.conf" "$MNT"
dd if="$WORK/data" of="$IMG" bs=64k oflag=direct conv=notrunc status=none
for m in 0 1; do
	cmp -n 4194304 "$D/w1-$m.img" "$WORK/data" || fail "member $m does not hold what was written (mounted)"
done
stop_array "$MNT"
for m in 0 1; do
	cmp -n 4194304 "$D/w1-$m.img" "$WORK/data" || fail "member $m does not hold what was written (unmounted)"
done

# --- 5. switched off ------------------------------------------------------------------

log "RAIDFUSE_MAP=0: no read from a mapping, the data verifies"
RAIDFUSE_MAP=0 start_array "$D/r5.conf" "$MNT"
fio_verify --verify_only "$IMG" "${JOBS[@]}"
stop_array "$MNT"
check '[ -z "$(mapped)" ]' "mapping off: no mapped count in the log"

# --- 6. FUSE over io_uring ------------------------------------------------------------

PARAM=/sys/module/fuse/parameters/enable_uring
if [ "$(id -u)" != 0 ] || [ ! -w $PARAM ]; then
	log "skipped part 6: not root, or no $PARAM (FUSE over io_uring: Linux 6.14+)"
	log "ok"
	exit 0
fi
OLD_PARAM=$(cat $PARAM)
# set +e: under set -e the (exit $rc) of a failed run would end the trap
# before _cleanup.
trap 'rc=$?; _main_shell || exit $rc; set +e; echo "$OLD_PARAM" >$PARAM; (exit $rc); _cleanup' EXIT
echo 1 >$PARAM
log "FUSE over io_uring: reads copied from the mappings into the ring entries, fio verify"
start_array "$D/r5.conf" "$MNT" -o io_uring=on
log_has "$MNT" "FUSE over io_uring: [0-9]+ queues" || fail "io_uring=on: not served through it"
fio_verify "$IMG" "${JOBS[@]}"
stop_array "$MNT"
check '[ "$(mapped)" -gt 0 ]' "io_uring: reads were answered from the mappings ($(mapped))"

log "io_uring: member 3 truncated while 4 KiB reads run: it fails, the daemon lives, the data verifies"
rm -f "$D"/f5-*.img
create_array "$D/f5.conf"
start_array "$D/f5.conf" "$MNT" -o io_uring=on
dd if="$WORK/data" of="$IMG" bs=1M oflag=direct conv=notrunc status=none
fio --filename="$IMG" --direct=1 --ioengine=io_uring --iodepth=16 --name=r --rw=randread --bs=4k \
	--size=4M --time_based --runtime=2 --output="$WORK/trunc.out" &
fio_pid=$!
sleep 0.5
truncate -s 0 "$D/f5-3.img"
wait "$fio_pid" || true         # reads in the window before the member fails may see EIO
for _ in $(seq 100); do
	[ "$(state f5-3.img)" = faulty ] && break
	sleep 0.05
done
check '[ "$(state f5-3.img)" = faulty ]' "io_uring: the truncated member failed"
check 'kill -0 "$DAEMON_PID"' "io_uring: the daemon is alive"
cmp <(dd if="$IMG" bs=4k count=1024 iflag=direct status=none) "$WORK/data" ||
	fail "io_uring: after the truncation the data read from the others differs"
stop_array "$MNT"
log "ok"
