#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 22-overlay-stale: an overlay is only reused over the members it was
# made over.
#
# Regression: assemble --overlay ov, write, unmount; assemble the members
# read-write, write elsewhere, unmount; assemble --overlay ov again was
# accepted, and the image was a mix of the overlay's blocks and the
# members' newer ones (a check counted mismatches).  Expected: refused,
# naming the member, its events when the overlay was made and now; a
# fresh overlay directory over the changed members works and checks
# clean.  Negative control: reused over unchanged members (raidfuse's own
# superblock updates went into the overlay, not the members), ov is
# accepted and reads back what was written through it.
. "$(dirname "$0")/lib.sh"
requires fuse

MNT=$WORK/mnt
D=$WORK/a
OV=$WORK/ov
mkdir -p "$D"
mk_conf "$D/raid.conf" metadata=1.2 level=5 members="$(members 3)" member_size=16M chunk_size=64K
create_array "$D/raid.conf" --assume-clean
M=("$D/d0.img" "$D/d1.img" "$D/d2.img")
head -c 1M /dev/urandom >"$WORK/A"
head -c 1M /dev/urandom >"$WORK/B"

# events N of member file F, from its own superblock (what mdadm shows)
events() {
	"$RAIDFUSE" examine "$1" | sed -n 's/^ *Events : //p'
}

# Two data chunks of 64K per stripe: A goes to the first of each of 16
# stripes (through the overlay), B to the second (on the members), so a
# mix of the two holds parity of one over data of the other.
# put FILE HALF: FILE's 16 chunks to the image's chunks 2i + HALF.
put() {
	local i
	for ((i = 0; i < 16; i++)); do
		dd if="$1" of="$MNT/array.img" bs=64K skip=$i seek=$((2 * i + $2)) count=1 conv=notrunc status=none
	done
	sync "$MNT/array.img"
}
# is FILE HALF: those chunks hold FILE.
is() {
	local i
	for ((i = 0; i < 16; i++)); do
		dd if="$MNT/array.img" bs=64K skip=$((2 * i + $2)) count=1 status=none
	done | cmp -s - "$1"
}

log "1. written through the overlay; the members stay as they were"
sums=$(sha256sum "${M[@]}")
start_assemble array.img "$MNT" --overlay "$OV" "${M[@]}"
put "$WORK/A" 0
stop_array "$MNT"
check '[ "$sums" = "$(sha256sum "${M[@]}")" ]' "--overlay changed a member"
ls "$OV"/*.base >/dev/null 2>&1 || fail "no .base record in $OV: $(ls "$OV")"
base_events=$(events "${M[0]}")

log "2. negative control: the same members, the same overlay: accepted"
start_assemble array.img "$MNT" --overlay "$OV" "${M[@]}"
is "$WORK/A" 0 || fail "reused overlay over unchanged members: what was written is not there"
stop_array "$MNT"

log "3. the members written without the overlay"
start_assemble array.img "$MNT" "${M[@]}"
put "$WORK/B" 1
stop_array "$MNT"
now_events=$(events "${M[0]}")
check "[ $now_events -gt $base_events ]" "members' events did not move ($base_events, $now_events)"

log "4. the old overlay over the changed members: refused, saying why"
# In the background: if it is served (the bug), say what it serves.
"$RAIDFUSE" assemble -f --overlay "$OV" "$MNT" "${M[@]}" >"$WORK/stale.out" 2>&1 &
pid=$!
for ((i = 0; i < 100; i++)); do
	kill -0 "$pid" 2>/dev/null && [ ! -e "$MNT/array.img" ] || break
	sleep 0.1
done
if [ -e "$MNT/array.img" ]; then
	echo check >"$MNT/md/sync_action"
	wait_sync_idle "$MNT" check
	mm=$(cat "$MNT/md/mismatch_cnt")
	fusermount3 -u "$MNT"
	wait "$pid" || true
	fail "the stale overlay was served: a mix of it and the members (check: $mm mismatches)"
fi
kill -0 "$pid" 2>/dev/null && { kill "$pid"; fail "stale overlay: neither refused nor served in 10 s"; }
RC=0
wait "$pid" || RC=$?
OUT=$(cat "$WORK/stale.out")
check "[ $RC != 0 ]" "stale overlay: exit 0 without serving: $OUT"
want="overlay $OV was made over member 0 (${M[0]}) at events $base_events; it is now at events $now_events: the members changed since; use a new DIR or remove it"
grep -qF "$want" <<<"$OUT" || fail "stale overlay: expected '$want', got '$OUT'"
mountpoint -q "$MNT" && fail "a refused overlay left $MNT mounted"

log "5. a fresh overlay directory over them works, and checks clean"
start_assemble array.img "$MNT" --overlay "$WORK/ov2" "${M[@]}"
is "$WORK/B" 1 || fail "fresh overlay: the members' own writes are not there"
echo check >"$MNT/md/sync_action"
wait_sync_idle "$MNT" check
check '[ "$(cat "$MNT/md/mismatch_cnt")" = 0 ]' "fresh overlay: mismatch_cnt $(cat "$MNT/md/mismatch_cnt")"
stop_array "$MNT"
log "a stale overlay is refused (events $base_events -> $now_events), a fresh one and an unchanged base are served"
