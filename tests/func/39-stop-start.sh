#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 39-stop-start: an array stopped and started like a service, in the
# daemonized default mode (no -f).
#
# 1. raidfuse stop MNT (as mdadm --stop): it returns 0 only once the daemon
#    has exited, the members' superblocks then say clean (expected: daemon
#    gone and "State : clean" the moment stop returns; before: no such
#    command).  A daemon that does not exit (SIGSTOP) makes stop fail
#    after its --timeout naming the pid; nothing mounted there fails at
#    once, an image held open (busy) after 2 s of retries (mdadm --stop
#    retries alike), each with the reason, and leaves a serving array
#    serving; a holder that closes within those 2 s lets the stop through.
# 2. A mount that finds its members held by a daemon that is stopping (its
#    mount gone, its last superblocks not yet written) waits for it,
#    saying once which pid and member, instead of failing with "in use"
#    (before: refused at once).  Made sure of with a daemon stopped by
#    SIGSTOP after its unmount and continued 1 s later; then as scripts do
#    it, `fusermount3 -u MNT; raidfuse mount CONF MNT` at once, 20 times,
#    each one served and its data intact.  The negative control: a second
#    mount of members whose daemon still serves is refused at once, the
#    message naming the member and the daemon.
# 3. SIGTERM to a daemon mounted on a relative mount point unmounts it
#    (before: the daemon had changed directory to / and unmounted the
#    wrong path, leaving a dead mount: "Transport endpoint is not
#    connected").
. "$(dirname "$0")/lib.sh"
requires fuse fio

D=$WORK/a
MNT=$WORK/mnt
IMG=$MNT/array.img
mkdir -p "$D"
mk_conf "$D/a.conf" level=5 chunk_size=64K members="$(members 3)" member_size=32M metadata=1.2
create_array --assume-clean "$D/a.conf"
FIO=(--rw=randwrite --bs=4k --size=8M --iodepth=8)

# The pid of the daemon serving MNT, or nothing: the process holding the
# marker of MNT's mount (/memfd:raidfuse-serves:MAJ:MIN:MNT).
served_by() {
	local dev fds p
	dev=$(awk -v p="$1" '$5 == p { d = $3 } END { print d }' /proc/self/mountinfo)
	[ -n "$dev" ] || return 0
	for p in $(pgrep -x raidfuse); do
		# one line per fd, "N -> TARGET"
		fds=$(ls -l /proc/"$p"/fd/ 2>/dev/null)$'\n'
		if [[ $fds == *" -> /memfd:raidfuse-serves:$dev:$1 (deleted)"$'\n'* ]]; then
			echo "$p"
			return 0
		fi
	done
}

# adopt MNT LOG: a daemon this test started by hand on MNT is cleaned up
# as lib.sh's own are.
adopt() {
	local pid
	pid=$(served_by "$1")
	[ -n "$pid" ] || fail "no raidfuse daemon in the mount table for $1: $(grep -F " $1 " /proc/self/mountinfo)"
	_DAEMON_OF[$1]=$pid
	_CHILD_OF[$1]=0
	_LOG_OF[$1]=$2
	DAEMON_PID=$pid
}

# running PID: the process is there and not a zombie (exited, its
# parent, init here, not having reaped it yet).
running() { [ -r "/proc/$1/stat" ] && [ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" != Z ]; }

clean_sbs() {
	local m
	for m in $(members 3); do
		"$RAIDFUSE" examine "$D/$m" | grep -q "State : clean" ||
			fail "$1: $m's superblock is not clean: $("$RAIDFUSE" examine "$D/$m" | grep State)"
	done
}

# --- 1. raidfuse stop -------------------------------------------------------------

log "raidfuse stop: returns once the daemon has exited, superblocks clean"
start_array_daemon "$D/a.conf" "$MNT"
fio_verify "$IMG" "${FIO[@]}"
pid=$DAEMON_PID
t0=${EPOCHREALTIME/./}
"$RAIDFUSE" stop "$MNT" || fail "raidfuse stop $MNT failed"
t1=${EPOCHREALTIME/./}
running "$pid" && fail "raidfuse stop returned while the daemon (pid $pid) still runs"
mountpoint -q "$MNT" && fail "raidfuse stop returned with $MNT still mounted"
clean_sbs "right after raidfuse stop"
log "  stopped in $(((t1 - t0) / 1000)) ms, the daemon gone, every superblock clean"
wait_daemon_exit "$MNT"

log "raidfuse stop: bad input and a busy image fail with the reason, the array still served"
expect_fail "$RAIDFUSE" stop "$MNT"
grep -q "nothing is mounted there" <<<"$OUT" || fail "stop on an unmounted directory: $OUT"
expect_fail "$RAIDFUSE" stop "$WORK/nowhere/mnt"
grep -q "nowhere" <<<"$OUT" || fail "stop on a missing directory does not name it: $OUT"
expect_fail "$RAIDFUSE" stop /proc
grep -q "not a raidfuse mount" <<<"$OUT" || fail "stop on /proc: $OUT"
start_array_daemon "$D/a.conf" "$MNT"
exec 3<"$IMG"
expect_fail "$RAIDFUSE" stop "$MNT"
exec 3<&-
grep -q "busy" <<<"$OUT" || fail "stop of a busy image does not say so: $OUT"
log "  busy: $OUT"
mountpoint -q "$MNT" && kill -0 "$DAEMON_PID" || fail "a refused stop stopped the array"
fio_verify --verify_only "$IMG" "${FIO[@]}"
# held for 0.8 s more: stop retries until the holder is gone
bash -c 'exec 3<"$1"; sleep 1' sh "$IMG" &
holder=$!
sleep 0.2
"$RAIDFUSE" stop "$MNT" || fail "stop while the image's last holder closes it within the retries"
wait "$holder"
wait_daemon_exit "$MNT"
start_array_daemon "$D/a.conf" "$MNT"

log "raidfuse stop --timeout: a daemon that does not exit (SIGSTOP) fails it, naming the pid"
pid=$DAEMON_PID
kill -STOP "$pid"
t0=${EPOCHREALTIME/./}
expect_fail "$RAIDFUSE" stop --timeout 2 "$MNT"
t1=${EPOCHREALTIME/./}
kill -CONT "$pid"
grep -q "pid $pid.*has not exited 2 s after the unmount" <<<"$OUT" || fail "stop --timeout 2: $OUT"
check "[ $(((t1 - t0) / 1000)) -ge 2000 ] && [ $(((t1 - t0) / 1000)) -lt 4000 ]" \
	"stop --timeout 2 gave up after 2 s ($(((t1 - t0) / 1000)) ms)"
wait_daemon_exit "$MNT"
clean_sbs "a daemon continued after stop gave up"

# --- 2. a mount waits for a daemon that is stopping ---------------------------------

log "mount while the last daemon stops: it waits for it (stopped by SIGSTOP, continued after 1 s)"
start_array_daemon "$D/a.conf" "$MNT"
fio_verify "$IMG" "${FIO[@]}"
old=$DAEMON_PID
kill -STOP "$old"
fusermount3 -u "$MNT" || fail "fusermount3 -u $MNT"
(sleep 1 && kill -CONT "$old") &
t0=${EPOCHREALTIME/./}
out=$(timeout 20 "$RAIDFUSE" mount "$D/a.conf" "$MNT" 2>&1) || fail "mount while pid $old stops: $out"
t1=${EPOCHREALTIME/./}
adopt "$MNT" "$WORK/mount2.log"
wait
for ((i = 0; i < 100; i++)); do
	running "$old" || break
	sleep 0.05
done
running "$old" && fail "the old daemon (pid $old) still runs 5 s after the new one serves"
log "  served after $(((t1 - t0) / 1000)) ms: $out"
grep -q "held by raidfuse (pid $old), which is stopping: waiting" <<<"$out" ||
	fail "the waiting mount does not say which pid it waits for: $out"
check "[ $(grep -c waiting <<<"$out") = 1 ]" "the wait is said once: $out"
fio_verify --verify_only "$IMG" "${FIO[@]}"

log "negative control: a daemon still serving keeps its members, a second mount is refused at once"
mkdir -p "$WORK/mnt2"
t0=${EPOCHREALTIME/./}
expect_fail timeout 20 "$RAIDFUSE" mount "$D/a.conf" "$WORK/mnt2"
t1=${EPOCHREALTIME/./}
log "  refused after $(((t1 - t0) / 1000)) ms: $OUT"
grep -q "member 0 (.*d0.img) is in use by the raidfuse (pid $DAEMON_PID) serving $MNT" <<<"$OUT" ||
	fail "the refusal does not name the member and the daemon: $OUT"
# At once: not the wait for a stopping daemon (up to 10 s, and said); the
# time is only a bound, loose enough for a sanitizer build on a busy machine.
grep -q waiting <<<"$OUT" && fail "the refusal waited as for a stopping daemon: $OUT"
check "[ $(((t1 - t0) / 1000)) -lt 5000 ]" "refused without waiting ($(((t1 - t0) / 1000)) ms)"
mountpoint -q "$WORK/mnt2" && fail "the refused mount mounted $WORK/mnt2"

log "fusermount3 -u MNT; raidfuse mount CONF MNT at once, 20 times"
worst=0
for ((i = 1; i <= 20; i++)); do
	dd if=/dev/urandom of="$IMG" bs=64k count=16 seek=$((256 + i)) oflag=direct conv=notrunc status=none ||
		fail "round $i: writing"
	want=$(dd if="$IMG" bs=64k count=1 skip=$((256 + i)) iflag=direct status=none | sha256sum)
	old=$DAEMON_PID
	t0=${EPOCHREALTIME/./}
	unmount "$MNT"
	out=$(timeout 20 "$RAIDFUSE" mount "$D/a.conf" "$MNT" 2>&1) || fail "round $i: mount right after the unmount: $out"
	t1=${EPOCHREALTIME/./}
	unset "_DAEMON_OF[$MNT]"
	adopt "$MNT" "$WORK/mount3.log"
	[ $(((t1 - t0) / 1000)) -gt $worst ] && worst=$(((t1 - t0) / 1000))
	[ "$(dd if="$IMG" bs=64k count=1 skip=$((256 + i)) iflag=direct status=none | sha256sum)" = "$want" ] ||
		fail "round $i: the data written before the unmount is not there"
done
log "  20 rounds, each served again (slowest unmount + mount: $worst ms)"
fio_verify --verify_only "$IMG" "${FIO[@]}"
stop_array "$MNT"

# --- 3. SIGTERM with a relative mount point -----------------------------------------

log "SIGTERM to a daemon mounted on a relative mount point unmounts it"
out=$(cd "$WORK" && timeout 20 "$RAIDFUSE" mount a/a.conf mnt 2>&1) || fail "mount on a relative mount point: $out"
pid=
for p in /proc/[0-9]*; do
	[ "$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)" = "$RAIDFUSE mount a/a.conf mnt " ] && pid=${p#/proc/} && break
done
[ -n "$pid" ] || fail "no daemon for the relative mount"
_DAEMON_OF[$MNT]=$pid
_CHILD_OF[$MNT]=0
_LOG_OF[$MNT]=$WORK/mount4.log
DAEMON_PID=$pid
_wait_served "$D/a.conf" "$MNT"
kill -TERM "$pid"
wait_daemon_exit "$MNT"
err=$(stat "$MNT" 2>&1 >/dev/null) || fail "after SIGTERM, $MNT: $err (a dead mount left behind)"
mountpoint -q "$MNT" && fail "after SIGTERM, $MNT is still mounted"
clean_sbs "after SIGTERM"
log "  unmounted, superblocks clean"

exit 0
