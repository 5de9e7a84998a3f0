# SPDX-License-Identifier: GPL-2.0-or-later
# nbdkit.sh - nbdkit servers for the NBD tests (29, 31), sourced after lib.sh.
# shellcheck shell=bash
#
# Skips (77) without nbdkit or jq.  Sets D ($WORK/a: members, sockets),
# MNT ($WORK/mnt) and IMG (the image under it), and gives:
#   nbd_start NAME NBDKIT-ARGS...   nbdkit in the foreground (bounded by
#                       timeout(1): 120 s, then KILL) on $D/NAME.sock, or on
#                       TCP when the args start with -p (then they must give
#                       -P $WORK/nbdkit.NAME.pid, which is waited for);
#                       NBD_URI is its unix URI
#   nbd_proc NAME       the nbdkit process (timeout(1) is its parent)
#   nbd_stop NAME       stop it (continued first, if stopped) and wait
#   uri NAME            nbd+unix:///?socket=$D/NAME.sock
#   dev NAME ATTR       cat $MNT/md/dev-NAME/ATTR
#   member_failed NAME  NAME reads faulty, mdstat marks it (F), md/degraded >= 1
# Every nbdkit still running is continued and stopped at exit.
command -v nbdkit >/dev/null || skip "nbdkit not installed (Debian: nbdkit)"
command -v jq >/dev/null || skip "jq not installed"

D=$WORK/a
MNT=$WORK/mnt
IMG=$MNT/array.img
mkdir -p "$D"

declare -A NBD_PID=()
nbd_start() {
	local name=$1 i sock=(-U "$D/$1.sock" -P "$WORK/nbdkit.$1.pid")
	shift
	[ "$1" = -p ] && sock=()
	rm -f "$D/$name.sock" "$WORK/nbdkit.$name.pid"
	timeout -k 5 120 nbdkit -f "${sock[@]}" "$@" >"$WORK/nbdkit.$name.log" 2>&1 &
	NBD_PID[$name]=$!
	# nbdkit writes its pid file once it accepts connections (the
	# socket's name is there before it listens: a connection then is
	# refused).
	for ((i = 0; i < 100; i++)); do
		grep -q . "$WORK/nbdkit.$name.pid" 2>/dev/null && break
		kill -0 "${NBD_PID[$name]}" 2>/dev/null || fail "nbdkit $name exited: $(cat "$WORK/nbdkit.$name.log")"
		sleep 0.05
	done
	[ $i -lt 100 ] || fail "nbdkit $name: not listening after 5 s"
	NBD_URI="nbd+unix:///?socket=$D/$name.sock"
}
nbd_proc() { pgrep -P "${NBD_PID[$1]}" nbdkit; }
nbd_stop() {
	local p
	p=$(nbd_proc "$1" || true)
	[ -n "$p" ] && kill -CONT "$p" 2>/dev/null
	kill "${NBD_PID[$1]}" 2>/dev/null || true
	{ wait "${NBD_PID[$1]}"; } 2>/dev/null || true
	unset "NBD_PID[$1]"
}
_nbd_stop_all() {
	local n
	for n in "${!NBD_PID[@]}"; do
		pkill -CONT -P "${NBD_PID[$n]}" 2>/dev/null
		kill "${NBD_PID[$n]}" 2>/dev/null
	done
	return 0
}
trap '_rc=$?; _main_shell || exit $_rc; set +e; _nbd_stop_all; (exit $_rc); _cleanup' EXIT

uri() { echo "nbd+unix:///?socket=$D/$1.sock"; }
dev() { cat "$MNT/md/dev-$1/$2"; }
member_failed() {
	check "[ \"\$(dev $1 state)\" = faulty ]" "dev-$1/state after its server failed"
	grep -q " $1\[[0-9]*\](F)" "$MNT/mdstat" || fail "mdstat does not mark $1 (F): $(cat "$MNT/mdstat")"
	check '[ "$(cat $MNT/md/degraded)" -ge 1 ]' "md/degraded counts the failed member"
}
