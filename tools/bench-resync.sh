#!/usr/bin/env bash
# bench-resync.sh - how fast a resync runs, and what it costs foreground IO.
#
# For each level (raid5 and raid6 by default, 4 members each, members on
# /dev/shm filled with zeros, so the parity agrees and nothing is written):
#  (a) idle resync: with sync_speed_max as high as it goes, the time from
#      `echo resync > md/sync_action` until it reads idle again.  Beside
#      it, just before, what the members can stream: fio reading the
#      member files, 1 MiB at a time, one thread per member (parallel) and
#      one thread for all of them in turn (1 thread): the same bytes the
#      resync reads.  Ratio: member bytes the resync read per second over
#      the streaming rate.  Goal: 0.80 of the parallel rate.  RUNS pairs;
#      the one with the median ratio counts (the machine is shared).
#  (b) tools/bench/randread-4k-qd32.fio while a resync runs (started just
#      before; sync_speed_min and _max at md's defaults) against the idle
#      array (the mean of the idle runs just before and after), RUNS
#      rounds, the median counts: the IOPS ratio (goal 0.80), and the
#      lowest rate the resync kept
#      meanwhile (sync_completed moved, over the time), which must stay at
#      or above sync_speed_min.
#
# usage: tools/bench-resync.sh [-t SECONDS] [-l LEVELS] [-m MIB] [-r RUNS] [-o CSV]
#   -t SECONDS  each randread run's measured time (default 5; a 1 s ramp)
#   -l LEVELS   "5 6" by default (1, 4, 5, 6, 10 work; 4 members each)
#   -m MIB      each member's size (default 512)
#   -r RUNS     rounds of each measure (default 3; the median counts)
#   -o CSV      where the CSV goes (default WORK/resync.csv)
# Environment: RAIDFUSE (the binary), BENCH_DIR (default /dev/shm).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
jobdir=$here/tools/bench
. "$jobdir/conf.sh"
RAIDFUSE=${RAIDFUSE:-$here/build/raidfuse}
runtime=5 levels="5 6" mib=512 runs=3 csv=''
NMEMBERS=4
SPEED_HIGH=2000000000           # KiB/s: no limit in practice
GOAL_RESYNC=0.80 GOAL_IOPS=0.80

usage() {
	sed -n 's/^# \{0,1\}//; /^usage:/,/^Environment/p' "$0" | sed '$d' >&2
	exit 2
}
while getopts "t:l:m:r:o:" o; do
	case $o in
	t) runtime=$OPTARG ;;
	l) levels=${OPTARG//,/ } ;;
	m) mib=$OPTARG ;;
	r) runs=$OPTARG ;;
	o) csv=$OPTARG ;;
	*) usage ;;
	esac
done
[ $OPTIND -gt $# ] || usage
for v in "$runtime" "$mib" "$runs"; do
	[[ $v =~ ^[1-9][0-9]*$ ]] || { echo "bench-resync.sh: -t, -m and -r want whole numbers, got '$v'" >&2; exit 2; }
done
for l in $levels; do
	case $l in 1 | 4 | 5 | 6 | 10) ;; *) echo "bench-resync.sh: no resync on raid level '$l'" >&2; exit 2 ;; esac
done
for t in fio jq fusermount3; do
	command -v $t >/dev/null || { echo "bench-resync.sh: $t not found (tools/setup-deps.sh installs it)" >&2; exit 1; }
done
[ -x "$RAIDFUSE" ] || { echo "bench-resync.sh: no raidfuse binary at $RAIDFUSE (make, or set RAIDFUSE)" >&2; exit 1; }

work=$(mktemp -d "${BENCH_DIR:-/dev/shm}/rf-bench-resync-XXXXXX")
csv=${csv:-$work/resync.csv}
mkdir -p "$work/fio" "$work/data"
mnt=$work/mnt
daemon=''
cleanup() {
	set +e
	if mountpoint -q "$mnt" 2>/dev/null; then
		fusermount3 -uz "$mnt"
		[ -z "$daemon" ] || wait "$daemon" 2>/dev/null
	fi
	rm -rf "$work/data"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

now() { echo "${EPOCHREALTIME}"; }
fdiv() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "-" }'; }
val() { cat "$mnt/md/$1"; }

# wait_idle: until md/sync_action reads idle (polled every 10 ms).
wait_idle() {
	while [ "$(val sync_action)" != idle ]; do sleep 0.01; done
}

# stream NAME FIO-ARGS...: fio reading the member files; its MiB/s.
stream() {
	local name=$1 out=$work/fio/stream-$1.json
	shift
	fio --output-format=json --output="$out" --rw=read --bs=1M --ioengine=psync --direct=1 \
		--time_based --runtime=2 --group_reporting "$@" >/dev/null
	jq -r '.jobs[0].read.bw / 1024' <(sed -n '/^{/,$p' "$out")
}

# randread TAG: the QD32 4k random read job on the array; its IOPS.
randread() {
	local out=$work/fio/randread-$1.json
	RF_BENCH_FILE=$mnt/array.img RF_BENCH_SIZE=$((array_mib < 512 ? array_mib : 512))M \
		RF_BENCH_RUNTIME=$runtime fio --output-format=json --output="$out" "$jobdir/randread-4k-qd32.fio" >/dev/null
	jq -r '.jobs[0].read.iops' <(sed -n '/^{/,$p' "$out")
}

echo "bench-resync: $NMEMBERS members of $mib MiB on $(df --output=fstype "$work" | tail -1), levels: $levels"
echo "target,members,member_mib,stream_par_mib_s,stream_1t_mib_s,resync_s,resync_runs_s,resync_read_mib_s,resync_per_stream,resync_per_stream_1t,sync_speed_kib_s,randread_idle_iops,randread_resync_iops,iops_ratio,resync_fg_kib_s,sync_speed_min_kib_s,goal_resync_ratio,goal_iops_ratio" >"$csv"
for l in $levels; do
	t=raid$l
	members=()
	for ((i = 0; i < NMEMBERS; i++)); do members+=("$work/data/$t-$i.img"); done
	bench_array_conf "$work/$t.conf" "$l" 512K "${mib}M" "${members[@]}"
	"$RAIDFUSE" create "$work/$t.conf" >"$work/$t.log" 2>&1
	# Allocated pages, as a used array's members have: zeros agree with
	# their parity and copies, so a resync reads everything, writes nothing.
	for m in "${members[@]}"; do
		dd if=/dev/zero of="$m" bs=1M count="$mib" conv=notrunc status=none
	done

	par_args=() one=""
	for ((i = 0; i < NMEMBERS; i++)); do
		par_args+=("--name=m$i" "--filename=${members[i]}")
		one+="${one:+:}${members[i]}"
	done
	one_file=$one

	mkdir -p "$mnt"
	"$RAIDFUSE" mount "$work/$t.conf" "$mnt" -f >>"$work/$t.log" 2>&1 &
	daemon=$!
	for ((i = 0; i < 200; i++)); do
		[ -e "$mnt/array.img" ] && break
		kill -0 "$daemon" 2>/dev/null || { echo "bench-resync.sh: the $t daemon exited; $work/$t.log" >&2; exit 1; }
		sleep 0.05
	done
	array_mib=$(($(stat -c %s "$mnt/array.img") >> 20))
	speed_min=$(val sync_speed_min | cut -d' ' -f1)

	# (a) idle resync, speed_max out of the way.  Each run streams the
	# members (in parallel, then on one thread), then resyncs: on this
	# shared machine each pair is measured within seconds of each other.
	# The run with the median ratio to the parallel stream counts.
	echo "$SPEED_HIGH" >"$mnt/md/sync_speed_max"
	rows=() all=''
	for ((r = 0; r < runs; r++)); do
		p=$(stream "par$r" "${par_args[@]}")
		o=$(stream "1t$r" --name=all --filename="$one_file" --file_service_type=roundrobin)
		t0=$(now)
		echo resync >"$mnt/md/sync_action"
		wait_idle
		dt=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }')
		all+="${all:+ }$dt"
		# Member bytes read per second: every member, whole (its data area).
		rate=$(awk -v n=$NMEMBERS -v m="$mib" -v s="$dt" 'BEGIN { printf "%.0f", n * m / s }')
		rows+=("$(fdiv "$rate" "$p") $p $o $dt $rate")
	done
	read -r _ par one dt_med read_mib <<<"$(printf '%s\n' "${rows[@]}" | sort -n | sed -n "$(((runs + 1) / 2))p")"
	# md's sync_speed unit: KiB/s of each member (the runs are too short
	# for the daemon's own figure, an average over seconds).
	speed=$(awk -v m="$mib" -v s="$dt_med" 'BEGIN { printf "%.0f", m * 1024 / s }')

	# (b) 4k random reads, idle and during a resync, md's default limits:
	# RUNS rounds, each run during a resync between two idle ones (their
	# mean is its idle figure: the machine is shared, and consecutive idle
	# runs differ by 20%).  The round with the median ratio counts, and the
	# lowest rate the resync kept in any round.
	echo system >"$mnt/md/sync_speed_max"
	prev=$(randread idle0)
	rows=() fg_kib=''
	for ((r = 0; r < runs; r++)); do
		echo resync >"$mnt/md/sync_action"
		read -r d0 _ _ <<<"$(val sync_completed)"
		t0=$(now)
		busy=$(randread "resync$r")
		st=$(val sync_completed) t1=$(now)
		still=$(val sync_action)
		echo idle >"$mnt/md/sync_action"
		if [ "$still" = resync ]; then
			read -r d1 _ _ <<<"$st"
		else
			d1=$((mib * 2048))       # it finished during the run
		fi
		fg=$(awk -v a="$d0" -v b="$d1" -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.0f", (b - a) / 2 / (t1 - t0) }')
		[ -n "$fg_kib" ] && [ "$fg_kib" -le "$fg" ] || fg_kib=$fg
		next=$(randread "idle$((r + 1))")
		idle=$(awk -v a="$prev" -v b="$next" 'BEGIN { printf "%.0f", (a + b) / 2 }')
		rows+=("$(fdiv "$busy" "$idle") $busy $idle")
		prev=$next
	done
	read -r _ busy_iops idle_iops <<<"$(printf '%s\n' "${rows[@]}" | sort -n | sed -n "$(((runs + 1) / 2))p")"

	fusermount3 -u "$mnt"
	wait "$daemon" || echo "bench-resync.sh: the $t daemon exited with status $?" >&2
	daemon=''
	rm -f "${members[@]}"

	printf '%s,%d,%d,%.0f,%.0f,%s,%s,%s,%s,%s,%s,%.0f,%.0f,%s,%s,%s,%s,%s\n' "$t" $NMEMBERS "$mib" "$par" "$one" \
		"$dt_med" "$all" "$read_mib" "$(fdiv "$read_mib" "$par")" "$(fdiv "$read_mib" "$one")" "$speed" \
		"$idle_iops" "$busy_iops" "$(fdiv "$busy_iops" "$idle_iops")" "$fg_kib" "$speed_min" \
		"$GOAL_RESYNC" "$GOAL_IOPS" >>"$csv"
done

echo
echo "(a) idle resync (sync_speed_max $SPEED_HIGH) against streaming the members (fio, 1 MiB reads):"
echo "    MiB/s are member bytes read per second, all members together; * marks a ratio below its goal"
printf '%-7s %10s %10s %9s %10s %8s %8s %11s\n' target "par MiB/s" "1t MiB/s" "resync s" "res MiB/s" "/par" "/1t" "KiB/s/memb"
awk -F, 'NR > 1 { printf "%-7s %10.0f %10.0f %9.3f %10.0f %7s%s %8s %11s\n", $1, $4, $5, $6, $8, $9,
	($9 != "-" && $9 + 0 < $17 + 0) ? "*" : " ", $10, $11 }' "$csv"
echo
echo "(b) 4k random read QD32 (${runtime} s) idle and during a resync (md's default speed limits):"
printf '%-7s %10s %12s %7s %14s %14s\n' target "idle IOPS" "resync IOPS" ratio "resync KiB/s" "speed_min"
awk -F, 'NR > 1 { printf "%-7s %10.0f %12.0f %6s%s %14s %14s%s\n", $1, $12, $13, $14,
	($14 != "-" && $14 + 0 < $18 + 0) ? "*" : " ", $15, $16, ($15 + 0 < $16 + 0) ? " *" : "" }' "$csv"
echo
echo "CSV: $csv"
echo "fio JSON and daemon logs: $work"
