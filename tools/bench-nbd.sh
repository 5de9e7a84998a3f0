#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench-nbd.sh - raid5 over 4 nbdkit members beside the same raid5 on files,
# same run.
#
# Two arrays are mounted at once: raid5 of 4 members on /dev/shm files,
# and raid5 of 4 nbdkit memory exports on unix sockets (the cost of the
# NBD path alone: no network, no disk).  Each round runs each fio job on
# each array in turn; the table gives the median IOPS and mean completion
# latency per job and target, and NBD / files.  With RAIDFUSE_BASE (another
# build), the NBD array also runs on it, as nbd@base, to measure a change
# against what it changed.
#
# usage: tools/bench-nbd.sh [-t SECONDS] [-r ROUNDS] [-g GROUP_THREAD_CNT]
#   -t SECONDS  each fio run's measured time (default 3; a 1 s ramp before it)
#   -r ROUNDS   rounds (default 3)
#   -g N        tuning.group_thread_cnt of both arrays (default: unset, which gives the
#               NBD array 1 per group and the file array (on /dev/shm) 0)
# Jobs: 4k randwrite QD32, 1M sequential write QD8, 4k randread QD32.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
RAIDFUSE=${RAIDFUSE:-$here/build/raidfuse}
runtime=3 rounds=3 gtc=''
while getopts "t:r:g:" o; do
	case $o in
	t) runtime=$OPTARG ;;
	r) rounds=$OPTARG ;;
	g) gtc=$OPTARG ;;
	*) sed -n 's/^# \{0,1\}//; /^usage:/,/^Jobs/p' "$0" >&2; exit 2 ;;
	esac
done
command -v nbdkit >/dev/null || { echo "bench-nbd: nbdkit is not installed" >&2; exit 1; }
W=$(mktemp -d /dev/shm/rf-bench-nbd.XXXXXX)
pids=()
cleanup() {
	# a subshell killed early runs the EXIT trap it inherited: not ours to clean
	[ "$BASHPID" = "$$" ] || return 0
	local m
	for m in "$W"/mnt-*; do
		[ -d "$m" ] && { fusermount3 -u "$m" 2>/dev/null || true; }
	done
	sleep 0.5
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$W"
}
trap cleanup EXIT

conf() { # conf FILE MEMBERS...
	local f=$1 list="" tun=""
	shift
	[ -n "$gtc" ] && tun="tuning: { group_thread_cnt = $gtc; };"
	for m; do list+="${list:+, }\"$m\""; done
	cat >"$f" <<EOF
array: {
  name = "array.img";
  level = 5;
  chunk_size = "64K";
  members = ( $list );
  member_size = "300M";
  metadata = "1.2";
  member_timeout = "30s";
};
$tun
EOF
}

serve() { # serve NAME BINARY CONF
	local mnt=$W/mnt-$1 i
	mkdir -p "$mnt"
	"$2" create --assume-clean "$3" >/dev/null
	"$2" mount "$3" "$mnt" -f >"$W/$1.log" 2>&1 &
	pids+=($!)
	for ((i = 0; i < 200; i++)); do
		[ -e "$mnt/array.img" ] && return 0
		sleep 0.05
	done
	echo "bench-nbd: $1 did not come up: $(cat "$W/$1.log")" >&2
	exit 1
}

files=()
for i in 0 1 2 3; do files+=("$W/f$i.img"); done
conf "$W/files.conf" "${files[@]}"
targets=(files)
serve files "$RAIDFUSE" "$W/files.conf"
nbd_set() { # nbd_set NAME: 4 nbdkit memory exports, a config over them
	local uris=() i
	for i in 0 1 2 3; do
		nbdkit -f -U "$W/$1-$i.sock" memory 400M &
		pids+=($!)
	done
	for i in 0 1 2 3; do
		while [ ! -S "$W/$1-$i.sock" ]; do sleep 0.05; done
		uris+=("nbd+unix:///?socket=$W/$1-$i.sock")
	done
	conf "$W/$1.conf" "${uris[@]}"
}
nbd_set nbd
serve nbd "$RAIDFUSE" "$W/nbd.conf"
targets+=(nbd)
if [ -n "${RAIDFUSE_BASE:-}" ]; then
	nbd_set nbdbase
	serve nbdbase "$RAIDFUSE_BASE" "$W/nbdbase.conf"
	targets+=(nbdbase)
fi

jobs=("randwrite 4k 32" "write 1M 8" "randread 4k 32")
for t in "${targets[@]}"; do      # written once, so that reads read data
	fio --name=fill --filename="$W/mnt-$t/array.img" --rw=write --bs=1M --size=256M --direct=1 \
		--ioengine=io_uring --iodepth=8 --output=/dev/null
done
for ((r = 1; r <= rounds; r++)); do
	for j in "${jobs[@]}"; do
		read -r rw bs qd <<<"$j"
		for t in "${targets[@]}"; do
			fio --name=b --filename="$W/mnt-$t/array.img" --rw="$rw" --bs="$bs" --iodepth="$qd" \
				--size=256M --direct=1 --ioengine=io_uring --time_based --runtime="$runtime" \
				--ramp_time=1 --output-format=json --output="$W/$t.$rw.$bs.$r.json"
		done
	done
done

printf '%-10s %-6s %-9s %10s %10s %10s\n' job bs target IOPS clat_us "vs files"
for j in "${jobs[@]}"; do
	read -r rw bs qd <<<"$j"
	base=''
	for t in "${targets[@]}"; do
		sel=write
		[ "$rw" = randread ] && sel=read
		iops=$(for ((r = 1; r <= rounds; r++)); do
			jq ".jobs[0].$sel.iops" "$W/$t.$rw.$bs.$r.json"
		done | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
		lat=$(for ((r = 1; r <= rounds; r++)); do
			jq ".jobs[0].$sel.clat_ns.mean / 1000" "$W/$t.$rw.$bs.$r.json"
		done | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
		[ -z "$base" ] && base=$iops
		printf '%-10s %-6s %-9s %10.0f %10.1f %10.3f\n' "$rw" "$bs" "${t/nbdbase/nbd@base}" "$iops" "$lat" \
			"$(echo "$iops / $base" | bc -l)"
	done
done
