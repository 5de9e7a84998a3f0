#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 10-md-format: md's on-disk format, both ways.
#
# 1. Every array kernel md made (tests/data/md-images) assembles from its
#    members alone, no config: raidfuse assemble reads the superblocks,
#    orders the members by role (they are given shuffled), and the image
#    holds the pattern in every sector; raidfuse examine prints what mdadm
#    --examine printed for each member.  Left out: one member (parity and
#    mirrors serve; RF_QUICK=1: one array of each redundant family, the
#    others read only in their first 16 MiB), and
#    too many members (refused).
# 2. --ro: the image cannot be opened for writing (EROFS) and the members
#    stay byte for byte the same.
# 3. raidfuse create writes 1.2 superblocks that mdadm --examine accepts,
#    reporting the uuid, level, layout, chunk, raid devices, role and data
#    offset raidfuse examine reports; the array takes a fio verify job
#    through its config, then assembles from its members alone and reads
#    back the same data.  A config that disagrees with the superblocks is
#    refused, naming the member and the key.  With RF_MD_JUDGE=1, kernel md
#    (mdpeer's md-judge.sh in QEMU; MDJUDGE overrides its path) assembles
#    each created array after the writes and must read the same sha256.
#
# RF_MD_IMAGES=DIR picks the md-images directory (as 03-md-images).
. "$(dirname "$0")/lib.sh"
requires fuse xz fio mdadm
build_helper

md_images

# fields FILE ARRAY: ARRAY[LABEL] = the value after "LABEL : " in examine
# output (the first line of each LABEL).
fields() {
	local -n _fs=$2
	local l
	_fs=()
	while IFS= read -r l; do
		[[ $l == *" : "* ]] || continue
		l=${l#"${l%%[! ]*}"}
		[ -n "${_fs[${l%% : *}]+x}" ] || _fs[${l%% : *}]=${l#* : }
	done <"$1"
}

# field FILE LABEL: the value after "LABEL : " in examine output.
field() {
	local -A _f1
	fields "$1" _f1
	echo "${_f1[$2]:-}"
}

# same_fields MDADM_TEXT OURS: every field raidfuse prints that mdadm
# printed too has mdadm's value; the Name's "(local to host X)" depends on
# the examining host and is left out.
same_fields() {
	local want=$1 got=$2 label val ours n=0
	local -A theirs
	fields "$got" theirs
	while IFS= read -r line; do
		[[ $line == *" : "* ]] || continue
		label=${line#"${line%%[! ]*}"}
		label=${label%% : *}
		val=${line#* : }
		ours=${theirs[$label]:-}
		[ -n "$ours" ] || continue
		if [ "$label" = Name ]; then
			val=${val%%  (local to host*}
			ours=${ours%%  (local to host*}
		fi
		[ "$val" = "$ours" ] || fail "$want: $label: mdadm says '$val', raidfuse examine '$ours'"
		n=$((n + 1))
	done <"$want"
	[ $n -ge 15 ] || fail "$want: only $n fields compared"
}

MNT=$WORK/mnt
narrays=0
declare -A md rf
judge=0
if md_judge; then
	judge=1
fi

# RF_QUICK=1 (the sanitizers' pass): the arrays read whole and degraded
quick_sample="r1-2d r5-ls-4d-64k r6-ls-5d-64k r10-f2-5d-64k"
log "1. kernel md's arrays assemble from their members alone"
while IFS= read -r line; do
	[ -n "$line" ] || continue
	name=$(jval "$line" name)
	level=$(jval "$line" level)
	disks=$(jval "$line" raid_disks)
	sectors=$(jval "$line" array_sectors)
	D=$WORK/$name
	mkdir -p "$D"
	members=()
	for ((i = 0; i < disks; i++)); do
		xz -dc "$IMAGES/$name/role$i.img.xz" >"$D/role$i.img"
		TZ=UTC "$RAIDFUSE" examine "$D/role$i.img" >"$D/examine$i.txt" ||
			fail "$name: raidfuse examine role$i.img failed"
		same_fields "$IMAGES/$name/info/examine-role$i.txt" "$D/examine$i.txt"
	done
	# Shuffled: the superblocks, not the order given, say the roles.
	for ((i = disks - 1; i >= 0; i--)); do
		members+=("$D/role$i.img")
	done
	log "$name: raid$level, $disks members, $sectors sectors"
	start_assemble array.img "$MNT" "${members[@]}"
	check "[ $(fsize "$MNT/array.img") = $((sectors * 512)) ]" "$name: image size"
	# a quick run reads the whole pattern of its sample, the first 16 MiB
	# of the rest
	how=(pattern "$MNT/array.img" "$sectors")
	if [ "${RF_QUICK:-0}" = 1 ] && [[ " $quick_sample " != *" $name "* ]] && [ "$sectors" -gt 32768 ]; then
		how=(pattern-head "$MNT/array.img" 32768)
	fi
	"$RFHELPER" "${how[@]}" >"$WORK/pattern.out" ||
		fail "$name: $(cat "$WORK/pattern.out")"
	stop_array "$MNT"

	case $level in
	0)
		expect_fail "$RAIDFUSE" assemble -f "$MNT" "${members[@]:1}"
		grep -q "too few members" <<<"$OUT" || fail "$name without a member: '$OUT'"
		;;
	*)
		# Without its first member (role disks-1, given first above);
		# a quick run (RF_QUICK=1, the sanitizers' pass) one array of
		# each redundant family (03-md-images leaves out every member
		# of every array through a config).
		if [ "${RF_QUICK:-0}" = 1 ] && [[ " $quick_sample " != *" $name "* ]]; then
			narrays=$((narrays + 1))
			continue
		fi
		start_assemble array.img "$MNT" "${members[@]:1}"
		"$RFHELPER" pattern "$MNT/array.img" "$sectors" >"$WORK/pattern.out" ||
			fail "$name degraded: $(cat "$WORK/pattern.out")"
		stop_array "$MNT"
		;;
	esac
	if [ "$name" = r5-ls-4d-64k ]; then
		log "2. --ro: no writes reach the members"
		before=$(cat "${members[@]}" | sha256sum)
		start_assemble ro.img "$MNT" --ro --name ro.img "${members[@]}"
		check "[ \"\$(stat -c %a '$MNT/ro.img')\" = 400 ]" "--ro image mode"
		out=$(dd if=/dev/zero of="$MNT/ro.img" bs=4096 count=1 conv=notrunc,fsync 2>&1) &&
			fail "--ro: a write went through"
		grep -q "Read-only file system" <<<"$out" || fail "--ro: write failed with '$out', expected EROFS"
		"$RFHELPER" pattern "$MNT/ro.img" "$sectors" >"$WORK/pattern.out" ||
			fail "$name --ro: $(cat "$WORK/pattern.out")"
		stop_array "$MNT"
		check "[ \"$before\" = \"\$(cat ${members[*]} | sha256sum)\" ]" "--ro: members changed"
		# Two of one array's members from different arrays are refused.
		expect_fail "$RAIDFUSE" assemble -f "$MNT" "${members[0]}" "$WORK/r5-la-4d-64k/role1.img"
		grep -q "not one array" <<<"$OUT" || fail "members of two arrays: '$OUT'"
	fi
	narrays=$((narrays + 1))
done <"$IMAGES/manifest.jsonl"
[ $narrays -gt 0 ] || fail "no arrays in $IMAGES/manifest.jsonl"

log "3. raidfuse create writes 1.2 superblocks mdadm reads"
# level layout chunk members
for spec in "5 left-symmetric 64K 4" "6 right-asymmetric 128K 5" "10 n2 64K 4" "1 - - 2" "0 - 256K 3"; do
	read -r level layout chunk n <<<"$spec"
	D=$WORK/create-$level
	mkdir -p "$D"
	keys=(metadata=1.2 level="$level" members="$(members "$n")" member_size=16M)
	[ "$layout" = - ] || keys+=(layout="$layout")
	[ "$chunk" = - ] || keys+=(chunk_size="$chunk")
	mk_conf "$D/raid.conf" "${keys[@]}"
	create_array "$D/raid.conf"
	for ((i = 0; i < n; i++)); do
		m=$D/d$i.img
		mdadm --examine "$m" >"$D/mdadm$i.txt" 2>&1 || fail "raid$level: mdadm --examine d$i.img: $(cat "$D/mdadm$i.txt")"
		"$RAIDFUSE" examine "$m" >"$D/ours$i.txt" || fail "raid$level: raidfuse examine d$i.img failed"
		grep -q "Checksum : .* - correct" "$D/mdadm$i.txt" || fail "raid$level d$i: mdadm: checksum not correct"
		fields "$D/mdadm$i.txt" md
		fields "$D/ours$i.txt" rf
		for f in "Version" "Array UUID" "Raid Level" "Raid Devices" "Layout" "Chunk Size" "Data Offset" \
			"Device Role" "Avail Dev Size" "Used Dev Size" "Array Size" "State" "Events"; do
			[ "${md[$f]:-}" = "${rf[$f]:-}" ] ||
				fail "raid$level d$i: $f: mdadm says '${md[$f]:-}', raidfuse '${rf[$f]:-}'"
		done
		check "[ \"$(field "$D/mdadm$i.txt" "Device Role")\" = 'Active device $i' ]" "raid$level d$i role"
		check "[ \"$(field "$D/mdadm$i.txt" "State")\" = active ]" "raid$level: without --assume-clean a resync is due"
	done
	check "[ \"$(field "$D/mdadm0.txt" "Data Offset")\" = '2048 sectors' ] || [ $chunk = 256K ]" "raid$level: data offset as mdadm 4.2 picks it"
	uuid=$(field "$D/mdadm0.txt" "Array UUID")
	for ((i = 1; i < n; i++)); do
		check "[ \"$(field "$D/mdadm$i.txt" "Array UUID")\" = $uuid ]" "raid$level: one uuid for all members"
	done
	log "raid$level: mdadm agrees ($uuid, $(field "$D/mdadm0.txt" "Data Offset"))"

	start_array "$D/raid.conf" "$MNT"
	fio_verify "$MNT/array.img" --rw=randwrite --bs=4k --size=8M --iodepth=8
	stop_array "$MNT"
	# The same data, from the superblocks alone.
	# shellcheck disable=SC2046
	start_assemble array.img "$MNT" $(printf "$D/d%d.img " $(seq $((n - 1)) -1 0))
	fio_verify --verify_only "$MNT/array.img" --rw=randwrite --bs=4k --size=8M --iodepth=8
	sum=$(dd if="$MNT/array.img" bs=1M iflag=direct status=none | sha256sum | cut -d' ' -f1)
	[ "$level" != 5 ] || sum5=$sum
	stop_array "$MNT"
	# RF_MD_JUDGE=1: kernel md (in QEMU, 30-60 s per array) assembles the
	# members raidfuse made and wrote, reads the same bytes and finds
	# parity and copies consistent.
	if [ $judge = 1 ]; then
		"$MDJUDGE" --check "$D"/d*.img >"$D/judge.txt" 2>&1 || fail "raid$level: md-judge: $(cat "$D/judge.txt")"
		grep -q "JUDGE assemble=ok" "$D/judge.txt" || fail "raid$level: kernel md did not assemble: $(cat "$D/judge.txt")"
		grep -q "JUDGE sha256=$sum " "$D/judge.txt" || fail "raid$level: kernel md reads other bytes: $(cat "$D/judge.txt")"
		[ "$level" = 0 ] || grep -q "JUDGE mismatch_cnt=0 " "$D/judge.txt" ||
			fail "raid$level: kernel md's check found mismatches: $(cat "$D/judge.txt")"
		log "raid$level: kernel md assembles it, same sha256, $(grep -o 'mismatch_cnt=[^ ]*' "$D/judge.txt")"
	fi
done

log "a config that disagrees with the superblocks is refused, naming member and key"
D=$WORK/create-5
mk_conf "$D/bad.conf" metadata=1.2 level=5 members="$(members 4)" chunk_size=128K
expect_fail "$RAIDFUSE" mount "$D/bad.conf" "$MNT" -f
grep -q "member 0 (.*d0.img, line [0-9]*): key 'array.chunk_size' says 128K.*64K" <<<"$OUT" || fail "chunk mismatch: '$OUT'"
mk_conf "$D/bad.conf" metadata=1.2 level=5 members="$(members 4)" chunk_size=64K layout=left-asymmetric
expect_fail "$RAIDFUSE" mount "$D/bad.conf" "$MNT" -f
grep -q "member 0 (.*d0.img.*'array.layout' says 0.*2" <<<"$OUT" || fail "layout mismatch: '$OUT'"
mk_conf "$D/bad.conf" metadata=1.2 level=5 members="$(members 3)" chunk_size=64K
expect_fail "$RAIDFUSE" mount "$D/bad.conf" "$MNT" -f
grep -q "'array.members' says 3 devices.*4 raid devices" <<<"$OUT" || fail "member count mismatch: '$OUT'"
# The superblocks place the members, whatever order the config lists
# them in (it matters to create only): as assemble, the same data.
mk_conf "$D/swapped.conf" metadata=1.2 level=5 members="d1.img d0.img d3.img d2.img" chunk_size=64K
start_array "$D/swapped.conf" "$MNT"
check "[ \"$(dd if="$MNT/array.img" bs=1M iflag=direct status=none | sha256sum | cut -d' ' -f1)\" = $sum5 ]" \
	"a config listing the members out of role order serves other data"
grep -q '\[4/4\] \[UUUU\]' "$MNT/mdstat" || fail "swapped config: $(cat "$MNT/mdstat")"
stop_array "$MNT"
mk_conf "$D/bad.conf" metadata=1.2 level=5 members="$(members 4)" chunk_size=64K data_offset=4096
expect_fail "$RAIDFUSE" mount "$D/bad.conf" "$MNT" -f
grep -q "'array.data_offset' says 4096 sectors.*2048 sectors" <<<"$OUT" || fail "data_offset mismatch: '$OUT'"
mk_conf "$D/bad.conf" metadata=1.2 level=6 members="$(members 4)" chunk_size=64K
expect_fail "$RAIDFUSE" mount "$D/bad.conf" "$MNT" -f
grep -q "'array.level' says 6.*5" <<<"$OUT" || fail "level mismatch: '$OUT'"

log "create refuses before writing anything: members too small for md's data offset"
D=$WORK/small
mkdir -p "$D"
mk_conf "$D/raid.conf" metadata=1.2 level=5 members="$(members 3)" member_size=1M
expect_fail "$RAIDFUSE" create "$D/raid.conf"
grep -q "no room for data after data_offset" <<<"$OUT" || fail "small members: '$OUT'"
[ ! -e "$D/d0.img" ] || fail "a refused create made d0.img"
log "$narrays kernel md arrays assembled; raidfuse-made arrays read by mdadm"
