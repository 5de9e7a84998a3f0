#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 27-detect: raidfuse detect finds arrays whose superblocks are gone.
#
# 1. Kernel md's arrays (tests/data/md-images): members copied out, their
#    superblocks zeroed with dd, given in a shuffled order.  detect must be
#    confident, and the config it writes must mount and serve md's pattern
#    (each sector s holds u64le(s)): that checks level, order, chunk, layout
#    and data offset at once, and accepts what is the same array under
#    another name (a 2-member raid5 is a mirror; swapped members of one
#    raid10 copy set).  The same with one member missing (raid4/5/10), two
#    for raid6.  Arrays detect does not handle (members with different data
#    offsets) must not get a confident answer.
# 2. Arrays raidfuse create makes, over several levels, layouts, chunks and
#    member counts, filled with the same pattern through the image.
# 3. An ext4 with files on a raidfuse raid5: detected with all members and
#    with one missing, mounted from the config, fsck clean, files intact.
# 4. Random members, zero members, members of two arrays: no confident
#    answer (exit 1, "confident": false).
# Every member's sha256 is the same after detect as before.
. "$(dirname "$0")/lib.sh"
requires fuse xz
command -v jq >/dev/null || skip "jq not installed"
build_helper
md_images

D=$WORK/d
MNT=$WORK/mnt
mkdir -p "$D" "$MNT"

# shuffled ARGS...: the arguments, one a line, in an order fixed by the
# seed RF_SEED.
RANDOM=${RF_SEED:-27}
shuffled() {
	local a=("$@") i j t
	for ((i = ${#a[@]} - 1; i > 0; i--)); do
		j=$((RANDOM % (i + 1)))
		t=${a[i]} a[i]=${a[j]} a[j]=$t
	done
	printf '%s\n' "${a[@]}"
}

# detect_ok NAME ARGS...: detect must be confident; writes $D/NAME.conf.
detect_ok() {
	local name=$1
	shift
	rm -f "$D/$name.conf"
	"$RAIDFUSE" detect --json --write-config "$D/$name.conf" "$@" >"$D/$name.json" ||
		fail "$name: detect exited $? ($(jq -r .verdict "$D/$name.json" 2>/dev/null))"
	jq -e .confident "$D/$name.json" >/dev/null || fail "$name: not confident: $(cat "$D/$name.json")"
	log "$name: $(jq -r '.candidates[0] | "raid\(.level) \(.layout_name) \(.chunk_kib)K offset \(.data_offset_sectors)s score \(.score)"' "$D/$name.json"), read $(($(jq .bytes_read "$D/$name.json") >> 20)) MiB in $(jq .seconds "$D/$name.json") s"
}

# serves_pattern NAME SECTORS: mount NAME's config; its first SECTORS hold
# the pattern, read in its first 16 MiB and its last 1 MiB (a wrong level,
# order, chunk, layout or data offset shows in the first stripes already;
# the end checks the size; 10-md-format reads every sector of these
# arrays).
serves_pattern() {
	local head=$(($2 * 512)) tail=0
	if [ ! -s "$D/pattern.$2" ]; then
		truncate -s $(($2 * 512)) "$D/pattern.$2"
		"$RFHELPER" fill "$D/pattern.$2" "$2" >/dev/null
	fi
	if [ "$head" -gt $((17 << 20)) ]; then
		head=$((16 << 20))
		tail=$((1 << 20))
	fi
	start_array "$D/$1.conf" "$MNT"
	{ cmp -n "$head" "$MNT/array.img" "$D/pattern.$2" &&
		{ [ "$tail" = 0 ] || cmp -i $(($2 * 512 - tail)) -n "$tail" "$MNT/array.img" "$D/pattern.$2"; }; } \
		>"$D/cmp.out" 2>&1 || fail "$1: the detected array does not hold the pattern: $(cat "$D/cmp.out")"
	stop_array "$MNT"
}

# same_answer A B: B's best candidate is A's, B's missing members aside.
same_answer() {
	jq -e -n --slurpfile a "$D/$1.json" --slurpfile b "$D/$2.json" '
		($a[0].candidates[0]) as $x | ($b[0].candidates[0]) as $y |
		($x | del(.members, .score, .parity, .runs_on, .fs_metadata)) ==
		($y | del(.members, .score, .parity, .runs_on, .fs_metadata)) and
		([range($x.members | length)] | all($y.members[.] == null or $y.members[.] == $x.members[.]))' \
		>/dev/null
}

# ---------------------------------------------------------------- 1. md's arrays
zero_sb() {
	local line=$1 i off
	for ((i = 0; i < $(jval "$line" raid_disks); i++)); do
		off=$(jq -r ".members[$i].super_offset_sectors" <<<"$line")
		dd if=/dev/zero of="${MEMBERS[$i]}" bs=512 seek="$off" count=8 conv=notrunc status=none
	done
}

quick_names="r5-ls-4d-64k r6-ls-5d-64k r10-f2-5d-64k r1-2d"
while read -r line; do
	name=$(jval "$line" name)
	level=$(jval "$line" level)
	case $name in
	*-zones-*) continue ;;          # raid0 over unequal members: not searched
	esac
	[ "${RF_QUICK:-0}" = 1 ] && [[ " $quick_names " != *" $name "* ]] && continue
	rm -rf "$D/m"
	md_unpack "$line" "$D/m"
	zero_sb "$line"
	(cd "$D/m" && sha256sum role*.img) >"$D/sums"
	mapfile -t args < <(shuffled "${MEMBERS[@]}")
	sectors=$(jval "$line" array_sectors)
	if [ "$(jq '[.data_offset_sectors[]] | unique | length' <<<"$line")" != 1 ]; then
		expect_fail "$RAIDFUSE" detect "${args[@]}"
		grep -q "not confident\|too weak" <<<"$OUT" || fail "$name: members with different data offsets: $OUT"
		log "$name: members with different data offsets: $(tail -n 1 <<<"$OUT")"
		continue
	fi
	detect_ok "$name" "${args[@]}"
	serves_pattern "$name" "$sectors"
	# one member missing (two for raid6): the same answer, or one that
	# serves the pattern too
	case $level in
	4 | 5 | 6 | 10)
		[ "$(jval "$line" raid_disks)" -ge 3 ] || continue
		args[1]=missing
		[ "$level" = 6 ] && args[3]=missing
		detect_ok "$name-missing" "${args[@]}"
		same_answer "$name" "$name-missing" || serves_pattern "$name-missing" "$sectors"
		;;
	esac
	(cd "$D/m" && sha256sum -c --quiet "$D/sums") || fail "$name: detect changed a member"
done <"$IMAGES/manifest.jsonl"

# ---------------------------------------------------------------- 2. raidfuse's arrays
# sweep LEVEL LAYOUT CHUNK N [SIZE]: create (members of SIZE, default 8M),
# fill the image with the pattern, zero the superblocks, detect, serve.
sweep() {
	local level=$1 layout=$2 chunk=$3 n=$4 size=${5:-8M} name=c$1-$2-$3-$4 sectors
	rm -rf "$D/c"
	mkdir -p "$D/c"
	mk_conf "$D/c/raid.conf" level="$level" layout="$layout" chunk_size="$chunk" \
		members="$(members "$n")" member_size="$size" metadata=1.2
	[ "$layout" = - ] && sed -i '/layout/d' "$D/c/raid.conf"
	create_array "$D/c/raid.conf"
	start_array "$D/c/raid.conf" "$MNT" --freeze
	sectors=$(($(stat -c %s "$MNT/array.img") / 512))
	"$RFHELPER" fill "$MNT/array.img" "$sectors" >/dev/null
	stop_array "$MNT"
	for f in "$D"/c/d*.img; do
		dd if=/dev/zero of="$f" bs=4096 seek=1 count=1 conv=notrunc status=none
	done
	mapfile -t args < <(shuffled "$D"/c/d*.img)
	detect_ok "$name" "${args[@]}"
	serves_pattern "$name" "$sectors"
}
sweep 5 left-symmetric 16K 3
full sweep 6 right-asymmetric 128K 6
sweep 10 o2 32K 4
full sweep 4 - 256K 4
full sweep 5 left-asymmetric 1M 4 16M
full sweep 0 - 512K 4
full sweep 6 left-symmetric-6 64K 5
full sweep 10 n2 8K 5
full sweep 6 right-symmetric 32K 7
full sweep 5 right-asymmetric 4K 8

# ---------------------------------------------------------------- 3. ext4
if command -v mkfs.ext4 >/dev/null && [ "$(id -u)" = 0 ] && losetup -f >/dev/null 2>&1; then
	E=$WORK/e
	FS=$WORK/fs
	mkdir -p "$E" "$FS"
	_FSMOUNTS+=("$FS")
	mk_conf "$E/raid.conf" level=5 layout=left-asymmetric chunk_size=32K members="$(members 5)" \
		member_size=48M metadata=1.2
	create_array "$E/raid.conf" --assume-clean
	start_array "$E/raid.conf" "$MNT"
	loop_attach "$MNT/array.img" --direct-io=on
	mkfs.ext4 -q -F -b 4096 -E lazy_itable_init=0,lazy_journal_init=0 "$LOOP"
	mount "$LOOP" "$FS"
	for i in 1 2 3; do head -c $((i * 1000000)) /dev/urandom >"$FS/r$i"; done
	for i in 1 2 3 4; do head -c $((i * 600000)) /dev/urandom | base64 >"$FS/t$i.txt"; done
	seq 1 300000 >"$FS/seq.txt"
	(cd "$FS" && find . -type f -exec sha256sum {} +) >"$E/files"
	umount "$FS"
	loop_detach "$LOOP"
	stop_array "$MNT"
	for f in "$E"/d*.img; do
		dd if=/dev/zero of="$f" bs=4096 seek=1 count=1 conv=notrunc status=none
	done
	(cd "$E" && sha256sum d*.img) >"$E/sums"
	mapfile -t args < <(shuffled "$E"/d*.img)
	variants=all
	full eval 'variants="all missing"'
	for variant in $variants; do
		[ $variant = missing ] && args[2]=missing
		detect_ok "ext4-$variant" "${args[@]}"
		jq -e '.candidates[0].fs == "ext4"' "$D/ext4-$variant.json" >/dev/null ||
			fail "ext4-$variant: no ext4 found: $(cat "$D/ext4-$variant.json")"
		(cd "$E" && sha256sum -c --quiet sums) || fail "ext4-$variant: detect changed a member"
		# served from copies: fsck and mount write nothing, but the members stay evidence
		mkdir -p "$E/copy"
		for f in "$E"/d*.img; do cp "$f" "$E/copy/"; done
		sed -i "s|$E/d|$E/copy/d|g" "$D/ext4-$variant.conf"
		start_array "$D/ext4-$variant.conf" "$MNT"
		fsck.ext4 -fn "$MNT/array.img" >"$E/fsck.out" 2>&1 ||
			fail "ext4-$variant: fsck on the detected array: $(tail -n 5 "$E/fsck.out")"
		loop_attach "$MNT/array.img" -r
		mount -o ro "$LOOP" "$FS"
		(cd "$FS" && sha256sum -c --quiet "$E/files") || fail "ext4-$variant: files differ"
		umount "$FS"
		loop_detach "$LOOP"
		stop_array "$MNT"
		rm -rf "$E/copy"
	done
else
	log "ext4 part skipped: needs root, loop devices and mkfs.ext4"
fi

# ---------------------------------------------------------------- 4. no answer
# weak NAME ARGS...: exit 1, not confident, members unchanged.
weak() {
	local name=$1 a
	shift
	for a; do [ -f "$a" ] && echo "$a"; done | xargs -d '\n' sha256sum >"$D/wsums"
	if "$RAIDFUSE" detect --json "$@" >"$D/$name.json"; then
		fail "$name: detect claims an answer: $(cat "$D/$name.json")"
	fi
	jq -e '.confident == false' "$D/$name.json" >/dev/null || fail "$name: $(cat "$D/$name.json")"
	sha256sum -c --quiet "$D/wsums" || fail "$name: detect changed a member"
	log "$name: $(jq -r .verdict "$D/$name.json")"
}
mkdir -p "$D/n"
for i in 0 1 2 3; do
	head -c 16M /dev/urandom >"$D/n/rand$i"
	truncate -s 16M "$D/n/zero$i"
done
weak random "$D"/n/rand*
weak zeros "$D"/n/zero*
rm -rf "$D/a" "$D/b"
md_unpack "$(grep '"name": "r5-ls-4d-64k"' "$IMAGES/manifest.jsonl")" "$D/a"
md_unpack "$(grep '"name": "r5-la-4d-64k"' "$IMAGES/manifest.jsonl")" "$D/b"
for f in "$D"/a/*.img "$D"/b/*.img; do
	dd if=/dev/zero of="$f" bs=4096 seek=1 count=1 conv=notrunc status=none
done
weak two-arrays "$D/a/role0.img" "$D/b/role1.img" "$D/a/role2.img" "$D/b/role3.img"
weak two-arrays-raid5 --level 5 "$D/a/role0.img" "$D/a/role1.img" "$D/b/role2.img" "$D/b/role3.img"

# a bad option is a usage error; a member that is not there names it
expect_fail "$RAIDFUSE" detect --level 3 "$D/a/role0.img" "$D/a/role1.img"
grep -q "level '3'" <<<"$OUT" || fail "--level 3: $OUT"
expect_fail "$RAIDFUSE" detect "$D/a/role0.img" "$D/nothere"
grep -q "member 1 ($D/nothere)" <<<"$OUT" || fail "missing file: $OUT"
log "ok"
