#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 25-md-pending: kernel md's arrays that the tests of manifest.jsonl
# cannot describe.
#
# tests/data/md-images/manifest-pending.jsonl lists arrays kernel md made
# in shapes raidfuse once refused and the config-driven tests cannot
# describe (raid5 mid-reshape, served read-only now and read sector by
# sector in 30-midreshape; raid5 with a partial parity log, served now;
# README.md there).  For each:
#  - raidfuse examine reads every member and prints the data offset and
#    feature map mdadm --examine printed;
#  - raidfuse assemble --ro either refuses with a one-line message, or
#    serves an image of the array's size holding the pattern (for the
#    array reset mid-write: the pattern in every sector before its
#    planned writes), and the members stay byte for byte the same;
#  - a mount by config serves an array mid-reshape as assemble does
#    (read-only here; 30, 58 and 59 continue them read-write);
#  - a raid5 with md's partial parity log is served read-write, its log
#    replayed first when it was reset mid-write.
# So a shape raidfuse does not know is never served as wrong data.
# Negative control: one flipped sector in a served member is found.
#
# RF_MD_IMAGES=DIR picks the md-images directory (as 03-md-images).
. "$(dirname "$0")/lib.sh"
requires fuse xz
build_helper

md_images
PENDING=$IMAGES/manifest-pending.jsonl
[ -f "$PENDING" ] || fail "no $PENDING"

# field FILE LABEL: the value after "LABEL : " in examine output.
field() {
	sed -n "s/^ *$2 : //p" "$1" | head -n 1
}

MNT=$WORK/mnt
mkdir -p "$MNT"
narrays=0
nserved=0
nppl=0
nreshape=0
served_name=""
while IFS= read -r line; do
	[ -n "$line" ] || continue
	name=$(jval "$line" name)
	kind=$(jval "$line" kind)
	D=$WORK/$name
	md_unpack "$line" "$D"
	for m in "${MEMBERS[@]}"; do
		ex=$IMAGES/$name/info/examine-$(basename "$m" .img).txt
		"$RAIDFUSE" examine "$m" >"$m.examine" || fail "$name: raidfuse examine $(basename "$m") failed"
		for label in "Data Offset" "Feature Map"; do
			want=$(field "$ex" "$label")
			got=$(field "$m.examine" "$label")
			[ "$want" = "$got" ] || fail "$m: $label: mdadm says '$want', raidfuse examine '$got'"
		done
	done
	members=("${MEMBERS[@]}")
	sectors=$(jval "$line" array_sectors)
	before=$(cat "${members[@]}" | sha256sum)
	RC=0
	OUT=$(timeout 60 "$RAIDFUSE" assemble --ro "$MNT" "${members[@]}" 2>&1) || RC=$?
	if [ $RC != 0 ]; then
		[ "$(wc -l <<<"$OUT")" = 1 ] || fail "$name: refused in more than one line: '$OUT'"
		[[ $OUT == raidfuse:* ]] || fail "$name: refused without saying so: '$OUT'"
		log "$name: refused: ${OUT#raidfuse: }"
	else
		# it went to the background serving the array: serve it again as this
		# test's own (foreground, stopped at exit whatever happens)
		timeout 30 fusermount3 -u "$MNT" || fail "$name: fusermount3 -u $MNT"
		sleep 0.5
		start_assemble array.img "$MNT" --ro "${members[@]}"
		check "[ $(stat -c %s "$MNT/array.img") = $((sectors * 512)) ]" "$name: image size"
		n=$sectors img=$MNT/array.img
		if [ "$kind" = crash ]; then
			n=$(grep -o '"start_sector": [0-9]*' <<<"$line" | head -n 1 | grep -o '[0-9]*$')
			img=$WORK/before-the-writes.img
			head -c $((n * 512)) "$MNT/array.img" >"$img"
		fi
		"$RFHELPER" pattern "$img" "$n" >"$WORK/pattern.out" ||
			fail "$name: served, but not md's data: $(cat "$WORK/pattern.out")"
		log "$name: served, pattern in its first $n sectors"
		stop_array "$MNT"
		nserved=$((nserved + 1))
		[ "$kind" = plain ] && served_name=$name
	fi
	check "[ \"$before\" = \"\$(cat ${members[*]} | sha256sum)\" ]" "$name: --ro changed the members"
	# A mount by config checks the superblocks' features as assemble
	# does, and names the geometry the reshape leaves.
	if [ "$kind" = reshape ]; then
		mlist=$(printf '"%s", ' "${members[@]}")
		cat >"$WORK/$name.conf" <<-EOF
		array: {
		  name = "array.img";
		  level = $(jval "$line" level);
		  layout = "$(jval "$line" layout)";
		  chunk_size = "$(jval "$line" chunk_kib)K";
		  members = ( ${mlist%, } );
		};
		EOF
		# Served read-only here (58, 59 and 30 continue them).
		start_array "$WORK/$name.conf" "$MNT" --ro
		"$RFHELPER" pattern "$MNT/array.img" "$sectors" >"$WORK/pattern.out" ||
			fail "$name: served by config mid-reshape, but not md's data: $(cat "$WORK/pattern.out")"
		stop_array "$MNT"
		log "$name: served by config mid-reshape (--ro), md's data"
		nreshape=$((nreshape + 1))
	fi
	# A raid5 with md's partial parity log is served read-write: the log
	# of the one reset mid-write is replayed first (as md does at its
	# next assembly), and the pattern before its writes still reads.
	if grep -q '"ppl' <<<"$line"; then
		start_assemble array.img "$MNT" "${members[@]}"
		check "[ \"\$(cat \"$MNT/md/consistency_policy\")\" = ppl ]" "$name: md/consistency_policy"
		n=$sectors
		[ "$kind" = crash ] && n=$(grep -o '"start_sector": [0-9]*' <<<"$line" | head -n 1 | grep -o '[0-9]*$')
		head -c $((n * 512)) "$MNT/array.img" >"$WORK/ppl.img"
		"$RFHELPER" pattern "$WORK/ppl.img" "$n" >"$WORK/pattern.out" ||
			fail "$name: served read-write, but not md's data: $(cat "$WORK/pattern.out")"
		rm -f "$WORK/ppl.img"
		stop_array "$MNT"
		if [ "$kind" = crash ]; then
			grep -q "partial parity log replayed" "$WORK"/daemon.mnt.*.log ||
				fail "$name: no replay of its partial parity log in the log"
		fi
		log "$name: served read-write, its partial parity log kept"
		nppl=$((nppl + 1))
	fi
	[ "$name" = "$served_name" ] || rm -rf "$D"
	narrays=$((narrays + 1))
done <"$PENDING"
[ $narrays -gt 0 ] || fail "no arrays in $PENDING"
[ $nppl -gt 0 ] || fail "no PPL array in $PENDING"
[ $nreshape -gt 0 ] || fail "no array mid-reshape in $PENDING"

# Negative control: the pattern check above finds one wrong sector.
if [ -n "$served_name" ]; then
	D=$WORK/$served_name
	line=$(grep "\"name\": \"$served_name\"" "$PENDING")
	off=$(jlist "$line" data_offset_sectors | awk '{print $1}')
	printf 'X' | dd of="$D/role0.img" bs=1 seek=$(((off + 3) * 512 + 5)) conv=notrunc status=none
	start_assemble array.img "$MNT" --ro "$D"/role*.img
	expect_fail "$RFHELPER" pattern "$MNT/array.img" "$(jval "$line" array_sectors)"
	stop_array "$MNT"
	log "negative control: a flipped byte in $served_name role0 is found: $OUT"
else
	log "no array was served: no negative control needed"
fi
log "$narrays pending arrays: $nserved served right, $((narrays - nserved)) refused"
