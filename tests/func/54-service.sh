#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 54-service: raidfuse started at boot, as a service, in the daemonized
# default mode (no -f).
#
# 1. sd_notify: with $NOTIFY_SOCKET (a receiver of our own: rfhelper
#    notify-recv) the daemon sends MAINPID=<the daemon, not the command>
#    and READY=1 once the image answers (the receiver stats it at once),
#    STATUS=<mdstat's "raid5 [4/4] [UUUU]">, a new STATUS after
#    `ctl fail d1.img` ("raid5 [4/3] [U_UU]"), and STOPPING=1 on
#    `raidfuse stop`.  Negative control: without $NOTIFY_SOCKET nothing
#    reaches the socket and mount serves as before.  (Before: nothing was
#    ever sent.)
# 2. --log FILE: the detached daemon's member-failure message lands in
#    FILE (before: syslog only); SIGHUP reopens FILE after it is moved
#    (logrotate) and does not stop the daemon; a FILE that cannot be
#    opened fails the command, naming it.
# 3. The mount helper's form: `raidfuse CONFIG MNT -o OPTS` (what
#    mount.fuse3 runs; before: "unknown command"), with the generic
#    options mount adds dropped, ro serving read-only, an unknown option
#    refused by name; `mount -t fuse.raidfuse CONFIG MNT -o ...` and an
#    fstab line through `mount -T FSTAB MNT`, each read, written and
#    unmounted with umount.
# 4. raidfuse@.service: systemd-analyze verify accepts it.  A start and
#    stop under systemd needs systemd as PID 1 (skipped otherwise).
. "$(dirname "$0")/lib.sh"
requires fuse cc
build_helper

R=$RAIDFUSE
D=$WORK/a
MNT=$WORK/mnt
mkdir -p "$D" "$MNT"
mk_conf "$D/a.conf" level=5 chunk_size=64K members="$(members 4)" member_size=16M metadata=1.2
create_array --assume-clean "$D/a.conf"

# wait_for CMD...: CMD succeeds within 10 s, else 1.
wait_for() {
	local i
	for ((i = 0; i < 200; i++)); do
		"$@" && return 0
		sleep 0.05
	done
	return 1
}

# --- 1. sd_notify ------------------------------------------------------------------

log "NOTIFY_SOCKET: MAINPID, READY=1 once served, STATUS, STOPPING=1"
SOCK=$WORK/notify.sock
OUT=$WORK/notify.out
: >"$OUT"
"$RFHELPER" notify-recv "$SOCK" "$OUT" 60 "$MNT/array.img" &
RECV=$!
wait_for test -S "$SOCK" || fail "the receiver did not bind $SOCK"
NOTIFY_SOCKET=$SOCK start_array_daemon "$D/a.conf" "$MNT" --log "$WORK/daemon.log"
wait_for grep -q "READY=1" "$OUT" || fail "no READY=1 within 10 s: $(cat "$OUT")"
sed 's/^/    /' "$OUT"
grep -qx "pid=$DAEMON_PID MAINPID=$DAEMON_PID" "$OUT" ||
	fail "no MAINPID=$DAEMON_PID (the daemon) from the daemon: $(cat "$OUT")"
check 'grep -A1 -x "pid=$DAEMON_PID READY=1" "$OUT" | grep -qx "stat=ok"' \
	"the image did not answer stat when READY=1 arrived: $(cat "$OUT")"
grep -qx "pid=$DAEMON_PID STATUS=raid5 \[4/4\] \[UUUU\]" "$OUT" ||
	fail "no STATUS=raid5 [4/4] [UUUU]: $(cat "$OUT")"
grep -q "STOPPING" "$OUT" && fail "STOPPING=1 while serving: $(cat "$OUT")"

log "ctl fail d1.img: STATUS says degraded, the --log file says why"
"$R" ctl "$MNT" fail d1.img
wait_for grep -qx "pid=$DAEMON_PID STATUS=raid5 \[4/3\] \[U_UU\]" "$OUT" ||
	fail "no STATUS=raid5 [4/3] [U_UU] after ctl fail: $(cat "$OUT")"
wait_for grep -q "d1.img.*faulty" "$WORK/daemon.log" ||
	fail "the --log file has no member-failure message: $(cat "$WORK/daemon.log")"
log "  $(grep -m1 "d1.img.*faulty" "$WORK/daemon.log")"

log "SIGHUP reopens the --log file (logrotate), the daemon goes on serving"
mv "$WORK/daemon.log" "$WORK/daemon.log.1"
kill -HUP "$DAEMON_PID"
wait_for test -e "$WORK/daemon.log" || fail "SIGHUP did not reopen $WORK/daemon.log"
kill -0 "$DAEMON_PID" || fail "the daemon ended on SIGHUP"
mountpoint -q "$MNT" || fail "SIGHUP unmounted $MNT"
"$R" ctl "$MNT" remove d1.img
"$R" ctl "$MNT" add "$D/d1.img"
wait_for grep -q "d1.img" "$WORK/daemon.log" ||
	fail "nothing about d1.img in the reopened log: $(cat "$WORK/daemon.log")"
log "  $(grep -m1 "d1.img" "$WORK/daemon.log")"
wait_sync_idle "$MNT" recover 60
# (STATUS is looked at every RF_NOTIFY_PERIOD_MS, 500 ms)
whole_again() { sed -n '/U_UU/,$p' "$OUT" | grep -q "STATUS=raid5 \[4/4\] \[UUUU\]"; }
wait_for whole_again ||
	fail "STATUS did not come back to [UUUU] after the rebuild: $(cat "$OUT")"

log "raidfuse stop: STOPPING=1, the receiver ends"
"$R" stop "$MNT" || fail "raidfuse stop"
wait_daemon_exit "$MNT"
wait "$RECV" || fail "the receiver saw no STOPPING=1: $(cat "$OUT")"
grep -qx "pid=$DAEMON_PID STOPPING=1" "$OUT" || fail "no STOPPING=1 from the daemon: $(cat "$OUT")"

log "negative control: no NOTIFY_SOCKET, nothing sent, mount as before"
: >"$OUT"
"$RFHELPER" notify-recv "$SOCK" "$OUT" 60 &
RECV=$!
wait_for test -S "$SOCK" || fail "the receiver did not bind $SOCK"
unset NOTIFY_SOCKET
start_array_daemon "$D/a.conf" "$MNT"
# (a change of state that sends a STATUS where NOTIFY_SOCKET is set)
"$R" ctl "$MNT" fail d2.img
sleep 1
"$R" ctl "$MNT" re-add d2.img
wait_sync_idle "$MNT" recover 60
"$R" stop "$MNT" || fail "raidfuse stop"
wait_daemon_exit "$MNT"
kill "$RECV" 2>/dev/null || true
wait "$RECV" || true
check '[ ! -s "$OUT" ]' "datagrams without NOTIFY_SOCKET: $(cat "$OUT")"

log "--log FILE that cannot be opened: the command fails, naming it"
expect_fail "$R" mount "$D/a.conf" "$MNT" --log "$WORK/no/such/dir/x.log"
grep -q "no/such/dir/x.log" <<<"$OUT" || fail "the message does not name the file: $OUT"
mountpoint -q "$MNT" && fail "$MNT mounted after a bad --log"

# --- 3. the mount helper's form -------------------------------------------------------

# served_by MNT: the daemon raidfuse list names for MNT, registered with
# lib.sh's cleanup.
served_by() {
	local pid
	pid=$("$R" list | awk -v m="$1" '$2 == m { print $NF }')
	[ -n "$pid" ] || fail "raidfuse list does not show $1: $("$R" list)"
	DAEMON_PID=$pid
	_DAEMON_OF[$1]=$pid
	_CHILD_OF[$1]=0
	_LOG_OF[$1]=$WORK/helper.log
	: >>"$WORK/helper.log"
}

# rw_image MNT: the image takes a write and reads it back.
rw_image() {
	local r
	r=$("$RFHELPER" pwrite "$1/array.img" 1048576 65536)
	[ "$r" = ret=65536 ] || fail "write to $1/array.img: $r"
	r=$("$RFHELPER" pread "$1/array.img" 1048576 65536)
	[ "$r" = ret=65536 ] || fail "read of $1/array.img: $r"
}

log "raidfuse CONFIG MNT -o OPTS (as mount.fuse3 runs it), generic options dropped"
"$R" "$D/a.conf" "$MNT" -o rw,noatime,nofail,_netdev,x-systemd.requires=network-online.target,defaults,dev,suid ||
	fail "raidfuse CONFIG MNT -o ... failed"
served_by "$MNT"
check '[ "$(findmnt -n -o FSTYPE --mountpoint "$MNT")" = fuse.raidfuse ]' "type $(findmnt -n -o FSTYPE --mountpoint "$MNT")"
rw_image "$MNT"
"$R" stop "$MNT"
wait_daemon_exit "$MNT"

log "-o ro: served read-only"
"$R" "raidfuse#$D/a.conf" "$MNT" -o ro,dev,suid || fail "raidfuse raidfuse#CONFIG MNT -o ro failed"
served_by "$MNT"
r=$("$RFHELPER" pwrite "$MNT/array.img" 0 4096)
check '[ "$r" = err=EROFS ] || [ "$r" = err=EACCES ]' "a write to the image mounted -o ro: $r"
r=$("$RFHELPER" pread "$MNT/array.img" 0 4096)
check '[ "$r" = ret=4096 ]' "a read of the image mounted -o ro: $r"
"$R" stop "$MNT"
wait_daemon_exit "$MNT"

log "an unknown option is refused by name"
expect_fail "$R" "$D/a.conf" "$MNT" -o noatime,bogus_opt
grep -q "bogus_opt" <<<"$OUT" || fail "the message does not name the option: $OUT"
mountpoint -q "$MNT" && fail "$MNT mounted with an unknown option"

if [ "$(id -u)" != 0 ] || ! command -v mount.fuse3 >/dev/null || ! command -v unshare >/dev/null ||
	[ ! -d /usr/local/sbin ]; then
	log "SKIP mount -t fuse.raidfuse and fstab: needs root, mount.fuse3 (fuse3), unshare and /usr/local/sbin"
else
	# mount(8) runs mount.fuse3 (no mount.fuse.raidfuse is needed), which
	# runs `raidfuse` through /bin/sh; mount clears PATH first, so the
	# shell's default path finds it: /usr/local/sbin first.  The build
	# under test goes there in a mount namespace of the test's own (a bind
	# mount nobody else sees), and each mount is made, used, unmounted
	# and its daemon waited for in there.
	mkdir -p "$WORK/bin"
	ln -s "$R" "$WORK/bin/raidfuse"
	cat >"$WORK/in-ns.sh" <<'NS'
set -eu
R=$1 H=$2 MNT=$3 LOG=$4
shift 4
mount --bind "$BIN" /usr/local/sbin
[ "$(command -v raidfuse)" = /usr/local/sbin/raidfuse ] || { echo "raidfuse is $(command -v raidfuse)"; exit 1; }
"$@" || { echo "'$*' failed"; exit 1; }
typ=$(findmnt -n -o FSTYPE --mountpoint "$MNT") || { echo "$MNT not mounted"; exit 1; }
[ "$typ" = fuse.raidfuse ] || { echo "$MNT type $typ"; exit 1; }
pid=$("$R" list | awk -v m="$MNT" '$2 == m { print $NF }')
[ -n "$pid" ] || { echo "raidfuse list does not show $MNT"; exit 1; }
r=$("$H" pwrite "$MNT/array.img" 1048576 65536); [ "$r" = ret=65536 ] || { echo "write: $r"; exit 1; }
r=$("$H" pread "$MNT/array.img" 1048576 65536); [ "$r" = ret=65536 ] || { echo "read: $r"; exit 1; }
umount "$MNT"
for i in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
kill -0 "$pid" 2>/dev/null && { echo "daemon $pid still runs 15 s after umount"; kill "$pid"; exit 1; }
echo "served by $pid, written, read, unmounted, daemon gone"
NS
	in_ns() {
		BIN=$WORK/bin unshare -m --propagation private bash "$WORK/in-ns.sh" "$R" "$RFHELPER" "$MNT" "$WORK/helper.log" "$@"
	}
	log "mount -t fuse.raidfuse CONFIG MNT -o noatime,log=FILE; umount"
	out=$(in_ns mount -t fuse.raidfuse "$D/a.conf" "$MNT" -o "noatime,log=$WORK/helper.log" 2>&1) ||
		fail "mount -t fuse.raidfuse: $out"
	log "  $out"
	grep -q "serving array.img" "$WORK/helper.log" || fail "log=FILE got nothing: $(cat "$WORK/helper.log")"

	log "an /etc/fstab line through mount -T FSTAB MNT; umount"
	printf '%s %s fuse.raidfuse noatime,nofail,_netdev,x-systemd.requires=network-online.target 0 0\n' \
		"$D/a.conf" "$MNT" >"$WORK/fstab"
	out=$(in_ns mount -T "$WORK/fstab" "$MNT" 2>&1) || fail "mount -T $WORK/fstab $MNT: $out"
	log "  $out"
fi

# --- 4. raidfuse@.service ---------------------------------------------------------------

UNIT_IN=$TOP_DIR/systemd/raidfuse@.service.in
[ -f "$UNIT_IN" ] || fail "no $UNIT_IN"
if command -v systemd-analyze >/dev/null; then
	log "systemd-analyze verify raidfuse@.service"
	mkdir -p "$WORK/unit"
	sed "s|@BINDIR@|$(dirname "$R")|g" "$UNIT_IN" >"$WORK/unit/raidfuse@.service"
	out=$(systemd-analyze verify --man=no "$WORK/unit/raidfuse@.service" 2>&1) ||
		fail "systemd-analyze verify: $out"
	[ -z "$out" ] || fail "systemd-analyze verify says: $out"
else
	log "SKIP systemd-analyze verify: no systemd-analyze"
fi
if [ "$(cat /proc/1/comm 2>/dev/null)" = systemd ]; then
	log "SKIP systemctl start/stop raidfuse@NAME: it would change this machine's /etc/raidfuse"
else
	log "SKIP systemctl start/stop raidfuse@NAME: PID 1 is $(cat /proc/1/comm 2>/dev/null), not systemd"
fi
log "PASS"
