#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 01-levels: every level, and every family of layouts, keeps what is
# written to it.
#
# For each array below: create the members, mount, check the image size,
# then four fio jobs at once, each in its own region of the image, write
# with a crc32c header in every block and read it all back:
#   random 4k..64k blocks (all at queue depth 16)
#   sequential 1M blocks
#   random 6k blocks (every one straddles 4K boundaries)
#   random 512-byte multiples, 512 B to 64.5K (sub-page, odd sizes)
# Then unmount and check what the members hold at rest (raid4/5: the XOR
# of all members is zero; raid1 and near raid10: the copies are equal;
# nothing before data_offset or after data_offset+size), remount, and the
# region fio checked reads back the same bytes (sha256): the data lives on
# the members.  (02 and 08 check remounts with fio --verify_only.)
. "$(dirname "$0")/lib.sh"
requires fuse fio
build_helper

MEMBER=64M
MEMBER_BYTES=$((64 << 20))
# Four jobs at once, each in its own region of the image (every array here
# is at least 64M).
JOBS="--name=rand --rw=randwrite --bsrange=4k-64k --offset=0 --size=8M
	--name=seq --rw=write --bs=1M --offset=8M --size=8M
	--name=6k --rw=randwrite --bs=6k --offset=16M --size=3M
	--name=512n --rw=randwrite --bssplit=512/20:1536/20:3584/20:9728/20:66048/20 --offset=20M --size=2M"
JOBS_MIB=22

# bytes N[KMG] -> N in bytes (a plain N is sectors)
bytes() {
	local v=${1%[KMG]}
	case $1 in
	*K) echo $((v << 10)) ;;
	*M) echo $((v << 20)) ;;
	*G) echo $((v << 30)) ;;
	*) echo $((v * 512)) ;;   # plain number: sectors, as in the config
	esac
}

# check_array LEVEL LAYOUT DISKS CHUNK ARRAY_SIZE [key=value...]
#   LAYOUT or CHUNK "-": leave the key out (md's default).
check_array() {
	local level=$1 layout=$2 n=$3 chunk=$4 size=$5
	shift 5
	local what="raid$level ${layout/#-/default} $n disks chunk ${chunk/#-/default} $*"
	local d=$WORK/a mnt=$WORK/mnt img i kv sum
	local doff=0 dsize=0

	log "$what: expect $size"
	rm -rf "$d" && mkdir "$d"
	for kv; do
		case $kv in
		data_offset=*) doff=$(bytes "${kv#*=}") ;;
		size=*) dsize=$(bytes "${kv#*=}") ;;
		esac
	done
	local keys=(level="$level" members="$(members "$n")" member_size="$MEMBER")
	[ "$layout" = - ] || keys+=(layout="$layout")
	[ "$chunk" = - ] || keys+=(chunk_size="$chunk")
	mk_conf "$d/raid.conf" "${keys[@]}" "$@"
	create_array "$d/raid.conf"
	img=$mnt/array.img

	start_array "$d/raid.conf" "$mnt"
	check '[ "$(fsize "$img")" = "$(bytes "$size")" ]' \
		"$what: image is $(fsize "$img") bytes, expected $size"
	fio_verify "$img" $JOBS
	sum=$(region_sum "$img" $JOBS_MIB)
	stop_array "$mnt"

	# At rest.
	local files=() first
	for i in $(members "$n"); do files+=("$d/$i"); done
	[ "$dsize" != 0 ] || dsize=$((MEMBER_BYTES - doff))
	case $level in
	4 | 5)
		"$RFHELPER" xor-zero "$doff" "$dsize" "${files[@]}" >"$WORK/xor.out" ||
			fail "$what: parity out of sync after a clean stop: $(cat "$WORK/xor.out")"
		;;
	1)
		for first in "${files[@]:1}"; do
			cmp -s "${files[0]}" "$first" || fail "$what: mirrors ${files[0]##*/} and ${first##*/} differ"
		done
		;;
	10)
		# near copies sit side by side: with disks a multiple of
		# copies, members 0..copies-1 are equal, and so on.
		local copies=${layout#n}
		if [[ $layout == n* ]] && [ $((n % copies)) = 0 ]; then
			for ((i = 0; i < n; i++)); do
				cmp -s "${files[i - i % copies]}" "${files[i]}" ||
					fail "$what: near copies ${files[i - i % copies]##*/} and ${files[i]##*/} differ"
			done
		fi
		;;
	esac
	for first in "${files[@]}"; do
		if [ "$doff" != 0 ] && ! cmp -s -n "$doff" "$first" /dev/zero; then
			fail "$what: ${first##*/}: written before data_offset ($doff)"
		fi
		local tail=$((MEMBER_BYTES - doff - dsize))
		if [ $tail -gt 0 ] && ! cmp -s -n $tail -i "$((doff + dsize)):0" "$first" /dev/zero; then
			fail "$what: ${first##*/}: written after data_offset + size ($((doff + dsize)))"
		fi
	done

	start_array "$d/raid.conf" "$mnt"
	check '[ "$(fsize "$img")" = "$(bytes "$size")" ]' "$what: size changed across a remount"
	[ "$(region_sum "$img" $JOBS_MIB)" = "$sum" ] || fail "$what: the data changed across a remount"
	stop_array "$mnt"
	rm -rf "$d"
}

# Rows marked "full" are left out of quick runs (RF_QUICK=1).
#                level layout             disks chunk  array
full check_array 0     -                  2     -      128M
     check_array 0     -                  3     64K    192M
     check_array 1     -                  2     -      64M
full check_array 1     -                  3     -      64M
     check_array 4     -                  4     64K    192M
full check_array 4     parity-last        3     4K     128M
full check_array 5     left-asymmetric    4     64K    192M
     check_array 5     right-asymmetric   4     64K    192M
     check_array 5     left-symmetric     4     64K    192M
full check_array 5     left-symmetric     3     4K     128M
full check_array 5     -                  5     -      256M
full check_array 5     right-symmetric    4     64K    192M
full check_array 5     parity-first       4     64K    192M
full check_array 5     parity-last        4     64K    192M
     check_array 6     left-symmetric     5     64K    192M
full check_array 6     left-asymmetric    4     64K    128M
full check_array 6     right-symmetric    6     16K    256M
full check_array 6     ddf-zero-restart   5     64K    192M
full check_array 6     ddf-N-restart      5     64K    192M
     check_array 6     ddf-N-continue     5     64K    192M
full check_array 6     parity-first       5     64K    192M
full check_array 6     parity-last        5     64K    192M
full check_array 6     left-symmetric-6   5     64K    192M
full check_array 6     parity-first-6     5     64K    192M
     check_array 10    n2                 4     64K    128M
full check_array 10    n2                 3     64K    96M
     check_array 10    f2                 4     64K    128M
     check_array 10    o2                 3     64K    96M
full check_array 10    n3                 3     64K    64M

# md's layout numbers work as well as the names (2 = left-symmetric,
# 0x102 = raid10 n2 written as 258).
full check_array 5     2                  4     64K    192M
full check_array 10    258                4     64K    128M

# The data area: data_offset leaves room in front, size bounds it; the
# array is data disks * size, and nothing outside the area is touched.
     check_array 6     left-symmetric     5     64K    120M  data_offset=1M size=40M
full check_array 5     left-symmetric     4     64K    120M  data_offset=2048 size=81920
