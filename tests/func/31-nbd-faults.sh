#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 31-nbd-faults: NBD members that refuse, stop answering, or should not be
# read (nbdkit on unix sockets and 127.0.0.1 under $WORK).
#
# 1. Bad input, each a one-line error naming the member, and no member
#    written (the file members' sha256 unchanged): a server that requires
#    TLS (nbdkit --tls=require) while the URI asks for none; a wrong export
#    name (nbdkit's exportname filter, strict).
# 2. A server that stops answering under fio (nbdkit's pause filter, then a
#    server stopped with SIGSTOP, which does not even read its socket),
#    member_timeout 500ms: the member is failed within its timeout plus a
#    margin, fio sees no error, no request waits longer than the timeout
#    plus a margin.
# 3. write_mostly over NBD (raid1, a file and an nbdkit member): reads are
#    counted on the server (nbdkit's log filter); while the NBD member is
#    write-mostly a random read run sends it none, and without the flag the
#    same run reads from it (the negative control).
# 4. Two servers exporting one export name (127.0.0.1, two ports): their
#    devices have different names (md/dev-127.0.0.1:PORT:disk).
# 5. failfast: the config key (array.failfast, member indexes) and
#    md/dev-NAME/state "failfast"/"-failfast"; one read error (fault
#    injection, count=1) on a member without it is retried and the member
#    stays in sync (the control), on a failfast member it fails the member.
# Every nbdkit is bounded by timeout(1) and stopped (continued first) at exit.
. "$(dirname "$0")/lib.sh"
requires fuse fio
. "$(dirname "$0")/nbdkit.sh"

# --- 1. bad input ------------------------------------------------------------

log "bad input: TLS required, a wrong export name: one line naming the member, nothing written"
head -c 4M /dev/urandom >"$D/b0.img"
head -c 4M /dev/urandom >"$D/b2.img"
sums() { sha256sum "$D/b0.img" "$D/b2.img"; }
before=$(sums)
(umask 077 && echo "raid:$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$D/psk")
nbd_start tls --tls=require --tls-psk="$D/psk" memory 40M
nbd_start exp --filter=exportname memory 40M exportname=good exportname-strict=true
for bad in tls exp; do
	case $bad in
	tls) m1=$(uri tls) why="TLS" ;;
	exp) m1="nbd+unix:///bad?socket=$D/exp.sock" why="export named 'bad'" ;;
	esac
	mk_conf "$D/b.conf" level=5 members="b0.img $m1 b2.img" member_size=32M metadata=1.2
	expect_fail "$RAIDFUSE" create --force "$D/b.conf"
	check '[ "$(wc -l <<<"$OUT")" = 1 ]' "one line for $bad: $OUT"
	grep -qF "member 1 ($m1)" <<<"$OUT" || fail "$bad: the error names no member: $OUT"
	grep -qF "$why" <<<"$OUT" || fail "$bad: the error does not say why ($why): $OUT"
	log "  $bad: $OUT"
	check '[ "$(sums)" = "$before" ]' "$bad: no member written"
done
# The right export name goes through (the negative control of the above).
mk_conf "$D/b.conf" level=5 members="b0.img nbd+unix:///good?socket=$D/exp.sock b2.img" member_size=4M \
	metadata=1.2
"$RAIDFUSE" create --force "$D/b.conf" >/dev/null || fail "create with the right export name"
nbd_stop tls
nbd_stop exp

# --- 2. a server that stops answering ---------------------------------------

# pause_ctl p|r: pause or resume s1's pause filter (its control socket).
pause_ctl() {
	python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode())
s.recv(1)' "$D/s1.ctl" "$1"
}

# The margin over member_timeout: 1.5 s; a sanitizer build's daemon (make
# asan: 2-5x slower, at nice 19 beside make test, and fio beside it waiting
# for the CPU before it sends the IO that meets the paused server) gets
# 9.5 s: the plain pass holds the bound, this one the memory checks.
MARGIN_MS=1500
if raidfuse_has __asan_init; then
	MARGIN_MS=9500
fi

# stall_run HOW: raid5 (a file and two nbdkit members, member_timeout
# 500ms); fio writes and verifies while member 1's server stops answering
# one second in (HOW: pause, the pause filter; stop, SIGSTOP).
stall_run() {
	local how=$1 pid t0 t1 maxms args=()
	[ "$how" = pause ] && args=(--filter=pause)
	rm -f "$D/s0.img" "$D/s1.back"
	truncate -s 40M "$D/s1.back"
	nbd_start s1 "${args[@]}" file "$D/s1.back" ${args:+pause-control="$D/s1.ctl"}
	nbd_start s2 memory 40M
	mk_conf "$D/s.conf" level=5 chunk_size=64K members="s0.img $(uri s1) $(uri s2)" member_size=32M \
		metadata=1.2 member_timeout=500ms
	create_array --assume-clean "$D/s.conf"
	start_array "$D/s.conf" "$MNT"
	(fio --filename="$IMG" --direct=1 --ioengine=io_uring --iodepth=16 --rw=randwrite --bs=4k --size=12M \
		--rate_iops=1500 --name=stall --verify=crc32c --verify_fatal=1 --verify_state_save=0 \
		--output-format=json >"$WORK/stall.$how.json" 2>&1) &
	pid=$!
	sleep 1
	t0=${EPOCHREALTIME/./}
	if [ "$how" = pause ]; then
		pause_ctl p || fail "pausing s1 through its control socket"
	else
		kill -STOP "$(nbd_proc s1)"
	fi
	for ((i = 0; i < 200; i++)); do
		[ "$(dev s1.sock state)" = faulty ] && break
		sleep 0.05
	done
	t1=${EPOCHREALTIME/./}
	log "  $how: member failed $(((t1 - t0) / 1000)) ms after its server stopped answering (timeout 500 ms)"
	member_failed s1.sock
	check "[ $(((t1 - t0) / 1000)) -lt $((500 + MARGIN_MS)) ]" "$how: failed within the timeout plus a margin"
	wait $pid || fail "fio saw an error with a server that stopped answering ($how): $(tail -n 20 "$WORK/stall.$how.json")"
	maxms=$(jq '[.jobs[0].write.clat_ns.max, .jobs[0].read.clat_ns.max] | max / 1000000 | floor' \
		"$WORK/stall.$how.json")
	log "  $how: slowest request $maxms ms"
	check "[ $maxms -lt $MARGIN_MS ]" "$how: no request waits longer than member_timeout plus $((MARGIN_MS - 500)) ms"
	check "[ $maxms -ge 400 ]" "$how: a request did wait for the stalled member (else this part tests nothing)"
	# Resumed, so that it can stop: a paused nbdkit waits for its requests.
	if [ "$how" = pause ]; then
		pause_ctl r
	else
		kill -CONT "$(nbd_proc s1)"
	fi
	stop_array "$MNT"
	nbd_stop s1
	nbd_stop s2
}
if command -v python3 >/dev/null; then
	log "raid5: nbdkit's pause filter stops one member's server under fio"
	stall_run pause
else
	log "python3 not installed: the pause filter part is left out (SIGSTOP still runs)"
fi
log "raid5: one member's server stopped (SIGSTOP) under fio"
stall_run stop

# --- 3. write_mostly over NBD ---------------------------------------------------

log "raid1: reads avoid a write-mostly NBD member while the file copy is healthy"
truncate -s 40M "$D/w1.back"
nbd_start w1 --filter=log file "$D/w1.back" logfile="$WORK/w1.log"
mk_conf "$D/w.conf" level=1 members="w0.img $(uri w1)" member_size=32M metadata=1.2
create_array --assume-clean "$D/w.conf"
start_array "$D/w.conf" "$MNT"
reads() { grep -c ' Read id=' "$WORK/w1.log" || true; }
rread() { fio --filename="$IMG" --direct=1 --ioengine=io_uring --iodepth=8 --rw=randread --bs=4k --size=16M \
	--io_size=8M --name=wm --output=/dev/null || fail "fio randread"; }
n0=$(reads)
rread
n1=$(reads)
log "  without write_mostly: $((n1 - n0)) reads on the NBD member"
check "[ $((n1 - n0)) -gt 100 ]" "without write_mostly, reads go to the NBD member too (negative control)"
echo writemostly >"$MNT/md/dev-w1.sock/state"
check '[ "$(dev w1.sock state)" = in_sync,write_mostly ]' "dev-w1.sock/state shows write_mostly"
grep -q 'w1.sock\[1\](W)' "$MNT/mdstat" || fail "mdstat does not mark w1.sock (W): $(cat "$MNT/mdstat")"
# The flag is written in every superblock (its one read on the export).
n1=$(reads)
rread
n2=$(reads)
log "  write_mostly: $((n2 - n1)) reads on the NBD member"
check "[ $((n2 - n1)) = 0 ]" "a write-mostly NBD member serves no reads while the file copy is healthy"
echo faulty >"$MNT/md/dev-w0.img/state"
rread
n3=$(reads)
check "[ $((n3 - n2)) -gt 100 ]" "with the file copy failed, the write-mostly member serves the reads"
stop_array "$MNT"
nbd_stop w1

# --- 4. one export name on two hosts ----------------------------------------

log "two servers exporting 'disk': two device names"
p1=$((20000 + RANDOM % 20000))
p2=$((p1 + 1))
nbd_start h1 -p "$p1" -i 127.0.0.1 -P "$WORK/nbdkit.h1.pid" memory 40M
nbd_start h2 -p "$p2" -i 127.0.0.1 -P "$WORK/nbdkit.h2.pid" memory 40M
mk_conf "$D/h.conf" level=1 members="nbd://127.0.0.1:$p1/disk nbd://127.0.0.1:$p2/disk" member_size=32M \
	metadata=1.2
create_array --assume-clean "$D/h.conf"
start_array "$D/h.conf" "$MNT"
for p in $p1 $p2; do
	[ -d "$MNT/md/dev-127.0.0.1:$p:disk" ] || fail "no md/dev-127.0.0.1:$p:disk: $(ls "$MNT/md" | grep dev-)"
done
check '[ "$(dev 127.0.0.1:$p2:disk slot)" = 1 ]' "each name is its own device"
grep -qF "127.0.0.1:$p1:disk[0]" "$MNT/mdstat" && grep -qF "127.0.0.1:$p2:disk[1]" "$MNT/mdstat" ||
	fail "mdstat does not name both: $(cat "$MNT/mdstat")"
stop_array "$MNT"
nbd_stop h1
nbd_stop h2

# --- 5. failfast ------------------------------------------------------------------

log "failfast: a read that fails once is retried, unless the member is failfast"
nbd_start f1 memory 40M
mk_conf "$D/f.conf" level=1 members="f0.img $(uri f1)" member_size=32M metadata=1.2
create_array --assume-clean "$D/f.conf"
sed -i 's/^array: {$/array: {\n\tfailfast = ( 1 );/' "$D/f.conf"
start_array "$D/f.conf" "$MNT"
check '[ "$(dev f1.sock state)" = in_sync,failfast ]' "the config's failfast shows in dev-f1.sock/state"
echo -failfast >"$MNT/md/dev-f1.sock/state"
check '[ "$(dev f1.sock state)" = in_sync ]' "-failfast clears it"
# one_bad_read: arm one read error on f1.sock, read until it has hit.
one_bad_read() {
	local i
	echo "error=EIO ops=read count=1" >"$MNT/md/dev-f1.sock/fault"
	for ((i = 0; i < 20; i++)); do
		fio --filename="$IMG" --direct=1 --ioengine=io_uring --iodepth=4 --rw=randread --bs=4k --size=16M \
			--io_size=1M --name=ff --output=/dev/null || fail "fio saw an error reading with one bad read"
		grep -q "errors=1" "$MNT/md/dev-f1.sock/fault" && return 0
	done
	fail "the armed read error never hit: $(cat "$MNT/md/dev-f1.sock/fault")"
}
one_bad_read
check '[ "$(dev f1.sock state)" = in_sync ]' "a read that failed once was retried: the member stays in sync"
echo failfast >"$MNT/md/dev-f1.sock/state"
one_bad_read
check '[ "$(dev f1.sock state)" = faulty,failfast ]' "one failed read fails a failfast member at once"
grep -q " f1.sock\[1\](F)" "$MNT/mdstat" || fail "mdstat does not mark f1.sock (F): $(cat "$MNT/mdstat")"
stop_array "$MNT"
nbd_stop f1

exit 0
