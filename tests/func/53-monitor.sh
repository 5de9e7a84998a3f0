#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 53-monitor: raidfuse monitor tells an admin what mdadm --monitor would,
# on arrays served in the daemonized default mode (no -f).  A raid5 of 4
# members and 1 spare (1.2 superblocks, 32M members, the rebuild slowed
# by md/sync_speed_max so that the monitor sees it run); PROG appends its
# arguments to a file, one event a line.
#
# 1. Negative control: a whole idle array over five looks (--delay 1):
#    PROG is never run.
# 2. --oneshot --test: TestMessage MNT, and nothing else on a whole array.
# 3. ctl fail d1.img: PROG sees, in this order, Fail MNT .../d1.img,
#    RebuildStarted MNT, (RebuildNN MNT, rising), RebuildFinished MNT,
#    SpareActive MNT .../s0.img; no DegradedArray (the Fail said it).
#    stdout has the same events.
# 4. --oneshot on a degraded array (d2 failed too): DegradedArray MNT,
#    exit 0; with --mail and no /usr/sbin/sendmail, it says it cannot mail.
# 5. A PROG that hangs (and its child): killed after --program-timeout,
#    the monitor says so and goes on to tell the next events (a spare
#    added with ctl add: RebuildStarted).
# 6. --scan: an array mounted later is NewArray, and DeviceDisappeared
#    when stopped.
# 7. --daemonise --pid-file: the command returns, the pid file names the
#    monitor; a second one with the same pid file is refused; SIGTERM ends
#    it and removes the pid file.
# 8. Errors: a directory that is no mount, a mount that is no raidfuse
#    one, --daemonise with nowhere to tell: exit 1, saying which.
. "$(dirname "$0")/lib.sh"
requires fuse

R=$RAIDFUSE
D=$WORK/a
MNT=$WORK/mnt
EV=$WORK/events
mkdir -p "$D"
mk_conf "$D/a.conf" level=5 chunk_size=64K members="$(members 4)" spares="s0.img" member_size=32M metadata=1.2
create_array --assume-clean "$D/a.conf"
start_array_daemon "$D/a.conf" "$MNT"

ALERT=$WORK/alert.sh
cat >"$ALERT" <<EOF
#!/bin/sh
echo "\$*" >>"$EV"
EOF
chmod +x "$ALERT"

MON_PID=
mon_start() {
	: >"$WORK/mon.out"
	"$R" monitor "$@" >"$WORK/mon.out" 2>"$WORK/mon.err" &
	MON_PID=$!
}
# SIGTERM ends the monitor within 10 s, exit 0.
mon_stop() {
	local i rc=0
	kill -TERM "$MON_PID"
	for ((i = 0; i < 100; i++)); do
		kill -0 "$MON_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$MON_PID" 2>/dev/null && { kill -KILL "$MON_PID"; fail "the monitor did not end within 10 s of SIGTERM"; }
	wait "$MON_PID" || rc=$?
	check '[ $rc = 0 ]' "the monitor ended on SIGTERM with $rc: $(cat "$WORK/mon.err")"
	MON_PID=
}
# (the monitor and what the hanging program started go first: _cleanup
# removes $WORK)
_mon_cleanup() {
	local a b
	[ -z "$MON_PID" ] || kill -KILL "$MON_PID" 2>/dev/null
	[ -f "$WORK/hang.pids" ] && while read -r a b; do kill -KILL "$a" "$b" 2>/dev/null; done <"$WORK/hang.pids"
	return 0
}
trap '_rc=$?; _main_shell || exit $_rc; _mon_cleanup; (exit $_rc); _cleanup' EXIT
# wait_event LINE-REGEX FILE SECS: a line of FILE matches within SECS.
wait_event() {
	local re=$1 f=$2 secs=$3 i
	for ((i = 0; i < secs * 10; i++)); do
		grep -Eq "$re" "$f" 2>/dev/null && return 0
		sleep 0.1
	done
	fail "no event '$re' in $secs s; events: $(cat "$f" 2>/dev/null | tr '\n' ';'); monitor said: $(cat "$WORK/mon.err")"
}

# --- 1. negative control ----------------------------------------------------------

log "a whole idle array over five looks: PROG never runs"
: >"$EV"
mon_start --delay 1 --program "$ALERT" "$MNT"
sleep 5.5
kill -0 "$MON_PID" || fail "the monitor exited: $(cat "$WORK/mon.err")"
mon_stop
check '[ ! -s "$EV" ]' "PROG ran on a steady array: $(cat "$EV")"
check '[ ! -s "$WORK/mon.out" ]' "the monitor printed events for a steady array: $(cat "$WORK/mon.out")"

# --- 2. --test ----------------------------------------------------------------------

log "--oneshot --test: TestMessage, nothing else on a whole array"
: >"$EV"
"$R" monitor --oneshot --test --program "$ALERT" "$MNT" >"$WORK/mon.out" || fail "monitor --oneshot --test failed"
check '[ "$(cat "$EV")" = "TestMessage $MNT" ]' "events: $(cat "$EV")"
grep -q ": TestMessage on $MNT\$" "$WORK/mon.out" || fail "stdout: $(cat "$WORK/mon.out")"

# --- 3. a member fails, the spare is rebuilt -----------------------------------------

log "ctl fail d1.img: Fail, RebuildStarted, RebuildFinished, SpareActive"
echo 4000 >"$MNT/md/sync_speed_max"
: >"$EV"
mon_start --delay 1 --test --program "$ALERT" "$MNT"
wait_event "^TestMessage $MNT\$" "$EV" 10    # the first look is done
"$R" ctl "$MNT" fail d1.img
wait_event "^RebuildFinished $MNT\$" "$EV" 90
wait_event "^SpareActive " "$EV" 10
sleep 1.5
mon_stop
log "  $(tr '\n' ';' <"$EV")"
seq=$(grep -v '^TestMessage ' "$EV" | grep -Ev '^Rebuild[0-9]+ ')
want="Fail $MNT $D/d1.img
RebuildStarted $MNT
RebuildFinished $MNT
SpareActive $MNT $D/s0.img"
check '[ "$seq" = "$want" ]' "the events, in order: $(tr '\n' ';' <"$EV")"
# RebuildNN: between start and finish, rising, a multiple of 20 passed each time
nn=$(sed -n '/^RebuildStarted /,/^RebuildFinished /p' "$EV" | sed -n "s|^Rebuild\([0-9][0-9]*\) $MNT\$|\1|p" | tr '\n' ' ')
all=$(grep -Ec '^Rebuild[0-9]+ ' "$EV" || true)
check '[ "$(wc -w <<<"$nn")" = "$all" ]' "RebuildNN outside the rebuild: $(tr '\n' ';' <"$EV")"
prev=0
for p in $nn; do
	check '[ $((10#$p / 20)) -gt $((prev / 20)) ]' "Rebuild$p after Rebuild$prev"
	prev=$((10#$p))
done
log "  RebuildNN seen: ${nn:-none}"
grep -q ": Fail on $MNT $D/d1.img\$" "$WORK/mon.out" || fail "stdout has no Fail: $(cat "$WORK/mon.out")"
grep -q ": SpareActive on $MNT $D/s0.img\$" "$WORK/mon.out" || fail "stdout has no SpareActive: $(cat "$WORK/mon.out")"
echo 0 >"$MNT/md/sync_speed_max"

# --- 4. --oneshot on a degraded array ----------------------------------------------

log "--oneshot on a degraded array: DegradedArray, exit 0"
"$R" ctl "$MNT" fail d2.img
: >"$EV"
rc=0
"$R" monitor --oneshot --program "$ALERT" "$MNT" >/dev/null || rc=$?
check '[ $rc = 0 ]' "monitor --oneshot of a degraded array exits $rc"
check '[ "$(cat "$EV")" = "DegradedArray $MNT" ]' "events: $(cat "$EV")"
if [ ! -x /usr/sbin/sendmail ]; then
	log "--mail without /usr/sbin/sendmail: says it cannot mail the DegradedArray event"
	rc=0
	out=$("$R" monitor --oneshot --mail root@localhost --syslog "$MNT" 2>&1 >/dev/null) || rc=$?
	check '[ $rc = 0 ]' "monitor --oneshot --mail exits $rc: $out"
	[[ $out == *"cannot mail the DegradedArray event on $MNT to root@localhost: /usr/sbin/sendmail"* ]] ||
		fail "monitor --mail without sendmail: $out"
fi

# --- 5. a program that hangs -------------------------------------------------------------

log "a PROG that hangs is killed after --program-timeout; the monitor goes on"
HANG=$WORK/hang.sh
cat >"$HANG" <<EOF
#!/bin/bash
echo "\$*" >>"$EV"
sleep 300 &
echo "\$\$ \$!" >>"$WORK/hang.pids"
wait
EOF
chmod +x "$HANG"
: >"$EV"
: >"$WORK/hang.pids"
echo 4000 >"$MNT/md/sync_speed_max"
mon_start --delay 1 --test --program-timeout 2 --program "$HANG" "$MNT"
wait_event "^TestMessage $MNT\$" "$EV" 10
truncate -s 32M "$D/s1.img"
"$R" ctl "$MNT" add "$D/s1.img"
wait_event "^RebuildStarted $MNT\$" "$EV" 20
wait_event "did not end within 2 s: killed" "$WORK/mon.err" 10
read -r sh_pid sleep_pid <"$WORK/hang.pids"
for ((i = 0; i < 50; i++)); do
	kill -0 "$sh_pid" 2>/dev/null || kill -0 "$sleep_pid" 2>/dev/null || break
	sleep 0.1
done
check '! kill -0 $sh_pid 2>/dev/null && ! kill -0 $sleep_pid 2>/dev/null' \
	"the hung program ($sh_pid) or its child ($sleep_pid) still runs"
grep -q "$HANG TestMessage $MNT did not end within 2 s: killed" "$WORK/mon.err" ||
	fail "the monitor did not name the killed program: $(cat "$WORK/mon.err")"
mon_stop
# every instance (one per event told) ended with the monitor at the latest
for ((i = 0; i < 50; i++)); do
	left=
	while read -r a b; do
		for p in $a $b; do
			if kill -0 "$p" 2>/dev/null; then left+=" $p"; fi
		done
	done <"$WORK/hang.pids"
	[ -z "$left" ] && break
	sleep 0.1
done
check '[ -z "$left" ]' "hung programs outlive the monitor: $left"
: >"$WORK/hang.pids"
echo 0 >"$MNT/md/sync_speed_max"
wait_sync_idle "$MNT" "the rebuild onto s1.img" 120

# --- 6. --scan: NewArray, DeviceDisappeared -----------------------------------------

log "--scan: an array mounted later is NewArray, then DeviceDisappeared"
MNT2=$WORK/mnt2
mk_conf "$D/b.conf" level=1 members="$(members 2 e)" member_size=16M metadata=1.2 name=b.img
create_array --assume-clean "$D/b.conf"
: >"$EV"
mon_start --scan --delay 1 --program "$ALERT"
sleep 1.5
start_array_daemon "$D/b.conf" "$MNT2"
wait_event "^NewArray $MNT2\$" "$EV" 15
"$R" stop "$MNT2" || fail "raidfuse stop $MNT2"
unset "_DAEMON_OF[$MNT2]"
wait_event "^DeviceDisappeared $MNT2\$" "$EV" 15
mon_stop
check '[ "$(grep -c " $MNT\$\| $MNT " "$EV" || true)" = 0 ]' "--scan told events of the steady $MNT: $(cat "$EV")"

# --- 7. --daemonise, --pid-file ---------------------------------------------------------

log "--daemonise --pid-file: returns, one monitor per pid file, SIGTERM removes it"
PIDF=$WORK/mon.pid
timeout 20 "$R" monitor --daemonise --pid-file "$PIDF" --delay 1 --program "$ALERT" "$MNT" ||
	fail "monitor --daemonise failed"
mpid=$(cat "$PIDF")
check 'kill -0 "$mpid"' "the pid file names $mpid, which does not run"
check '[ "$(tr "\0" " " <"/proc/$mpid/cmdline" | cut -d" " -f2)" = monitor ]' "pid $mpid is no monitor"
expect_fail timeout 20 "$R" monitor --daemonise --pid-file "$PIDF" --program "$ALERT" "$MNT"
[[ $OUT == *"$PIDF names monitor $mpid"* ]] || fail "a second monitor on $PIDF: $OUT"
kill -TERM "$mpid"
for ((i = 0; i < 100; i++)); do
	kill -0 "$mpid" 2>/dev/null || break
	sleep 0.1
done
check '! kill -0 "$mpid" 2>/dev/null' "the daemonised monitor did not end on SIGTERM"
check '[ ! -e "$PIDF" ]' "the pid file is left after SIGTERM"

# --- 8. errors --------------------------------------------------------------------------

log "errors: no mount, no raidfuse mount, nowhere to tell"
mkdir -p "$WORK/plain"
expect_fail "$R" monitor --oneshot --program "$ALERT" "$WORK/plain"
check '[ $RC = 1 ]' "monitor of a plain directory exits $RC"
[[ $OUT == *"$WORK/plain is not a raidfuse mount"* ]] || fail "monitor of a plain directory: $OUT"
expect_fail "$R" monitor --oneshot --program "$ALERT" /proc
check '[ $RC = 1 ]' "monitor of /proc exits $RC"
[[ $OUT == *"/proc"*"not a raidfuse mount"* ]] || fail "monitor of /proc: $OUT"
expect_fail "$R" monitor --daemonise "$MNT"
[[ $OUT == *"No mail address or alert command - not monitoring."* ]] || fail "--daemonise alone: $OUT"
expect_fail "$R" monitor --scan "$MNT"
check '[ $RC = 2 ]' "--scan with a MOUNTPOINT exits $RC"

"$R" stop "$MNT" || fail "raidfuse stop $MNT"
unset "_DAEMON_OF[$MNT]"
log "ok"
