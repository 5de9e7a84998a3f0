#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# md-crosscheck.sh - let the real kernel md judge what raidfuse wrote.
#
# For each kernel-md array in tests/data/md-images (or the names given), it
# decompresses the members, serves them with raidfuse (a config naming md's
# level, layout, chunk, data offset and size), writes new data through the
# mount with fio (random 4k..128k and unaligned writes, so rmw, rcw and
# full-stripe writes all happen), takes the sha256 of the whole image, stops
# raidfuse, and runs mdpeer's md-judge.sh --check on the members: kernel md
# must assemble them, read the same sha256, and find mismatch_cnt=0.
#
# usage: tools/md-crosscheck.sh [NAME...]     (RAIDFUSE, MD_IMAGES, MDPEER override)
#
# mdpeer (a QEMU guest running kernel md) is not part of this tree: it is
# taken from shared/tools/mdpeer beside the repository, or from MDPEER.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
RAIDFUSE=${RAIDFUSE:-$here/build/raidfuse}
MD_IMAGES=${MD_IMAGES:-$here/tests/data/md-images}
MDPEER=${MDPEER:-$here/../shared/tools/mdpeer}
if [ ! -x "$MDPEER/md-judge.sh" ]; then
	echo "md-crosscheck.sh: kernel md's check needs mdpeer: no $MDPEER/md-judge.sh (set MDPEER=DIR)" >&2
	exit 2
fi
[ -f "$MD_IMAGES/manifest.jsonl" ] ||
	{ echo "md-crosscheck.sh: no $MD_IMAGES/manifest.jsonl (set MD_IMAGES=DIR)" >&2; exit 2; }
work=$(mktemp -d /dev/shm/rf-crosscheck-XXXXXX)
trap '[ "$BASHPID" = "$$" ] || exit; fusermount3 -uz "$work/mnt" 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/mnt"

names=("$@")
if [ ${#names[@]} -eq 0 ]; then
	names=(r4-4d-64k r5-la-4d-64k r5-ls-4d-64k r6-ls-5d-64k r10-n2-4d-64k r1-2d)
fi

field() { # field NAME KEY: a scalar from the manifest line of NAME
	grep "\"name\": \"$1\"" "$MD_IMAGES/manifest.jsonl" | grep -o "\"$2\": [^,]*" | head -1 | sed 's/.*: //; s/"//g'
}

fail=0
for name in "${names[@]}"; do
	level=$(field "$name" level)
	layout=$(field "$name" layout_effective)
	chunk=$(field "$name" chunk_kib)
	disks=$(field "$name" raid_disks)
	comp=$(field "$name" component_sectors)
	doff=$(grep "\"name\": \"$name\"" "$MD_IMAGES/manifest.jsonl" | grep -o '"data_offset_sectors": \[[0-9]*' | grep -o '[0-9]*$')
	members=()
	for ((i = 0; i < disks; i++)); do
		xz -dc "$MD_IMAGES/$name/role$i.img.xz" > "$work/$name-$i.img"
		members+=("\"$work/$name-$i.img\"")
	done
	lay=""
	[ "$layout" != "null" ] && [ "$level" != 4 ] && lay="layout = \"$(echo "$layout" | sed 's/near=/n/; s/far=/f/; s/offset=/o/')\";"
	ch=""
	[ "$chunk" != "null" ] && ch="chunk_size = \"${chunk}K\";"
	cat > "$work/$name.conf" <<CONF
array: {
  name = "array.img";
  level = $level;
  $lay
  $ch
  members = ( $(IFS=,; echo "${members[*]}") );
  data_offset = $doff;
  size = $comp;
};
CONF
	"$RAIDFUSE" mount "$work/$name.conf" "$work/mnt"
	img="$work/mnt/array.img"
	fio --name=rnd --filename="$img" --rw=randwrite --bsrange=4k-128k --size=40% --iodepth=16 \
		--ioengine=io_uring --direct=1 --randseed=7 >/dev/null
	fio --name=odd --filename="$img" --rw=write --bs=6656 --offset=45% --size=15% --iodepth=8 \
		--ioengine=io_uring --direct=1 >/dev/null
	fio --name=seq --filename="$img" --rw=write --bs=1M --offset=65% --size=30% --iodepth=4 \
		--ioengine=io_uring --direct=1 >/dev/null
	ours=$(sha256sum < "$img" | cut -d' ' -f1)
	fusermount3 -u "$work/mnt"
	sleep 0.5
	out=$("$MDPEER/md-judge.sh" --check "$work/$name"-*.img 2>"$work/judge.err" || true)
	theirs=$(echo "$out" | grep -o 'sha256=[0-9a-f]*' | cut -d= -f2)
	mism=$(echo "$out" | grep -o 'mismatch_cnt=[^ ]*' | cut -d= -f2)
	if [ "$ours" = "$theirs" ] && { [ "$mism" = 0 ] || [ "$level" = 0 ]; }; then
		echo "PASS $name: kernel md reads sha256 $ours, mismatch_cnt=$mism"
	else
		echo "FAIL $name: raidfuse sha256 $ours, kernel md sha256 ${theirs:-none} mismatch_cnt=${mism:-none}"
		echo "$out" | sed 's/^/    /'
		tail -5 "$work/judge.err" | sed 's/^/    /'
		fail=1
	fi
	rm -f "$work/$name"-*.img
done
exit $fail
