#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 03-md-images: raidfuse reads arrays that the kernel's md wrote.
#
# tests/data/md-images holds member files of arrays made by kernel md and
# mdadm, each sector s of the array holding u64le(s) 64 times (README.md
# there).  For every array in its manifest.jsonl: copy the members out
# (xz -dc; the originals are never touched), describe the array in a config
# (level, layout, chunk, members in role order, data_offset and size from the
# manifest when all members share them, else from the superblocks), mount, and the image must be array_sectors long and hold the
# pattern in every sector.  Then the same with each member left out, and
# for raid6 each pair: parity and mirrors are where md put them.  A quick
# run (RF_QUICK=1) takes a sample: raid6 loses neighbouring pairs only,
# and each member is left out of the first array of each level, layout
# and metadata version; of the others, one member (a different role from
# one array to the next).
#
# RF_MD_IMAGES=DIR picks the directory (default: tests/data/md-images).
. "$(dirname "$0")/lib.sh"
requires fuse xz
build_helper

md_images

# md's names for raid10 layouts (mdadm --detail: near=2) -> raidfuse's (n2).
layout_key() {
	case $1 in
	null | "" | -unknown-) ;;
	near=*) echo "layout=n${1#near=}" ;;
	far=*) echo "layout=f${1#far=}" ;;
	offset=*) echo "layout=o${1#offset=}" ;;
	*) echo "layout=$1" ;;
	esac
}

MNT=$WORK/mnt
narrays=0
declare -A seen=()      # level/layout/metadata -> 1 once an array of it lost each member

# out_roles: the roles check_without leaves out one at a time: all of
# them, or in a quick run one, once an array like this lost each.
out_roles() {
	local i
	if [ "${RF_QUICK:-0}" = 1 ] && [ -n "${seen[$level/$layout/$metadata]:-}" ]; then
		echo $((narrays % NDISKS))
		return
	fi
	for ((i = 0; i < NDISKS; i++)); do
		echo $i
	done
}

# check_without NAME SECTORS IDX...: mount the array with those members
# "missing"; the pattern must read back whole.
check_without() {
	local name=$1 sectors=$2 i m list=""
	shift 2
	for ((i = 0; i < NDISKS; i++)); do
		m=role$i.img
		for idx; do [ "$idx" = "$i" ] && m=missing; done
		list+="${list:+ }$m"
	done
	mk_conf "$D/raid.conf" "${BASE[@]}" members="$list"
	start_array "$D/raid.conf" "$MNT"
	"$RFHELPER" pattern "$MNT/array.img" "$sectors" >"$WORK/pattern.out" ||
		fail "$name${1+ without member(s) $*}: $(cat "$WORK/pattern.out")"
	stop_array "$MNT"
}

while IFS= read -r line; do
	[ -n "$line" ] || continue
	name=$(jval "$line" name)
	level=$(jval "$line" level)
	layout=$(jval "$line" layout)
	metadata=$(jval "$line" metadata)
	chunk_kib=$(jval "$line" chunk_kib)
	NDISKS=$(jval "$line" raid_disks)
	sectors=$(jval "$line" array_sectors)
	component=$(jval "$line" component_sectors)
	member_bytes=$(jval "$line" member_size_bytes)
	read -r -a offsets <<<"$(jlist "$line" data_offset_sectors)"
	read -r -a files <<<"$(jlist "$line" member_files)"
	[ "${#files[@]}" = "$NDISKS" ] || fail "$name: manifest lists ${#files[@]} member files for $NDISKS disks"

	# Members may start their data at different offsets (one added by a
	# grow, a replacement): the config then names none and each member's
	# superblock gives its own.  raid0 records no used size (component 0):
	# the superblocks give each member's, and members of different sizes
	# make md's zones.
	doff=${offsets[0]}
	for o in "${offsets[@]}"; do
		[ "$o" = "$doff" ] || doff=
	done
	BASE=(level="$level")
	[ -z "$doff" ] || BASE+=(data_offset="$doff")
	[ "$component" = 0 ] || BASE+=(size="$component")
	D=$WORK/$name
	mkdir -p "$D"
	# shellcheck disable=SC2207
	BASE+=($(layout_key "$layout"))
	[ "$chunk_kib" = null ] || BASE+=(chunk_size="${chunk_kib}K")
	for ((i = 0; i < NDISKS; i++)); do
		# Members in role order: files[i] must be role i's.
		[[ ${files[i]} == */role$i.img.xz ]] || fail "$name: member $i is ${files[i]}, expected role$i"
		xz -dc "$IMAGES/${files[i]}" >"$D/role$i.img"
	done

	log "$name: raid$level ${layout/#null/-} chunk ${chunk_kib}K, $NDISKS members, data_offset ${offsets[*]}, size $component, $sectors sectors"
	check_without "$name" "$sectors"
	case $level in
	1 | 4 | 5 | 10)
		for i in $(out_roles); do
			check_without "$name" "$sectors" $i
		done
		;;
	6)
		for i in $(out_roles); do
			check_without "$name" "$sectors" $i
			for ((j = i + 1; j < NDISKS; j++)); do
				# A quick run takes neighbouring pairs only.
				[ "${RF_QUICK:-0}" = 1 ] && [ $j != $((i + 1)) ] && continue
				check_without "$name" "$sectors" $i $j
			done
		done
		;;
	esac
	seen[$level/$layout/$metadata]=1
	rm -rf "$D"
	narrays=$((narrays + 1))
done <"$IMAGES/manifest.jsonl"

[ $narrays -gt 0 ] || fail "no arrays in $IMAGES/manifest.jsonl"
log "$narrays md arrays read back"
