#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 21-resources: worker threads stay within their bound, and memory taken
# for a large shape goes back when the array shrinks to the defaults.
#
# raid5, 4 x 32 MiB, served with the defaults:
# 1. fio writes for a second (the FUSE threads, request pool and inline
#    workers every run has are then there); the daemon's RssAnon and thread
#    count are the start figures.
# 2. 64 groups of 64 threads (4096 threads) are refused: md/group_thread_cnt
#    64 after md/worker_groups 64 fails with EINVAL, the log names the
#    bound (4 per CPU, at least 8, at most 256), the thread count stays.
# 3. The largest shape the bound takes (as many groups as it allows, up to
#    64, times the threads that fit) with a 32768-head stripe cache, under
#    fio for 2 s: exactly the bound's worker threads run (counted by their
#    name, rf-gG.W: libfuse starts and ends its own threads with the load,
#    up to its max_threads, and io_uring's helpers come and go), RSS grows
#    by the heads used.
# 4. Back to the defaults (stripe_cache_size 256, group_thread_cnt 0, one
#    group per CPU): RssAnon is back within 4 MiB of the start figure (the
#    old groups' heap memory is given back, not kept at the peak; not in
#    an ASan build, whose allocator keeps freed memory on purpose).
# The figures are printed.  RssAnon, not VmRSS: members on tmpfs are mapped
# into the daemon, and the member pages fio touches count in VmRSS.
. "$(dirname "$0")/lib.sh"
requires fuse fio

MNT=$WORK/mnt
mk_conf "$WORK/r5.conf" level=5 members="$(members 4)" member_size=32M chunk_size=64K
create_array "$WORK/r5.conf"
start_array "$WORK/r5.conf" "$MNT"
IMG=$MNT/array.img

status() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$DAEMON_PID/status"; }
# The daemon's own threads (io_uring's iou-wrk-* helpers come and go
# with the IO, and are not the engine's to bound).
nthreads() { cat "/proc/$DAEMON_PID/task/"*/comm 2>/dev/null | grep -vc '^iou-'; }
# The worker groups' threads, which the bound is about.
nworkers() { cat "/proc/$DAEMON_PID/task/"*/comm 2>/dev/null | grep -c '^rf-g[0-9]*\.[0-9]*$' || :; }
load() {
	fio --name=w --filename="$IMG" --rw=randwrite --bs=4k --direct=1 --ioengine=io_uring --iodepth=32 \
		--size=90M --time_based --runtime="$1" >"$WORK/fio.out" 2>&1 || {
		cat "$WORK/fio.out" >&2
		fail "fio on $IMG failed"
	}
}
ncpu=$(nproc)
bound=$((4 * ncpu))
[ $bound -ge 8 ] || bound=8
[ $bound -le 256 ] || bound=256
defaults_groups=$((ncpu < 64 ? ncpu : 64))

# 1. the start figures
load 1
rss0=$(status RssAnon)
threads0=$(nthreads)
workers0=$(nworkers)
check '[ "$workers0" -eq 0 ]' "the defaults (group_thread_cnt 0) run no group worker threads ($workers0)"

# 2. 64 x 64 is refused, saying the bound
echo 64 >"$MNT/md/worker_groups"
expect_fail bash -c "echo 64 > '$MNT/md/group_thread_cnt'"
[[ $OUT == *"Invalid argument"* ]] || fail "64 x 64 threads: expected EINVAL, got: $OUT"
check '[ "$(cat "$MNT/md/group_thread_cnt")" = 0 ]' "group_thread_cnt unchanged after the refusal"
check 'grep -q "4096 worker threads: the bound is $bound " "$(daemon_log_file "$MNT")"' \
	"the log names the bound ($bound): $(tail -n 3 "$(daemon_log_file "$MNT")")"
workers=$(nworkers)
check '[ "$workers" -eq 0 ]' "no worker threads started for a refused shape ($workers)"

# 3. the largest shape the bound takes, with a large stripe cache, under load
groups=$((bound < 64 ? bound : 64))
per=$((bound / groups))
echo "$groups" >"$MNT/md/worker_groups"
echo "$per" >"$MNT/md/group_thread_cnt"
expect_fail bash -c "echo $((per + 1)) > '$MNT/md/group_thread_cnt'"
echo 32768 >"$MNT/md/stripe_cache_size"
load 2
rss_peak=$(status RssAnon)
threads_peak=$(nthreads)
workers_peak=$(nworkers)
check '[ "$workers_peak" -eq "$bound" ]' "$groups x $per worker threads run, no more ($workers_peak, bound $bound)"

# 4. back to the defaults: the memory comes back
echo 256 >"$MNT/md/stripe_cache_size"
echo 0 >"$MNT/md/group_thread_cnt"
echo "$defaults_groups" >"$MNT/md/worker_groups"
rss1=$(status RssAnon)
threads1=$(nthreads)
workers1=$(nworkers)
check '[ "$workers1" -eq 0 ]' "back to the defaults: the worker threads ended ($workers1)"
log "RssAnon start $rss0 kB ($threads0 threads); $groups x $per threads and 32768 stripe heads under fio:" \
	"$rss_peak kB ($threads_peak threads); back to the defaults: $rss1 kB ($threads1 threads)"
check '[ "$rss_peak" -gt "$((rss0 + 16384))" ]' "the large shape did take memory (else step 4 proves nothing)"
if grep -qa __asan_init "$RAIDFUSE"; then
	# ASan's allocator keeps freed memory in its quarantine: the figure
	# says nothing about glibc's heap there.
	log "4. RssAnon not checked: an ASan build"
else
	check '[ "$rss1" -le "$((rss0 + 4096))" ]' "RssAnon back near the start after the shrink ($rss0 -> $rss_peak -> $rss1 kB)"
fi
stop_array "$MNT"
