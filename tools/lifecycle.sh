#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# lifecycle.sh - an array's life, event by event, against a model of it.
#
#   tools/lifecycle.sh --level 0|1|4|5|6|10 [--nbd] [--uring] [--steps N]
#                      [--seed S] [--break] [--keep] [--keep-going]
#                      [--dir DIR] [--seq-len M] [--truncate] [--no EVENT]...
#                      [--save DIR] [--weight EVENT=N]... [-v]
#   tools/lifecycle.sh --replay FILE [--keep] [-v]
#
# Every feature of raidfuse passes its own tests; what breaks is where they
# meet over time: a member fails, the daemon is killed, a spare takes over,
# the array is stopped and assembled again.  This tool draws sequences of
# such events at random (deterministic from --seed) and runs them against a
# real array, served the way a user serves it (`raidfuse mount CONFIG MNT`
# or `raidfuse assemble MNT MEMBER...`, daemonized: no -f), its members
# files in DIR (default: a fresh directory under $TMPDIR or /tmp, not
# /dev/shm).  After every step it checks the array against a model:
#
#   data      every tracked 4 KiB block (192 of them spread over the image,
#             each holding its number and a generation: build/lcblocks)
#             holds the last generation an fsync acknowledged; a block
#             being written when the daemon was killed may hold the old or
#             the new one.  A read error where the data survives is a
#             violation; where the array is past what its level survives,
#             reads may fail but never return wrong data.
#   state     md/degraded, mdstat's [UU_U], and each device in
#             `raidfuse status --json` (slot, in_sync / spare / faulty) as
#             the model says which file holds which role; `raidfuse
#             examine` of each member file (its role, spare; after a clean
#             stop one events count on every in-sync member).
#   outcome   a command the model says must work works, one it says must
#             be refused is (a write to an array past its failures, a mount
#             or assemble of one, a member given under a second name).
#   time      every command runs under timeout(1); a step that outlives its
#             deadline (30 s; 90 s for a rebuild or check) is a hang.
#
# Events (the name --no takes to leave one out):
#   write      fsync-acknowledged writes of 1..16 blocks, a new generation
#   fail       `raidfuse ctl MNT fail NAME` (sometimes with the rebuild
#              slowed down first, so later steps meet it half way)
#   failw      fail NAME while fsync'd writes run; then wait for them, or
#              (half the time; --break: always) kill -9 the daemon under
#              them, and `mount CONFIG` next: the failed member must stay
#              out and every write acknowledged after the failure be there
#   unlink     rm of a member file while served (then the config names it
#              "missing", as the refusal of a mount tells users to)
#   inject     md/dev-NAME/fault error=EIO on writes, then a write
#   truncate   truncate the member file to 0 and back (off unless
#              --truncate)
#   nbdkill    kill -9 of a member's nbdkit (--nbd only)
#   crash      kill -9 of the daemon, idle or with writes in flight (also
#              degraded: tracked blocks are further apart than a parity
#              row, so md's write hole never reaches one; a degraded
#              raid4/5/6 left dirty is refused by mount and assemble as md
#              refuses it, and then served with --force)
#   stop       `raidfuse stop MNT` where that exists, else fusermount3 -u;
#              then the daemon must exit
#   mount      `raidfuse mount CONFIG MNT`
#   assemble   `raidfuse assemble MNT` with every member file there is
#              (stale and failed ones too: they must be left out)
#   add        a new file as a spare (`ctl add`), then listed in the config
#   rebuild    wait for md/sync_action idle: the rebuilt slots in sync
#   readd      `ctl re-add NAME` of a failed member whose slot is empty
#   remove     `ctl remove NAME` of a failed member
#   check      `ctl --wait check` (and repair): mismatch_cnt 0 when in sync
#   suspend    md/array_state suspended with writers queued: they wait,
#              then complete once active
#   alias      a member under a second name: a symlink (or a loop device)
#              given to `ctl add`, or to a second assemble: refused
#   overfail   members failed until the level cannot go on: writes must
#              fail, mount and assemble must refuse; a new sequence follows
#   grow       one member more: a new file given to `raidfuse grow MNT
#              --raid-devices N+1 --add FILE` (raid1: a mirror, rebuilt;
#              raid4/5/6 and raid10: a reshape, with fsync'd writes running through
#              it; raid0: the same through a raid4 whose P slot stays
#              empty, a raid0 of N+1 again at its end: no pace can be set
#              before it starts, so its walk is over before a kill, and
#              62-takeover kills one mid-way), then one of: wait for its end; kill -9 the daemon
#              half way (the walk slowed), mount CONFIG (which lists the
#              new member), and the reshape must resume and end; fail a
#              member half way: the walk goes on degraded and a spare
#              takes the slot only once it ended.  Up to two per sequence.
# Each sequence starts with `raidfuse create` (--assume-clean, 0 or 1
# spare) and runs up to --seq-len steps (default 40).
#
# Output: a line per sequence, then "lifecycle: level L: N sequences,
# S steps, V violations, T s".  On a violation it prints what was wrong and
# the sequence so far as a script (REPLAY: the exact commands, with "#@"
# lines naming each event), which runs again as `tools/lifecycle.sh
# --replay FILE` (the events redone and checked) or as plain bash (the
# commands alone).  It exits 1 then; --keep-going saves the script
# (--save DIR, default DIR/found) and goes on with a new sequence.
#
# --break runs a build with an old bug put back (build-break/raidfuse,
# made with BREAK=-DRF_BREAK_STALE_ROLE when RAIDFUSE is not one: mount
# CONFIG takes back a member recorded as failed one event ago, trusting its
# own superblock's role) and draws the sequence that meets it often: the
# run must then find violations.
# --weight EVENT=N draws EVENT N times as often as its default weight
# takes (W below) where it applies: --weight grow=40 meets reshapes often.
# The daemons run with the environment's RAIDFUSE_TEST_BREAK: the grow
# event's controls are reshape-record (a reshape's position never
# recorded: its kill finds writes lost), reshape-degraded (a member
# failed mid-reshape read as if whole: its fail finds them) and
# reshape-prefetch (rows read ahead kept after a write: its writes).
# --nbd serves each member through nbdkit (file plugin, a unix socket);
# --uring mounts with -o io_uring=on (enable_uring switched on, and back).
# Environment: RAIDFUSE (default build/raidfuse), LCBLOCKS (build/lcblocks).
set -uo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
RAIDFUSE=${RAIDFUSE:-$here/build/raidfuse}
LCB=${LCBLOCKS:-$here/build/lcblocks}

usage() {
	sed -n '3,8p' "$0" | sed 's/^# *//' >&2
	exit 2
}

LEVEL="" NBD=0 URING=0 STEPS=200 SEED=1 BRK=0 KEEP=0 GOING=0 DIR="" SEQLEN=40 TRUNC=0
REPLAY_IN="" SAVE="" VERB=0 SELFTEST=0 WEIGHTS=()
declare -A NOEV=()
while [ $# -gt 0 ]; do
	case $1 in
	--level) LEVEL=${2:-}; shift ;;
	--nbd) NBD=1 ;;
	--uring) URING=1 ;;
	--steps) STEPS=${2:-}; shift ;;
	--seed) SEED=${2:-}; shift ;;
	--break) BRK=1 ;;
	--keep) KEEP=1 ;;
	--keep-going) GOING=1 ;;
	--dir) DIR=${2:-}; shift ;;
	--seq-len) SEQLEN=${2:-}; shift ;;
	--truncate) TRUNC=1 ;;
	--no) NOEV[${2:-}]=1; shift ;;
	--replay) REPLAY_IN=${2:-}; shift ;;
	--save) SAVE=${2:-}; shift ;;
	--weight) WEIGHTS+=("${2:-}"); shift ;;
	--selftest) SELFTEST=1 ;;
	-v) VERB=1 ;;
	*) usage ;;
	esac
	shift
done
if [ -n "$REPLAY_IN" ]; then
	[ -r "$REPLAY_IN" ] || { echo "lifecycle: --replay $REPLAY_IN: cannot read it" >&2; exit 2; }
	opts=$(sed -n 's/^#@ opts //p' "$REPLAY_IN" | head -1)
	[ -n "$opts" ] || { echo "lifecycle: $REPLAY_IN: no '#@ opts' line: not a lifecycle replay" >&2; exit 2; }
	NOEVS="" TESTBREAK=""
	eval "$opts"
	[ -z "$TESTBREAK" ] || export RAIDFUSE_TEST_BREAK=$TESTBREAK
	for e in $NOEVS; do NOEV[$e]=1; done
fi
case $LEVEL in
0 | 1) NMEM0=3 ;;
4 | 5 | 10) NMEM0=4 ;;
6) NMEM0=5 ;;
*) usage ;;
esac
NMEM=$NMEM0             # slots now: a grow adds one
for v in "$STEPS" "$SEED" "$SEQLEN"; do
	[[ $v =~ ^[0-9]+$ ]] || usage
done
for b in "$RAIDFUSE" "$LCB"; do
	[ -x "$b" ] || { echo "lifecycle: $b is not built (make build/raidfuse build/lcblocks)" >&2; exit 2; }
done
RAIDFUSE=$(realpath "$RAIDFUSE")
LCB=$(realpath "$LCB")
command -v jq >/dev/null || { echo "lifecycle: jq is needed (Debian: jq)" >&2; exit 2; }
if [ $NBD = 1 ]; then
	command -v nbdkit >/dev/null || { echo "lifecycle: --nbd needs nbdkit (Debian: nbdkit)" >&2; exit 2; }
fi
# --break: the daemon of a build with the old rule put back (BREAK=
# -DRF_BREAK_STALE_ROLE, in build-break/: its --version says so), made
# here when RAIDFUSE is not one.
if [ $BRK = 1 ] && ! "$RAIDFUSE" --version | grep -q "break: stale-role"; then
	make -s -C "$here" BUILD=build-break BREAK=-DRF_BREAK_STALE_ROLE build-break/raidfuse >&2 ||
		{ echo "lifecycle: --break: building build-break/raidfuse failed" >&2; exit 2; }
	RAIDFUSE=$here/build-break/raidfuse
fi

if [ -z "$DIR" ]; then
	DIR=$(mktemp -d "${TMPDIR:-/tmp}/lifecycle.XXXXXX")
else
	mkdir -p "$DIR"
	DIR=$(realpath "$DIR")
fi
D=$DIR/seq
MNT=$DIR/mnt
MNT2=$DIR/mnt2
IMG=$MNT/array.img
CONF=$D/raid.conf
SAVE=${SAVE:-$DIR/found}
NB=192                  # tracked blocks
MSIZE=32M
STOPCMD=0               # raidfuse stop exists
"$RAIDFUSE" stop --help >/dev/null 2>&1 && STOPCMD=1
MOUNTOPT=""
URING_SAVED=""
UPARAM=/sys/module/fuse/parameters/enable_uring
if [ $URING = 1 ]; then
	[ -w $UPARAM ] || { echo "lifecycle: --uring: $UPARAM missing or not writable (Linux 6.14+ as root)" >&2; exit 2; }
	URING_SAVED=$(cat $UPARAM)
	echo Y >$UPARAM
	MOUNTOPT="-o io_uring=on"
fi
LOOPS=0
[ "$(id -u)" = 0 ] && command -v losetup >/dev/null && LOOPS=1

# ------------------------------------------------------------ helpers
# These functions are copied into every replay script: the commands it
# holds call them.

# lc_pid: the daemon serving $MNT (mount or assemble, detached).
lc_pid() {
	pgrep -f -- "^$RAIDFUSE (mount|assemble) .*$MNT( |\$)" | head -1
}
# lc_gone PID SECONDS: PID has exited within SECONDS.
lc_gone() {
	local i
	for ((i = 0; i < $2 * 20; i++)); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.05
	done
	return 1
}
# lc_kill: kill -9 the daemon, wait for it, take the dead mount away.
lc_kill() {
	local p
	p=$(lc_pid)
	[ -n "$p" ] || { echo "no daemon serves $MNT"; return 1; }
	kill -9 "$p"
	lc_gone "$p" 10 || { echo "daemon $p still there 10 s after kill -9"; return 1; }
	fusermount3 -uz "$MNT" 2>/dev/null
	return 0
}
# lc_stop: stop the array the way a user does; the daemon must exit.
lc_stop() {
	local p
	p=$(lc_pid)
	[ -n "$p" ] || { echo "no daemon serves $MNT"; return 1; }
	if [ "$STOPCMD" = 1 ]; then
		timeout 30 "$RAIDFUSE" stop "$MNT" || return 1
	else
		timeout 30 fusermount3 -u "$MNT" || return 1
	fi
	lc_gone "$p" 20 || { echo "daemon $p still running 20 s after the unmount"; return 1; }
}
# lc_idle SECONDS: md/sync_action reads idle within SECONDS.
lc_idle() {
	local i a
	for ((i = 0; i < $1 * 10; i++)); do
		a=$(timeout 5 cat "$MNT/md/sync_action" 2>/dev/null) || true
		[ "$a" = idle ] && return 0
		sleep 0.1
	done
	echo "md/sync_action still '$a' after $1 s"
	return 1
}
# lc_nbd FILE: serve FILE over NBD on FILE.sock (nbdkit, detached).
lc_nbd() {
	rm -f "$1.sock" "$1.pid"
	timeout 10 nbdkit -U "$1.sock" -P "$1.pid" file "$1" || return 1
	local i
	for ((i = 0; i < 100; i++)); do
		[ -S "$1.sock" ] && [ -s "$1.pid" ] && return 0
		sleep 0.05
	done
	return 1
}
HELPERS="lc_pid lc_gone lc_kill lc_stop lc_idle lc_nbd"

# ------------------------------------------------------------ run state
NSEQ=0 NSTEP=0 NVIOL=0 T0=$EPOCHREALTIME
SEQ_STEP=0
VIOLS=()
REPLAY=""
XOUT="" XRC=0

now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }
vlog() { [ $VERB = 1 ] && echo "  $*"; return 0; }
viol() { VIOLS+=("$*"); }

cleanup() {
	# a subshell killed early runs the EXIT trap it inherited: not ours to clean
	[ "$BASHPID" = "$$" ] || return 0
	teardown
	[ -n "$URING_SAVED" ] && echo "$URING_SAVED" >$UPARAM
	if [ $KEEP = 0 ] && [ $NVIOL = 0 ]; then
		rm -rf "$DIR"
	else
		echo "lifecycle: kept $DIR"
	fi
}
trap cleanup EXIT
# stopped (kill, Ctrl-C): what was done so far, then the usual cleanup
trap '[ "$BASHPID" = "$$" ] || { trap - EXIT; exit 143; }; summary " (stopped)"; exit 130' INT TERM

# watch_start SECONDS / watch_stop: a watchdog over what runs between
# them.  A process waiting for a FUSE answer cannot be killed (not even
# by timeout -k), so a hung daemon would hang the run: past SECONDS the
# watchdog kills the daemon (which ends the wait), and watch_stop fails.
WDOG=""
watch_start() {
	rm -f "$DIR/hung"
	(
		sleep "$1" || exit 0 # killed by watch_stop: the command returned
		echo hung >"$DIR/hung"
		for p in $(pgrep -f -- "^$RAIDFUSE (mount|assemble) .*($MNT|$MNT2)( |\$)"); do kill -9 "$p"; done
		sleep 1
		fusermount3 -uz "$MNT"
		fusermount3 -uz "$MNT2"
	) >/dev/null 2>&1 &
	WDOG=$!
}
watch_stop() {
	local c
	c=$(pgrep -P "$WDOG")
	kill "$WDOG" 2>/dev/null
	kill $c 2>/dev/null
	wait "$WDOG" 2>/dev/null
	[ ! -e "$DIR/hung" ] && return 0
	wait_gone_all
	return 1
}
wait_gone_all() { # after the watchdog fired: no daemon, nothing mounted
	local i
	for ((i = 0; i < 100; i++)); do
		fusermount3 -uz "$MNT" 2>/dev/null
		[ -z "$(lc_pid)" ] && ! mountpoint -q "$MNT" && break
		sleep 0.1
	done
}
# hung WHAT: the watchdog killed the daemon under WHAT
hung() {
	: >"$DIR/hang-seen"
	viol "hang: $1 did not return within its deadline; the daemon was killed (kill -9) to end it"
	after_stop
}

# x CMD: write CMD to the replay script and run it (eval); XOUT, XRC.
# A command that timeout(1) ended (124, 137) is a hang, and so is one the
# watchdog (90 s) had to end.
x() {
	printf '%s\n' "$*" >>"$REPLAY"
	watch_start 90
	eval "$*" >"$DIR/xout" 2>&1
	XRC=$?
	watch_stop || { XRC=124; hung "$*"; }
	XOUT=$(<"$DIR/xout")
	vlog "\$ $* -> $XRC${XOUT:+: ${XOUT:0:300}}"
	if [ $XRC = 124 ] || [ $XRC = 137 ]; then
		viol "timed out (a hang): $*"
	fi
	return $XRC
}
# xb CMD: the same for a command that sets variables or starts a job.
xb() {
	printf '%s\n' "$*" >>"$REPLAY"
	vlog "\$ $*"
	eval "$*"
}

# ------------------------------------------------------------ the model
# ST[file]: in:N (in sync in slot N), rec:N (being rebuilt into slot N),
# spare, faulty (failed, still listed), out (no longer part of the array),
# gone (unlinked).  FILES: every file of this sequence, in order.
declare -A ST=() OLDSLOT=() INCONF=()
FILES=()
CONF_MEMBERS=()          # the config's members, "missing" where one went
CONF_SPARES=()
GEN=()                   # per block: the generations it may hold
NEXTGEN=1
SERVED=0
DIRTY=0                  # killed with writes in flight: resync on mount
SLOW=0
SBDIRTY=0                # an in-sync member's superblock says not clean
STRIDE=1
NADD=0
RESHAPING=0              # a reshape runs: spares wait for its end (md's too)
BROKEN_SEEN=0            # refused once past its failures: new sequence
PENDING=()               # events that must come next
ABROKEN=0                # served, and md's MD_BROKEN: the last copy of some data
			 # failed and was kept in sync (raid0, raid1, raid10): writes fail
case $LEVEL in 0 | 1 | 10) KEEPS=1 ;; *) KEEPS=0 ;; esac

devname() {
	if [ $NBD = 1 ] && [ "${1#a}" = "$1" ]; then echo "$1.sock"; else echo "$1"; fi
}
mpath() {                # the path a member is known by in configs, assemble
	if [ $NBD = 1 ] && [ "${1#a}" = "$1" ]; then echo "nbd+unix:///?socket=$D/$1.sock"; else echo "$D/$1"; fi
}
slot_of() { # FILE -> slot if in or rec
	case ${ST[$1]} in in:* | rec:*) echo "${ST[$1]#*:}" ;; *) echo "" ;; esac
}
holder() { # SLOT -> file in or rec there, or empty
	local f
	for f in "${FILES[@]}"; do
		case ${ST[$f]} in in:$1 | rec:$1) echo "$f"; return ;; esac
	done
}
holder_v() { # SLOT -> HV (holder without a subshell: they cost)
	local f
	HV=""
	for f in "${FILES[@]}"; do
		case ${ST[$f]} in in:$1 | rec:$1) HV=$f; return ;; esac
	done
}
files_v() { # STATE-GLOB... -> FV
	local f g
	FV=""
	for f in "${FILES[@]}"; do
		for g; do
			# shellcheck disable=SC2053
			[[ ${ST[$f]} == $g ]] && { FV+="$f "; break; }
		done
	done
}
insync() { # SLOT: a file is in:SLOT
	local f
	for f in "${FILES[@]}"; do
		[ "${ST[$f]}" = "in:$1" ] && return 0
	done
	return 1
}
n_insync() {
	local s n=0
	for ((s = 0; s < NMEM; s++)); do insync $s && n=$((n + 1)); done
	echo $n
}
# survives: the array takes writes: not broken, and complete: the level
# still has every block: raid0 all, raid1 one, raid4/5 all but one, raid6
# all but two, raid10 (n2) one of each pair of slots that share chunks.
survives() {
	[ $ABROKEN = 0 ] && complete
}
complete() {
	local n=0 f
	for f in "${FILES[@]}"; do [[ ${ST[$f]} == in:* ]] && n=$((n + 1)); done
	case $LEVEL in
	0) [ $n = $NMEM ] ;;
	1) [ $n -ge 1 ] ;;
	4 | 5) [ $n -ge $((NMEM - 1)) ] ;;
	6) [ $n -ge $((NMEM - 2)) ] ;;
	10)
		# n2: chunk c's copies on slots 2c and 2c + 1 (mod NMEM):
		# the pairs of an even count, every neighbour pair round an
		# odd one (a grown raid10 of 5: 0-1, 2-3, 4-0, 1-2, 3-4)
		local p
		for ((p = 0; p < NMEM; p += NMEM % 2 ? 1 : 2)); do
			insync $p || insync $(((p + 1) % NMEM)) || return 1
		done
		return 0
		;;
	esac
}
# survives_without SLOT: it would survive the loss of SLOT's holder.
survives_without() {
	local f r=0
	holder_v "$1"
	f=$HV
	[ -z "$f" ] && { complete; return; }
	local save=${ST[$f]}
	ST[$f]=faulty
	complete || r=1
	ST[$f]=$save
	return $r
}
files_in() { # STATE-GLOB...: files whose state matches
	local f g
	for f in "${FILES[@]}"; do
		for g; do
			# shellcheck disable=SC2053
			[[ ${ST[$f]} == $g ]] && { echo "$f"; break; }
		done
	done
}
# rnd N: RN = a number below N from the run's own generator (a 64-bit
# LCG seeded by --seed: bash reseeds $RANDOM in every subshell, this one
# is the same in every run); pick WORDS...: PK = one of them, or empty.
RS=0
rnd() {
	RS=$(((RS * 6364136223846793005 + 1442695040888963407) & 0x7fffffffffffffff))
	RN=$(((RS >> 16) % $1))
}
pick() {
	PK=""
	[ $# -gt 0 ] || return 0
	local a=("$@")
	rnd $#
	PK=${a[RN]}
}
parity_level() { [ "$LEVEL" = 4 ] || [ "$LEVEL" = 5 ] || [ "$LEVEL" = 6 ]; }
# a grow by a member is a reshape (the walk), not a mirror rebuilt
reshape_level() { parity_level || [ "$LEVEL" = 10 ]; }

expect_file() { # write the blocks' allowed generations to $D/expect
	local k
	for ((k = 0; k < NB; k++)); do echo "$k ${GEN[k]}"; done >"$D/expect"
}
write_conf() {
	local m list="" sl=""
	for m in "${CONF_MEMBERS[@]}"; do
		if [ "$m" = missing ]; then list+="${list:+, }\"missing\""; else list+="${list:+, }\"$(mpath "$m")\""; fi
	done
	for m in "${CONF_SPARES[@]}"; do sl+="${sl:+, }\"$(mpath "$m")\""; done
	{
		echo "array: {"
		echo "	name = \"array.img\";"
		echo "	metadata = \"1.2\";"
		echo "	level = $LEVEL;"
		echo "	chunk_size = \"64K\";"
		echo "	member_size = \"$MSIZE\";"
		echo "	members = ( $list );"
		[ -n "$sl" ] && echo "	spares = ( $sl );"
		[ $NBD = 1 ] && echo "	member_timeout = \"1s\";"
		echo "};"
	} >"$CONF"
	{
		echo "cat >\"\$D/raid.conf\" <<EOF"
		sed "s|$D/|\$D/|g" "$CONF"
		echo "EOF"
	} >>"$REPLAY"
}

# ------------------------------------------------------------ checks
# json of the served array, or empty
status_json() {
	local c
	watch_start 30
	timeout 10 "$RAIDFUSE" status --json "$MNT" 2>/dev/null
	c=$?
	watch_stop || c=124
	return $c
}

# devices_of JSON: "NAME STATE SLOT" per device, then "=degraded N" and
# "=mdstat [UU_U]" (bash's own regex: a jq per check cost more than the
# rest of it on a busy machine)
devices_of() {
	local js=$1 re='"name":"([^"]*)","state":"([^"]*)","errors":[0-9]+,"slot":"?([^,"]*)"?'
	while [[ $js =~ $re ]]; do
		echo "${BASH_REMATCH[1]} ${BASH_REMATCH[2]:-none} ${BASH_REMATCH[3]}"
		js=${js#*"${BASH_REMATCH[0]}"}
	done
	[[ $1 =~ \"degraded\":([0-9]+) ]] && echo "=degraded ${BASH_REMATCH[1]}"
	[[ $1 =~ \[([U_]+)\] ]] && echo "=mdstat [${BASH_REMATCH[1]}]"
	return 0
}

check_served() {
	local js f want st slot got exp ms k lo hi s c lines
	local -A dev=()
	watch_start 30
	js=$(status_json)
	c=$?
	watch_stop || { hung "raidfuse status $MNT"; return; }
	[ $c = 0 ] || { viol "raidfuse status --json $MNT failed: the array is not served"; return; }
	lines=$(devices_of "$js")
	while read -r n st slot; do
		case $n in
		=degraded) k=$st ;;
		=mdstat) ms=$st ;;
		*) dev[$n]="$st $slot" ;;
		esac
	done <<<"$lines"
	for f in "${FILES[@]}"; do
		want=${ST[$f]}
		n=$(devname "$f")
		got=${dev[$n]:-}
		unset "dev[$n]"
		st=${got% *} slot=${got##* }
		case $want in
		in:*)
			[[ $st == *in_sync* && $slot = "${want#in:}" ]] ||
				viol "$f: the model says in sync in slot ${want#in:}; status says '${got:-not listed}'" ;;
		rec:*)
			[[ $st != *faulty* && $slot = "${want#rec:}" ]] ||
				viol "$f: the model says being rebuilt into slot ${want#rec:}; status says '${got:-not listed}'" ;;
		spare)
			[[ $st == *spare* && ($slot = none || $slot = null) ]] ||
				viol "$f: the model says spare; status says '${got:-not listed}'" ;;
		faulty)
			[[ $st == *faulty* ]] || viol "$f: the model says failed; status says '${got:-not listed}'" ;;
		out | gone)
			[ -z "$got" ] || [[ $st == *faulty* ]] ||
				viol "$f: the model says it is no longer part of the array; status says '$got'" ;;
		esac
	done
	for n in "${!dev[@]}"; do
		viol "status lists a device the model does not know: $n (${dev[$n]})"
	done
	if [ $ABROKEN = 1 ] && ! [[ $js =~ \"array_state\":\"broken\" ]]; then
		viol "the array is broken (the last copy of some data failed and was kept), yet md/array_state is not broken"
	fi
	if [ "$LEVEL" != 0 ]; then
		exp="" lo=0 hi=0
		for ((s = 0; s < NMEM; s++)); do
			holder_v $s
			f=$HV
			if insync $s; then c=U
			elif [ -n "$f" ]; then c='[U_]'; hi=$((hi + 1))
			else c=_; lo=$((lo + 1)); hi=$((hi + 1)); fi
			exp+=$c
		done
		[[ $ms =~ ^\[$exp\]$ ]] || viol "mdstat shows '$ms', the model expects [$exp] (U in sync, _ missing)"
		[ "$k" -ge $lo ] 2>/dev/null && [ "$k" -le $hi ] ||
			viol "md/degraded is $k, the model expects $lo$([ $hi != $lo ] && echo "..$hi")"
	fi
	# data
	expect_file
	local mode="" out
	survives || mode=--lenient
	watch_start 60
	out=$(timeout 50 "$LCB" verify "$IMG" $STRIDE "$D/expect" $mode 2>&1)
	c=$?
	watch_stop || { hung "reading the tracked blocks (lcblocks verify)"; return; }
	case $c in
	0) ;;
	124) viol "reading the tracked blocks timed out (a hang)" ;;
	*) viol "data: $(head -5 <<<"$out" | tr '\n' ';') ($(wc -l <<<"$out") blocks)" ;;
	esac
}

check_examine() {
	local f want role ev evs=() paths=() out
	local -A ex=()
	for f in "${FILES[@]}"; do
		[ "${ST[$f]}" = gone ] || paths+=("$D/$f")
	done
	out=$(timeout 20 "$RAIDFUSE" examine --json "${paths[@]}" 2>/dev/null) || out=$(
		for f in "${paths[@]}"; do timeout 10 "$RAIDFUSE" examine --json "$f" 2>/dev/null; done)
	local line re='"device":"([^"]*)".*"events":([0-9]+).*"dev_role":"?([^,"]*)"?' dirty=()
	while read -r line; do
		[[ $line =~ $re ]] || continue
		f=${BASH_REMATCH[1]##*/}
		ex[$f]="${BASH_REMATCH[3]} ${BASH_REMATCH[2]}"
		[[ $line =~ \"array_state\":\"clean\" ]] || dirty+=("$f")
	done <<<"$out"
	# SBDIRTY: an in-sync member's superblock says not clean (md then
	# refuses to start a degraded raid4/5/6 unless forced)
	SBDIRTY=0
	for f in "${dirty[@]}"; do [[ ${ST[$f]:-} == in:* ]] && SBDIRTY=1; done
	for f in "${FILES[@]}"; do
		want=${ST[$f]}
		[ "$want" = gone ] && continue
		if [ -z "${ex[$f]:-}" ]; then
			case $want in
			in:* | rec:* | spare) viol "raidfuse examine $f: no md superblock; the model says $want" ;;
			esac
			continue
		fi
		role=${ex[$f]% *} ev=${ex[$f]#* }
		case $want in
		in:* | rec:*)
			[ "$role" = "${want#*:}" ] || viol "examine $f: role $role, the model says slot ${want#*:}"
			[ "$want" = "in:${want#*:}" ] && evs+=("$f=$ev") ;;
		spare)
			[ "$role" = spare ] || viol "examine $f: role $role, the model says spare" ;;
		esac
	done
	# after a clean stop every in-sync member says the same events
	if [ $SERVED = 0 ] && [ "$1" = clean ] && [ ${#evs[@]} -gt 1 ]; then
		local e1=${evs[0]#*=} e
		for e in "${evs[@]}"; do
			[ "${e#*=}" = "$e1" ] || { viol "after a clean stop the in-sync members' events differ: ${evs[*]}"; break; }
		done
	fi
}

# ------------------------------------------------------------ events
# Each ev_NAME ARGS does the event (commands through x) and updates the
# model; draw() picks the next one.


# after a failure or a mount: spares take the empty slots (observed: md
# picks which spare); the model waits up to 5 s for each.
takeover() {
	local s sp
	[ $SERVED = 1 ] && [ "$LEVEL" != 0 ] && [ $RESHAPING = 0 ] || return 0
	for ((s = 0; s < NMEM; s++)); do
		holder_v $s
		[ -n "$HV" ] && continue
		survives || return 0
		files_v spare
		sp=$FV
		[ -n "$sp" ] || return 0
		taker $s $sp
		if [ -z "$GOT" ]; then
			viol "slot $s is empty and spare(s) $sp wait, but none took it within 5 s"
			return 0
		fi
		ST[$GOT]=rec:$s
	done
}
# taker SLOT FILE...: GOT = the one of FILE... status shows in SLOT
# (waited for up to 5 s), or empty
taker() {
	local s=$1 f i js
	shift
	GOT=""
	for ((i = 0; i < 50; i++)); do
		js=$(devices_of "$(status_json)")
		for f; do
			grep -q "^$(devname "$f") .* $s\$" <<<"$js" && { GOT=$f; return; }
		done
		sleep 0.1
	done
}

# teardown: whatever the last sequence left: its daemons (ours: they
# serve our mount points) killed, the mount points unmounted
teardown() {
	local p i
	for ((i = 0; i < 5; i++)); do
		for p in $(pgrep -f -- "^$RAIDFUSE (mount|assemble) .*($MNT|$MNT2)( |\$)"); do
			kill -9 "$p" 2>/dev/null
			lc_gone "$p" 10
		done
		fusermount3 -uz "$MNT" 2>/dev/null
		fusermount3 -uz "$MNT2" 2>/dev/null
		mountpoint -q "$MNT" || mountpoint -q "$MNT2" || break
	done
	nbd_all_stop
}

ev_create() { # SPARES
	local i f
	teardown
	NSEQ=$((NSEQ + 1))
	SEQ_STEP=0
	BROKEN_SEEN=0 DIRTY=0 SLOW=0 NADD=0 SERVED=0 ABROKEN=0 RESHAPING=0
	NMEM=$NMEM0
	PENDING=() GONE_PENDING=()
	rm -rf "$D"
	mkdir -p "$D"
	REPLAY=$D/replay.sh
	{
		echo "#!/usr/bin/env bash"
		echo "# lifecycle replay: tools/lifecycle.sh --replay THIS-FILE repeats the events with"
		echo "# the model's checks; run as plain bash it repeats the commands alone."
		echo "#@ opts LEVEL=$LEVEL NBD=$NBD URING=$URING BRK=$BRK TRUNC=$TRUNC SEED=$SEED NOEVS=\"${!NOEV[*]}\" TESTBREAK=${RAIDFUSE_TEST_BREAK:-}"
		[ -z "${RAIDFUSE_TEST_BREAK:-}" ] || echo "export RAIDFUSE_TEST_BREAK=$RAIDFUSE_TEST_BREAK # the daemons ran with this bug put back"
		echo "RAIDFUSE=\${RAIDFUSE:-$RAIDFUSE}"
		echo "LCB=\${LCBLOCKS:-$LCB}"
		echo "# As plain bash it works in LC_REPLAY_DIR (default: a new directory under /tmp)"
		echo "# and leaves the array as the violation found it: fusermount3 -u \$MNT stops it."
		echo "W=\${LC_REPLAY_DIR:-\$(mktemp -d /tmp/lifecycle-replay.XXXXXX)}"
		echo "D=\$W/seq MNT=\$W/mnt MNT2=\$W/mnt2 IMG=\$W/mnt/array.img STOPCMD=$STOPCMD"
		declare -f $HELPERS
		echo 'mkdir -p "$D" "$MNT" "$MNT2"; cd "$D" || exit 1'
		echo "# ---- the commands"
	} >"$REPLAY"
	ST=() OLDSLOT=() FILES=() CONF_MEMBERS=() CONF_SPARES=() GEN=()
	for ((i = 0; i < NMEM; i++)); do
		FILES+=("d$i.img"); ST[d$i.img]=in:$i; CONF_MEMBERS+=("d$i.img")
	done
	for ((i = 0; i < $1; i++)); do
		FILES+=("s$i.img"); ST[s$i.img]=spare; CONF_SPARES+=("s$i.img")
	done
	for ((i = 0; i < NB; i++)); do GEN[i]=0; done
	echo "#@ step create $1" >>"$REPLAY"
	if [ $NBD = 1 ]; then
		for f in "${FILES[@]}"; do
			x "truncate -s $MSIZE \"\$D/$f\" && lc_nbd \"\$D/$f\"" || viol "nbdkit for $f did not start: $XOUT"
		done
	fi
	write_conf
	x "timeout 30 \"\$RAIDFUSE\" create --assume-clean \"\$D/raid.conf\"" ||
		viol "raidfuse create failed: $XOUT"
	if [ -n "${NOEV[mount]:-}" ]; then ev_assemble "${FILES[@]}"; else ev_mount; fi
	if [ $SERVED = 1 ]; then
		local sz
		sz=$(stat -c %s "$IMG")
		STRIDE=$((sz / 4096 / NB))
		[ $((STRIDE % 2)) = 0 ] && STRIDE=$((STRIDE - 1))
		# no two tracked blocks in one parity row (64 KiB chunks: a
		# row's data is 16 blocks per data member apart at most)
		if parity_level && [ $STRIDE -le $(((NMEM - 1) * 16)) ]; then
			echo "lifecycle: $STRIDE blocks between tracked blocks is within a parity row" >&2
			exit 2
		fi
	fi
}

# plant K GEN: write a block behind the model's back (--selftest: the
# checks must catch it)
ev_plant() {
	x "timeout 30 \"\$LCB\" write \"\$IMG\" $STRIDE $2 $1"
}

# maybe_gen K G: block K may now hold generation G as well as whatever it
# could hold before (a write that failed or was cut by a kill may have
# landed or not; one that is itself uncertain keeps every earlier
# possibility); the last 15 (lcblocks reads 16)
maybe_gen() {
	local l=" ${GEN[$1]} " w
	[[ $l == *" $2 "* ]] || l+="$2 "
	read -r -a w <<<"$l"
	[ ${#w[@]} -le 15 ] || w=("${w[@]: -15}")
	GEN[$1]="${w[*]}"
}

ev_write() { # GEN K...
	local g=$1 k
	shift
	if x "timeout 30 \"\$LCB\" write \"\$IMG\" $STRIDE $g $*"; then
		survives || viol "a write of blocks $* succeeded on an array past its failures (level $LEVEL, $(n_insync) of $NMEM in sync): it must fail"
		for k; do GEN[k]=$g; done
	else
		survives && viol "a write of blocks $* (generation $g) failed on an array that survives: $XOUT"
		for k; do maybe_gen $k $g; done
	fi
}

# kept FILE: its failure leaves the array broken with FILE in sync (md's
# raid1_error/raid10_error: the last copy of some data is never failed;
# raid0 fails none), so the superblocks never record it faulty
kept() {
	[ $KEEPS = 1 ] && [[ ${ST[$1]} == in:* ]] && ! survives_without "${ST[$1]#in:}"
}

mark_failed() { # FILE: the model after FILE's failure
	local f=$1
	if kept "$f"; then
		ABROKEN=1
		return
	fi
	# re-add brings back a member that was in sync (md's --re-add); a
	# spare that failed half rebuilt comes back only as a new spare
	OLDSLOT[$f]=""
	[[ ${ST[$f]} == in:* ]] && OLDSLOT[$f]=${ST[$f]#in:}
	ST[$f]=faulty
	sync_rec
	takeover
}

# ctl_fail FILE: md/dev-*/state "faulty" through ctl fail; md refuses it
# (EBUSY) for a device it keeps, and the array is broken from then on
ctl_fail() {
	local f=$1
	if x "timeout 10 \"\$RAIDFUSE\" ctl \"\$MNT\" fail $(devname "$f")"; then
		kept "$f" && viol "ctl fail $f, the last in-sync copy of some data, returned 0: md refuses it and keeps it in sync"
		mark_failed "$f"
		return 0
	fi
	if kept "$f"; then
		ABROKEN=1
	elif [[ ${ST[$f]} == in:* || ${ST[$f]} == rec:* ]]; then
		viol "ctl fail $f refused, yet the array survives without it: $XOUT"
	fi
	return 1
}

# wait_broken FILE SECONDS: md/array_state says broken (FILE
# kept in sync)
wait_broken() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		[[ $(status_json) =~ \"array_state\":\"broken\" ]] && return 0
		sleep 0.1
	done
	return 1
}

# lost FILE WHAT: FILE fails by WHAT (seen by the daemon, not commanded):
# the model waits for the daemon to see it, then marks it failed (or kept;
# draw() picks these events only for members the level survives without,
# so a kept member's data is always whole: ctl fail is the way there)
lost() {
	local f=$1
	if kept "$f"; then
		wait_broken "$f" 5 || viol "$f $2: the last in-sync copy of some data; md/array_state is not broken 5 s later"
	elif ! wait_faulty "$f" 5; then
		viol "$f $2 but is not marked faulty 5 s later"
	fi
	mark_failed "$f"
}

wait_faulty() { # FILE SECONDS: status shows FILE faulty
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		grep -q "^$(devname "$1") [^ ]*faulty" <<<"$(devices_of "$(status_json)")" && return 0
		sleep 0.1
	done
	return 1
}

ev_fail() { # FILE [slow]
	local f=$1
	if [ "${2:-}" = slow ]; then
		x "echo 4000 > \"\$MNT/md/sync_speed_max\"" && SLOW=1
	fi
	ctl_fail "$f"
	return 0
}

ev_failw() { # FILE GEN wait|kill K...: fail FILE while writes run; then
	# wait for the writes, or kill -9 the daemon under them
	local f=$1 g=$2 how=$3
	shift 3
	bg_write "$g" "$@"
	x "sleep 0.05"
	ctl_fail "$f"
	if [ "$how" = kill ]; then
		x "sleep 0.03"
		x "lc_kill" || viol "kill -9 of the daemon: $XOUT"
	fi
	bg_wait "$g" "$@"
	vlog "$AK of $# writes acknowledged"
	if [ "$how" = kill ]; then
		[ $AK -lt $# ] && DIRTY=1
		after_stop
		check_examine crash
	elif [ $WRC != 0 ] && survives; then
		viol "writes running while $f failed stopped after $AK of $#: $(cat "$D/wout")"
	fi
}

ev_unlink() { # FILE
	local f=$1 i
	x "rm -f \"\$D/$f\""
	lost "$f" "was unlinked"
	OLDSLOT[$f]=""
	ST[$f]=faulty
	for ((i = 0; i < ${#CONF_MEMBERS[@]}; i++)); do
		[ "${CONF_MEMBERS[i]}" = "$f" ] && CONF_MEMBERS[i]=missing
	done
	local keep=()
	for i in "${CONF_SPARES[@]}"; do [ "$i" = "$f" ] || keep+=("$i"); done
	CONF_SPARES=("${keep[@]}")
	GONE_PENDING+=("$f")
	write_conf
}
GONE_PENDING=()

ev_inject() { # FILE GEN
	local f=$1 g=$2 k ks=()
	for ((k = 0; k < NB; k += 3)); do ks+=("$k"); done
	x "echo 'error=EIO ops=write' > \"\$MNT/md/dev-$(devname "$f")/fault\"" ||
		{ viol "writing md/dev-$f/fault failed: $XOUT"; return; }
	local save=${ST[$f]}
	ST[$f]=faulty # the write meets the error: it must fail the member
	ev_write "$g" "${ks[@]}"
	ST[$f]=$save
	x "echo off > \"\$MNT/md/dev-$(devname "$f")/fault\""
	lost "$f" "met an injected write error"
}

ev_truncate() { # FILE
	local f=$1
	x "truncate -s 0 \"\$D/$f\" && truncate -s $MSIZE \"\$D/$f\""
	lost "$f" "was truncated and regrown"
}

ev_nbdkill() { # FILE GEN
	local f=$1 g=$2
	x "kill -9 \$(cat \"\$D/$f.pid\")"
	local save=${ST[$f]}
	ST[$f]=faulty
	ev_write "$g" 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15
	ST[$f]=$save
	lost "$f" "lost its NBD server (kill -9)"
	x "lc_nbd \"\$D/$f\"" || viol "nbdkit for $f did not start again: $XOUT"
}

after_stop() { # the model once no daemon serves
	local f
	SERVED=0 SLOW=0
	for f in "${FILES[@]}"; do
		[ "${ST[$f]}" = faulty ] && ST[$f]=out
	done
	for f in "${GONE_PENDING[@]}"; do ST[$f]=gone; done
	GONE_PENDING=()
	ABROKEN=0
}

ev_crash() { # [DELAY GEN K...]: with writes in flight when given
	local g=${2:-}
	if [ -n "$g" ]; then
		bg_write "$g" "${@:3}"
		x "sleep 0.0$1"
		shift 2
	fi
	x "lc_kill" || viol "kill -9 of the daemon: $XOUT"
	if [ -n "$g" ]; then
		bg_wait "$g" "$@"
		[ $AK -lt $# ] && DIRTY=1
		vlog "killed with $AK of $# writes acknowledged"
	fi
	after_stop
	check_examine crash
}

ev_stop() {
	x "lc_stop" || viol "stopping the array: $XOUT"
	after_stop
	check_examine clean
}

# what serving must give: the model's files, faulty ones left out
mounted() {
	local p
	p=$(lc_pid)
	[ -n "$p" ] || { viol "the mount returned 0 but no daemon serves $MNT"; return; }
	SERVED=1
	takeover
	if [ $DIRTY = 1 ] && [ "$LEVEL" != 0 ]; then
		x "lc_idle 60" || viol "the resync after the crash did not end: $XOUT"
		DIRTY=0
	fi
}

serve_outcome() { # WHAT FORCED-COMMAND: after a mount or assemble returned XRC
	local s missing=0 maybe=0
	for ((s = 0; s < NMEM; s++)); do
		insync $s && continue
		holder_v $s
		if [ -n "$HV" ]; then maybe=1; else missing=1; fi
	done
	if [ $XRC != 0 ] && survives && parity_level && [ $SBDIRTY = 1 ] && [ $((missing + maybe)) -gt 0 ]; then
		# md's start_dirty_degraded: refused unless forced; the tracked
		# blocks never share a row, so forcing loses none of them (raid6
		# with one member missing resyncs first: mounted() waits for it)
		vlog "refused as dirty and degraded, as md does: forced"
		x "$2"
	fi
	if [ $XRC = 0 ]; then
		if survives; then
			mounted
		else
			SERVED=1
			viol "$1 served an array past its failures (level $LEVEL, $(n_insync) of $NMEM in sync): it must refuse"
		fi
	else
		if survives; then
			viol "$1 refused an array the model says survives ($(n_insync) of $NMEM in sync): ${XOUT//$'\n'/ }"
		else
			BROKEN_SEEN=1
		fi
	fi
}

ev_mount() {
	x "mkdir -p \"\$MNT\"; timeout 20 \"\$RAIDFUSE\" mount \"\$D/raid.conf\" \"\$MNT\" $MOUNTOPT"
	serve_outcome "mount CONFIG" "timeout 20 \"\$RAIDFUSE\" mount --force \"\$D/raid.conf\" \"\$MNT\" $MOUNTOPT"
}

ev_assemble() { # FILE...
	local f a=""
	for f; do a+=" \"$(mpath "$f" | sed "s|$D|\$D|")\""; done
	x "mkdir -p \"\$MNT\"; timeout 20 \"\$RAIDFUSE\" assemble $MOUNTOPT \"\$MNT\"$a"
	serve_outcome assemble "timeout 20 \"\$RAIDFUSE\" assemble --force $MOUNTOPT \"\$MNT\"$a"
}

ev_add() {
	local f=a$NADD.img
	NADD=$((NADD + 1))
	FILES+=("$f")
	x "truncate -s $MSIZE \"\$D/$f\""
	if x "timeout 10 \"\$RAIDFUSE\" ctl \"\$MNT\" add \"\$D/$f\""; then
		ST[$f]=spare
		CONF_SPARES+=("$f")
		write_conf
		takeover
	else
		ST[$f]=gone
		viol "ctl add of a new file $f refused: $XOUT"
	fi
}

# sync_rec: the rebuilds status shows finished are in sync in the model
sync_rec() {
	local f lines
	[ $SERVED = 1 ] || return 0
	files_v 'rec:*'
	[ -n "$FV" ] || return 0
	lines=$(devices_of "$(status_json)")
	for f in $FV; do
		grep -q "^$(devname "$f") [^ ]*in_sync ${ST[$f]#rec:}\$" <<<"$lines" && ST[$f]=in:${ST[$f]#rec:}
	done
	return 0
}

# wait_rebuilt SECONDS: every rebuild the model knows of is done (status
# says in_sync; sync_action alone may read idle before one starts)
wait_rebuilt() {
	local i
	[ $SLOW = 1 ] && x "echo system > \"\$MNT/md/sync_speed_max\"" && SLOW=0
	for ((i = 0; i < $1 * 5; i++)); do
		sync_rec
		[ -z "$(files_in 'rec:*')" ] && break
		sleep 0.2
	done
	[ -z "$(files_in 'rec:*')" ] || { viol "rebuild of $(files_in 'rec:*') not done after $1 s"; return 1; }
	x "lc_idle $1" || { viol "md/sync_action not idle $1 s after the rebuilds ended: $XOUT"; return 1; }
}

ev_rebuild() {
	x "# wait for the rebuilds: every device in_sync, md/sync_action idle"
	wait_rebuilt 60
}

ev_readd() { # FILE: back into an empty slot (its own, or as md's spare
	# would, the first empty one): observed, within 5 s
	local f=$1 i js got=""
	if ! x "timeout 10 \"\$RAIDFUSE\" ctl \"\$MNT\" re-add $(devname "$f")"; then
		viol "ctl re-add $f (failed in sync, its slot ${OLDSLOT[$f]} empty) refused: $XOUT"
		return
	fi
	for ((i = 0; i < 50; i++)); do
		js=$(devices_of "$(status_json)")
		got=$(sed -n "s/^$(devname "$f") [^ ]* \([0-9][0-9]*\)\$/\1/p" <<<"$js")
		[ -n "$got" ] && break
		sleep 0.1
	done
	holder_v "${got:-x}"
	if [ -z "$got" ]; then
		viol "ctl re-add $f returned 0, but it took no slot within 5 s (status: $(grep "^$(devname "$f") " <<<"$js"))"
		ST[$f]=spare
	elif [ -n "$HV" ]; then
		viol "ctl re-add $f put it in slot $got, which $HV holds"
	else
		ST[$f]=rec:$got
	fi
}

ev_remove() { # FILE
	local f=$1
	if x "timeout 10 \"\$RAIDFUSE\" ctl \"\$MNT\" remove $(devname "$f")"; then
		ST[$f]=out
	else
		viol "ctl remove of failed $f refused: $XOUT"
	fi
}

ev_check() { # check|repair
	local mm
	x "# wait for the rebuilds"
	wait_rebuilt 60 || return
	x "timeout 60 \"\$RAIDFUSE\" ctl --wait \"\$MNT\" $1" || { viol "ctl --wait $1 failed: $XOUT"; return; }
	x "cat \"\$MNT/md/mismatch_cnt\""
	mm=$XOUT
	if [ "$(n_insync)" = $NMEM ] && [ "$mm" != 0 ]; then
		viol "$1 of an array in sync with parity the model says consistent: mismatch_cnt $mm"
	fi
}

ev_suspend() { # GEN K...
	local g=$1 k n
	shift
	x "timeout 10 sh -c 'echo suspended > \"\$1\"' sh \"\$MNT/md/array_state\"" ||
		{ viol "suspending the array failed: $XOUT"; return; }
	bg_write "$g" "$@"
	x "sleep 0.3"
	n=$(wc -l <"$D/ack")
	[ "$n" = 0 ] || viol "$n fsync'd writes completed while the array was suspended"
	x "timeout 10 sh -c 'echo active > \"\$1\"' sh \"\$MNT/md/array_state\"" || viol "resuming the array failed: $XOUT"
	if x "timeout 30 tail --pid=\$WP -f /dev/null; wait \$WP"; then
		survives || viol "writes queued while suspended succeeded on an array past its failures"
	else
		survives && viol "writes queued while suspended failed: $(cat "$D/wout")"
	fi
	for k; do
		if grep -qx "$k $g" "$D/ack"; then GEN[k]=$g; else maybe_gen $k $g; fi
	done
}

ev_alias() { # FILE symlink|loop|assemble
	local f=$1
	case $2 in
	symlink)
		x "ln -sf \"\$D/$f\" \"\$D/alias.img\"; timeout 10 \"\$RAIDFUSE\" ctl \"\$MNT\" add \"\$D/alias.img\"" &&
			viol "ctl add of a symlink to $f (${ST[$f]}) was taken: a member under a second name must be refused"
		x "rm -f \"\$D/alias.img\"" ;;
	loop)
		x "L=\$(losetup -f --show \"\$D/$f\") && echo \$L"
		local dev=$XOUT
		if [[ $dev == /dev/loop* ]]; then
			x "timeout 10 \"\$RAIDFUSE\" ctl \"\$MNT\" add $dev" &&
				viol "ctl add of loop device $dev over $f (${ST[$f]}) was taken: a member under a second name must be refused"
			x "losetup -d $dev"
		fi ;;
	assemble)
		local g a=""
		for g in $(files_in 'in:*' 'rec:*' spare); do
			a+=" \"\$D/alias-$g\""
			x "ln -sf \"\$D/$g\" \"\$D/alias-$g\""
		done
		x "mkdir -p \"\$MNT2\"; timeout 20 \"\$RAIDFUSE\" assemble \"\$MNT2\"$a" &&
			viol "a second assemble of the served members under symlinks was taken: it must be refused"
		x "fusermount3 -u \"\$MNT2\" 2>/dev/null; rm -f \"\$D\"/alias-*" ;;
	esac
}

ev_overfail() { # FILE...: fail each in turn, then more while it survives
	local f
	x "echo 1000 > \"\$MNT/md/sync_speed_max\"" && SLOW=1
	for f; do
		[[ ${ST[$f]} == in:* || ${ST[$f]} == rec:* ]] || continue
		ctl_fail "$f"
	done
	# a rebuild that ended between two of them kept it alive
	for f in $(files_in 'in:*' 'rec:*'); do
		survives || break
		ctl_fail "$f"
	done
}

# bg_write GEN K...: fsync'd writes of generation GEN to blocks K... in the
# background (WP), each acknowledged in $D/ack as it returns
bg_write() {
	local g=$1
	shift
	xb ": >\"\$D/ack\"; \"\$LCB\" write \"\$IMG\" $STRIDE $g --ack \"\$D/ack\" $* >\"\$D/wout\" 2>&1 & WP=\$!"
}
# bg_wait GEN K...: wait for them: WRC their status, the model updated
# (acked)
bg_wait() {
	x "timeout 30 tail --pid=\$WP -f /dev/null; wait \$WP"
	WRC=$XRC
	acked "$@"
}

# acked GEN K...: the model after writes of generation GEN to blocks K...
# ran with --ack $D/ack: those acknowledged hold GEN, the first of the
# others may (the rest were never sent); AK = how many were acknowledged
acked() {
	local g=$1 k first=""
	shift
	AK=0
	for k; do
		if grep -qx "$k $g" "$D/ack"; then GEN[k]=$g; AK=$((AK + 1))
		elif [ -z "$first" ]; then first=$k; maybe_gen $k $g; fi
	done
}

# reshape_end SECONDS: md/sync_action idle and md/reshape_position none
reshape_end() {
	x "lc_idle $1 && test \"\$(cat \"\$MNT/md/reshape_position\")\" = none" ||
		{ viol "the reshape did not end within $1 s: $XOUT"; return 1; }
}

ev_grow() { # wait|kill|fail VICTIM DELAY GEN K...
	local how=$1 victim=$2 delay=$3 g=$4 f=a$NADD.img slot=$NMEM
	shift 4
	NADD=$((NADD + 1))
	FILES+=("$f")
	ST[$f]=gone
	x "truncate -s $MSIZE \"\$D/$f\""
	# slowed (32 MiB members: 8 s) so that the writes, a kill or a
	# failure DELAY tenths of a second in meet it half way
	reshape_level && x "echo 4000 > \"\$MNT/md/sync_speed_max\""
	if ! x "timeout 20 \"\$RAIDFUSE\" grow \"\$MNT\" --raid-devices $((NMEM + 1)) --add \"\$D/$f\""; then
		viol "grow --raid-devices $((NMEM + 1)) --add $f (every slot in sync) refused: $XOUT"
		[ "$LEVEL" = 0 ] || x "echo system > \"\$MNT/md/sync_speed_max\""
		return
	fi
	# a raid0 grows as a raid4 of one member more (its P slot empty),
	# which has the pace (a raid0 has none)
	[ "$LEVEL" = 0 ] && x "echo 4000 > \"\$MNT/md/sync_speed_max\""
	ST[$f]=spare
	CONF_SPARES+=("$f")
	# md fills the new slot with the first spare it has (raid5_start_reshape,
	# raid1_add_disk): an older one if there is one
	files_v spare
	taker $slot $FV
	if [ -z "$GOT" ]; then
		viol "grow --raid-devices $((NMEM + 1)) returned 0, yet no spare ($FV) holds slot $slot"
		return
	fi
	NMEM=$((NMEM + 1))
	local keep=() m
	for m in "${CONF_SPARES[@]}"; do [ "$m" = "$GOT" ] || keep+=("$m"); done
	CONF_SPARES=("${keep[@]}")
	CONF_MEMBERS+=("$GOT")
	write_conf
	if ! reshape_level && [ "$LEVEL" != 0 ]; then
		ST[$GOT]=rec:$slot # a mirror more: rebuilt as a spare taking a slot is
		return
	fi
	ST[$GOT]=in:$slot
	RESHAPING=1
	x "sleep $((delay / 10)).$((delay % 10))"
	# fail: the walk goes on degraded; the writes after it miss the member
	[ "$how" = fail ] && ctl_fail "$victim"
	bg_write "$g" "$@"
	if [ "$how" = kill ]; then
		x "sleep 0.3"
		x "lc_kill" || viol "kill -9 of the daemon: $XOUT"
	fi
	bg_wait "$g" "$@"
	if [ "$how" = kill ]; then
		[ $AK -lt $# ] && DIRTY=1
		vlog "killed mid-reshape with $AK of $# writes acknowledged"
		after_stop
		check_examine crash
		ev_mount
		[ $SERVED = 1 ] || return
	elif [ $WRC != 0 ]; then
		viol "writes running through the reshape stopped after $AK of $#: $(cat "$D/wout")"
	fi
	if [ "$LEVEL" = 0 ]; then
		# (it may be a raid0 again already: no md/sync_speed_max)
		x "echo system > \"\$MNT/md/sync_speed_max\"" || true
		raid0_again 60
	else
		x "echo system > \"\$MNT/md/sync_speed_max\""
		reshape_end 60
	fi
	RESHAPING=0
	takeover
}

# raid0_again SECONDS: the raid4 a raid0 grows through is a raid0 of NMEM
# members again (its reshape ended: a config that names the raid0 serves
# it, so one resumed after a kill ends the same way)
raid0_again() {
	x "for i in \$(seq $(($1 * 10))); do [ \"\$(cat \"\$MNT/md/level\")\" = raid0 ] && break; sleep 0.1; done;
		test \"\$(cat \"\$MNT/md/level\") \$(cat \"\$MNT/md/raid_disks\")\" = \"raid0 $NMEM\"" ||
		{ viol "the grown raid0 is not a raid0 of $NMEM again within $1 s: $XOUT"; return 1; }
}

# ------------------------------------------------------------ drawing
# weights: how often each event is drawn where it applies
declare -A W=([write]=20 [fail]=6 [failw]=5 [unlink]=3 [inject]=3 [truncate]=2 [nbdkill]=3
	[crash]=6 [stop]=5 [mount]=10 [assemble]=6 [add]=4 [rebuild]=6 [readd]=3 [remove]=2
	[check]=3 [suspend]=2 [alias]=2 [overfail]=1 [grow]=3)
[ $BRK = 1 ] && W[failw]=30
for w in "${WEIGHTS[@]}"; do
	[[ $w =~ ^([a-z]+)=([0-9]+)$ && -n ${W[${BASH_REMATCH[1]}]:-} ]] ||
		{ echo "lifecycle: --weight $w: not EVENT=N of an event (${!W[*]})" >&2; exit 2; }
	W[${BASH_REMATCH[1]}]=${BASH_REMATCH[2]}
done
[ $TRUNC = 1 ] || NOEV[truncate]=1
[ $NBD = 1 ] || NOEV[nbdkill]=1
[ $NBD = 1 ] && NOEV[unlink]=1 && NOEV[truncate]=1

rand_blocks() { # N: RB = N distinct tracked blocks
	local n=$1 out=() seen=" "
	while [ ${#out[@]} -lt "$n" ]; do
		rnd $NB
		[[ $seen == *" $RN "* ]] && continue
		seen+="$RN "
		out+=("$RN")
	done
	RB="${out[*]}"
}

# assemble_args: AA = every file there is (stale and failed ones too), in
# a random order
assemble_args() {
	local all=() i j t f
	for f in "${FILES[@]}"; do [ "${ST[$f]}" != gone ] && all+=("$f"); done
	for ((i = ${#all[@]} - 1; i > 0; i--)); do
		rnd $((i + 1)); j=$RN
		t=${all[i]}; all[i]=${all[j]}; all[j]=$t
	done
	AA="${all[*]}"
}

# draw: EV = the next event and its arguments (from rnd: the same for a
# seed in every run)
newseq() {
	local n=0
	[ "$LEVEL" = 0 ] || { rnd 2; n=$RN; }
	EV="create $n"
}
draw() {
	local cands=() e total=0 r ins fl sp f g
	if [ $SELFTEST = 1 ] && [ $SERVED = 1 ]; then
		SELFTEST=2
		EV="plant 5 999999"
		return
	fi
	if [ ${#PENDING[@]} -gt 0 ]; then
		e=${PENDING[0]}
		PENDING=("${PENDING[@]:1}")
		[ "$e" != assemble ] || [ $SERVED = 1 ] || { assemble_args; EV="assemble $AA"; return; }
		[ "$e" != mount ] || [ $SERVED = 0 ] || { draw; return; }
		[ "$e" != crash ] || [ $SERVED = 1 ] || { draw; return; }
		EV=$e
		return
	fi
	if [ $SEQ_STEP -ge $SEQLEN ] || [ $BROKEN_SEEN = 1 ]; then
		newseq
		return
	fi
	files_v 'in:*' 'rec:*'
	ins=$FV
	# the members whose loss the level survives
	local safe="" safein=""
	for f in $ins; do
		survives_without "${ST[$f]#*:}" || continue
		safe+=" $f"
		[[ ${ST[$f]} == in:* ]] && safein+=" $f"
	done
	files_v faulty
	fl=$FV
	files_v spare
	sp=$FV
	if [ $SERVED = 1 ]; then
		cands=(write crash stop alias suspend)
		# check/repair where every slot has its member (a rebuild is
		# waited for first)
		if [ "$LEVEL" != 0 ]; then
			for ((f = 0; f < NMEM; f++)); do holder_v $f; [ -n "$HV" ] || break; done
			[ $f = $NMEM ] && [ $ABROKEN = 0 ] && cands+=(check)
		fi
		if survives; then
			cands+=(overfail)
			[ -n "$safe" ] && cands+=(fail failw unlink truncate)
			[ -n "$safein" ] && cands+=(inject nbdkill)
			[ "$LEVEL" != 0 ] && cands+=(add)
			files_v 'rec:*'
			[ -n "$FV" ] && cands+=(rebuild)
			for f in $fl; do
				[ -n "${OLDSLOT[$f]:-}" ] && holder_v "${OLDSLOT[$f]}" && [ -z "$HV" ] && { cands+=(readd); break; }
			done
			[ -n "$fl" ] && cands+=(remove)
			# grow: every slot in sync, two at most
			if [ $NMEM -lt $((NMEM0 + 2)) ] &&
				[ "$(n_insync)" = $NMEM ] && [ $ABROKEN = 0 ]; then
				cands+=(grow)
			fi
		fi
	else
		cands=(mount assemble)
	fi
	local c=() w=()
	for e in "${cands[@]}"; do
		[ -n "${NOEV[$e]:-}" ] && continue
		c+=("$e"); w+=("${W[$e]}"); total=$((total + W[$e]))
	done
	[ ${#c[@]} -gt 0 ] || { newseq; return; }
	rnd $total
	r=$RN
	for ((e = 0; e < ${#c[@]}; e++)); do
		r=$((r - w[e]))
		[ $r -lt 0 ] && break
	done
	e=${c[e]}
	case $e in
	write) rnd 16; rand_blocks $((RN + 1)); EV="write $((NEXTGEN++)) $RB" ;;
	fail)
		pick $safe
		EV="fail $PK"
		rnd 3
		[ $RN = 0 ] && [ -n "$sp" ] && EV+=" slow" ;;
	failw)
		# fail a member while fsync'd writes run; then (always with
		# --break) kill -9 the daemon under them and mount CONFIG: the
		# failed member must stay out
		pick $safe
		f=$PK
		rand_blocks 64
		rnd 2
		if [ $BRK = 1 ] || [ $RN = 0 ]; then
			EV="failw $f $((NEXTGEN++)) kill $RB"
			if [ -n "${NOEV[mount]:-}" ]; then PENDING=(assemble); else PENDING=(mount); fi
		else
			EV="failw $f $((NEXTGEN++)) wait $RB"
		fi ;;
	unlink) pick $safe $sp; EV="unlink $PK" ;;
	inject) pick $safein; EV="inject $PK $((NEXTGEN++))" ;;
	truncate) pick $safe; EV="truncate $PK" ;;
	nbdkill)
		pick $(for f in $safein; do [ "${f#a}" = "$f" ] && echo "$f"; done)
		[ -n "$PK" ] || { EV="write $((NEXTGEN++)) 0"; return; }
		EV="nbdkill $PK $((NEXTGEN++))" ;;
	crash)
		rnd 2
		if [ $RN = 0 ] && survives; then
			rand_blocks 32
			rnd 9
			EV="crash $((RN + 1)) $((NEXTGEN++)) $RB"
		else
			EV=crash
		fi ;;
	stop | mount | add | rebuild) EV=$e ;;
	assemble) assemble_args; EV="assemble $AA" ;;
	readd)
		for f in $fl; do
			[ -n "${OLDSLOT[$f]:-}" ] && holder_v "${OLDSLOT[$f]}" && [ -z "$HV" ] && { EV="readd $f"; return; }
		done ;;
	remove) pick $fl; EV="remove $PK" ;;
	grow)
		rand_blocks 16
		pick wait kill fail
		g=$PK f=-
		# fail: a member the array survives without (with every slot in
		# sync: any of a raid4/5/6)
		[ $g = fail ] && pick $safein && f=${PK:--}
		[ $f = - ] && [ $g = fail ] && g=wait
		rnd 36
		EV="grow $g $f $((RN + 5)) $((NEXTGEN++)) $RB" ;;
	check) rnd 3; if [ $RN = 0 ]; then EV="check repair"; else EV="check check"; fi ;;
	suspend) rand_blocks 8; EV="suspend $((NEXTGEN++)) $RB" ;;
	alias)
		local kinds=(symlink assemble)
		[ $LOOPS = 1 ] && [ $NBD = 0 ] && kinds+=(loop)
		if [ $NBD = 1 ]; then
			kinds=(symlink)
			pick $(for g in $(files_in 'in:*' spare); do [ "${g#a}" = "$g" ] || echo "$g"; done)
		else
			pick $(files_in 'in:*' spare)
		fi
		[ -n "$PK" ] || { EV="write $((NEXTGEN++)) 0"; return; }
		f=$PK
		pick "${kinds[@]}"
		EV="alias $f $PK" ;;
	overfail)
		# in-sync members in a random order until the level cannot go on
		local order=() out=() i
		local -A save=()
		for f in "${FILES[@]}"; do save[$f]=${ST[$f]}; done
		for f in $(files_in 'in:*' 'rec:*'); do order+=("$f"); done
		while survives && [ ${#order[@]} -gt 0 ]; do
			rnd ${#order[@]}; i=$RN
			f=${order[i]}
			out+=("$f")
			ST[$f]=faulty
			order=("${order[@]:0:i}" "${order[@]:i+1}")
		done
		for f in "${FILES[@]}"; do ST[$f]=${save[$f]}; done
		EV="overfail ${out[*]}" ;;
	esac
}

# ------------------------------------------------------------ NBD
nbd_all_stop() {
	local p
	[ $NBD = 1 ] || return 0
	for p in "$D"/*.pid; do
		[ -s "$p" ] && kill "$(cat "$p")" 2>/dev/null
	done
	return 0
}

# ------------------------------------------------------------ the run
# step EVENT ARGS...: do it, check, report
step() {
	local t0 ms dl=30 ev=$1
	shift
	NSTEP=$((NSTEP + 1))
	SEQ_STEP=$((SEQ_STEP + 1))
	VIOLS=()
	[ "$ev" != create ] && echo "#@ step $ev $*" >>"$REPLAY"
	vlog "[$NSEQ.$SEQ_STEP] $ev $*"
	t0=$(now_ms)
	rm -f "$DIR/hung" "$DIR/hang-seen"
	sync_rec
	case $ev in rebuild | check | create) dl=90 ;; grow) dl=150 ;; esac
	"ev_$ev" "$@"
	if [ $VERB = 1 ]; then
		local mf ms=""
		for mf in "${FILES[@]}"; do ms+=" $mf=${ST[$mf]}"; done
		[ $ABROKEN = 1 ] && ms+=" (broken)"
		vlog "model:$ms"
	fi
	[ -e "$DIR/hung" ] && after_stop
	if [ $SERVED = 1 ]; then
		check_served
		check_examine served
	else
		[ "$ev" = crash ] || [ "$ev" = stop ] || check_examine crash
	fi
	if [ -e "$DIR/hung" ] && [ ! -e "$DIR/hang-seen" ]; then
		hung "raidfuse status (the control files)"
	fi
	ms=$(($(now_ms) - t0))
	vlog "($ms ms)"
	[ $ms -gt $((dl * 1000)) ] && viol "step took $ms ms, past its deadline of $dl s"
	if [ ${#VIOLS[@]} -gt 0 ]; then
		report "$ev $*"
		return 1
	fi
	return 0
}

report() {
	local v f
	NVIOL=$((NVIOL + 1))
	{
		echo "# VIOLATION at step $SEQ_STEP ($1):"
		for v in "${VIOLS[@]}"; do echo "#   $v"; done
		if [ $SERVED = 1 ]; then
			echo "# what the model expects of each block, and the check that read it:"
			echo "cat >\"\$D/expect\" <<EOF"
			cat "$D/expect"
			echo "EOF"
			echo "\"\$LCB\" verify \"\$IMG\" $STRIDE \"\$D/expect\"$(survives || echo ' --lenient'); cat \"\$MNT/mdstat\""
		fi
	} >>"$REPLAY"
	echo "lifecycle: level $LEVEL seed $SEED sequence $NSEQ step $SEQ_STEP ($1): VIOLATION"
	for v in "${VIOLS[@]}"; do echo "  - $v"; done
	mkdir -p "$SAVE"
	f=$SAVE/level$LEVEL$([ $NBD = 1 ] && echo -nbd)$([ $URING = 1 ] && echo -uring)-seed$SEED-seq$NSEQ
	[ -n "$REPLAY_IN" ] && f+=-replay
	local i=1 g=$f
	while [ -e "$g.sh" ]; do g=$f.$((i++)); done
	f=$g.sh
	cp "$REPLAY" "$f"
	echo "  replay: $f  (tools/lifecycle.sh --replay $f, or bash $f)"
	if [ $GOING = 0 ]; then
		echo "---- the sequence so far ----"
		sed -n '/^# ---- the commands/,$p' "$REPLAY" | grep -v '^#@'
		echo "----"
	fi
}

summary() {
	local t
	t=$(( ($(now_ms) - ${T0/./} / 1000) / 1000 ))
	echo "lifecycle: level $LEVEL$([ $NBD = 1 ] && echo ' nbd')$([ $URING = 1 ] && echo ' uring'): $NSEQ sequences, $NSTEP steps, $NVIOL violations, $t s${1:-}"
}

mkdir -p "$MNT" "$MNT2"
RS=$SEED
if [ -n "$REPLAY_IN" ]; then
	SRC=$(realpath "$REPLAY_IN")
	mapfile -t EVS < <(sed -n 's/^#@ step //p' "$SRC")
	for line in "${EVS[@]}"; do
		# shellcheck disable=SC2086
		step $line || break
	done
	summary
	[ $NVIOL = 0 ]
	exit
fi

newseq
# shellcheck disable=SC2086
step $EV || [ $GOING = 1 ] || { summary; exit 1; }
while [ "$NSTEP" -lt "$STEPS" ]; do
	[ $((NSTEP % 200)) = 0 ] && echo "lifecycle: progress: $NSTEP of $STEPS steps, $NVIOL violations, $SECONDS s" >&2
	draw
	# shellcheck disable=SC2086
	if ! step $EV; then
		[ $GOING = 1 ] || { summary; exit 1; }
		newseq
		# shellcheck disable=SC2086
		step $EV || true
	fi
done
summary
[ $NVIOL = 0 ]
