#!/usr/bin/env bash
# bench.sh - raidfuse beside fuse-ceiling, same run, same machine.
#
# fuse-ceiling (../shared/tools/fuse-ceiling) is a bare pread/pwrite FUSE
# passthrough: the fastest any FUSE-exported file gets here.  Each fio job
# (tools/bench/*.fio) runs on it and on raidfuse arrays with members on
# /dev/shm, and the table gives each figure divided by the ceiling's.
#
# fuse-ceiling.c asks for FUSE_USE_VERSION 34, where libfuse 3.14's
# fuse_session_loop_mt() reads its fuse_loop_config as the older struct:
# max_idle_threads becomes 1 and a FUSE thread is started and ended per
# request.  So the table also has "ceil312", the same source built for the
# 3.12 loop API (the one raidfuse uses), and ratios against both.
#
# usage: tools/bench.sh [-t SECONDS] [-l LEVELS] [-j JOBS] [-o CSV] [-c CHUNK] [-D]
#   -t SECONDS  each fio run's measured time (default 10; a 1 s ramp before it)
#   -l LEVELS   raid levels, "0 5 6 10" by default (raid6: 6 members, raid10:
#               near 2, the others 4; 1 and 4 work too)
#   -j JOBS     fio jobs by name (tools/bench/NAME.fio), default all
#   -o CSV      where the CSV goes (default RESULTS/bench.csv)
#   -c CHUNK    chunk size (default 512K, md's)
#   -D          also run each job on each array with a drain every second
#               (MOUNTPOINT/md/stripe_cache_size written once a second,
#               alternating DRAIN_VALUES, default "256 512") and compare
#               p99.9 latency with and without
# Environment: RAIDFUSE (the binary), CEILING_SRC, BENCH_DIR (where the work
# directory goes, default /dev/shm), BENCH_SIZE (MiB of each target that
# fio uses, default 512), DRAIN_VALUES.
#
# Targets run one after the other: the two ceilings first, then each array:
# create, mount (the stripe cache at its default), fill, every job, the
# daemon's VmRSS and VmHWM, the drain runs, unmount, delete.  Member and
# backing files are removed at the end; RESULTS (the work directory: the
# CSV, fio's JSON output, daemon logs) is kept and printed.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
jobdir=$here/tools/bench
. "$jobdir/conf.sh"
RAIDFUSE=${RAIDFUSE:-$here/build/raidfuse}
CEILING_SRC=${CEILING_SRC:-$here/../shared/tools/fuse-ceiling/fuse-ceiling.c}
size_mib=${BENCH_SIZE:-512}
read -r -a drain_values <<<"${DRAIN_VALUES:-256 512}"
runtime=10 levels="0 5 6 10" chunk=512K csv='' drain=0 jobs=()
all_jobs=()
for f in "$jobdir"/*.fio; do all_jobs+=("$(basename "$f" .fio)"); done

usage() {
	sed -n 's/^# \{0,1\}//; /^usage:/,/^Environment/p' "$0" | sed '$d' >&2
	exit 2
}
while getopts "t:l:j:o:c:D" o; do
	case $o in
	t) runtime=$OPTARG ;;
	l) levels=${OPTARG//,/ } ;;
	j) read -r -a jobs <<<"${OPTARG//,/ }" ;;
	o) csv=$OPTARG ;;
	c) chunk=$OPTARG ;;
	D) drain=1 ;;
	*) usage ;;
	esac
done
[ $OPTIND -gt $# ] || usage
[[ $runtime =~ ^[1-9][0-9]*$ ]] || { echo "bench.sh: -t wants whole seconds, got '$runtime'" >&2; exit 2; }
[ ${#jobs[@]} -gt 0 ] || jobs=("${all_jobs[@]}")
for j in "${jobs[@]}"; do
	[ -f "$jobdir/$j.fio" ] || { echo "bench.sh: no job '$j' (have: ${all_jobs[*]})" >&2; exit 2; }
done
for l in $levels; do
	case $l in 0 | 1 | 4 | 5 | 6 | 10) ;; *) echo "bench.sh: no raid level '$l'" >&2; exit 2 ;; esac
done
[ ${#drain_values[@]} = 2 ] || { echo "bench.sh: DRAIN_VALUES wants two values" >&2; exit 2; }
for t in fio jq fusermount3 pkg-config cc; do
	command -v $t >/dev/null || { echo "bench.sh: $t not found (tools/setup-deps.sh installs it)" >&2; exit 1; }
done
[ -x "$RAIDFUSE" ] || { echo "bench.sh: no raidfuse binary at $RAIDFUSE (make, or set RAIDFUSE)" >&2; exit 1; }

work=$(mktemp -d "${BENCH_DIR:-/dev/shm}/rf-bench-XXXXXX")
csv=${csv:-$work/bench.csv}
mkdir -p "$work/fio" "$work/data"
pids=()      # fuse-ceiling and raidfuse daemons, the drain loop: ours to stop
# forget PID: PID has been waited for; never signal it again (the number
# may be someone else's by now).
forget() {
	local p keep=()
	for p in "${pids[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
	pids=("${keep[@]}")
}
cleanup() {
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
	rm -rf "$work/data"
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

# fill FILE: write the whole fio region once, so reads hit allocated pages
# (and parity that matches).
fill() {
	dd if=/dev/zero of="$1" bs=1M count="$size_mib" oflag=direct conv=notrunc status=none
}

# Results: res[TARGET|JOB|DRAIN] = "iops bw_kib p99_us p999_us max_us rw bs qd"
declare -A res mem drains
# run TARGET FILE JOB DRAIN: one fio run (DRAIN 1: with drains going), parsed
# into res.
run() {
	local target=$1 file=$2 job=$3 d=$4 out
	out=$work/fio/$target.$job.json
	[ "$d" = 0 ] || out=$work/fio/$target.$job.drained.json
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
	awk -v t="$target" -v j="$job" -v d="$d" '{ printf "  %-8s %-18s %-7s %9.0f IOPS %8.1f MiB/s  p99 %8.0f  p99.9 %8.0f  max %8.0f us\n",
		t, j, d ? "drained" : "", $1, $2 / 1024, $3, $4, $5 }' <<<"${res["$target|$job|$d"]}"
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
	run "$1" "$2" "$3" 1 || rc=$?
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

echo "bench: ${runtime}s per run, ${size_mib} MiB of each target, jobs: ${jobs[*]}"
echo "bench: building fuse-ceiling (shipped, and ceil312: FUSE_USE_VERSION 312)"
cc -O2 -o "$work/data/ceil" "$CEILING_SRC" $(pkg-config --cflags --libs fuse3)
sed 's/^#define FUSE_USE_VERSION 34$/#define FUSE_USE_VERSION 312/' "$CEILING_SRC" >"$work/data/ceil312.c"
grep -q '^#define FUSE_USE_VERSION 312$' "$work/data/ceil312.c" ||
	{ echo "bench.sh: $CEILING_SRC no longer says FUSE_USE_VERSION 34; update the ceil312 build" >&2; exit 1; }
cc -O2 -o "$work/data/ceil312" "$work/data/ceil312.c" $(pkg-config --cflags --libs fuse3)

# Every target is mounted and filled first; then each job runs on one
# target after the other, so a job's figures and its ceilings' are taken
# within a minute of each other on this shared machine.
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
for c in ceil ceil312; do
	truncate -s "${size_mib}M" "$work/data/$c.img"
	serve $c "$work/mnt-$c/img" "$work/data/$c" "$work/data/$c.img" "$work/mnt-$c"
done

# level_members LEVEL: how many members, and how many carry data.
level_members() {
	case $1 in
	0) echo "4 4" ;;
	1) echo "4 1" ;;
	4 | 5) echo "4 3" ;;
	6) echo "6 4" ;;
	10) echo "4 2" ;;
	esac
}
chunk_kib=$(numfmt --from=iec "$chunk")
chunk_kib=$((chunk_kib / 1024))
for l in $levels; do
	t=raid$l
	read -r n data < <(level_members "$l")
	# Members just big enough for the fio region, in whole chunks.
	per=$(((size_mib * 1024 + data - 1) / data))
	per=$(((per + chunk_kib - 1) / chunk_kib * chunk_kib))
	mlist=()
	for ((i = 0; i < n; i++)); do mlist+=("$work/data/$t-$i.img"); done
	bench_array_conf "$work/$t.conf" "$l" "$chunk" "${per}K" "${mlist[@]}"
	"$RAIDFUSE" create "$work/$t.conf" >"$work/$t.log" 2>&1
	serve "$t" "$work/mnt-$t/array.img" "$RAIDFUSE" mount "$work/$t.conf" "$work/mnt-$t" -f
	echo "bench: $t: $n members of ${per} KiB, daemon pid ${pid_of[$t]}"
done

# -D drains arrays through md/stripe_cache_size, which (as in md) only
# arrays with a stripe cache have.
no_ctl=()
if [ $drain = 1 ]; then
	for t in "${targets[@]}"; do
		[[ $t == raid* ]] && [ ! -f "$work/mnt-$t/md/stripe_cache_size" ] || continue
		no_ctl+=("$t")
		if [ -d "$work/mnt-$t/md" ]; then
			echo "bench: -D: $t has no stripe cache (no md/stripe_cache_size): no drain runs"
		else
			echo "bench: -D: $t has no control files (no md/): this build cannot drain; no drain runs"
		fi
	done
fi
for j in "${jobs[@]}"; do
	for t in "${targets[@]}"; do
		run "$t" "${file_of[$t]}" "$j" 0
		[ $drain = 1 ] && [[ $t == raid* ]] && [[ " ${no_ctl[*]} " != *" $t "* ]] &&
			run_drained "$t" "${file_of[$t]}" "$j" "$work/mnt-$t"
	done
done

for t in "${targets[@]}"; do
	[[ $t == raid* ]] || continue
	mem[$t]=$(awk '/^VmRSS:/ { r = $2 } /^VmHWM:/ { h = $2 } END { print r, h }' "/proc/${pid_of[$t]}/status")
done
for t in "${targets[@]}"; do
	stop "$work/mnt-$t" "${pid_of[$t]}"
done
rm -rf "$work/data"

# goal TARGET JOB: the least IOPS ratio to the ceiling the project aims
# for on this machine (README, "Speed"), empty where it sets none.
goal() {
	case $1:$2 in
	raid0:rand*-4k-* | raid10:rand*-4k-* | raid5:randread-4k-* | raid6:randread-4k-*) echo 0.90 ;;
	raid5:randwrite-4k-*) echo 0.70 ;;
	raid6:randwrite-4k-*) echo 0.60 ;;
	raid5:write-1m-* | raid6:write-1m-*) echo 0.70 ;;
	esac
}

# ratio A B: A / B with two decimals, "-" when B is 0.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "-" }'; }

{
	echo "target,job,rw,bs,iodepth,drain,runtime_s,iops,bw_kib_s,clat_p99_us,clat_p999_us,clat_max_us,iops_per_ceil,iops_per_ceil312,p99_per_ceil,p99_per_ceil312,max_per_ceil,max_per_ceil312,vmrss_kib,vmhwm_kib,drains,drain_max_ms,goal_iops_ratio"
	for t in "${targets[@]}"; do
		for j in "${jobs[@]}"; do
			for d in 0 1; do
				[ -n "${res["$t|$j|$d"]:-}" ] || continue
				read -r i b p99 p999 mx rw bs qd <<<"${res["$t|$j|$d"]}"
				read -r ci _ cp _ cm _ <<<"${res["ceil|$j|0"]}"
				read -r c3i _ c3p _ c3m _ <<<"${res["ceil312|$j|0"]}"
				read -r rss hwm <<<"${mem[$t]:-}"
				dn='' dmax=''
				[ $d = 0 ] || read -r dn dmax _ <<<"${drains["$t|$j"]}"
				echo "$t,$j,$rw,$bs,$qd,$d,$runtime,$i,$b,$p99,$p999,$mx,$(ratio "$i" "$ci"),$(ratio "$i" "$c3i"),$(ratio "$p99" "$cp"),$(ratio "$p99" "$c3p"),$(ratio "$mx" "$cm"),$(ratio "$mx" "$c3m"),${rss:-},${hwm:-},$dn,$dmax,$(goal "$t" "$j")"
			done
		done
	done
} >"$csv"

echo
echo "IOPS and MiB/s: higher is better; p99 and max are completion latency (fio clat) in us,"
echo "lower is better.  /ceil and /c312: this figure divided by the same job's on fuse-ceiling"
echo "as shipped and built for FUSE_USE_VERSION 312.  goal: the least IOPS ratio aimed for;"
echo "a ratio below it is marked *."
printf '%-18s %-8s %9s %8s %8s %8s | %-13s %4s | %-11s | %-11s\n' "" "" "" "" "" "" "IOPS ratio" "" "p99 ratio" "max ratio"
printf '%-18s %-8s %9s %8s %8s %8s | %6s %6s %4s | %5s %5s | %5s %5s\n' job target IOPS MiB/s p99 max \
	/ceil /c312 goal /ceil /c312 /ceil /c312
# Grouped by job, the targets in the order they ran.
awk -F, 'function mark(r, g) { return sprintf("%5s%s", r, (g != "" && r != "-" && r + 0 < g + 0) ? "*" : " ") }
	NR > 1 && $6 == 0 {
	if (!($2 in rows)) order[++n] = $2
	rows[$2] = rows[$2] sprintf("%-18s %-8s %9.0f %8.1f %8.0f %8.0f | %s %s %4s | %5s %5s | %5s %5s\n",
		$2, $1, $8, $9 / 1024, $10, $12, mark($13, $23), mark($14, $23), $23, $15, $16, $17, $18) }
	END { for (i = 1; i <= n; i++) printf "%s%s", (i > 1 ? "\n" : ""), rows[order[i]] }' "$csv"

echo
if [ $drain = 1 ]; then
	echo "raidfuse daemon memory, after the runs above (the drain runs included: their stripe cache"
	echo "alternates between ${drain_values[*]} entries; the default is 256); goal: under 64 MiB:"
else
	echo "raidfuse daemon memory, default stripe cache, after the runs above; goal: under 64 MiB:"
fi
printf '%-8s %10s %10s\n' target "VmRSS MiB" "VmHWM MiB"
awk -F, 'NR > 1 && $19 != "" && !seen[$1]++ {
	printf "%-8s %10.1f %10.1f%s\n", $1, $19 / 1024, $20 / 1024, ($20 >= 65536 ? " *" : "") }' "$csv"

if [ $drain = 1 ]; then
	echo
	echo "drain every second (md/stripe_cache_size ${drain_values[*]}): p99.9 and max clat in us"
	printf '%-8s %-18s %10s %10s %7s %10s %10s %7s %6s %8s\n' target job "p99.9" "drained" ratio \
		"max" "drained" ratio drains "drain ms"
	awk -F, 'NR > 1 { k = $1 "," $2 }
		NR > 1 && $6 == 0 { p[k] = $11; m[k] = $12 }
		NR > 1 && $6 == 1 {
			printf "%-8s %-18s %10.0f %10.0f %7.2f %10.0f %10.0f %7.2f %6d %8d\n", $1, $2, p[k], $11,
				(p[k] > 0 ? $11 / p[k] : 0), m[k], $12, (m[k] > 0 ? $12 / m[k] : 0), $21, $22 }' "$csv"
	[ ${#no_ctl[@]} = 0 ] || echo "no drain runs (no md/stripe_cache_size): ${no_ctl[*]}"
	cat "$work"/fio/*.drains.err 2>/dev/null | sort | uniq -c | sed 's/^/drain loop: /' || true
fi
echo
echo "CSV: $csv"
echo "fio JSON and daemon logs: $work"
if [ $drain = 1 ] && ! awk -F, '$6 == 1 { found = 1 } END { exit !found }' "$csv"; then
	echo "bench.sh: -D: no array could be drained (see above)" >&2
	exit 1
fi
