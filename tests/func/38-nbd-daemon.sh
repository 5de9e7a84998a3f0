#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 38-nbd-daemon: NBD members under a daemon started the way users start it
# (raidfuse mount without -f), and NBD servers killed under writes.
#
# 1. raid5 over three nbdkit servers, mounted without -f: fio writes and
#    verifies.  The bug: the command forked (libfuse's fuse_daemonize) after
#    it had opened the members, so the daemon had no NBD poller threads;
#    the first superblock update waited forever for a reply nothing read,
#    holding the device lock, and the writer hung in D state (expected:
#    fio done in seconds; buggy: no write ever ends).
# 2. The kill test, without -f and with it: while fio writes and verifies,
#    one server is killed (SIGKILL); its member must read faulty within
#    member_timeout (2 s) + 1 s (+ 3 s for a sanitizer build, beside
#    make test at nice 19), fio must see no error and its data must
#    verify.  The failed member is removed, a fresh server added as a
#    spare and rebuilt, and the next kill (another server, at random) comes:
#    RF_NBD_KILLS times in a row in each mode (default 25; 5 in a quick
#    run, RF_QUICK=1, as under ASan).  The slowest
#    failure of each mode is printed; each must be within the bound.
# Every nbdkit is bounded by timeout(1) and stopped at exit.
. "$(dirname "$0")/lib.sh"
requires fuse fio
. "$(dirname "$0")/nbdkit.sh"

KILLS=${RF_NBD_KILLS:-$([ "${RF_QUICK:-0}" = 1 ] && echo 5 || echo 25)}
TIMEOUT_MS=2000
BOUND_MS=$((TIMEOUT_MS + 1000))
# A sanitizer build's daemon (make asan: 2-5x slower, at nice 19 beside
# make test) gets 3 s over member_timeout; the bound of 1 s is the plain
# build's.
if raidfuse_has __asan_init; then
	BOUND_MS=$((TIMEOUT_MS + 3000))
fi
FIO=(--direct=1 --ioengine=io_uring --iodepth=8 --bs=4k --verify=crc32c --do_verify=1 --verify_fatal=1
	--verify_state_save=0 --output-format=terse)

# within SECS PID WHAT: background job PID ends within SECS seconds, with
# status 0; a job still running then is a hang (the daemon is killed at
# cleanup, which lets a writer stuck in the kernel go).
within() {
	local secs=$1 pid=$2 what=$3 i
	for ((i = 0; i < secs * 20; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	kill -0 "$pid" 2>/dev/null && fail "$what: still running after $secs s (hung: $(ps -o stat=,wchan:30= -p "$pid"))"
	wait "$pid" || fail "$what: failed ($?): $(tail -n 5 "$WORK/fio.log" 2>/dev/null)"
}

# Servers k1, k2, ... as they are made; SERVERS the three the array has.
gen=0
new_server() {
	gen=$((gen + 1))
	nbd_start "k$gen" memory 4M
	NEW=k$gen
}

# mount_array MODE: a fresh raid5 over three fresh servers, served with
# (fg) or without (daemon) -f.
mount_array() {
	local mode=$1
	SERVERS=()
	for _ in 1 2 3; do
		new_server
		SERVERS+=("$NEW")
	done
	mk_conf "$D/a.conf" level=5 chunk_size=64K members="$(uri "${SERVERS[0]}") $(uri "${SERVERS[1]}") $(uri "${SERVERS[2]}")" \
		member_size=4M metadata=1.2 member_timeout=${TIMEOUT_MS}ms
	create_array --assume-clean "$D/a.conf"
	if [ "$mode" = daemon ]; then
		start_array_daemon "$D/a.conf" "$MNT"
	else
		start_array "$D/a.conf" "$MNT"
	fi
	# Rebuilds go at full speed beside fio (md's floor would take seconds).
	echo 1000000 >"$MNT/md/sync_speed_max"
	echo 1000000 >"$MNT/md/sync_speed_min"
}

# --- 1. the daemon's first writes ----------------------------------------------

log "raid5 over three nbdkit servers, mounted without -f: fio writes and verifies"
mount_array daemon
fio --filename="$IMG" "${FIO[@]}" --rw=randwrite --size=4M --name=first >"$WORK/fio.log" 2>&1 &
within 30 $! "fio on a daemonized NBD array (writes and verify)"
log "  fio done"
stop_array "$MNT"
for s in "${SERVERS[@]}"; do nbd_stop "$s"; done

# --- 2. servers killed under writes --------------------------------------------

# writer: fio runs of 3 s one after another (each writes at random and
# verifies as it goes, verify_backlog) until $WORK/stop appears; the first
# that fails ends it with its status.
writer() {
	local r=0
	while [ ! -e "$WORK/stop" ]; do
		r=$((r + 1))
		fio --filename="$IMG" "${FIO[@]}" --rw=randwrite --size=4M --time_based --runtime=3 --rate_iops=2000 \
			--verify_backlog=128 --randseed=$r --name=w$r >"$WORK/fio.log" 2>&1 || return 1
	done
}

# rebuilt WHAT: mdstat [3/3] [UUU] and sync_action idle within 30 s.
rebuilt() {
	local i
	for ((i = 0; i < 1500; i++)); do
		grep -qF "[3/3] [UUU]" "$MNT/mdstat" && [ "$(cat "$MNT/md/sync_action")" = idle ] && return 0
		sleep 0.02
	done
	fail "$1: not rebuilt in 30 s: $(cat "$MNT/mdstat")"
}

# kill_one MODE N: kill a server of the array at random while the writer
# runs; the member's failure time goes to FAILED_MS.  The failed member is
# removed and a fresh server rebuilt in its place.
kill_one() {
	local mode=$1 n=$2 k victim name t0 t1 i
	k=$((RANDOM % 3))
	victim=${SERVERS[$k]}
	name=$victim.sock
	sleep 0.2
	kill -0 "$WPID" 2>/dev/null || { wait "$WPID" || fail "$mode kill $n: fio failed: $(tail -n 5 "$WORK/fio.log")"; }
	t0=${EPOCHREALTIME/./}
	kill -KILL "$(nbd_proc "$victim")"
	{ wait "${NBD_PID[$victim]}"; } 2>/dev/null || true   # no "Killed" notice later
	for ((i = 0; i < 1000; i++)); do
		[ "$(dev "$name" state)" = faulty ] && break
		sleep 0.01
	done
	t1=${EPOCHREALTIME/./}
	FAILED_MS=$(((t1 - t0) / 1000))
	[ "$(dev "$name" state)" = faulty ] || fail "$mode kill $n: $name not faulty $FAILED_MS ms after its server was killed"
	check "[ $FAILED_MS -le $BOUND_MS ]" "$mode kill $n: $name failed after $FAILED_MS ms (bound $BOUND_MS ms)"
	check '[ "$(cat $MNT/md/degraded)" = 1 ]' "$mode kill $n: the array goes on degraded"
	for ((i = 0; i < 50; i++)); do
		"$RAIDFUSE" ctl "$MNT" remove "$name" 2>"$WORK/ctl.err" && break
		sleep 0.05
	done
	[ $i -lt 50 ] || fail "$mode kill $n: ctl remove $name: $(cat "$WORK/ctl.err")"
	nbd_stop "$victim"
	new_server
	SERVERS[$k]=$NEW
	"$RAIDFUSE" ctl "$MNT" add "$(uri "$NEW")" || fail "$mode kill $n: ctl add $(uri "$NEW")"
	rebuilt "$mode kill $n: recovery onto $NEW"
}

for mode in daemon fg; do
	log "$mode: $KILLS servers killed under fio, one after another (member_timeout $TIMEOUT_MS ms)"
	mount_array $mode
	rm -f "$WORK/stop"
	writer &
	WPID=$!
	max=0
	all=()
	t_start=$SECONDS
	for ((n = 1; n <= KILLS; n++)); do
		kill_one $mode $n
		all+=("$FAILED_MS")
		[ "$FAILED_MS" -gt $max ] && max=$FAILED_MS
	done
	touch "$WORK/stop"
	within 30 $WPID "$mode: fio writing and verifying through the kills"
	med=$(printf '%s\n' "${all[@]}" | sort -n | sed -n "$(((KILLS + 1) / 2))p")
	log "  $mode: $KILLS kills in $((SECONDS - t_start)) s, member faulty after median $med ms, max $max ms" \
		"(bound $BOUND_MS ms); fio saw no error, its data verified"
	stop_array "$MNT"
	for s in "${SERVERS[@]}"; do nbd_stop "$s"; done
done

exit 0
