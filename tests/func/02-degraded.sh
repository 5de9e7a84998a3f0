#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 02-degraded: arrays with members missing.
#
# 1. Born degraded: a config that names a member "missing" (two for raid6)
#    mounts, takes writes and reads them back, and still does after a
#    remount.
# 2. Rebuilt from redundancy: data written to a healthy array reads back
#    the same with any one member left out (raid6: any one, and two: all
#    pairs for md's default layout, neighbouring pairs for the others);
#    every byte of the left-out member is then recomputed from the others.
# 3. Written degraded: with a member left out, new writes land in parity
#    so that a later mount with the same member out reads them, and raid6
#    written with one member out still survives losing a second.
# A member left out is never opened: its file stays as it was.
. "$(dirname "$0")/lib.sh"
requires fuse fio
build_helper

MEMBER=64M
# Two regions: A is written healthy, B degraded.
JOB_A="--name=randA --rw=randwrite --bsrange=4k-64k --offset=0 --size=4M
	--name=seqA --rw=write --bs=1M --offset=4M --size=4M
	--name=oddA --rw=randwrite --bssplit=512/30:3584/30:9728/40 --offset=8M --size=1M"
JOB_B="--name=randB --rw=randwrite --bsrange=4k-64k --offset=12M --size=4M
	--name=oddB --rw=randwrite --bs=6k --offset=16M --size=1536K"

D=$WORK/a
MNT=$WORK/mnt
IMG=$MNT/array.img

# conf_missing NAME IDX...: $D/NAME.conf for the array new_array made, with
# the members at the given indices "missing".
conf_missing() {
	local name=$1 i m list=""
	shift
	for ((i = 0; i < NDISKS; i++)); do
		m=d$i.img
		for idx; do [ "$idx" = "$i" ] && m=missing; done
		list+="${list:+ }$m"
	done
	mk_conf "$D/$name.conf" "${BASE[@]}" members="$list"
}

# new_array LEVEL LAYOUT DISKS: fresh member files in $D.
new_array() {
	LEVEL=$1
	NDISKS=$3
	BASE=(level="$1" chunk_size=64K member_size="$MEMBER")
	[ "$2" = - ] || BASE+=(layout="$2")
	WHAT="raid$1 $2 $3 disks"
	rm -rf "$D" && mkdir "$D"
	conf_missing healthy
	create_array "$D/healthy.conf"
}

stamp() { stat -c '%s %y' "$D/d$1.img"; }

# --- 1. born degraded -------------------------------------------------------

born_degraded() {
	local missing=("${@:4}") i
	new_array "$1" "$2" "$3"
	conf_missing deg "${missing[@]}"
	local before=()
	for i in "${missing[@]}"; do before+=("$(stamp "$i")"); done
	log "$WHAT, born without member(s) ${missing[*]}: write, read, remount, read"
	start_array "$D/deg.conf" "$MNT"
	fio_verify "$IMG" $JOB_A $JOB_B
	stop_array "$MNT"
	start_array "$D/deg.conf" "$MNT"
	fio_verify --verify_only "$IMG" $JOB_A $JOB_B
	stop_array "$MNT"
	local k=0
	for i in "${missing[@]}"; do
		[ "$(stamp "$i")" = "${before[k]}" ] || fail "$WHAT: member $i was left out, but its file changed"
		k=$((k + 1))
	done
}

full born_degraded 4 - 4 0
full born_degraded 4 - 4 3
born_degraded 5 left-symmetric 4 1
full born_degraded 5 left-asymmetric 3 2
born_degraded 6 left-symmetric 5 0 3
full born_degraded 6 ddf-N-continue 5 4 2
born_degraded 1 - 2 0
full born_degraded 1 - 3 1 2
born_degraded 10 n2 4 1
full born_degraded 10 f2 4 2
full born_degraded 10 o2 3 0

# --- 2. rebuilt from redundancy --------------------------------------------

# What region A holds on a healthy array, and a little beyond it (zeros).
REF_BYTES=$((10 << 20))

# read_without IDX...: mount with those members out; the image reads back
# byte for byte as it did healthy.
read_without() {
	conf_missing out "$@"
	start_array "$D/out.conf" "$MNT"
	"$RFHELPER" same "$IMG" "$D/ref" $REF_BYTES >"$WORK/same.out" ||
		fail "$WHAT without member(s) $*: $(cat "$WORK/same.out")"
	stop_array "$MNT"
}

# rebuilt LEVEL LAYOUT DISKS [all-pairs]: raid6 loses every pair of
# members with all-pairs, else each pair of neighbours (i, i+1 mod n): in
# rotating layouts that is still P+Q, P+data, Q+data and data+data.
rebuilt() {
	local i j all=${4:-}
	new_array "$1" "$2" "$3"
	start_array "$D/healthy.conf" "$MNT"
	fio_verify "$IMG" $JOB_A      # what fio just checked is the reference
	dd if="$IMG" of="$D/ref" bs=1M count=$((REF_BYTES >> 20)) iflag=direct status=none
	stop_array "$MNT"
	log "$WHAT: healthy data reads back without any one member"
	for ((i = 0; i < NDISKS; i++)); do
		read_without $i
	done
	# (a quick run, RF_QUICK=1: neighbours only)
	if [ "$LEVEL" = 6 ] && [ "$all" = all-pairs ] && [ "${RF_QUICK:-0}" != 1 ]; then
		log "$WHAT: ... and without any two"
		for ((i = 0; i < NDISKS; i++)); do
			for ((j = i + 1; j < NDISKS; j++)); do
				read_without $i $j
			done
		done
	elif [ "$LEVEL" = 6 ]; then
		log "$WHAT: ... and without any two neighbours"
		for ((i = 0; i < NDISKS; i++)); do
			read_without $i $(((i + 1) % NDISKS))
		done
	fi
	if [ "$LEVEL" = 1 ] && [ "$NDISKS" = 3 ]; then
		log "$WHAT: ... and from any one member alone"
		read_without 1 2
		read_without 0 2
		read_without 0 1
	fi
}

full rebuilt 4 - 4
full rebuilt 5 left-asymmetric 4
full rebuilt 5 right-asymmetric 4
rebuilt 5 left-symmetric 4
full rebuilt 5 right-symmetric 5
full rebuilt 5 parity-first 4
full rebuilt 5 parity-last 3
rebuilt 6 left-symmetric 5 all-pairs
full rebuilt 6 right-asymmetric 4
full rebuilt 6 ddf-zero-restart 5
rebuilt 6 ddf-N-continue 6
full rebuilt 6 parity-last 4
full rebuilt 6 left-symmetric-6 5
full rebuilt 1 - 2
rebuilt 1 - 3
full rebuilt 10 n2 4
rebuilt 10 f2 4
full rebuilt 10 o2 3
full rebuilt 10 n3 3

# --- 3. written degraded ---------------------------------------------------

# written_degraded LEVEL LAYOUT DISKS OUT [SECOND]: write A healthy, B with
# member OUT left out; both read back with OUT out, and for raid6 also with
# OUT and SECOND out.
written_degraded() {
	local out=$4 second=${5:-}
	new_array "$1" "$2" "$3"
	start_array "$D/healthy.conf" "$MNT"
	fio_verify "$IMG" $JOB_A
	stop_array "$MNT"
	local before
	before=$(stamp "$out")
	log "$WHAT: written without member $out, read back${second:+ also without $second}"
	conf_missing deg "$out"
	start_array "$D/deg.conf" "$MNT"
	fio_verify "$IMG" $JOB_B
	stop_array "$MNT"
	start_array "$D/deg.conf" "$MNT"
	fio_verify --verify_only "$IMG" $JOB_A $JOB_B
	stop_array "$MNT"
	[ "$(stamp "$out")" = "$before" ] || fail "$WHAT: member $out was left out, but its file changed"
	if [ -n "$second" ]; then
		conf_missing deg2 "$out" "$second"
		start_array "$D/deg2.conf" "$MNT"
		fio_verify --verify_only "$IMG" $JOB_A $JOB_B
		stop_array "$MNT"
	fi
}

full written_degraded 4 - 4 3
written_degraded 5 left-symmetric 4 0
full written_degraded 5 parity-first 4 2
written_degraded 6 left-symmetric 5 1 3
full written_degraded 6 left-symmetric 5 4 0
full written_degraded 6 ddf-N-restart 5 2 1
full written_degraded 1 - 2 1
full written_degraded 10 n2 4 0
full written_degraded 10 f2 4 3
written_degraded 10 o2 3 1
