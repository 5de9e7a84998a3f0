#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 40-uring-suspend: FUSE over io_uring, a suspended array and more writers
# than a queue has entries.
#
# The kernel sends a request to the queue of the CPU its sender runs on,
# and a ring entry stays taken until its request is answered.  A write the
# suspended array holds back is answered only once the array is active
# again: with more writers on one CPU than that CPU's queue has entries,
# every entry held a kept-back write and the store that resumes the array
# (echo active > md/array_state), sent from that CPU too, never reached the
# daemon (bug: the writers and the store hung forever; through libfuse it
# resumes at once).  Expected: the store returns within its deadline, every
# writer completes within its own, and each written block reads back.
#
# Daemonized mount (as users run it), io_uring=on, enable_uring saved and
# restored.  Writers and the store run on CPU 0 (taskset), so they all go
# to queue 0, which has DEF_THREADS x DEF_ENTRIES = 64 entries.
# The negative control: the same writers against an active array complete
# too (the test's writers and check are sound), and the suspension really
# holds them (none completes while suspended).
. "$(dirname "$0")/lib.sh"
requires fuse root
PARAM=/sys/module/fuse/parameters/enable_uring
[ -w $PARAM ] || skip "$PARAM missing: this kernel has no FUSE over io_uring (Linux 6.14+, CONFIG_FUSE_IO_URING)"
command -v taskset >/dev/null || skip "taskset not installed (util-linux)"

OLD_PARAM=$(cat $PARAM)
case $OLD_PARAM in Y | 1) OLD_PARAM=1 ;; *) OLD_PARAM=0 ;; esac
# Restore the parameter, then lib.sh's cleanup (with the test's status).
# Writers left hanging (a failed run) end with their timeout's children.
trap 'rc=$?; _main_shell || exit $rc; set +e; for p in "${WPIDS[@]}"; do pkill -P "$p"; done; echo "$OLD_PARAM" >$PARAM; (exit $rc); _cleanup' EXIT
WPIDS=()
echo 1 >$PARAM

MNT=$WORK/mnt
IMG=$MNT/array.img
NW=${RF_URING_WRITERS:-100}     # writers: more than queue 0's 64 entries

# PAT: 2 x NW blocks of 4 KiB, block K holding its own number (8 bytes a line).
PAT=$WORK/pattern
awk -v n=$((2 * NW)) 'BEGIN { for (k = 0; k < n; k++) for (i = 0; i < 512; i++) printf "%07d\n", k }' >"$PAT"

# writers TAG BASE: NW writers on CPU 0, writer K one buffered 4 KiB write
# (a synchronous FUSE write) of block BASE + K; 60 s deadline each; their
# pids in WPIDS, their exit status in $WORK/TAG.K.
writers() {
	local tag=$1 base=$2 k
	WPIDS=()
	for ((k = 0; k < NW; k++)); do
		(
			rc=0
			timeout 60 taskset -c 0 dd if="$PAT" of="$IMG" bs=4096 skip=$((base + k)) seek=$((base + k)) \
				count=1 conv=notrunc,nocreat status=none || rc=$?
			echo $rc >"$WORK/$tag.$k"
		) &
		WPIDS+=($!)
	done
}

# wait_writers TAG SECS: every writer of TAG ended, with status 0, within SECS.
wait_writers() {
	local tag=$1 secs=$2 i k done
	for ((i = 0; i < secs * 10; i++)); do
		done=$(find "$WORK" -maxdepth 1 -name "$tag.*" | wc -l)
		[ "$done" -ge "$NW" ] && break
		sleep 0.1
	done
	[ "$done" -ge "$NW" ] || fail "$tag: only $done of $NW writers ended within $secs s"
	for ((k = 0; k < NW; k++)); do
		[ "$(cat "$WORK/$tag.$k")" = 0 ] || fail "$tag: writer $k exited $(cat "$WORK/$tag.$k")"
	done
	wait "${WPIDS[@]}"
}

# verify WHAT BASE: blocks BASE .. BASE + NW - 1 hold their numbers.
verify() {
	local base=$2
	cmp <(dd if="$IMG" bs=4096 skip="$base" count="$NW" iflag=direct status=none) \
		<(dd if="$PAT" bs=4096 skip="$base" count="$NW" status=none) || fail "$1: blocks read back wrong"
}

mk_conf "$WORK/raid.conf" level=5 chunk_size=64K members="$(members 3)" member_size=32M
create_array "$WORK/raid.conf" --assume-clean
start_array_daemon "$WORK/raid.conf" "$MNT" -o io_uring=on
# The transport of our own starts its thread for control file stores.
grep -qs rf-uring-slow /proc/"$DAEMON_PID"/task/*/comm ||
	fail "io_uring=on: the daemon runs no FUSE over io_uring threads"

log "control: $NW writers on CPU 0 against the active array"
writers active 0
wait_writers active 60
verify "active array" 0

log "suspended: $NW writers on CPU 0, then echo active from CPU 0"
echo suspended >"$MNT/md/array_state"
check '[ "$(cat "$MNT/md/array_state")" = suspended ]' "array_state did not take suspended"
writers held "$NW"
sleep 3
done=$(find "$WORK" -maxdepth 1 -name 'held.*' | wc -l)
[ "$done" = 0 ] || fail "suspended: $done writers completed while the array was suspended"
rc=0
timeout 20 taskset -c 0 sh -c "echo active >'$MNT/md/array_state'" || rc=$?
[ $rc = 0 ] || fail "echo active > md/array_state did not return within 20 s ($rc): held writes starve it"
wait_writers held 30
check '[ "$(cat "$MNT/md/array_state")" != suspended ]' "array_state still suspended"
verify "after resume" "$NW"
stop_array "$MNT"
log "the store reached the daemon past $NW held writes; every write completed and reads back"
