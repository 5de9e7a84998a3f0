# SPDX-License-Identifier: GPL-2.0-or-later
# lib.sh - what every functional test sources.
# shellcheck shell=bash
#
# A test is a bash script tests/func/NN-name.sh that reads like a spec
# (mdadm's tests/ are the model): build an array, do something to it, check
# the state.  It exits 0 on success, 1 on failure, 77 to be skipped (the
# reason printed first).  run.sh runs them in order.
#
# What this file gives a test:
#   requires WHAT...       skip (77), with the reason, unless each of these
#                          is there: fuse fio root loop ext4 cc xz mdadm
#   $WORK                  a fresh directory for this test (under /dev/shm,
#                          else $TMPDIR), removed at exit
#   mk_conf CONF k=v...    write a raidfuse config
#   members N [PREFIX]     "d0.img d1.img ..." for mk_conf members=
#   create_array CONF      raidfuse create, must succeed
#   start_array CONF MNT   mount in the background (-f, log kept), wait for
#                          MNT/<name>; $DAEMON_PID is the daemon
#   start_array_daemon CONF MNT
#                          the same, letting raidfuse detach as users run it
#   start_assemble NAME MNT [ASSEMBLE ARGS...]
#                          raidfuse assemble -f MNT ARGS in the background,
#                          wait for MNT/NAME; $DAEMON_PID is the daemon
#   unmount MNT            fusermount3 -u, again while EBUSY (5 s)
#   stop_array MNT         unmount, wait for the daemon to exit (0)
#   wait_daemon_exit MNT   the same without the fusermount3 -u
#   wait_sync_idle MNT WHAT [SECONDS]
#                          md/sync_action back to idle, else fail
#   fio_verify [--verify_only] FILE ARGS
#                          fio with crc32c verify; fails on any error
#   loop_attach FILE [OPTS] / loop_detach DEV
#                          loop devices, detached at cleanup if still ours
#   build_helper           compile tests/func/rfhelper.c into $WORK
#   expect_fail CMD...     CMD must exit non-zero; its output in $OUT
#   check COND MSG / fail MSG / log MSG
#   known_bug WHAT CMD...  a check that fails today: XFAIL, not FAIL
#   md_images              IMAGES = the kernel md arrays' directory
#                          (tests/data/md-images), or fail
#   md_unpack LINE DIR     a manifest row's members into DIR (MEMBERS)
#   md_judge               RF_MD_JUDGE=1: MDJUDGE = mdpeer's md-judge.sh
#                          (kernel md in QEMU), or fail; else return 1
#   jval LINE KEY / jlist LINE KEY
#                          a manifest.jsonl field / list (as words)
#   full CMD...            CMD, except in a quick run (RF_QUICK=1)
#   ack_start ACKED [FIO ARGS...] / ack_wait ACKED WHAT / ack_verify ACKED WHAT
#                          acknowledged writes across a crash: ack_writer's
#                          numbered 4 KiB blocks go to $IMG (block k at
#                          k * STEP % NBLK; the test sets IMG, NBLK, STEP), k
#                          logged in ACKED once its write returned, beside fio
#                          writing 16-24 MiB; ack_wait after the crash (20
#                          blocks at least); ack_verify: each logged one reads back
# Cleanup runs at exit whatever happened: every array this test mounted is
# unmounted and its daemon waited for (killed, by pid, if it hangs), loop
# devices detached, file systems unmounted, $WORK removed.
#
# Environment: RAIDFUSE (the binary; default build/raidfuse of this tree),
# RF_KEEP=1 keeps $WORK for a post-mortem, RF_VERBOSE=1 shows every step,
# RF_STRICT=1 fails on known bugs, RF_QUICK=1 runs a sample of each table
# (one array per level and layout family: .ci/run's ASan pass).

set -eEu -o pipefail

FUNC_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP_DIR=$(cd "$FUNC_DIR/../.." && pwd)
TEST_NAME=$(basename "$0" .sh)
RAIDFUSE=${RAIDFUSE:-$TOP_DIR/build/raidfuse}

log() { echo "[$TEST_NAME] $*"; }
vlog() {
	[ "${RF_VERBOSE:-0}" = 1 ] && echo "[$TEST_NAME +$(((${EPOCHREALTIME/./} - _T0) / 1000))ms] $*"
	return 0
}
_T0=${EPOCHREALTIME/./}
fail() {
	echo "[$TEST_NAME] FAIL: $*" >&2
	exit 1
}
skip() {
	echo "[$TEST_NAME] SKIP: $*"
	exit 77
}
# Under set -e a failing command ends the test; say which one.
_on_err() {
	echo "[$TEST_NAME] FAIL: line $1: '$2' exited $3" >&2
}
trap '_on_err $LINENO "$BASH_COMMAND" $?' ERR

# check "COMMAND AS TEXT" MESSAGE: evaluate, fail with MESSAGE if false.
check() {
	eval "$1" || fail "$2 (check: $1)"
}

# known_bug "WHAT IS WRONG" CMD...: CMD checks something raidfuse gets
# wrong today (it calls fail like any check; it runs in a subshell, so it
# must not start arrays).  While the bug is there, this prints "XFAIL:
# known bug: ..." with CMD's output and the test goes on; once CMD passes
# it prints "XPASS: ..." (fixed: make it a plain check).  RF_STRICT=1 makes
# a known bug fail the test.
known_bug() {
	local what=$1 out rc=0
	shift
	out=$( ("$@") 2>&1) || rc=$?
	if [ $rc = 0 ]; then
		echo "[$TEST_NAME] XPASS: fixed? $what (make it a plain check)"
		return 0
	fi
	if [ "${RF_STRICT:-0}" = 1 ]; then
		echo "$out" >&2
		fail "known bug: $what"
	fi
	echo "[$TEST_NAME] XFAIL: known bug: $what"
	sed 's/^/    /' <<<"$out"
}

# full CMD...: a row of a test's table that only full runs take; a quick
# run (RF_QUICK=1) keeps the sample of rows not marked so.
full() {
	[ "${RF_QUICK:-0}" = 1 ] || "$@"
}

# each_level DIR MNT WHAT CHECK JOBS...: raid0 (3 members), raid5 (4) and
# raid10 (4), raid1 (2) and raid6 (5) too outside quick runs, each with 64
# KiB chunks on 24 MiB members in DIR (config DIR/rLEVEL.conf, members
# rLEVEL-N.img): created, mounted on MNT, fio_verify with JOBS on
# MNT/array.img, unmounted; then CHECK is evaluated ($level set, the
# daemon stopped) and must hold.  WHAT says what the level shows.
# EACH_LEVEL_OPTS: more options for each mount (none by default).
EACH_LEVEL_OPTS=()
each_level() {
	local dir=$1 mnt=$2 what=$3 cond=$4 spec level n
	shift 4
	local levels=("0 3" "5 4" "10 4")
	[ "${RF_QUICK:-0}" = 1 ] || levels+=("1 2" "6 5")
	for spec in "${levels[@]}"; do
		read -r level n <<<"$spec"
		log "raid$level, $n members: $what, fio verify"
		mk_conf "$dir/r$level.conf" level="$level" chunk_size=64K members="$(members "$n" "r$level-")" \
			member_size=24M
		create_array "$dir/r$level.conf"
		start_array "$dir/r$level.conf" "$mnt" "${EACH_LEVEL_OPTS[@]}"
		fio_verify "$mnt/array.img" "$@"
		stop_array "$mnt"
		check "$cond" "raid$level: $what"
	done
}

# ---------------------------------------------------------------- requires

requires() {
	local what
	for what; do
		case $what in
		fuse)
			[ -c /dev/fuse ] || skip "no /dev/fuse"
			[ -r /dev/fuse ] && [ -w /dev/fuse ] || skip "/dev/fuse is not accessible to $(id -un)"
			command -v fusermount3 >/dev/null || skip "fusermount3 not installed (Debian: fuse3)"
			[ -x "$RAIDFUSE" ] || fail "no raidfuse binary at $RAIDFUSE (make, or set RAIDFUSE)"
			;;
		fio)
			command -v fio >/dev/null || skip "fio not installed"
			;;
		root)
			[ "$(id -u)" = 0 ] || skip "needs root"
			;;
		loop)
			[ "$(id -u)" = 0 ] || skip "loop devices need root"
			command -v losetup >/dev/null || skip "losetup not installed (util-linux)"
			[ -e /dev/loop-control ] || skip "no /dev/loop-control (no loop driver here)"
			;;
		ext4)
			command -v mkfs.ext4 >/dev/null || skip "mkfs.ext4 not installed (e2fsprogs)"
			;;
		cc)
			command -v "${CC:-cc}" >/dev/null || skip "no C compiler (${CC:-cc})"
			;;
		xz)
			command -v xz >/dev/null || skip "xz not installed (xz-utils)"
			;;
		mdadm)
			command -v mdadm >/dev/null || skip "mdadm not installed"
			;;
		*)
			fail "requires: unknown requirement '$what'"
			;;
		esac
	done
}

# ---------------------------------------------------------------- work dir

_pick_tmp() {
	if [ -d /dev/shm ] && [ -w /dev/shm ]; then
		echo /dev/shm
	else
		echo "${TMPDIR:-/tmp}"
	fi
}
WORK=$(mktemp -d "$(_pick_tmp)/raidfuse-$TEST_NAME.XXXXXX") || fail "cannot make a work directory"
chmod 755 "$WORK"

# ---------------------------------------------------------------- cleanup

declare -A _DAEMON_OF=()    # mount point -> daemon pid (our child)
declare -A _LOG_OF=()       # mount point -> daemon log
declare -A _CHILD_OF=()     # mount point -> 1 if the daemon is our child
_LOOPS=()                   # loop devices this test attached (and holds)
_FSMOUNTS=()                # file systems this test mounted (mount points)

# Whether this is the test's own shell, not a subshell of it.  A subshell
# that a signal reaches before it has dropped the traps it inherited runs
# them (bash), and the EXIT trap would unmount the test's arrays and
# remove its work directory under it: every EXIT trap starts with this.
_main_shell() { [ "$BASHPID" = "$$" ]; }

# Directories a test makes outside $WORK (members on a disk file system):
# _RM_DIRS+=(DIR), removed with $WORK at the end.
_RM_DIRS=()
_cleanup() {
	local rc=$? c mnt pid i
	_main_shell || return 0
	trap - EXIT ERR
	set +e
	for mnt in "${_FSMOUNTS[@]}"; do
		mountpoint -q "$mnt" 2>/dev/null && { umount "$mnt" 2>/dev/null || umount -l "$mnt"; }
	done
	for c in "${_LOOPS[@]}"; do
		losetup -d "$c" 2>/dev/null
	done
	for mnt in "${!_DAEMON_OF[@]}"; do
		pid=${_DAEMON_OF[$mnt]}
		mountpoint -q "$mnt" 2>/dev/null && fusermount3 -u -z "$mnt" 2>/dev/null
		for i in $(seq 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$pid" 2>/dev/null; then
			echo "[$TEST_NAME] cleanup: daemon $pid for $mnt still running; killing it" >&2
			kill -TERM "$pid" 2>/dev/null
			sleep 1
			kill -KILL "$pid" 2>/dev/null
		fi
		if [ "$rc" != 0 ] && [ "$rc" != 77 ] && [ -s "${_LOG_OF[$mnt]}" ]; then
			echo "[$TEST_NAME] daemon log for $mnt:" >&2
			tail -n 30 "${_LOG_OF[$mnt]}" | sed 's/^/    /' >&2
		fi
	done
	wait 2>/dev/null
	if [ "${RF_KEEP:-0}" = 1 ]; then
		echo "[$TEST_NAME] kept $WORK ${_RM_DIRS[*]}" >&2
	else
		rm -rf "$WORK" "${_RM_DIRS[@]}"
	fi
	exit "$rc"
}
trap _cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
trap 'exit 129' HUP

# ---------------------------------------------------------------- configs

# members N [PREFIX]: the names PREFIX0.img .. PREFIX(N-1).img.
members() {
	local n=$1 p=${2:-d} i out=""
	for ((i = 0; i < n; i++)); do
		out+="${out:+ }$p$i.img"
	done
	echo "$out"
}

# mk_conf CONF key=value...
#   members="a b missing c"   the members, in role order
#   tuning.KEY=VALUE          goes to the tuning group
#   a value of digits only is written bare (md's unit for that key),
#   anything else quoted.  name defaults to array.img; metadata to "none"
#   (superblock-less members, whose every byte a test may check), unless
#   given (metadata=1.2).
mk_conf() {
	local conf=$1 kv key val m arr="" tun="" have_name=0 have_meta=0
	shift
	for kv; do
		key=${kv%%=*}
		val=${kv#*=}
		case $key in
		members | spares)
			local list=""
			for m in $val; do
				list+="${list:+, }\"$m\""
			done
			val="( $list )"
			;;
		*)
			[[ $val =~ ^[0-9]+$ ]] || val="\"$val\""
			;;
		esac
		case $key in
		tuning.*) tun+="	${key#tuning.} = $val;"$'\n' ;;
		name) have_name=1; arr+="	$key = $val;"$'\n' ;;
		metadata) have_meta=1; arr+="	$key = \"${val//\"/}\";"$'\n' ;;
		*) arr+="	$key = $val;"$'\n' ;;
		esac
	done
	[ $have_name = 1 ] || arr="	name = \"array.img\";"$'\n'"$arr"
	[ $have_meta = 1 ] || arr="	metadata = \"none\";"$'\n'"$arr"
	{
		echo "# $TEST_NAME"
		printf 'array: {\n%s};\n' "$arr"
		[ -z "$tun" ] || printf 'tuning: {\n%s};\n' "$tun"
	} >"$conf"
	vlog "config $conf:"$'\n'"$(cat "$conf")"
}

# The image name a config serves.
conf_name() {
	local l re='^[[:space:]]*name[[:space:]]*=[[:space:]]*"([^"]*)"'
	while IFS= read -r l || [ -n "$l" ]; do
		[[ $l =~ $re ]] && { echo "${BASH_REMATCH[1]}"; return 0; }
	done <"$1"
	return 0
}

create_array() {
	local out
	out=$("$RAIDFUSE" create "$@" 2>&1) || fail "raidfuse create $* failed:"$'\n'"$out"
	vlog "$out"
}

# ---------------------------------------------------------------- daemon

# _log_name MNT: the caller's logf, a new daemon log in $WORK named for MNT.
_log_name() {
	local b=${1%/}
	logf=$WORK/daemon.${b##*/}.$((${#_LOG_OF[@]} + 1)).log
}

# start_array CONF MNT [mount options...]: serve CONF on MNT (foreground
# daemon in the background, log in $WORK), wait until MNT/<name> is there.
# Sets DAEMON_PID.
start_array() {
	local conf=$1 mnt=$2 logf
	shift 2
	_pre_start "$conf" "$mnt"
	_log_name "$mnt"
	"$RAIDFUSE" mount "$conf" "$mnt" -f "$@" >"$logf" 2>&1 &
	DAEMON_PID=$!
	_DAEMON_OF[$mnt]=$DAEMON_PID
	_CHILD_OF[$mnt]=1
	_LOG_OF[$mnt]=$logf
	_wait_served "$conf" "$mnt"
}

# _find_daemon CMDLINE...: DAEMON_PID is the process whose command line
# (its words joined by spaces, one after the last) is one of CMDLINEs,
# or empty.
_find_daemon() {
	local p cmd args want
	DAEMON_PID=
	for p in /proc/[0-9]*; do
		# (a process may end between the glob and the read)
		{ mapfile -d '' -t args <"$p/cmdline"; } 2>/dev/null || continue
		[ ${#args[@]} -gt 0 ] || continue
		printf -v cmd '%s ' "${args[@]}"
		for want; do
			[ "$cmd" = "$want" ] || continue
			DAEMON_PID=${p#/proc/}
			return 0
		done
	done
}

# start_array_daemon CONF MNT [mount options...]: the same, the way a user
# runs it: raidfuse detaches (and logs to syslog); the command must exit 0
# once the image is served.  DAEMON_PID is found by its command line.
start_array_daemon() {
	local conf=$1 mnt=$2 logf out
	shift 2
	_pre_start "$conf" "$mnt"
	_log_name "$mnt"
	_LOG_OF[$mnt]=$logf
	out=$(timeout 20 "$RAIDFUSE" mount "$conf" "$mnt" "$@" 2>&1) ||
		fail "raidfuse mount $conf $mnt (detaching) failed: $out"
	echo "$out" >"$logf"
	_find_daemon "$RAIDFUSE mount $conf $mnt $* " "$RAIDFUSE mount $conf $mnt "
	[ -n "$DAEMON_PID" ] || fail "raidfuse mount returned, but no daemon for $mnt is running"
	_DAEMON_OF[$mnt]=$DAEMON_PID
	_CHILD_OF[$mnt]=0
	_wait_served "$conf" "$mnt"
}

# start_assemble_daemon NAME MNT [assemble args...]: raidfuse assemble
# ARGS MNT as a user runs it (it detaches; the command must exit 0 once
# the image is served; --log FILE is added, the daemon's log, and what the
# command itself printed before it detached is appended there).  Sets
# DAEMON_PID, found by its command line.
start_assemble_daemon() {
	local name=$1 mnt=$2 logf out
	shift 2
	mkdir -p "$mnt"
	mountpoint -q "$mnt" && fail "start_assemble_daemon: $mnt is already a mount point"
	_log_name "$mnt"
	_LOG_OF[$mnt]=$logf
	out=$(timeout 20 "$RAIDFUSE" assemble --log "$logf" "$mnt" "$@" 2>&1) ||
		fail "raidfuse assemble $mnt $* (detaching) failed: $out"
	# (the daemon appends too: O_APPEND, a line at a time)
	[ -z "$out" ] || printf '%s\n' "$out" >>"$logf"
	_find_daemon "$RAIDFUSE assemble --log $logf $mnt $* "
	[ -n "$DAEMON_PID" ] || fail "raidfuse assemble returned, but no daemon for $mnt is running"
	_DAEMON_OF[$mnt]=$DAEMON_PID
	_CHILD_OF[$mnt]=0
	_wait_served "assemble $*" "$mnt" "$name"
}

# start_assemble NAME MNT [assemble args...]: serve the array the members'
# superblocks describe (raidfuse assemble -f MNT ARGS, in the background,
# log in $WORK), wait until MNT/NAME is there.  Sets DAEMON_PID.
start_assemble() {
	local name=$1 mnt=$2 logf
	shift 2
	mkdir -p "$mnt"
	mountpoint -q "$mnt" && fail "start_assemble: $mnt is already a mount point"
	_log_name "$mnt"
	"$RAIDFUSE" assemble -f "$mnt" "$@" >"$logf" 2>&1 &
	DAEMON_PID=$!
	_DAEMON_OF[$mnt]=$DAEMON_PID
	_CHILD_OF[$mnt]=1
	_LOG_OF[$mnt]=$logf
	_wait_served "assemble $*" "$mnt" "$name"
}

_pre_start() {
	[ -n "$(conf_name "$1")" ] || fail "start_array: no name in $1"
	mkdir -p "$2"
	mountpoint -q "$2" && fail "start_array: $2 is already a mount point"
	# Files beneath a mount point are a write that missed the array (one
	# made after a lazy unmount): the mount would hide them.
	[ -z "$(ls -A "$2")" ] || fail "start_array: $2 is not empty: $(ls -A "$2" | head -n 3 | tr '\n' ' ')"
	return 0
}

# Wait (10 s at most) until MNT/<name> is served by $DAEMON_PID (name from
# the config CONF, or NAME when given; CONF is then only a label).
_wait_served() {
	local conf=$1 mnt=$2 name=${3:-} i rc
	[ -n "$name" ] || name=$(conf_name "$conf")
	for ((i = 0; i < 200; i++)); do
		if [ -f "$mnt/$name" ] && mountpoint -q "$mnt"; then
			vlog "serving $mnt/$name (pid $DAEMON_PID)"
			return 0
		fi
		if ! kill -0 "$DAEMON_PID" 2>/dev/null; then
			rc=0
			[ "${_CHILD_OF[$mnt]}" = 1 ] && { wait "$DAEMON_PID" || rc=$?; }
			unset "_DAEMON_OF[$mnt]"
			fail "raidfuse mount $conf $mnt exited ($rc) before serving; its log:"$'\n'"$(cat "${_LOG_OF[$mnt]}")"
		fi
		sleep 0.05
	done
	fail "raidfuse mount $conf $mnt: $mnt/$name did not appear in 10 s; log:"$'\n'"$(cat "${_LOG_OF[$mnt]}")"
}

# unmount MNT: fusermount3 -u, again while the mount is busy, 5 s at most.
unmount() {
	local mnt=$1 i out
	# A reader that just ended may hold the mount a moment longer (EBUSY).
	for ((i = 0; i < 50; i++)); do
		out=$(timeout 30 fusermount3 -u "$mnt" 2>&1) && return 0
		[[ $out == *"Device or resource busy"* ]] || fail "fusermount3 -u $mnt failed: $out"
		sleep 0.1
	done
	fail "fusermount3 -u $mnt: still busy after 5 s: $out; holders: $(fuser -vm "$mnt" 2>&1 | tr '\n' ' ')"
}

# stop_array MNT: unmount, then the daemon must exit soon (with status 0,
# when it is our child).
stop_array() {
	local mnt=$1
	[ -n "${_DAEMON_OF[$mnt]:-}" ] || fail "stop_array: nothing of ours is mounted on $mnt"
	unmount "$mnt"
	wait_daemon_exit "$mnt"
	mountpoint -q "$mnt" && fail "$mnt still mounted after stop_array"
	vlog "stopped $mnt"
	return 0
}

# hang_report PID: what a daemon that does not stop is doing: each
# thread's name, wait channel and kernel stack (root), and which
# processes hold files of a FUSE mount open.  (No debugger: one that
# stops a FUSE server and then looks at its files would wait forever.)
hang_report() {
	local pid=$1 t p
	echo "daemon $pid does not stop; its threads:"
	for t in /proc/"$pid"/task/*; do
		echo "  $(basename "$t") $(cat "$t/comm" 2>/dev/null) wchan=$(cat "$t/wchan" 2>/dev/null)"
		sed 's/^/      /' "$t/stack" 2>/dev/null | head -n 8
	done
	echo "processes with a file on a FUSE mount open:"
	for p in /proc/[0-9]*; do
		ls -l "$p/fd" 2>/dev/null | grep -qE 'raidfuse-|array\.img' &&
			echo "  $(basename "$p") $(tr '\0' ' ' <"$p/cmdline" 2>/dev/null | cut -c1-100)"
	done
	grep fuse /proc/mounts || true
}

# wait_daemon_exit MNT [--any-status]: the daemon serving MNT ends within
# 15 s; a child of ours must exit 0 (unless --any-status).  Its status is
# left in DAEMON_RC (0 when it was not our child).
wait_daemon_exit() {
	local mnt=$1 pid i
	pid=${_DAEMON_OF[$mnt]}
	for ((i = 0; i < 300; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$pid" 2>/dev/null; then
		hang_report "$pid" >&2
		fail "daemon $pid for $mnt still running 15 s after it was told to stop"
	fi
	DAEMON_RC=0
	[ "${_CHILD_OF[$mnt]}" = 1 ] && { wait "$pid" || DAEMON_RC=$?; }
	unset "_DAEMON_OF[$mnt]"
	[ $DAEMON_RC = 0 ] || [ "${2:-}" = --any-status ] ||
		fail "daemon for $mnt exited with status $DAEMON_RC; log:"$'\n'"$(cat "${_LOG_OF[$mnt]}")"
	return 0
}

# loop_attach FILE [losetup options...]: a loop device on FILE; LOOP is its
# name.  loop_detach DEV: detach it (and no longer clean it up: whoever
# takes the device next is not ours to detach).
loop_attach() {
	local file=$1
	shift
	LOOP=$(losetup -f --show "$@" "$file") || fail "losetup $* $file failed"
	_LOOPS+=("$LOOP")
}
loop_detach() {
	local dev=$1 i keep=()
	losetup -d "$dev" || fail "losetup -d $dev failed"
	for i in "${_LOOPS[@]}"; do
		[ "$i" = "$dev" ] || keep+=("$i")
	done
	_LOOPS=("${keep[@]}")
}

# wait_sync_idle MNT WHAT [SECONDS]: MNT/md/sync_action reads idle within
# SECONDS (default 60), else fail naming WHAT.
wait_sync_idle() {
	local mnt=$1 what=$2 secs=${3:-60} i
	for ((i = 0; i < secs * 10; i++)); do
		[ "$(cat "$mnt/md/sync_action")" = idle ] && return 0
		sleep 0.1
	done
	fail "$what: md/sync_action still '$(cat "$mnt/md/sync_action")' after $secs s"
}

# wait_mdstat MNT TEXT WHAT [SECS]: MNT/mdstat shows TEXT (a fixed string,
# e.g. "[3/3] [UUU]" or "d1.img[1](F)") within SECS (60) seconds.
wait_mdstat() {
	local mnt=$1 text=$2 what=$3 secs=${4:-60} i
	for ((i = 0; i < secs * 10; i++)); do
		grep -qF "$text" "$mnt/mdstat" && return 0
		sleep 0.1
	done
	fail "$what: $mnt/mdstat did not show '$text' in $secs s: $(cat "$mnt/mdstat")"
}

# The daemon's log file for MNT (of its latest start).
daemon_log_file() { echo "${_LOG_OF[$1]}"; }

# log_has MNT REGEX [SECS]: the daemon's log of MNT holds a line matching
# REGEX (grep -E) within SECS (10) seconds; false if not.  For lines the
# daemon may write after the image appears (the rings' registration).
log_has() {
	local f i secs=${3:-10}
	f=$(daemon_log_file "$1")
	for ((i = 0; i < secs * 10; i++)); do
		grep -Eq "$2" "$f" && return 0
		sleep 0.1
	done
	return 1
}

# ---------------------------------------------------------------- md-images

# md_images: set IMAGES to the arrays kernel md made: RF_MD_IMAGES, else
# the tree's own tests/data/md-images (README.md there).  They are part of
# the tree, so a missing manifest is a failure, not a skip.
md_images() {
	IMAGES=${RF_MD_IMAGES:-$TOP_DIR/tests/data/md-images}
	[ -f "$IMAGES/manifest.jsonl" ] ||
		fail "no md-images manifest at $IMAGES/manifest.jsonl (RF_MD_IMAGES=${RF_MD_IMAGES:-unset})"
}

# md_unpack LINE DIR: the members of the manifest row LINE, in role order,
# decompressed into DIR/roleN.img (the originals are never touched); sets
# MEMBERS to their paths.
md_unpack() {
	local n i
	n=$(jval "$1" raid_disks)
	mkdir -p "$2"
	MEMBERS=()
	for ((i = 0; i < n; i++)); do
		xz -dc "$IMAGES/$(jval "$1" name)/role$i.img.xz" >"$2/role$i.img"
		MEMBERS+=("$2/role$i.img")
	done
}

# raidfuse_has SYMBOL: the daemon binary names SYMBOL (a sanitizer's,
# a wrapper's).  grep reads all of nm's output: with pipefail, grep -q
# leaving early would fail the pipeline by nm's SIGPIPE.
raidfuse_has() {
	[ "$(nm "$RAIDFUSE" 2>/dev/null | grep -c -- "$1")" -gt 0 ]
}

# md_judge: with RF_MD_JUDGE=1, set MDJUDGE to mdpeer's md-judge.sh, which
# has kernel md (in QEMU) assemble and check members raidfuse wrote:
# MDJUDGE, else $MDPEER/md-judge.sh, else shared/tools/mdpeer beside this
# repository.  mdpeer is not part of this tree; when RF_MD_JUDGE=1 asks for
# it and it is not there, the test fails saying where it looked.  Returns 1
# (no kernel md check wanted) without RF_MD_JUDGE=1.
md_judge() {
	[ "${RF_MD_JUDGE:-0}" = 1 ] || return 1
	MDJUDGE=${MDJUDGE:-${MDPEER:-$TOP_DIR/../shared/tools/mdpeer}/md-judge.sh}
	[ -x "$MDJUDGE" ] ||
		fail "RF_MD_JUDGE=1: no mdpeer md-judge.sh at $MDJUDGE (set MDPEER=DIR or MDJUDGE=FILE)"
}

# Manifest fields, from one JSON line (flat enough for sed): the first
# "KEY": value; strings lose their quotes, lists become words.
jval() {
	grep -o "\"$2\": \(\"[^\"]*\"\|[-0-9]*\|null\|true\|false\)" <<<"$1" | head -n 1 |
		sed "s/^\"$2\": //; s/^\"//; s/\"\$//"
}
jlist() {
	grep -o "\"$2\": \[[^]]*\]" <<<"$1" | head -n 1 | sed "s/^\"$2\": \[//; s/\]\$//; s/[\",]/ /g"
}

# ---------------------------------------------------------------- checks

# fio_verify [--verify_only] FILE FIO-ARGS...: write a job whose every
# block carries a crc32c header naming its own offset, read it all back and
# check it, with O_DIRECT and io_uring at queue depth 16 unless FIO-ARGS
# say otherwise.  Any IO error or verify error fails the test.  FIO-ARGS
# may hold several jobs, each starting with --name=...; they run at once.
# Later, the same FIO-ARGS with --verify_only only read and check: fio
# replays the same offsets and sizes (randrepeat), so this finds the data
# still there.
fio_verify() {
	local globals=(--direct=1 --ioengine=io_uring --iodepth=16 --verify=crc32c
		--do_verify=1 --verify_fatal=1 --verify_state_save=0 --randrepeat=1
		--clocksource=clock_gettime)
	local out=$WORK/fio.out file
	if [ "$1" = --verify_only ]; then
		globals+=(--verify_only)
		shift
	fi
	file=$1
	shift
	[[ " $* " == *" --name="* ]] || set -- --name=rfverify "$@"
	vlog "fio ${globals[*]} $*"
	if ! fio --filename="$file" "${globals[@]}" "$@" >"$out" 2>&1; then
		sed 's/^/    /' "$out" | head -n 40 >&2
		fail "fio on $file failed: ${globals[*]} $*"
	fi
	grep -q 'err= 0' "$out" || { cat "$out" >&2; fail "fio reported an error: $*"; }
	if grep -q 'err= *[1-9-]' "$out"; then
		cat "$out" >&2
		fail "fio reported an error: $*"
	fi
	grep -q 'READ:' "$out" || { cat "$out" >&2; fail "fio read nothing back (no verify pass?): $*"; }
	grep -q '^verify:' "$out" && { cat "$out" >&2; fail "fio verify complained: $*"; }
	return 0
}

# ack_pattern K: the 4 KiB block numbered K (its number, 8 bytes a line).
ack_pattern() {
	local l
	printf -v l '%07d' "$1"
	printf "$l\n%.0s" {1..512}
}

# ack_writer ACKED: numbered blocks, one dd each; a number goes to ACKED
# only once its dd (O_DIRECT, fsync) returned.  Ends at the first failed dd.
# nocreat: a dd started after a kill's lazy unmount would otherwise create
# a plain file in the directory beneath the mount, succeed, and count a
# block the array never saw as acknowledged.
ack_writer() {
	local acked=$1 k
	for ((k = 0; k < NBLK; k++)); do
		ack_pattern "$k" | dd of="$IMG" bs=4096 seek=$((k * STEP % NBLK)) count=1 iflag=fullblock \
			oflag=direct conv=fsync,notrunc,nocreat status=none 2>/dev/null || return 0
		echo "$k" >>"$acked"
	done
}

# ack_start ACKED [FIO ARGS...]: ACKED emptied; fio writing random data at
# 16-24 MiB of $IMG and ack_writer ACKED, both in the background; returns
# once 200 blocks are acknowledged, or after 5 s once 30 are (60 s at most).
ack_start() {
	local acked=$1 lines now t0=${EPOCHREALTIME/./}
	shift
	: >"$acked"
	fio --name=bg --filename="$IMG" --rw=randwrite --bs=4k --offset=16M --size=8M --direct=1 \
		--ioengine=libaio --time_based --runtime=60 "$@" >/dev/null 2>&1 &
	_ACK_PIDS=($!)
	ack_writer "$acked" &
	_ACK_PIDS+=($!)
	while :; do
		mapfile -t lines <"$acked"
		now=$(((${EPOCHREALTIME/./} - t0) / 1000000))
		[ ${#lines[@]} -ge 200 ] || { [ $now -ge 5 ] && [ ${#lines[@]} -ge 30 ]; } || [ $now -ge 60 ] && break
		sleep 0.05
	done
}

# ack_wait ACKED WHAT: after the crash, the writers end; 20 blocks at
# least were acknowledged before it.
ack_wait() {
	wait "${_ACK_PIDS[1]}" || true
	wait "${_ACK_PIDS[0]}" 2>/dev/null || true
	[ "$(wc -l <"$1")" -ge 20 ] || fail "$2: only $(wc -l <"$1") blocks written before the kill"
}

# ack_verify ACKED WHAT: every block whose number ACKED holds reads back.
ack_verify() {
	local acked=$1 what=$2 k n=0 copy=$WORK/copy.img
	dd if="$IMG" of="$copy" bs=1M count=$((NBLK * 4096 >> 20)) iflag=direct status=none ||
		fail "$what: reading the image back failed"
	while read -r k; do
		cmp -s -n 4096 -i 0:$((k * STEP % NBLK * 4096)) <(ack_pattern "$k") "$copy" ||
			fail "$what: acknowledged block $k (image block $((k * STEP % NBLK))) reads back wrong"
		n=$((n + 1))
	done <"$acked"
	rm -f "$copy"
	log "$what: all $n acknowledged blocks read back"
}

# expect_fail CMD...: CMD must fail; its output (stdout+stderr) in $OUT, its
# status in $RC.
expect_fail() {
	RC=0
	OUT=$("$@" 2>&1) || RC=$?
	[ $RC != 0 ] || fail "expected failure, but it succeeded: $*"$'\n'"$OUT"
	vlog "failed as expected ($RC): $*: $OUT"
	return 0
}

# build_helper: compile rfhelper.c (pattern check, XOR check, single
# syscalls) into $WORK; sets RFHELPER.
build_helper() {
	requires cc
	RFHELPER=$WORK/rfhelper
	"${CC:-cc}" -O2 -Wall -Wextra -Werror -D_GNU_SOURCE -o "$RFHELPER" "$FUNC_DIR/rfhelper.c" ||
		fail "cannot compile $FUNC_DIR/rfhelper.c"
}

# region_sum FILE MiB: sha256 of the first MiB MiB of FILE, read with
# O_DIRECT.
region_sum() {
	dd if="$1" bs=1M count="$2" iflag=direct status=none | sha256sum
}

# The size of a file in bytes.
fsize() { stat -c %s "$1"; }

# field FILE LABEL: the value after "LABEL : " in examine's (or mdadm's)
# output, its first line.
field() { sed -n "s/^ *$2 : //p" "$1" | head -n1; }

# xbitmap MEMBER OUT: mdadm --examine-bitmap of the internal bitmap of a
# 1.2 member (the 4 KiB at sector 16, 8 sectors after its superblock), into
# OUT (the copy it reads: OUT.bm).
xbitmap() {
	dd if="$1" of="$2.bm" bs=512 skip=16 count=8 status=none
	mdadm --examine-bitmap "$2.bm" >"$2" 2>&1 || fail "mdadm -X of $1's bitmap: $(cat "$2")"
}

# ---------------------------------------------------------------- md files

# array_dirs: D (the member files' directory, made), MNT (where the array
# is served) and IMG (its image) under $WORK.
array_dirs() {
	D=$WORK/a
	MNT=$WORK/mnt
	IMG=$MNT/array.img
	mkdir -p "$D"
}

# val ATTR: md/ATTR of the array on $MNT; dev_state NAME: md/dev-NAME/state.
val() { cat "$MNT/md/$1"; }
dev_state() { cat "$MNT/md/dev-$1/state"; }

# wait_for WHAT CMD: CMD (eval'd) true within WAIT_SECS (60) seconds, else
# fail naming WHAT, with mdstat and resync_start of $MNT.
wait_for() {
	local what=$1 i
	shift
	for ((i = 0; i < ${WAIT_SECS:-60} * 10; i++)); do
		eval "$*" && return 0
		sleep 0.1
	done
	fail "$what: not within ${WAIT_SECS:-60} s ($*); mdstat: $(cat "$MNT/mdstat"); resync_start $(val resync_start)"
}
