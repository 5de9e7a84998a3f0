#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench.sh - raidfuse beside fuse-ceiling, interleaved in rounds, same run.
#
# fuse-ceiling (../shared/tools/fuse-ceiling) serves one file through FUSE
# in two modes, and both run here: "null" (-n: no backing IO, the FUSE
# transport alone: no FUSE-exported file can pass it) and "pass" (a bare
# pread/pwrite passthrough of a tmpfs file).  Each fio job (tools/bench/)
# runs on both and on raidfuse arrays with members on /dev/shm; every
# round runs each job on every target in turn, so a job's figures and its
# ceilings' are seconds apart.  The table gives each target's median over
# the rounds, and that divided by the median of null and of pass.
#
# With -u the FUSE transport of raidfuse's own joins in: each array is also
# served through FUSE over io_uring (raidN-uring beside raidN, which -u
# pins to libfuse), and raidfuse --null (reads zeros, drops writes: the
# transport alone, as fuse-ceiling -n) runs on both (rnull-fuse,
# rnull-uring), so the transports' own ceilings sit beside null and pass.
#
# With -d DIR the members are files on a disk: the table is the disk's.
# The targets are then "disk" (fio straight on four plain files in DIR:
# what the storage itself does), "pass-d" (fuse-ceiling -d: FUSE and one
# O_DIRECT file in DIR) and the arrays, members in DIR in the mode
# array.member_io picks there (auto: direct); each cell is also given as
# a ratio to disk, and for writes as eff = ratio x the member IOs one
# write needs (raid1/10: 2; 4 KiB: raid5 4, raid6 6; 1 MiB, full stripes:
# raid5 4/3, raid6 6/4), and how much the page cache (/proc/meminfo
# Cached) grew during the run (the whole machine's: noisy).  Every run
# records how busy the CPUs were and their time per IO (the CSV's
# busy_cpus and cpu_us_per_io; the disk table's cpus and us/IO).
#
# usage: tools/bench.sh [-t SECONDS] [-r ROUNDS] [-l LEVELS] [-j JOBS | -a] [-o CSV] [-c CHUNK] [-D] [-u] [-d DIR]
#   -t SECONDS  each fio run's measured time (default 2; a 1 s ramp before it)
#   -r ROUNDS   rounds (default 3; medians count)
#   -l LEVELS   raid levels, "0 1 5 6 10" by default (raid6: 6 members, raid1: 2,
#               raid10 near 2 and the others 4; 4 works too); LEVEL:N takes N
#               members (target raidLEVELxN), e.g. -l "5:4 5:8 5:16 5:32"
#               -c 64K with BENCH_SIZE=2048: how cost grows with the array
#   -j JOBS     fio jobs by name (tools/bench/NAME.fio); default the five of the
#               speed table: $default_jobs (about 5 minutes)
#   -a          every job in tools/bench/ (the full matrix, about 12 minutes)
#   -o CSV      where the CSV goes (default RESULTS/bench.csv)
#   -c CHUNK    chunk size (default 512K, md's)
#   -D          after the rounds, each job once more on each array with a
#               drain every second (MOUNTPOINT/md/stripe_cache_size written
#               once a second, alternating DRAIN_VALUES, default "256 512"),
#               p99.9 latency with and without
#   -u          the io_uring targets too (root: the fuse module's enable_uring is
#               turned on for the run and put back after)
#   -d DIR      members and backing files on the disk DIR is on (see above);
#               fuse-ceiling's null and pass are left out (with -u, raidfuse's
#               rnull-fuse and rnull-uring stand for the transports)
# Environment: RAIDFUSE (the binary), RAIDFUSE_BASE (another build: its arrays
# run beside, as raidN@base, so a change is measured against what it
# changed in the same run), CEILING_SRC, BENCH_DIR (where the work directory
# goes, default /dev/shm), BENCH_SIZE (MiB of each target that fio uses,
# default 512), DRAIN_VALUES.
#
# Targets are mounted and filled first, then the rounds run; the daemons'
# VmRSS, VmHWM, RssAnon and RssShmem are read at the end.  Member and backing files are
# removed; RESULTS (the work directory: the CSV, fio's JSON output, daemon
# logs) is kept and printed.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
jobdir=$here/tools/bench
. "$jobdir/conf.sh"
RAIDFUSE=${RAIDFUSE:-$here/build/raidfuse}
CEILING_SRC=${CEILING_SRC:-$here/../shared/tools/fuse-ceiling/fuse-ceiling.c}
size_mib=${BENCH_SIZE:-512}
read -r -a drain_values <<<"${DRAIN_VALUES:-256 512}"
runtime=2 rounds=3 levels="0 1 5 6 10" chunk=512K csv='' drain=0 jobs=() every=0 uring=0 diskdir=''
all_jobs=()
for f in "$jobdir"/*.fio; do all_jobs+=("$(basename "$f" .fio)"); done
# The default: the jobs the speed targets are stated in.
default_jobs="randread-4k-qd32 randwrite-4k-qd32 randwrite-4k-qd1 write-1m-qd8 read-1m-qd8"

usage() {
	sed -n 's/^# \{0,1\}//; /^usage:/,/^Environment/p' "$0" | sed '$d' |
		sed "s/\$default_jobs/$default_jobs/" >&2
	exit 2
}
while getopts "t:r:l:j:ao:c:Dud:" o; do
	case $o in
	t) runtime=$OPTARG ;;
	r) rounds=$OPTARG ;;
	l) levels=${OPTARG//,/ } ;;
	j) read -r -a jobs <<<"${OPTARG//,/ }" ;;
	a) every=1 ;;
	o) csv=$OPTARG ;;
	c) chunk=$OPTARG ;;
	D) drain=1 ;;
	u) uring=1 ;;
	d) diskdir=$OPTARG ;;
	*) usage ;;
	esac
done
[ $OPTIND -gt $# ] || usage
[[ $runtime =~ ^[1-9][0-9]*$ ]] || { echo "bench.sh: -t wants whole seconds, got '$runtime'" >&2; exit 2; }
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "bench.sh: -r wants a whole number of rounds, got '$rounds'" >&2; exit 2; }
[ $every = 0 ] || [ ${#jobs[@]} = 0 ] || { echo "bench.sh: -a and -j exclude each other" >&2; exit 2; }
[ $every = 0 ] || jobs=("${all_jobs[@]}")
[ ${#jobs[@]} -gt 0 ] || read -r -a jobs <<<"$default_jobs"
for j in "${jobs[@]}"; do
	[ -f "$jobdir/$j.fio" ] || { echo "bench.sh: no job '$j' (have: ${all_jobs[*]})" >&2; exit 2; }
done
for l in $levels; do
	case $l in 0 | 1 | 4 | 5 | 6 | 10 | [0-9]:[0-9]* | 10:[0-9]*) ;;
	*) echo "bench.sh: no raid level '$l' (LEVEL or LEVEL:MEMBERS)" >&2; exit 2 ;; esac
done
[ ${#drain_values[@]} = 2 ] || { echo "bench.sh: DRAIN_VALUES wants two values" >&2; exit 2; }
for t in fio jq fusermount3 pkg-config cc; do
	command -v $t >/dev/null || { echo "bench.sh: $t not found (tools/setup-deps.sh installs it)" >&2; exit 1; }
done
[ -x "$RAIDFUSE" ] || { echo "bench.sh: no raidfuse binary at $RAIDFUSE (make, or set RAIDFUSE)" >&2; exit 1; }
RAIDFUSE_BASE=${RAIDFUSE_BASE:-}
[ -z "$RAIDFUSE_BASE" ] || [ -x "$RAIDFUSE_BASE" ] ||
	{ echo "bench.sh: RAIDFUSE_BASE=$RAIDFUSE_BASE is not an executable" >&2; exit 1; }
have_ceiling=1
if [ ! -f "$CEILING_SRC" ] && [ -n "$diskdir" ]; then
	echo "bench.sh: no fuse-ceiling source at $CEILING_SRC (set CEILING_SRC): pass-d left out" >&2
	have_ceiling=0
fi
[ -f "$CEILING_SRC" ] || [ -n "$diskdir" ] || { echo "bench.sh: no fuse-ceiling source at $CEILING_SRC (set CEILING_SRC)" >&2; exit 1; }
if [ -n "$diskdir" ]; then
	[ -d "$diskdir" ] || { echo "bench.sh: -d: $diskdir is not a directory" >&2; exit 2; }
	case $(stat -f -c %T "$diskdir") in
	tmpfs | ramfs) echo "bench.sh: -d: $diskdir is in memory ($(stat -f -c %T "$diskdir")), not on a disk" >&2; exit 2 ;;
	esac
	[ $drain = 0 ] || { echo "bench.sh: -d does not take -D" >&2; exit 2; }
fi
uring_param=/sys/module/fuse/parameters/enable_uring
uring_old=''
if [ $uring = 1 ]; then
	[ -f $uring_param ] || { echo "bench.sh: -u: no $uring_param (FUSE over io_uring needs Linux 6.14+)" >&2; exit 1; }
	uring_old=$(cat $uring_param)
	if [ "$uring_old" != Y ]; then
		echo 1 2>/dev/null >$uring_param ||
			{ echo "bench.sh: -u: cannot turn on $uring_param (root does: echo 1 > $uring_param)" >&2; exit 1; }
	fi
fi

work=$(mktemp -d "${BENCH_DIR:-/dev/shm}/rf-bench-XXXXXX")
csv=${csv:-$work/bench.csv}
mkdir -p "$work/fio" "$work/data"
# Where members and backing files go: the work directory, or the disk.
datadir=$work/data
[ -z "$diskdir" ] || datadir=$(mktemp -d "$diskdir/rf-bench-data-XXXXXX")
pids=()      # fuse-ceiling and raidfuse daemons, the drain loop: ours to stop
# forget PID: PID has been waited for; never signal it again (the number
# may be someone else's by now).
forget() {
	local p keep=()
	for p in "${pids[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
	pids=("${keep[@]}")
}
cleanup() {
	# a subshell killed early runs the EXIT trap it inherited: not ours to clean
	[ "$BASHPID" = "$$" ] || return 0
	local m p
	set +e
	for m in "$work"/mnt-*; do
		[ -d "$m" ] || continue
		mountpoint -q "$m" && fusermount3 -uz "$m"
		rmdir "$m"
	done
	touch "$work/stop-drain"
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$work/data" "$datadir"
	[ "$uring_old" != N ] || echo 0 >$uring_param
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# wait_file PATH PID: until PATH exists (10 s), or fail if PID ended.
wait_file() {
	local i
	for ((i = 0; i < 200; i++)); do
		[ -e "$1" ] && return 0
		kill -0 "$2" 2>/dev/null || { echo "bench.sh: daemon for $1 exited" >&2; return 1; }
		sleep 0.05
	done
	echo "bench.sh: $1 did not appear in 10 s" >&2
	return 1
}

# stop MNT PID: unmount and wait for the daemon to end.
stop() {
	fusermount3 -u "$1"
	wait "$2" || echo "bench.sh: the daemon for $1 exited with status $?" >&2
	forget "$2"
	rmdir "$1"
}

# fill FILE[:FILE...]: write the whole fio region once, so reads hit
# allocated pages (and parity that matches); fio spreads it over the files.
fill() {
	local f files
	IFS=: read -r -a files <<<"$1"
	for f in "${files[@]}"; do
		dd if=/dev/zero of="$f" bs=1M count=$((size_mib / ${#files[@]})) oflag=direct conv=notrunc status=none
	done
}
# cached_kib: the page cache now (/proc/meminfo Cached), KiB.
cached_kib() { awk '/^Cached:/ { print $2 }' /proc/meminfo; }

# Results: res[TARGET|JOB|RUN] = "iops bw_kib p99_us p999_us max_us rw bs qd
# cached_kib busy_cpus", RUN the round (1..) or D (with drains going).
declare -A res mem drains
# cpu_ticks: the machine's CPU time so far, "total steal idle" in clock
# ticks (/proc/stat: steal is time the hypervisor gave this machine's CPUs
# to others; every target stalls alike then, whatever it serves; idle
# counts iowait too).
cpu_ticks() {
	awk '/^cpu / { t = 0; for (i = 2; i <= NF; i++) t += $i; print t, $9, $5 + $6; exit }' /proc/stat
}
ncpu=$(getconf _NPROCESSORS_ONLN)
steal_runs=0 steal_sum=0 steal_max=0
# run TARGET FILE JOB RUN: one fio run, parsed into res.
run() {
	local target=$1 file=$2 job=$3 d=$4 out t0 s0 i0 t1 s1 i1 steal c0
	out=$work/fio/$target.$job.$d.json
	c0=$(cached_kib)
	read -r t0 s0 i0 < <(cpu_ticks)
	RF_BENCH_FILE=$file RF_BENCH_SIZE=${size_mib}M RF_BENCH_RUNTIME=$runtime \
		fio --output-format=json --output="$out" "$jobdir/$job.fio" ||
		{ echo "bench.sh: fio $job on $target failed; see $out" >&2; return 1; }
	# fio may put warnings before the JSON.
	res["$target|$job|$d"]=$(jq -r '.jobs[0] as $j
		| if $j.error != 0 then error("fio error \($j.error)") else . end
		| ($j["job options"]) as $o
		| (if $j.write.io_bytes > 0 then $j.write else $j.read end) as $d
		| [$d.iops, $d.bw, ($d.clat_ns.percentile["99.000000"] // 0) / 1000,
		   ($d.clat_ns.percentile["99.900000"] // 0) / 1000, $d.clat_ns.max / 1000,
		   $o.rw, $o.bs, $o.iodepth] | map(tostring) | join(" ")' <(sed -n '/^{/,$p' "$out"))
	res["$target|$job|$d"]+=" $(($(cached_kib) - c0))"
	read -r t1 s1 i1 < <(cpu_ticks)
	# The CPUs busy on average during the run, every process's time (fio's,
	# the server's, the kernel's for both and for the disk): with the CPUs
	# all busy the run is bound by them, not by the disk.
	res["$target|$job|$d"]+=" $(awk -v t="$((t1 - t0))" -v i="$((i1 - i0))" -v n="$ncpu" \
		'BEGIN { printf "%.2f", (t > 0 ? (t - i) / t * n : 0) }')"
	# Steal in tenths of a percent of the run's CPU time.
	steal=$(((s1 - s0) * 1000 / (t1 > t0 ? t1 - t0 : 1)))
	steal_runs=$((steal_runs + 1)) steal_sum=$((steal_sum + steal))
	[ "$steal" -le "$steal_max" ] || steal_max=$steal
	awk -v t="$target" -v j="$job" -v d="$d" -v st="$steal" '{ printf "  %-8s %-18s %-7s %9.0f IOPS %8.1f MiB/s  p99 %8.0f  p99.9 %8.0f  max %8.0f us  steal %4.1f%%  cached %+7.1f MiB  cpus %.2f\n",
		t, j, d == "D" ? "drained" : "r" d, $1, $2 / 1024, $3, $4, $5, st / 10, $9 / 1024, $10 }' <<<"${res["$target|$job|$d"]}"
}

# drain_loop FILE LOG STOP: until STOP exists, write FILE once a second,
# alternating the two values; each write's duration in ms (how long the
# drain held the writer) and status go to LOG.
drain_loop() {
	local file=$1 logf=$2 stopf=$3 i=0 t0 rc
	until [ -e "$stopf" ]; do
		t0=${EPOCHREALTIME/./}
		rc=0
		echo "${drain_values[i % 2]}" >"$file" || rc=$?
		echo "$(((${EPOCHREALTIME/./} - t0) / 1000)) $rc" >>"$logf"
		i=$((i + 1))
		sleep 1
	done
}

# run_drained TARGET FILE JOB MNT: run with drain_loop going beside it,
# then put the stripe cache back to its default.
run_drained() {
	local logf=$work/fio/$1.$3.drains p rc=0
	: >"$logf"
	rm -f "$work/stop-drain"
	drain_loop "$4/md/stripe_cache_size" "$logf" "$work/stop-drain" 2>>"$logf.err" &
	p=$!
	pids+=("$p")
	run "$1" "$2" "$3" D || rc=$?
	touch "$work/stop-drain"
	wait "$p" || true
	forget "$p"
	echo "${drain_values[0]}" >"$4/md/stripe_cache_size"
	drains["$1|$3"]=$(awk '{ n++; if ($1 > m) m = $1; if ($2 != 0) bad++ }
		END { printf "%d %d %d", n, m, bad }' "$logf")
	read -r n m bad <<<"${drains["$1|$3"]}"
	printf '  %-8s %-18s %-7s %d drains, the slowest took %d ms, %d failed\n' "" "" "" "$n" "$m" "$bad"
	return $rc
}

echo "bench: ${rounds} rounds of ${runtime}s per run, ${size_mib} MiB of each target, jobs: ${jobs[*]}"
[ $have_ceiling = 0 ] || cc -O2 -o "$work/ceiling" "$CEILING_SRC" $(pkg-config --cflags --libs fuse3)

targets=()
declare -A file_of pid_of
# serve TARGET FILE CMD...: start CMD (a FUSE server that stays in the
# foreground) in the background, wait for FILE, fill it.
serve() {
	local t=$1 file=$2
	shift 2
	mkdir -p "$work/mnt-$t"
	"$@" >>"$work/$t.log" 2>&1 &
	pid_of[$t]=$!
	pids+=("$!")
	wait_file "$file" "${pid_of[$t]}"
	fill "$file"
	file_of[$t]=$file
	targets+=("$t")
}
# level_members LEVEL[:N]: how many members, and how many carry data.
level_members() {
	local n=${1#*:}
	if [ "$n" != "$1" ]; then
		case ${1%%:*} in
		0) echo "$n $n" ;;
		1) echo "$n 1" ;;
		4 | 5) echo "$n $((n - 1))" ;;
		6) echo "$n $((n - 2))" ;;
		10) echo "$n $((n / 2))" ;;
		esac
		return
	fi
	case $1 in
	0) echo "4 4" ;;
	1) echo "2 1" ;;
	4 | 5) echo "4 3" ;;
	6) echo "6 4" ;;
	10) echo "4 2" ;;
	esac
}
chunk_kib=$(numfmt --from=iec "$chunk")
chunk_kib=$((chunk_kib / 1024))
# Every member is filled before the rounds: refuse to start without room
# for them and the ceilings' file (a full tmpfs ends in OOM kills).
need_kib=$((size_mib * 1024)) nbuilds=1
[ -z "$RAIDFUSE_BASE" ] || nbuilds=2
for l in $levels; do
	read -r n data < <(level_members "$l")
	per=$(((size_mib * 1024 + data - 1) / data))
	need_kib=$((need_kib + nbuilds * n * ((per + chunk_kib - 1) / chunk_kib * chunk_kib)))
done
[ -z "$diskdir" ] || need_kib=$((need_kib + size_mib * 1024))
avail_kib=$(df --output=avail -k "$datadir" | tail -n 1)
if [ "$need_kib" -gt "$avail_kib" ]; then
	echo "bench.sh: the targets need $((need_kib / 1024)) MiB in $data, which has $((avail_kib / 1024)) MiB free" \
		"(old rf-bench-* directories there? BENCH_SIZE smaller, fewer levels)" >&2
	exit 1
fi
truncate -s "${size_mib}M" "$datadir/ceiling.img"
if [ -z "$diskdir" ]; then
	serve null "$work/mnt-null/img" "$work/ceiling" "$datadir/ceiling.img" "$work/mnt-null" -n
	serve pass "$work/mnt-pass/img" "$work/ceiling" "$datadir/ceiling.img" "$work/mnt-pass"
else
	# The storage's own limit: fio on four plain files beside the members.
	disk_files=''
	for i in 0 1 2 3; do
		truncate -s $((size_mib / 4))M "$datadir/disk-$i.img"
		disk_files+="${disk_files:+:}$datadir/disk-$i.img"
	done
	fill "$disk_files"
	file_of[disk]=$disk_files
	targets+=(disk)
	[ $have_ceiling = 0 ] ||
		serve pass-d "$work/mnt-pass-d/img" "$work/ceiling" "$datadir/ceiling.img" "$work/mnt-pass-d" -d
fi

builds=("$RAIDFUSE")
[ -z "$RAIDFUSE_BASE" ] || builds+=("$RAIDFUSE_BASE")
# serve_array TARGET LEVEL BINARY [MOUNT OPTIONS...]: a fresh array served.
serve_array() {
	local t=$1 l=$2 b=$3 n data per mlist i
	shift 3
	read -r n data < <(level_members "$l")
	# Members just big enough for the fio region, in whole chunks.
	per=$(((size_mib * 1024 + data - 1) / data))
	per=$(((per + chunk_kib - 1) / chunk_kib * chunk_kib))
	mlist=()
	for ((i = 0; i < n; i++)); do mlist+=("$datadir/$t-$i.img"); done
	bench_array_conf "$work/$t.conf" "${l%%:*}" "$chunk" "${per}K" "${mlist[@]}"
	"$b" create "$work/$t.conf" >"$work/$t.log" 2>&1
	serve "$t" "$work/mnt-$t/array.img" "$b" mount "$work/$t.conf" "$work/mnt-$t" -f "$@"
	echo "bench: $t: $n members of ${per} KiB, daemon pid ${pid_of[$t]}"
}
if [ $uring = 1 ]; then
	# --null never touches its members: raid0 for the size alone.
	serve_array rnull-fuse 0 "$RAIDFUSE" --null -o io_uring=off
	serve_array rnull-uring 0 "$RAIDFUSE" --null -o io_uring=on
fi
for l in $levels; do
	for b in "${builds[@]}"; do
		t=raid${l/:/x}
		[ "$b" = "$RAIDFUSE" ] || t=$t@base
		if [ $uring = 1 ] && [ "$b" = "$RAIDFUSE" ]; then
			serve_array "$t" "$l" "$b" -o io_uring=off
			serve_array "$t-uring" "$l" "$b" -o io_uring=on
		else
			serve_array "$t" "$l" "$b"
		fi
	done
done

# -D drains arrays through md/stripe_cache_size, which (as in md) only
# arrays with a stripe cache have.
no_ctl=()
if [ $drain = 1 ]; then
	for t in "${targets[@]}"; do
		[[ $t == raid* ]] && [ ! -f "$work/mnt-$t/md/stripe_cache_size" ] || continue
		no_ctl+=("$t")
		echo "bench: -D: $t has no stripe cache (no md/stripe_cache_size): no drain runs"
	done
fi
for ((r = 1; r <= rounds; r++)); do
	echo "bench: round $r of $rounds"
	for j in "${jobs[@]}"; do
		for t in "${targets[@]}"; do
			run "$t" "${file_of[$t]}" "$j" $r
		done
	done
done
if [ $drain = 1 ]; then
	for j in "${jobs[@]}"; do
		for t in "${targets[@]}"; do
			[[ $t == raid* ]] && [[ " ${no_ctl[*]} " != *" $t "* ]] || continue
			run_drained "$t" "${file_of[$t]}" "$j" "$work/mnt-$t"
		done
	done
fi

for t in "${targets[@]}"; do
	[ -n "${pid_of[$t]:-}" ] || continue
	mem[$t]=$(awk '/^VmRSS:/ { r = $2 } /^VmHWM:/ { h = $2 } /^RssAnon:/ { a = $2 } /^RssShmem:/ { m = $2 }
		END { print r, h, a, m }' "/proc/${pid_of[$t]}/status")
done
for t in "${targets[@]}"; do
	[ -z "${pid_of[$t]:-}" ] || stop "$work/mnt-$t" "${pid_of[$t]}"
done
rm -rf "$work/data" "$datadir"

# median TARGET JOB FIELD: the median over the rounds of one figure (field
# 1 iops, 2 bw, 3 p99, 4 p99.9, 5 max), and the spread: (max - min) / median.
median() {
	local r
	for ((r = 1; r <= rounds; r++)); do
		awk -v f="$3" '{ print $f }' <<<"${res["$1|$2|$r"]:-}"
	done | sort -g | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
		printf "%s %.3f\n", m, (m > 0 ? (v[NR] - v[1]) / m : 0) }'
}
# ratio A B: A / B with two decimals, "-" when B is 0.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "-" }'; }
# writes_per TARGET RW BS: member IOs one write of the job needs (reads: 1).
writes_per() {
	local l=${1%%@*}
	l=${l%%-uring}
	l=${l%%x*}
	[[ $2 == *write* ]] || { echo 1; return; }
	case $l in
	raid1 | raid10) echo 2 ;;
	raid4 | raid5) [ "$3" = 4k ] && echo 4 || echo 1.333 ;;
	raid6) [ "$3" = 4k ] && echo 6 || echo 1.5 ;;
	*) echo 1 ;;
	esac
}
# median_cached TARGET JOB: the median over the rounds of the Cached growth, KiB.
median_cached() {
	local r
	for ((r = 1; r <= rounds; r++)); do
		awk '{ print $9 }' <<<"${res["$1|$2|$r"]}"
	done | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

{
	echo "target,job,rw,bs,iodepth,rounds,runtime_s,iops,iops_spread,bw_kib_s,clat_p99_us,clat_p999_us,clat_max_us,iops_per_null,iops_per_pass,p999_per_pass,vmrss_kib,vmhwm_kib,drained_p999_us,drains,drain_max_ms,rssanon_kib,rssshmem_kib,iops_per_disk,eff,cached_growth_kib,busy_cpus,cpu_us_per_io"
	for t in "${targets[@]}"; do
		for j in "${jobs[@]}"; do
			read -r _ _ _ _ _ rw bs qd _ <<<"${res["$t|$j|1"]}"
			read -r i sp < <(median "$t" "$j" 1)
			read -r b _ < <(median "$t" "$j" 2)
			read -r p99 _ < <(median "$t" "$j" 3)
			read -r p999 _ < <(median "$t" "$j" 4)
			read -r mx _ < <(median "$t" "$j" 5)
			read -r cpus _ < <(median "$t" "$j" 10)
			cpuio=$(awk -v c="$cpus" -v i="$i" 'BEGIN { if (i > 0) printf "%.1f", c * 1e6 / i; else printf "-" }')
			read -r ni _ < <(median null "$j" 1)
			read -r pi _ < <(median pass "$j" 1)
			read -r pp _ < <(median pass "$j" 4)
			read -r rss hwm anon shmem <<<"${mem[$t]:-}"
			dp='' dn='' dmax=''
			if [ -n "${res["$t|$j|D"]:-}" ]; then
				read -r _ _ _ dp _ <<<"${res["$t|$j|D"]}"
				read -r dn dmax _ <<<"${drains["$t|$j"]}"
			fi
			di='' rd='' eff=''
			if [ -n "$diskdir" ]; then
				read -r di _ < <(median disk "$j" 1)
				rd=$(ratio "$i" "$di")
				[ "$rd" = - ] || eff=$(awk -v r="$rd" -v w="$(writes_per "$t" "$rw" "$bs")" 'BEGIN { printf "%.2f", r * w }')
			fi
			echo "$t,$j,$rw,$bs,$qd,$rounds,$runtime,$i,$sp,$b,$p99,$p999,$mx,$(ratio "$i" "$ni"),$(ratio "$i" "$pi"),$(ratio "$p999" "$pp"),${rss:-},${hwm:-},$dp,$dn,$dmax,${anon:-},${shmem:-},$rd,$eff,$(median_cached "$t" "$j"),$cpus,$cpuio"
		done
	done
} >"$csv"

if [ -n "$diskdir" ]; then
	echo
	echo "Members on $(df --output=source "$diskdir" | tail -n 1) ($(stat -f -c %T "$diskdir")) in $diskdir."
	echo "Medians of $rounds interleaved rounds.  /disk: IOPS divided by the same job's straight on four"
	echo "plain files there (disk); eff: that x the member IOs one write needs (what the array asks of"
	echo "the disk; 1.00 = the disk's rate); cached: /proc/meminfo Cached growth during the run"
	echo "(the whole machine's, MiB); cpus: the machine's CPUs busy on average during the run (of"
	echo "$ncpu; at $ncpu the run is bound by them), us/IO: their time per IO (fio's, the server's, the"
	echo "kernel's), so ${ncpu}000000 / us/IO is the most IOPS these CPUs give at that cost."
	printf '%-18s %-11s %9s %8s %8s %8s %6s | %5s %5s | %8s | %5s %6s\n' job target IOPS MiB/s p99 p99.9 spread /disk eff cached cpus us/IO
	awk -F, 'NR > 1 {
		if (!($2 in rows)) order[++n] = $2
		rows[$2] = rows[$2] sprintf("%-18s %-11s %9.0f %8.1f %8.0f %8.0f %6.2f | %5s %5s | %8.1f | %5s %6s\n",
			$2, $1, $8, $10 / 1024, $11, $12, $9, $24, ($25 == "" ? "-" : $25), $26 / 1024, $27, $28) }
		END { for (i = 1; i <= n; i++) printf "%s%s", (i > 1 ? "\n" : ""), rows[order[i]] }' "$csv"
fi
echo
echo "Medians of $rounds rounds.  IOPS, MiB/s: higher is better; p99, p99.9: completion latency"
echo "(fio clat) in us.  /null, /pass: IOPS divided by the same job's on fuse-ceiling -n (the"
echo "FUSE transport alone) and on its passthrough; p99.9/pass likewise for latency (lower is"
echo "better).  spread: (slowest - fastest round) / median IOPS."
printf '%-18s %-11s %9s %8s %8s %8s %6s | %5s %5s | %6s
' job target IOPS MiB/s p99 p99.9 spread /null /pass "p99.9/p"
awk -F, 'NR > 1 {
	if (!($2 in rows)) order[++n] = $2
	rows[$2] = rows[$2] sprintf("%-18s %-11s %9.0f %8.1f %8.0f %8.0f %6.2f | %5s %5s | %6s\n",
		$2, $1, $8, $10 / 1024, $11, $12, $9, $14, $15, $16) }
	END { for (i = 1; i <= n; i++) printf "%s%s", (i > 1 ? "\n" : ""), rows[order[i]] }' "$csv"

echo
# Tails (p99.9, max) are the machine's as much as the targets': a stall
# of the hypervisor holds every request in flight, and hits a larger share
# of a slower target's requests.
awk -v n="$steal_runs" -v s="$steal_sum" -v m="$steal_max" 'BEGIN {
	printf "steal (CPU time the hypervisor gave to others) during the fio runs: %.1f%% on average, %.1f%% in the worst run\n",
		n ? s / n / 10 : 0, m / 10 }'

echo
note=''
[ $drain = 0 ] || note="; the -D runs alternate ${drain_values[*]}"
echo "daemon memory after the runs (the stripe cache at its default$note):"
echo "(RssAnon: the daemon's own memory at the end; RssShmem: tmpfs pages mapped, the members'"
echo "page cache that reads are answered from, shared: counted in VmRSS and VmHWM, not added)"
printf '%-11s %10s %10s %11s %12s\n' target "VmRSS MiB" "VmHWM MiB" "RssAnon MiB" "RssShmem MiB"
awk -F, 'NR > 1 && $17 != "" && !seen[$1]++ { printf "%-11s %10.1f %10.1f %11.1f %12.1f\n", $1, $17 / 1024, $18 / 1024,
	$22 / 1024, $23 / 1024 }' "$csv"

if [ $drain = 1 ]; then
	echo
	echo "drain every second (md/stripe_cache_size ${drain_values[*]}): p99.9 clat in us"
	printf '%-11s %-18s %10s %10s %7s %6s %8s\n' target job "p99.9" "drained" ratio drains "drain ms"
	awk -F, 'NR > 1 && $19 != "" { printf "%-11s %-18s %10.0f %10.0f %7.2f %6d %8d\n", $1, $2, $12, $19,
		($12 > 0 ? $19 / $12 : 0), $20, $21 }' "$csv"
	[ ${#no_ctl[@]} = 0 ] || echo "no drain runs (no md/stripe_cache_size): ${no_ctl[*]}"
	cat "$work"/fio/*.drains.err 2>/dev/null | sort | uniq -c | sed 's/^/drain loop: /' || true
fi
# The plot (gnuplot, if there): one panel per job, a bar per target, its
# IOPS ratio to null (with -d: to disk), each target in a colour of its
# own throughout (32 distinct ones), and the ratio 1 drawn.
png=${csv%.csv}.png
if command -v gnuplot >/dev/null; then
	if [ -n "$diskdir" ]; then col=24 base=disk; else col=14 base=null; fi
	awk -F, -v col=$col -v base=$base 'NR > 1 && $1 != base { if (!($1 in ti)) { ti[$1] = ++nt; tn[nt] = $1 }
			if (!($2 in ji)) { ji[$2] = ++nj; jn[nj] = $2 } v[ji[$2], ti[$1]] = $col }
		END { for (j = 1; j <= nj; j++) for (t = 1; t <= nt; t++)
			printf "%s %d %s %s\n", jn[j], t, tn[t], ((j, t) in v && v[j, t] != "-" && v[j, t] != "") ? v[j, t] : "NaN" }' \
		"$csv" >"$work/plot.dat"
	njob=$(awk '{ print $1 }' "$work/plot.dat" | sort -u | wc -l)
	ntgt=$(awk '{ print $2 }' "$work/plot.dat" | sort -un | tail -n 1)
	{
		echo "set terminal pngcairo size $((360 * (njob < 3 ? njob : 3))),$((320 * ((njob + 2) / 3) + 40)) noenhanced font ',9'"
		echo "set output '$png'"
		# 32 colours, no two alike
		i=0
		for c in '#1f77b4' '#ff7f0e' '#2ca02c' '#d62728' '#9467bd' '#8c564b' '#e377c2' '#7f7f7f' \
			'#bcbd22' '#17becf' '#393b79' '#ad494a' '#637939' '#843c39' '#7b4173' '#3182bd' \
			'#e6550d' '#31a354' '#756bb1' '#636363' '#fdae6b' '#9edae5' '#c49c94' '#000000' \
			'#ffd700' '#00ff7f' '#ff1493' '#00bfff' '#8b0000' '#556b2f' '#ff00ff' '#a0522d'; do
			i=$((i + 1))
			echo "set linetype $i lc rgb '$c'"
		done
		echo "set multiplot layout $(((njob + 2) / 3)),$((njob < 3 ? njob : 3)) title 'raidfuse: IOPS / $base (median of $rounds rounds of ${runtime}s)'"
		echo "set style fill solid 0.85 border -1"
		echo "set boxwidth 0.8"
		echo "set yrange [0:*]"
		echo "set grid ytics"
		echo "set xtics rotate by -45 font ',8'"
		echo "set xrange [0:$((ntgt + 1))]"
		echo "unset key"
		for j in $(awk '{ print $1 }' "$work/plot.dat" | awk '!s[$0]++'); do
			echo "set title '$j'"
			echo "plot '$work/plot.dat' using (\$2):(strcol(1) eq '$j' ? \$4 : NaN):(0.8):(1 + (int(\$2) - 1) % 32):xtic(3) with boxes lc variable, 1 with lines lw 2 dt 2 lc rgb '#000000'"
		done
		echo "unset multiplot"
	} >"$work/plot.gp"
	gnuplot "$work/plot.gp" || echo "bench.sh: gnuplot failed; no plot" >&2
fi

echo
echo "CSV: $csv"
[ -f "$png" ] && echo "plot: $png"
echo "fio JSON and daemon logs: $work"
