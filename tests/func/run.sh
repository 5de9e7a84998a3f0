#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# run.sh - run the functional tests: every tests/func/NN-*.sh, in order.
#
#   RAIDFUSE=/abs/path/raidfuse tests/func/run.sh [NN-name ...]
#
# Each test prints PASS, FAIL or SKIP (exit 77, with its reason); the run
# ends with "N passed, N failed, N skipped" and exits 1 if any failed.
# Names on the command line (01-levels, 01-levels.sh or just 01) pick
# tests; the default is all of them.  A test gets RF_TEST_TIMEOUT seconds (default 300).
# RF_STRICT=1 turns known raidfuse bugs (XFAIL) into failures.
#
# RAIDFUSE defaults to build/raidfuse of this tree; `make func` sets it.
#
# Two runs may go at once (CI runs the ASan build's beside the plain
# one): a test that changes the machine's global state (FUSE's
# enable_uring parameter: every mount of the other run would change
# transport) runs alone.  Each test holds a lock on $RF_TEST_LOCK (shared,
# or exclusive for those), taken by this script, not by the test's own
# processes (its daemons must not keep it).

set -u

FUNC_DIR=$(cd "$(dirname "$0")" && pwd)
TOP_DIR=$(cd "$FUNC_DIR/../.." && pwd)
export RAIDFUSE=${RAIDFUSE:-$TOP_DIR/build/raidfuse}
TIMEOUT=${RF_TEST_TIMEOUT:-300}

if [ ! -x "$RAIDFUSE" ]; then
	echo "run.sh: no raidfuse binary at $RAIDFUSE (run make, or set RAIDFUSE)" >&2
	exit 1
fi

tests=()
if [ $# -gt 0 ]; then
	for t; do
		t=${t%.sh}
		t=${t##*/}
		if [ -f "$FUNC_DIR/$t.sh" ]; then
			tests+=("$FUNC_DIR/$t.sh")
		elif compgen -G "$FUNC_DIR/$t-*.sh" >/dev/null; then
			tests+=("$FUNC_DIR/$t"-*.sh)
		else
			echo "run.sh: no test $t" >&2
			exit 2
		fi
	done
else
	for t in "$FUNC_DIR"/[0-9][0-9]-*.sh; do
		tests+=("$t")
	done
fi

RF_TEST_LOCK=${RF_TEST_LOCK:-${TMPDIR:-/tmp}/raidfuse-func-tests.lock}
exec {lock_fd}>>"$RF_TEST_LOCK" || exit 1

# Whether test $1 changes state every run on the machine shares.
changes_global() {
	grep -q 'parameters/enable_uring' "$1"
}

# hang_report PID: the processes under PID (the test's), each thread's
# kernel wait channel and, as root, its kernel stack.
hang_report() {
	local pids=("$1") i=0 p t
	while [ $i -lt ${#pids[@]} ]; do
		for p in $(pgrep -P "${pids[$i]}"); do pids+=("$p"); done
		i=$((i + 1))
	done
	echo "run.sh: still running 10 s before the timeout; its processes:"
	ps -o pid,ppid,stat,etime,wchan:24,args -p "$(IFS=,; echo "${pids[*]}")"
	# The daemons detach from the test: every raidfuse counts.
	for p in $(pgrep -x raidfuse) $(pgrep -f 'build[^ ]*/raidfuse'); do
		echo "--- raidfuse $p: $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)"
		for t in /proc/"$p"/task/*; do
			echo "  $(cat "$t/comm" 2>/dev/null) ${t##*/}: $(cat "$t/wchan" 2>/dev/null)"
			[ -r "$t/stack" ] && sed 's/^/      /' "$t/stack" 2>/dev/null | head -n 12
		done
	done | head -n 400
}

echo "functional tests: $RAIDFUSE"
pass=0 failed=0 skipped=0 xfail=0 failed_names=()
start_all=$SECONDS
for t in "${tests[@]}"; do
	name=$(basename "$t" .sh)
	out=$(mktemp)
	mode=-s
	changes_global "$t" && mode=-x
	flock "$mode" -w "$TIMEOUT" "$lock_fd" ||
		echo "run.sh: $name waited ${TIMEOUT}s for $RF_TEST_LOCK; run without it" >&2
	start=$SECONDS
	timeout -k 20 "$TIMEOUT" bash "$t" >"$out" 2>&1 </dev/null {lock_fd}>&- &
	tpid=$!
	# Ten seconds before the timeout: what every process of the test
	# waits for, into its output (a hang in CI can be read afterwards).
	(
		sleep $((TIMEOUT > 20 ? TIMEOUT - 10 : TIMEOUT))
		kill -0 "$tpid" 2>/dev/null && hang_report "$tpid" >>"$out" 2>&1
	) </dev/null >/dev/null 2>&1 {lock_fd}>&- &
	wpid=$!
	wait "$tpid"
	rc=$?
	pkill -P "$wpid" sleep 2>/dev/null
	kill "$wpid" 2>/dev/null
	wait "$wpid" 2>/dev/null
	flock -u "$lock_fd"
	secs=$((SECONDS - start))
	case $rc in
	0)
		pass=$((pass + 1))
		printf 'PASS  %-20s %4ds\n' "$name" "$secs"
		# Known bugs (XFAIL) and fixed ones (XPASS) are worth seeing.
		awk '/^\[[^]]*\] X(FAIL|PASS):/ { p = 1; print; next }
		     p && /^    / { print; next }
		     { p = 0 }' "$out" | sed 's/^/    | /'
		xfail=$((xfail + $(grep -c -E '^\[[^]]*\] XFAIL:' "$out" || true)))
		;;
	77)
		skipped=$((skipped + 1))
		reason=$(grep -m1 'SKIP:' "$out" | sed 's/.*SKIP: //')
		printf 'SKIP  %-20s %4ds  (%s)\n' "$name" "$secs" "${reason:-no reason given}"
		;;
	*)
		failed=$((failed + 1))
		failed_names+=("$name")
		[ $rc = 124 ] && echo "run.sh: $name timed out after ${TIMEOUT}s" >>"$out"
		printf 'FAIL  %-20s %4ds  (exit %d)\n' "$name" "$secs" "$rc"
		sed 's/^/    | /' "$out"
		;;
	esac
	rm -f "$out"
done

echo "functional tests took $((SECONDS - start_all))s"
[ $failed = 0 ] || echo "failed: ${failed_names[*]}"
[ $xfail = 0 ] || echo "known raidfuse bugs (XFAIL, RF_STRICT=1 fails on them): $xfail"
echo "$pass passed, $failed failed, $skipped skipped"
[ $failed = 0 ]
