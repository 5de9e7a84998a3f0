#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench-resync.sh - how fast a resync and a check run, and what they cost
# foreground IO.
#
# For each level (raid5 with 4 members and raid6 with 6 by default,
# members on /dev/shm filled with zeros, so the parity agrees and nothing
# is written):
#  (a) idle resync and check: with sync_speed_max as high as it goes, the
#      time from `echo resync > md/sync_action` (then check) until it
#      reads idle again.  Beside them, just before, what the members can
#      stream: fio reading the member files, 1 MiB at a time, one thread
#      per member (parallel) and one thread for all of them in turn (1
#      thread): the same bytes the walk reads.  Ratio: member bytes the
#      walk read per second over the streaming rate.  Goal: 0.80 of the
#      parallel rate.  RUNS rounds, each streaming then walking; the round
#      with the median ratio counts, per action (the machine is shared).
#      Beside the rates, the CPU time per member GiB of that round: the
#      daemon's (every thread, io_uring's io-wq ones too) during the walk
#      and fio's during the parallel stream.  Their ratio moves less with
#      the load of a shared machine than the rates do (a loaded machine
#      gives each of them the share its runnable threads win): where it
#      is below the goal, the walk cannot reach it with both cores its own.
#  (b) tools/bench/randread-4k-qd32.fio while a resync runs (started just
#      before; sync_speed_min and _max at md's defaults) against the idle
#      array (the mean of the idle runs just before and after), RUNS
#      rounds, the median counts: the IOPS ratio (goal 0.80), and the
#      lowest rate the resync kept
#      meanwhile (sync_completed moved, over the time), which must stay at
#      or above sync_speed_min.
#  (c) tools/bench/randwrite-4k-qd32.fio while a check runs (md's default
#      limits) against the idle array, rounds as in (b): the IOPS ratio
#      (goal 0.90) and the slowest write of each (goal: during the check,
#      at most 2x the slowest without one).
#  (d) raid6 only: idle rebuild of one member, then of two at once, onto
#      fresh spares (members failed and removed with sync_action frozen,
#      spares added through md/new_dev, then idle: the time until degraded
#      reads 0).  Each round streams the members first; ratio: member
#      bytes the rebuild moved per second (every surviving member read,
#      every spare written) over the parallel stream.  Goal 0.80.  Beside
#      it, what the same bytes cost fio just before (moved(): the
#      survivors read and fresh files written at once): the floor the
#      machine sets, writes to pages just made costing more than reads.
#
# With -p SPEEDS (pace mode) only this instead: an idle check at each
# sync_speed_max of SPEEDS (KiB/s per member, md's unit), RUNS rounds,
# each round streaming the members (fio, in parallel, as in (a)) and then
# checking at every speed in turn, so that each speed is measured beside
# the same streams.  Per speed, the median over the rounds of: the
# check's rate per member (MiB/s), its ratio to min(sync_speed_max, the
# members' stream per member) (goal 0.80) and its ratio to
# sync_speed_max (at most 1 and a small margin: md's cap).
#
# usage: tools/bench-resync.sh [-t SECONDS] [-l LEVELS] [-n MEMBERS] [-m MIB] [-r RUNS] [-o CSV] [-p SPEEDS]
#   -t SECONDS  each randread and randwrite run's measured time (default 5; a 1 s ramp)
#   -l LEVELS   "5 6" by default (1, 4, 5, 6, 10 work)
#   -n MEMBERS  members of every level (default: 6 for raid6, 4 for the others)
#   -m MIB      each member's size (default 512)
#   -r RUNS     rounds of each measure (default 3; the median counts)
#   -o CSV      where the CSV goes (default WORK/resync.csv)
#   -p SPEEDS   pace mode: sync_speed_max values in KiB/s, e.g. 50000,200000,800000,4000000
# Environment: RAIDFUSE (the binary), BENCH_DIR (default /dev/shm).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
jobdir=$here/tools/bench
. "$jobdir/conf.sh"
RAIDFUSE=${RAIDFUSE:-$here/build/raidfuse}
runtime=5 levels="5 6" mib=512 runs=3 csv='' nmembers='' speeds=''
SPEED_HIGH=2000000000           # KiB/s: no limit in practice
clk_tck=$(getconf CLK_TCK)
GOAL_RESYNC=0.80 GOAL_IOPS=0.80 GOAL_WIOPS=0.90 GOAL_WSLOW=2.0

usage() {
	sed -n 's/^# \{0,1\}//; /^usage:/,/^Environment/p' "$0" | sed '$d' >&2
	exit 2
}
while getopts "t:l:n:m:r:o:p:" o; do
	case $o in
	t) runtime=$OPTARG ;;
	l) levels=${OPTARG//,/ } ;;
	n) nmembers=$OPTARG ;;
	m) mib=$OPTARG ;;
	r) runs=$OPTARG ;;
	o) csv=$OPTARG ;;
	p) speeds=${OPTARG//,/ } ;;
	*) usage ;;
	esac
done
[ $OPTIND -gt $# ] || usage
for v in "$runtime" "$mib" "$runs" ${nmembers:+"$nmembers"} $speeds; do
	[[ $v =~ ^[1-9][0-9]*$ ]] || { echo "bench-resync.sh: -t, -n, -m, -r and -p want whole numbers, got '$v'" >&2; exit 2; }
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
# A FIFO nobody writes: nap()'s timeout.
mkfifo "$work/tick"
exec {tick}<>"$work/tick"
daemon=''
cleanup() {
	# a subshell killed early runs the EXIT trap it inherited: not ours to clean
	[ "$BASHPID" = "$$" ] || return 0
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

# nap: 2 ms, without a process.  The waits below poll the control files
# with shell builtins only: a fork and exec of cat and sleep every 10 ms
# took a tenth of a core from the walk being timed, on 2 cores.
nap() { read -r -t 0.002 -u "$tick" _ || true; }

# wait_idle: until md/sync_action reads idle.
wait_idle() {
	local a
	while read -r a <"$mnt/md/sync_action" && [ "$a" != idle ]; do nap; done
}

# stream NAME FIO-ARGS...: fio reading the member files; its MiB/s.  Its
# CPU time (user and system, every fio process) per GiB read goes to
# WORK/fio/stream-NAME.cpu, in ms.
stream() {
	local name=$1 out=$work/fio/stream-$1.json tf=$work/fio/stream-$1.time TIMEFORMAT='%3U %3S'
	shift
	{ time fio --output-format=json --output="$out" --rw=read --bs=1M --ioengine=psync --direct=1 \
		--time_based --runtime=2 --group_reporting "$@" >/dev/null 2>&1; } 2>"$tf"
	jq -r '.jobs[0].read.io_bytes' <(sed -n '/^{/,$p' "$out") |
		awk -v t="$(cat "$tf")" '{ split(t, c, " "); printf "%.0f\n", ($1 > 0 ? (c[1] + c[2]) * 1000 / ($1 / 1073741824) : 0) }' \
		>"$work/fio/stream-$name.cpu"
	jq -r '.jobs[0].read.bw / 1024' <(sed -n '/^{/,$p' "$out")
}

# daemon_cpu: the daemon's CPU time so far (user and system, every thread
# it had), in clock ticks.
daemon_cpu() {
	sed 's/.*) //' "/proc/$daemon/stat" | awk '{ print $12 + $13 }'
}

# randread TAG: the QD32 4k random read job on the array; its IOPS.
randread() {
	local out=$work/fio/randread-$1.json
	RF_BENCH_FILE=$mnt/array.img RF_BENCH_SIZE=$((array_mib < 512 ? array_mib : 512))M \
		RF_BENCH_RUNTIME=$runtime fio --output-format=json --output="$out" "$jobdir/randread-4k-qd32.fio" >/dev/null
	jq -r '.jobs[0].read.iops' <(sed -n '/^{/,$p' "$out")
}

# randwrite TAG: the QD32 4k random write job on the array; its IOPS and
# its slowest write in ms.
randwrite() {
	local out=$work/fio/randwrite-$1.json
	RF_BENCH_FILE=$mnt/array.img RF_BENCH_SIZE=$((array_mib < 512 ? array_mib : 512))M \
		RF_BENCH_RUNTIME=$runtime fio --output-format=json --output="$out" "$jobdir/randwrite-4k-qd32.fio" >/dev/null
	jq -r '"\(.jobs[0].write.iops) \(.jobs[0].write.clat_ns.max / 1000000)"' <(sed -n '/^{/,$p' "$out")
}

# walk ACTION: start ACTION with speed_max out of the way, wait for idle;
# its seconds.  The daemon's CPU time meanwhile per member GiB goes to
# WORK/fio/walk.cpu, in ms.
walk() {
	local t0 dt c0
	c0=$(daemon_cpu)
	t0=$(now)
	echo "$1" >"$mnt/md/sync_action"
	wait_idle
	dt=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }')
	awk -v a="$c0" -v b="$(daemon_cpu)" -v hz="$clk_tck" -v g="$(awk -v n="$NMEMBERS" -v m="$mib" 'BEGIN { print n * m / 1024 }')" \
		'BEGIN { printf "%.0f\n", (b - a) * 1000 / hz / g }' >"$work/fio/walk.cpu"
	echo "$dt"
}

# moved SLOT...: what moving a rebuild's bytes costs the machine itself:
# fio reading every other slot's file and writing a fresh file of zeros
# (made as a spare is, just before) for each SLOT, all at once, 1 MiB at a
# time; its seconds (the slower direction's runtime).  Writing pages just
# made costs more than reading ones in use (the kernel activates them).
moved() {
	local s i args=() out=$work/fio/moved.json
	for ((i = 0; i < NMEMBERS; i++)); do
		[[ " $* " == *" $i "* ]] && continue
		args+=("--name=r$i" "--rw=read" "--filename=${cur[i]}")
	done
	for s; do
		dd if=/dev/zero of="$work/data/moved-$s.img" bs=1M count="$mib" status=none
		args+=("--name=w$s" "--rw=write" "--filename=$work/data/moved-$s.img")
	done
	fio --output-format=json --output="$out" --bs=1M --ioengine=psync --direct=1 --size="${mib}M" \
		--group_reporting "${args[@]}" >/dev/null 2>&1
	for s; do rm -f "$work/data/moved-$s.img"; done
	jq -r '.jobs[0] | [.read.runtime, .write.runtime] | max / 1000' <(sed -n '/^{/,$p' "$out")
}

# rebuild TAG SLOT...: fail and remove the members in SLOTs, add a fresh
# spare of zeros for each (with sync_action frozen, so that they are
# rebuilt together), then let the rebuild go; its seconds in rb_s.  cur[]
# follows the slots' files (so: not in a subshell).
rebuild() {
	local tag=$1 s f nf t0
	shift
	echo frozen >"$mnt/md/sync_action"
	for s; do
		f=${cur[s]}
		echo faulty >"$mnt/md/dev-$(basename "$f")/state"
		echo remove >"$mnt/md/dev-$(basename "$f")/state"
		rm "$f"
		nf=$work/data/$t-$tag-$s.img
		dd if=/dev/zero of="$nf" bs=1M count="$mib" status=none
		echo "$nf" >"$mnt/md/new_dev"
		cur[s]=$nf
	done
	t0=$(now)
	echo idle >"$mnt/md/sync_action"
	local d a
	until read -r d <"$mnt/md/degraded" && read -r a <"$mnt/md/sync_action" && [ "$d" = 0 ] && [ "$a" = idle ]; do
		nap
	done
	rb_s=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }')
}

# median_row ROWS...: the row whose first field is the median.
median_row() {
	printf '%s\n' "$@" | sort -n | sed -n "$((($# + 1) / 2))p"
}

# pace: pace mode (-p) on the mounted array; rows to WORK/pace.txt.
pace() {
	local r sp p dt rate cap
	declare -A prow=()
	for ((r = 0; r < runs; r++)); do
		p=$(stream "pace$r" "${par_args[@]}")
		for sp in $speeds; do
			echo "$sp" >"$mnt/md/sync_speed_max"
			dt=$(walk check)
			# MiB/s per member: the check reads every member whole.
			rate=$(awk -v m="$mib" -v s="$dt" 'BEGIN { printf "%.1f", m / s }')
			cap=$(awk -v sp="$sp" -v p="$p" -v n="$NMEMBERS" 'BEGIN { c = sp / 1024; if (p / n < c) c = p / n; printf "%.1f", c }')
			prow[$sp]+="$(fdiv "$rate" "$cap") $rate $(awk -v p="$p" -v n="$NMEMBERS" 'BEGIN { printf "%.1f", p / n }') $dt"$'\n'
		done
	done
	for sp in $speeds; do
		local rows=()
		mapfile -t rows < <(printf '%s' "${prow[$sp]}")
		read -r ratio rate pm dt <<<"$(median_row "${rows[@]}")"
		echo "$t,$NMEMBERS,$mib,$sp,$pm,$rate,$dt,$ratio,$(fdiv "$rate" "$(awk -v sp="$sp" 'BEGIN { print sp / 1024 }')"),$GOAL_RESYNC" >>"$csv"
		printf '%-7s %11s %10.1f %10.1f %9s %8.3f %8s%s %8s\n' "$t" "$sp" "$pm" "$rate" \
			"$(awk -v sp="$sp" 'BEGIN { printf "%.1f", sp / 1024 }')" "$dt" "$ratio" \
			"$(awk -v r="$ratio" -v g="$GOAL_RESYNC" 'BEGIN { if (r + 0 < g + 0) printf "*"; else printf " " }')" \
			"$(fdiv "$rate" "$(awk -v sp="$sp" 'BEGIN { print sp / 1024 }')")" >>"$work/pace.txt"
	done
}

echo "bench-resync: members of $mib MiB on $(df --output=fstype "$work" | tail -1), levels: $levels; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
[ -z "$speeds" ] || echo "target,members,member_mib,speed_max_kib_s,stream_member_mib_s,check_member_mib_s,check_s,check_per_min,check_per_max,goal_ratio" >"$csv"
[ -n "$speeds" ] || echo "target,members,member_mib,stream_par_mib_s,stream_1t_mib_s,resync_s,resync_runs_s,resync_read_mib_s,resync_per_stream,resync_per_stream_1t,sync_speed_kib_s,randread_idle_iops,randread_resync_iops,iops_ratio,resync_fg_kib_s,sync_speed_min_kib_s,goal_resync_ratio,goal_iops_ratio,check_s,check_runs_s,check_read_mib_s,check_per_stream,randwrite_idle_iops,randwrite_check_iops,wiops_ratio,wslow_idle_ms,wslow_check_ms,wslow_ratio,goal_wiops_ratio,goal_wslow_ratio,loadavg,rebuild1_s,rebuild1_per_stream,rebuild2_s,rebuild2_per_stream,rebuild_stream_par_mib_s,stream_par_cpu_ms_gib,resync_cpu_ms_gib,resync_cpu_per_stream,check_stream_par_cpu_ms_gib,check_cpu_ms_gib,check_cpu_per_stream,rebuild1_moved_s,rebuild1_per_moved,rebuild2_moved_s,rebuild2_per_moved" >"$csv"
for l in $levels; do
	t=raid$l
	NMEMBERS=${nmembers:-$([ "$l" = 6 ] && echo 6 || echo 4)}
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
	if [ -n "$speeds" ]; then
		pace
		fusermount3 -u "$mnt"
		wait "$daemon" || echo "bench-resync.sh: the $t daemon exited with status $?" >&2
		daemon=''
		rm -f "${members[@]}"
		continue
	fi

	# (a) idle resync and check, speed_max out of the way.  Each round
	# streams the members (in parallel, then on one thread), then resyncs,
	# then checks: on this shared machine each is measured within seconds
	# of its stream.  The round with the median ratio to the parallel
	# stream counts, per action.
	echo "$SPEED_HIGH" >"$mnt/md/sync_speed_max"
	rows=() crows=() all='' call=''
	for ((r = 0; r < runs; r++)); do
		p=$(stream "par$r" "${par_args[@]}")
		pc=$(cat "$work/fio/stream-par$r.cpu")
		o=$(stream "1t$r" --name=all --filename="$one_file" --file_service_type=roundrobin)
		dt=$(walk resync)
		wc=$(cat "$work/fio/walk.cpu")
		all+="${all:+ }$dt"
		# Member bytes read per second: every member, whole (its data area).
		rate=$(awk -v n=$NMEMBERS -v m="$mib" -v s="$dt" 'BEGIN { printf "%.0f", n * m / s }')
		rows+=("$(fdiv "$rate" "$p") $p $o $dt $rate $pc $wc")
		dt=$(walk check)
		wc=$(cat "$work/fio/walk.cpu")
		call+="${call:+ }$dt"
		rate=$(awk -v n=$NMEMBERS -v m="$mib" -v s="$dt" 'BEGIN { printf "%.0f", n * m / s }')
		crows+=("$(fdiv "$rate" "$p") $p $dt $rate $pc $wc")
	done
	read -r _ par one dt_med read_mib par_cpu res_cpu <<<"$(median_row "${rows[@]}")"
	read -r _ cpar cdt_med cread_mib cpar_cpu chk_cpu <<<"$(median_row "${crows[@]}")"
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
	read -r _ busy_iops idle_iops <<<"$(median_row "${rows[@]}")"

	# (c) 4k random writes, idle and during a check, md's default limits,
	# rounds as in (b); the slowest write of each run beside its IOPS.
	read -r pw ps <<<"$(randwrite idle0)"
	rows=()
	for ((r = 0; r < runs; r++)); do
		echo check >"$mnt/md/sync_action"
		read -r bw bs <<<"$(randwrite "check$r")"
		echo idle >"$mnt/md/sync_action"
		read -r nw ns <<<"$(randwrite "idle$((r + 1))")"
		iw=$(awk -v a="$pw" -v b="$nw" 'BEGIN { printf "%.0f", (a + b) / 2 }')
		is=$(awk -v a="$ps" -v b="$ns" 'BEGIN { printf "%.1f", (a > b ? a : b) }')
		rows+=("$(fdiv "$bw" "$iw") $bw $iw $bs $is")
		pw=$nw ps=$ns
	done
	read -r _ wbusy_iops widle_iops wslow_busy wslow_idle <<<"$(median_row "${rows[@]}")"

	# (d) raid6: idle rebuild of one member, then of two at once.
	rb1=- rb1r=- rb2=- rb2r=- rbpar=- rb1f=- rb2f=-
	if [ "$l" = 6 ]; then
		echo "$SPEED_HIGH" >"$mnt/md/sync_speed_max"
		cur=("${members[@]}")
		rows=() crows=()
		for ((r = 0; r < runs; r++)); do
			args=()
			for ((i = 0; i < NMEMBERS; i++)); do args+=("--name=m$i" "--filename=${cur[i]}"); done
			p=$(stream "rpar$r" "${args[@]}")
			fl=$(moved 1)
			rebuild "r${r}a" 1
			dt=$rb_s
			rows+=("$(fdiv "$(awk -v n=$NMEMBERS -v m="$mib" -v s="$dt" 'BEGIN { printf "%.0f", n * m / s }')" "$p") $dt $p $fl")
			fl=$(moved 2 3)
			rebuild "r${r}b" 2 3
			dt=$rb_s
			crows+=("$(fdiv "$(awk -v n=$NMEMBERS -v m="$mib" -v s="$dt" 'BEGIN { printf "%.0f", n * m / s }')" "$p") $dt $p $fl")
		done
		read -r rb1r rb1 rbpar rb1f <<<"$(median_row "${rows[@]}")"
		read -r rb2r rb2 _ rb2f <<<"$(median_row "${crows[@]}")"
		members=("${cur[@]}")
	fi

	fusermount3 -u "$mnt"
	wait "$daemon" || echo "bench-resync.sh: the $t daemon exited with status $?" >&2
	daemon=''
	rm -f "${members[@]}"

	printf '%s,%d,%d,%.0f,%.0f,%s,%s,%s,%s,%s,%s,%.0f,%.0f,%s,%s,%s,%s,%s,%s,%s,%s,%s,%.0f,%.0f,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n' \
		"$t" $NMEMBERS "$mib" "$par" "$one" \
		"$dt_med" "$all" "$read_mib" "$(fdiv "$read_mib" "$par")" "$(fdiv "$read_mib" "$one")" "$speed" \
		"$idle_iops" "$busy_iops" "$(fdiv "$busy_iops" "$idle_iops")" "$fg_kib" "$speed_min" \
		"$GOAL_RESYNC" "$GOAL_IOPS" "$cdt_med" "$call" "$cread_mib" "$(fdiv "$cread_mib" "$cpar")" \
		"$widle_iops" "$wbusy_iops" "$(fdiv "$wbusy_iops" "$widle_iops")" "$wslow_idle" "$wslow_busy" \
		"$(fdiv "$wslow_busy" "$wslow_idle")" "$GOAL_WIOPS" "$GOAL_WSLOW" "$(cut -d' ' -f1 /proc/loadavg)" \
		"$rb1" "$rb1r" "$rb2" "$rb2r" "$rbpar" \
		"$par_cpu" "$res_cpu" "$(fdiv "$par_cpu" "$res_cpu")" "$cpar_cpu" "$chk_cpu" "$(fdiv "$cpar_cpu" "$chk_cpu")" \
		"$rb1f" "$(fdiv "$rb1f" "$rb1")" "$rb2f" "$(fdiv "$rb2f" "$rb2")" >>"$csv"
done

if [ -n "$speeds" ]; then
	echo
	echo "idle check at each sync_speed_max against the members' stream (fio, 1 MiB reads, in parallel),"
	echo "medians of $runs rounds; MiB/s per member; * marks a ratio below $GOAL_RESYNC"
	printf '%-7s %11s %10s %10s %9s %8s %9s %8s\n' target "speed_max" "stream" "check" "max" "check s" "/min()" "/max"
	cat "$work/pace.txt"
	echo "CSV: $csv"
	echo "fio JSON and daemon logs: $work"
	exit 0
fi
echo
echo "(a) idle resync and check (sync_speed_max $SPEED_HIGH) against streaming the members (fio, 1 MiB reads):"
echo "    MiB/s are member bytes read per second, all members together; * marks a ratio below its goal"
printf '%-7s %3s %10s %10s %9s %10s %8s %8s %11s %9s %10s %8s\n' target n "par MiB/s" "1t MiB/s" "resync s" "res MiB/s" \
	"/par" "/1t" "KiB/s/memb" "check s" "chk MiB/s" "/par"
awk -F, 'NR > 1 { printf "%-7s %3s %10.0f %10.0f %9.3f %10.0f %7s%s %8s %11s %9.3f %10.0f %7s%s\n", $1, $2, $4, $5, $6, $8, $9,
	($9 != "-" && $9 + 0 < $17 + 0) ? "*" : " ", $10, $11, $19, $21, $22,
	($22 != "-" && $22 + 0 < $17 + 0) ? "*" : " " }' "$csv"
echo "    CPU time per member GiB in the same rounds (the daemon's during the walk, fio's during the parallel stream):"
printf '%-7s %10s %10s %8s %10s %10s %8s\n' target "fio ms" "resync ms" "fio/res" "fio ms" "check ms" "fio/chk"
awk -F, 'NR > 1 { printf "%-7s %10s %10s %7s%s %10s %10s %7s%s\n", $1, $37, $38, $39,
	($39 != "-" && $39 + 0 < $17 + 0) ? "*" : " ", $40, $41, $42, ($42 != "-" && $42 + 0 < $17 + 0) ? "*" : " " }' "$csv"
echo
echo "(b) 4k random read QD32 (${runtime} s) idle and during a resync (md's default speed limits):"
printf '%-7s %10s %12s %7s %14s %14s\n' target "idle IOPS" "resync IOPS" ratio "resync KiB/s" "speed_min"
awk -F, 'NR > 1 { printf "%-7s %10.0f %12.0f %6s%s %14s %14s%s\n", $1, $12, $13, $14,
	($14 != "-" && $14 + 0 < $18 + 0) ? "*" : " ", $15, $16, ($15 + 0 < $16 + 0) ? " *" : "" }' "$csv"
echo
echo "(c) 4k random write QD32 (${runtime} s) idle and during a check (md's default speed limits):"
printf '%-7s %10s %11s %7s %14s %15s %7s\n' target "idle IOPS" "check IOPS" ratio "slowest idle" "slowest check" ratio
awk -F, 'NR > 1 { printf "%-7s %10.0f %11.0f %6s%s %11s ms %12s ms %6s%s\n", $1, $23, $24, $25,
	($25 != "-" && $25 + 0 < $29 + 0) ? "*" : " ", $26, $27, $28, ($28 != "-" && $28 + 0 > $30 + 0) ? "*" : " " }' "$csv"
echo
echo "(d) raid6 idle rebuild of one and of two members (sync_speed_max $SPEED_HIGH) against streaming the members:"
echo "    MiB/s are member bytes moved per second: the survivors read, the spares written"
echo "    moved s: fio reading the survivors and writing fresh files in their place, the same bytes at once;"
echo "    /moved: that time over the rebuild's (1.00: the rebuild moves the bytes as fast as fio does)"
printf '%-7s %10s %11s %8s %8s %7s %11s %8s %8s %7s\n' target "par MiB/s" "1 member s" "/par" "moved s" "/moved" \
	"2 members s" "/par" "moved s" "/moved"
awk -F, 'NR > 1 && $32 != "-" { printf "%-7s %10.0f %11.3f %7s%s %8.3f %7s %11.3f %7s%s %8.3f %7s\n", $1, $36, $32, $33,
	($33 + 0 < $17 + 0) ? "*" : " ", $43, $44, $34, $35, ($35 + 0 < $17 + 0) ? "*" : " ", $45, $46 }' "$csv"
echo
echo "load average at the end of each level: $(awk -F, 'NR > 1 { printf "%s %s  ", $1, $31 }' "$csv")"
echo
echo "CSV: $csv"
echo "fio JSON and daemon logs: $work"
