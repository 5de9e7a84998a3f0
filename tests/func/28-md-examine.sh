#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 28-md-examine: raidfuse examine and examine-bitmap print what mdadm
# --examine and mdadm -X printed for the same members.
#
# 0. Every set in tests/data/md-images that keeps mdadm-E-roleK.txt (what
#    mdadm --examine printed for each member in the guest: arrays stopped
#    mid-reshape, forwards and backwards, and one with a partial parity
#    log): `raidfuse examine` prints the same, line for line, but for
#    mdadm's "(local to host NAME)", which depends on the host.
# 1. tests/data/md-images/r5-ls-3d-64k-bitmap-degraded: a raid5 with an
#    internal bitmap that kernel md made, degraded and written to, so that
#    the in-sync members have 2 of 31 bits set and the failed one (older
#    events) all 31.  For every member, `raidfuse examine-bitmap` prints
#    byte for byte what mdadm -X printed for it in the guest (kept beside
#    the members), and examine -X --json the same figures.
# 2. Negative control: one more bit set on a copy of a member changes the
#    dirty count, and the output no longer matches.
# 3. Bad input: a member without a bitmap, or without a superblock, is
#    named in one line and the command exits 1.
# 4. A member served over NBD (nbdkit's file plugin, read-only, on a unix
#    socket) examines as the file does, bitmap included; an export that is
#    not there is named in one line, exit 1.
. "$(dirname "$0")/lib.sh"
requires xz
command -v jq >/dev/null || skip "jq not installed"

md_images
cd "$WORK"
log "examine matches mdadm --examine"
n=0
for e in "$IMAGES"/*/mdadm-E-role0.txt; do
	dir=$(dirname "$e")
	set=$(basename "$dir")
	mkdir -p "$set"
	for want in "$dir"/mdadm-E-role*.txt; do
		r=${want##*/mdadm-E-}
		r=${r%.txt}
		xz -dc "$dir/$r.img.xz" >"$set/$r.img"
		(cd "$set" && "$RAIDFUSE" examine "$r.img") | sed 's/  (local to host [^)]*)$//' >"$set/$r.E"
		sed 's/  (local to host [^)]*)$//' "$want" | diff -u - "$set/$r.E" ||
			fail "$set/$r.img: examine differs from mdadm --examine"
		n=$((n + 1))
	done
	if grep -q "Reshape pos'n" "$want"; then
		pos=$(sed -n "s/^ *Reshape pos'n : \([0-9]*\).*/\1/p" "$want")
		xz -dc "$dir/role0.img.xz" >"$set/role0.img"
		J=$("$RAIDFUSE" examine --json "$set/role0.img")
		check "[ \"\$(jq -r '.reshape.position' <<<\"\$J\")\" = $((pos * 2)) ]" "$set: --json reshape.position is not $((pos * 2)) sectors: $J"
	fi
	rm -f "$set"/*.img
done
check "[ $n -ge 12 ]" "only $n members had mdadm --examine text to compare"

SET=$IMAGES/r5-ls-3d-64k-bitmap-degraded
for i in 0 1 2; do xz -dc "$SET/role$i.img.xz" >role$i.img; done

log "examine-bitmap matches mdadm -X on every member"
for i in 0 1 2; do
	"$RAIDFUSE" examine-bitmap role$i.img >x$i.txt
	diff -u "$SET/mdadm-X-role$i.txt" x$i.txt || fail "role$i.img: examine-bitmap differs from mdadm -X"
	J=$("$RAIDFUSE" examine -X --json role$i.img)
	want=$(sed -n 's/^ *Bitmap : \([0-9]*\) bits (chunks), \([0-9]*\) dirty.*/\1 \2/p' "$SET/mdadm-X-role$i.txt")
	check "[ \"$(jq -r '"\(.bits) \(.dirty)"' <<<"$J")\" = \"$want\" ]" "role$i.img: --json bits/dirty are not '$want': $J"
	check "[ \"$(jq -r .events <<<"$J")\" = \"$(sed -n 's/^ *Events : //p' "$SET/mdadm-X-role$i.txt")\" ]" "role$i.img: --json events"
done
check "grep -q '2 dirty' x0.txt && grep -q '31 dirty' x2.txt" "the set is not what this test expects (in-sync 2 dirty, failed 31)"

log "negative control: one more bit set, the output no longer matches"
cp role0.img bad.img
# The bitmap is 8 sectors after the 1.2 superblock (sector 8): header 256
# bytes, then bit i in byte i / 8.  Byte 3 holds bits 24..31; set them all.
off=$(((8 + 8) * 512 + 256 + 3))
printf '\377' | dd of=bad.img bs=1 seek=$off conv=notrunc status=none
"$RAIDFUSE" examine-bitmap bad.img | sed 's/bad.img/role0.img/' >xbad.txt
if diff -q "$SET/mdadm-X-role0.txt" xbad.txt >/dev/null; then
	fail "a changed bitmap still prints what mdadm -X printed: the comparison cannot fail"
fi
check "grep -q 'dirty' xbad.txt && ! grep -q ' 2 dirty' xbad.txt" "the dirty count did not change: $(cat xbad.txt)"

log "bad input is named, exit 1"
mk_conf nb.conf level=1 metadata=1.2 members="$(members 2 nb)" member_size=8M
create_array nb.conf >/dev/null
expect_fail "$RAIDFUSE" examine-bitmap nb0.img
check "grep -q 'nb0.img.*no internal bitmap' <<<\"\$OUT\"" "no bitmap: $OUT"
truncate -s 4M zero.img
expect_fail "$RAIDFUSE" examine-bitmap zero.img
check "grep -q 'zero.img' <<<\"\$OUT\"" "no superblock: the member is not named: $OUT"

log "examine over NBD"
if ! command -v nbdkit >/dev/null; then
	fail "nbdkit not installed (tools/setup-deps.sh installs it)"
fi
nbdkit --exit-with-parent -f -r -U "$WORK/r0.sock" -P "$WORK/r0.pid" file role0.img &
NBDKIT=$!
# (the pid file, once it accepts connections: the socket is there first)
for ((i = 0; i < 200; i++)); do grep -q . "$WORK/r0.pid" 2>/dev/null && break; sleep 0.05; done
URI="nbd+unix:///?socket=$WORK/r0.sock"
"$RAIDFUSE" examine role0.img >f.E
"$RAIDFUSE" examine "$URI" | sed "s|$URI|role0.img|" >n.E
diff -u f.E n.E || fail "examine over NBD differs from the file's"
"$RAIDFUSE" examine-bitmap "$URI" | sed "s|$URI|role0.img|" | diff -u "$SET/mdadm-X-role0.txt" - ||
	fail "examine-bitmap over NBD differs from mdadm -X"
kill $NBDKIT
wait $NBDKIT 2>/dev/null || true
expect_fail "$RAIDFUSE" examine "nbd+unix:///?socket=$WORK/none.sock"
check "grep -q 'none.sock' <<<\"\$OUT\"" "an unreachable export is not named: $OUT"
log "ok"
