#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# md-golden.sh - remake the md-images arrays of unusual shapes with kernel md itself.
#
# tests/data/md-images holds arrays that Linux md made (its README.md says how they
# are laid out and read).  This script makes the ones whose shape needs more than one
# mdadm --create: a raid5 grown by a member, one whose member was replaced by one with
# another data offset, multi-zone raid0 (both layouts), raid10 over an odd member count,
# a 2-member raid5, raid5 stopped mid-reshape (forwards and backwards), raid5 stopped in
# the middle of a hot replace (mdadm --replace), and raid5 with a partial parity log,
# clean and reset mid-write.  For each NAME it creates sparse member
# files, boots mdpeer's QEMU guest (kernel md and mdadm 4.2) with tools/md-golden-job.sh,
# which builds the array, writes the pattern (sector s holds u64le(s) 64 times) and reads
# it back through md; then mdpeer's golden_manifest.py turns the guest's notes into
# NAME/manifest.json (cross-checking roles, data offsets and size), md-golden-row.py adds
# what the shape needs (per-member sizes and offsets, reshape fields, the PPL crash plan,
# the replacement in progress), the members are compressed as roleK.img.xz (and the
# replacement as replacement.img.xz), and mdpeer's check_raid5.py re-derives
# every sector from them where it knows the geometry.
#
# usage: tools/md-golden.sh [--out DIR] [NAME...]     (default: every NAME below, into
#        tests/data/md-images; DIR/manifest.jsonl and DIR/manifest-pending.jsonl get
#        each made row, replacing a row of the same name)
# env:   MDPEER (default: shared/tools/mdpeer beside the repository), MDPEER_BUILD.
#
# mdpeer is not part of this tree.  The result is not bit-for-bit reproducible (md writes
# uuids and times into the superblocks, and where a reshape or a replacement stops or a
# reset lands depends on timing); the data areas of the finished arrays are.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
MDPEER=${MDPEER:-$here/../shared/tools/mdpeer}
for f in run-guest.sh golden_manifest.py check_raid5.py; do
	if [ ! -f "$MDPEER/$f" ]; then
		echo "md-golden.sh: kernel md runs in mdpeer's guest: no $MDPEER/$f (set MDPEER=DIR)" >&2
		exit 2
	fi
done
OUT=$here/tests/data/md-images
if [ "${1:-}" = --out ]; then
	OUT=${2:?--out needs a directory}
	shift 2
fi
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BUILD=${MDPEER_BUILD:-/tmp/mdpeer-build}
[ -f "$BUILD/initramfs.cpio.gz" ] || "$MDPEER/build-guest.sh"

# One array per line: name | kind (md-golden-job.sh) | level | raid devices at the end |
# layout ('-': md's default or none) | chunk KiB | member MiB (roles in order; replace:
# the replaced member last; midreplace: the replacement last) | manifest file | JOB_*
# settings for the guest.
CONFIGS='
r5-ls-3to4d-64k-grown   |grow   |5 |4|left-symmetric|64|32,32,32,32   |manifest.jsonl        |JOB_NDEV0=3 JOB_CREATE_OPTS="--level=5 --raid-devices=3 --chunk=64K --metadata=1.2"
r5-ls-4d-64k-replaced   |replace|5 |4|left-symmetric|64|32,40,32,32,32|manifest-pending.jsonl|JOB_NDEV0=4 JOB_NEW_OFFSET=4096 JOB_CREATE_OPTS="--level=5 --raid-devices=4 --chunk=64K --metadata=1.2"
r0-3d-64k-zones-original|plain  |0 |3|-             |64|48,64,96      |manifest-pending.jsonl|JOB_CREATE_OPTS="--level=0 --raid-devices=3 --chunk=64K --metadata=1.2 --layout=original"
r0-3d-64k-zones-alternate|plain |0 |3|-             |64|48,64,96      |manifest-pending.jsonl|JOB_CREATE_OPTS="--level=0 --raid-devices=3 --chunk=64K --metadata=1.2 --layout=alternate"
r10-n2-3d-64k           |plain  |10|3|n2            |64|32,32,32      |manifest.jsonl        |JOB_CREATE_OPTS="--level=10 --raid-devices=3 --layout=n2 --chunk=64K --metadata=1.2"
r10-f2-5d-64k           |plain  |10|5|f2            |64|32,32,32,32,32|manifest.jsonl        |JOB_CREATE_OPTS="--level=10 --raid-devices=5 --layout=f2 --chunk=64K --metadata=1.2"
r5-ls-2d-64k            |plain  |5 |2|left-symmetric|64|32,32         |manifest-pending.jsonl|JOB_CREATE_OPTS="--level=5 --raid-devices=2 --chunk=64K --metadata=1.2"
r5-ls-3to4d-64k-midgrow |reshape|5 |4|left-symmetric|64|32,32,32,32   |manifest-pending.jsonl|JOB_NDEV0=3 JOB_GROW_ARGS="--raid-devices=4" JOB_STOP_PCT=40 JOB_SPEED_KIB=1000 JOB_CREATE_OPTS="--level=5 --raid-devices=3 --chunk=64K --metadata=1.2"
r5-ls-3to4d-64k-bitmap-midgrow|reshape|5|4|left-symmetric|64|32,32,32,32|manifest-pending.jsonl|JOB_NDEV0=3 JOB_GROW_ARGS="--raid-devices=4" JOB_STOP_PCT=40 JOB_SPEED_KIB=1000 JOB_CREATE_OPTS="--level=5 --raid-devices=3 --chunk=64K --metadata=1.2 --bitmap=internal --bitmap-chunk=1M"
r5-ls-4to6-5d-64k-midlevel|reshape|6|5|left-symmetric|64|32,32,32,32,32|manifest-pending.jsonl|JOB_NDEV0=4 JOB_GROW_ARGS="--level=6 --raid-devices=5" JOB_STOP_PCT=40 JOB_STOP_SYNC_MAX=12288 JOB_SPEED_KIB=1000 JOB_CREATE_OPTS="--level=5 --raid-devices=4 --chunk=64K --metadata=1.2"
r5-ls2la-4d-64k-midrelayout|reshape|5|4|left-symmetric|64|32,32,32,32   |manifest-pending.jsonl|JOB_NDEV0=4 JOB_GROW_ARGS="--layout=left-asymmetric --data-offset=4M" JOB_STOP_PCT=40 JOB_SPEED_KIB=1000 JOB_CREATE_OPTS="--level=5 --raid-devices=4 --chunk=64K --metadata=1.2 --size=24M"
r5-ls-4d-64k-midreplace |midreplace|5|4|left-symmetric|64|32,32,32,32,32|manifest-pending.jsonl|JOB_STOP_PCT=40 JOB_SPEED_KIB=1000 JOB_CREATE_OPTS="--level=5 --raid-devices=4 --chunk=64K --metadata=1.2"
r5-ls-4d-64k-ppl        |plain  |5 |4|left-symmetric|64|32,32,32,32   |manifest-pending.jsonl|JOB_CREATE_OPTS="--level=5 --raid-devices=4 --chunk=64K --metadata=1.2 --consistency-policy=ppl"
r5-ls-4d-64k-ppl-crash  |crash  |5 |4|left-symmetric|64|32,32,32,32   |manifest-pending.jsonl|JOB_PLAN_START=6144 JOB_PLAN_STRIPES=256 JOB_PLAN_STRIDE=384 JOB_PLAN_OFFSETS="0 128" JOB_PLAN_BLOCK=128 JOB_CRASH_AFTER=2 JOB_CREATE_OPTS="--level=5 --raid-devices=4 --chunk=64K --metadata=1.2 --consistency-policy=ppl"
'

# guest RUNARGS...: run-guest.sh with this set's info/ as the share; its exit status
guest() {
	"$MDPEER/run-guest.sh" --share "$d/info" --timeout 900 "$@" >/dev/null
}

# put_row FILE: FILE holds the set's row, replacing an older row of the same name
put_row() {
	local f=$OUT/$1
	touch "$f"
	grep -v "^{\"name\": \"$name\"," "$f" >"$f.new" || true
	cat "$d/manifest.json" >>"$f.new"
	mv "$f.new" "$f"
}

T0=$(date +%s)
n_ok=0
failed=""
while IFS='|' read -r name kind level ndev layout chunk sizes list jobenv; do
	name=${name// /}
	[ -n "$name" ] || continue
	if [ $# -gt 0 ]; then
		want=0
		for w in "$@"; do [ "$w" = "$name" ] && want=1; done
		[ $want = 1 ] || continue
	fi
	kind=${kind// /} level=${level// /} ndev=${ndev// /} layout=${layout// /}
	chunk=${chunk// /} sizes=${sizes// /} list=${list// /}
	t0=$(date +%s)
	d=$OUT/$name
	rm -rf "$d"
	mkdir -p "$d/info"
	IFS=, read -r -a mib <<<"$sizes"
	imgs=()
	for ((r = 0; r < ${#mib[@]}; r++)); do
		if [ "$kind" = replace ] && [ $r = $((${#mib[@]} - 1)) ]; then
			img=$d/replaced.img
		elif [ "$kind" = midreplace ] && [ $r = $((${#mib[@]} - 1)) ]; then
			img=$d/replacement.img
		else
			img=$d/role$r.img
		fi
		truncate -s "${mib[r]}M" "$img"
		imgs+=("$img")
	done
	echo "=== $name: $kind, raid$level, $ndev devices, members ${sizes} MiB" >&2
	ok=1
	(
		for v in $(compgen -e | grep '^JOB_' || true); do unset "$v"; done
		eval "export JOB_KIND=$kind JOB_NDEV=$ndev $jobenv"
		guest --log "$d/info/console.log" "$here/tools/md-golden-job.sh" "${imgs[@]}"
	) || {
		rc=$?
		if [ "$kind" = crash ] && [ $rc = 125 ] && grep -q MD-GOLDEN-RESET "$d/info/console.log"; then
			echo "=== $name: guest reset mid-write as planned" >&2
		else
			ok=0
		fi
	}
	# crash, reshape and midreplace leave the members as md left them; kernel md
	# checks them again through snapshots, so that what it writes does not reach
	# the members
	case $kind in
	crash | reshape | midreplace)
		[ $ok = 1 ] && (
			for v in $(compgen -e | grep '^JOB_' || true); do unset "$v"; done
			echo "=== $name: md assembles snapshots of the members and checks them" >&2
			export JOB_KIND=$kind-verify MDPEER_DISK_OPTS=snapshot=on TMPDIR=$d
			guest --log "$d/info/verify-console.log" "$here/tools/md-golden-job.sh" "${imgs[@]}"
		) || ok=0
		;;
	esac
	[ "$kind" = replace ] && rm -f "$d/replaced.img"
	if [ $ok = 1 ] &&
		python3 "$MDPEER/golden_manifest.py" "$d" "$name" "$level" "$ndev" "$layout" "$chunk" 1.2 - \
			$((mib[0] * 1048576)) >&2 &&
		python3 "$here/tools/md-golden-row.py" "$d" "$kind" >&2; then
		rm -f "$d/info/region.img" "$d/info/create.log" "$d/info/"*console.log
		for ((r = 0; r < ndev; r++)); do
			xz -T1 -f --delta=dist=8 --lzma2=preset=9 "$d/role$r.img"
		done
		if [ "$kind" = midreplace ]; then
			xz -T1 -f --delta=dist=8 --lzma2=preset=9 "$d/replacement.img"
		fi
		python3 "$here/tools/md-golden-row.py" --check "$MDPEER/check_raid5.py" "$d" "$kind" >&2
		put_row "$list"
		n_ok=$((n_ok + 1))
		echo "=== $name: ok in $(($(date +%s) - t0))s, $(du -sb "$d" | cut -f1) bytes" >&2
	else
		failed="$failed $name"
		echo "=== $name: FAILED (see $d/info/console.log)" >&2
		rm -f "$d"/*.img
	fi
done <<<"$CONFIGS"
echo "=== made $n_ok arrays in $(($(date +%s) - T0))s${failed:+; failed:$failed}" >&2
[ -z "$failed" ]
