#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 29-nbd: members served over NBD (nbdkit on unix sockets under $WORK),
# beside file members in one array.
#
# 1. raid1, raid5, raid10 (raid6 in a full run), file members mixed with
#    nbdkit members (memory and file plugins): create, fio verify,
#    unmount, assemble from the URIs and the files, verify again, check
#    (mismatch_cnt 0); examine on a URI shows the array.  With
#    RF_MD_JUDGE=1, kernel md (mdpeer's md-judge.sh, in QEMU) assembles
#    what a raid5 over three nbdkit file exports and one file holds after
#    fio: the same bytes, and its own check finds parity consistent.
# 2. nbdkit's error filter armed on one member under fio: fio sees no
#    error, the member is faulty (dev state, mdstat (F)), the array
#    degraded; a new nbdkit export added as a spare (ctl add URI) is
#    rebuilt onto, and check finds nothing wrong.
# 3. A member that answers late (nbdkit's delay filter, writes 1.5 s) with
#    member_timeout 400ms: it fails within its bound, fio sees no error
#    and no write waited longer than the timeout plus a margin.
#    dev-NAME/timeout reads and sets the timeout; a file member has none.
# 4. One nbdkit killed under fio (raid1, bitmap): fio sees no error, its
#    member is faulty; `ctl re-add` fails while the server is down, and
#    once it is back reconnects and rebuilds only the bitmap's dirty
#    chunks; with the file member then failed, the NBD member alone
#    serves every block fio wrote (before and while degraded).
# 5. Bad input, each a one-line error naming the member, and no member
#    written (the file members' sha256 unchanged): a socket nobody
#    listens on, a port nobody listens on (127.0.0.1), an export smaller
#    than member_size, the same export twice.
# Every nbdkit is bounded by timeout(1) and stopped at exit.
. "$(dirname "$0")/lib.sh"
requires fuse fio
. "$(dirname "$0")/nbdkit.sh"

check_clean() {
	echo check >"$MNT/md/sync_action"
	wait_sync_idle "$MNT" "check"
	check '[ "$(cat $MNT/md/mismatch_cnt)" = 0 ]' "check finds no mismatch"
}

FIO=(--rw=randwrite --bs=4k --size=12M --name=nv)

# serve_and_fail CONF WHAT CMD...: serve CONF, let its first resync end
# (and run $BEFORE_FIO), then under fio verify (about 3 s of writes) run
# CMD one second in; fio must see no error.
serve_and_fail() {
	local conf=$1 what=$2 pid
	shift 2
	create_array "$conf"
	start_array "$conf" "$MNT"
	wait_sync_idle "$MNT" "initial resync"
	${BEFORE_FIO:-}
	(fio_verify "$IMG" "${FIO[@]}" --rate_iops=1500) &
	pid=$!
	sleep 1
	"$@"
	wait $pid || fail "fio saw an error with $what"
}

# --- 1. levels over nbdkit and files ---------------------------------------------

# level_run LEVEL N_FILES N_NBD
level_run() {
	local level=$1 nf=$2 nn=$3 i list="" args=() out
	for ((i = 0; i < nf; i++)); do
		list+=" f$level-$i.img"
		args+=("$D/f$level-$i.img")
	done
	for ((i = 0; i < nn; i++)); do
		if ((i % 2)); then
			truncate -s 40M "$D/n$level-$i.back"
			nbd_start "n$level-$i" file "$D/n$level-$i.back"
		else
			nbd_start "n$level-$i" memory 40M
		fi
		list+=" $NBD_URI"
		args+=("$NBD_URI")
	done
	log "raid$level: $nf file and $nn nbdkit member(s): create, fio verify, assemble from the URIs"
	mk_conf "$D/r$level.conf" level="$level" chunk_size=64K members="$list" member_size=32M metadata=1.2 \
		bitmap=internal
	create_array "$D/r$level.conf"
	start_array "$D/r$level.conf" "$MNT"
	wait_sync_idle "$MNT" "raid$level initial resync"
	fio_verify "$IMG" "${FIO[@]}"
	stop_array "$MNT"
	out=$("$RAIDFUSE" examine "$(uri "n$level-0")")
	grep -q "Raid Level : raid$level" <<<"$out" || fail "examine on a URI: $out"
	start_assemble array.img "$MNT" "${args[@]}"
	grep -q "\[$((nf + nn))/$((nf + nn))\]" "$MNT/mdstat" || fail "assembled: $(cat "$MNT/mdstat")"
	fio_verify --verify_only "$IMG" "${FIO[@]}"
	check_clean
	stop_array "$MNT"
	for ((i = 0; i < nn; i++)); do
		nbd_stop "n$level-$i"
	done
}

level_run 1 1 1
level_run 5 1 2
level_run 10 2 2
full level_run 6 2 3

# What an NBD member holds is an md member: kernel md assembles the
# exports' backing files beside the file member and reads the same bytes.
if md_judge; then
	log "raid5 over 3 nbdkit file exports and a file: kernel md judges what they hold"
	list="j0.img"
	for i in 1 2 3; do
		truncate -s 40M "$D/j$i.back"
		nbd_start "j$i" file "$D/j$i.back"
		list+=" $NBD_URI"
	done
	mk_conf "$D/j.conf" level=5 chunk_size=64K members="$list" member_size=32M metadata=1.2 \
		bitmap=internal
	create_array "$D/j.conf"
	start_array "$D/j.conf" "$MNT"
	wait_sync_idle "$MNT" "raid5 over NBD: initial resync"
	fio_verify "$IMG" "${FIO[@]}"
	sum=$(sha256sum "$IMG" | cut -d' ' -f1)
	stop_array "$MNT"
	for i in 1 2 3; do
		nbd_stop "j$i"
	done
	"$MDJUDGE" --check "$D/j0.img" "$D"/j[123].back >"$D/judge.txt" 2>&1 ||
		fail "md-judge: $(cat "$D/judge.txt")"
	grep -q "JUDGE assemble=ok" "$D/judge.txt" || fail "kernel md did not assemble: $(cat "$D/judge.txt")"
	grep -q "JUDGE sha256=$sum " "$D/judge.txt" || fail "kernel md reads other bytes: $(cat "$D/judge.txt")"
	grep -q "JUDGE mismatch_cnt=0 " "$D/judge.txt" ||
		fail "kernel md's check found mismatches: $(cat "$D/judge.txt")"
	log "kernel md assembles the NBD members' backing files: same sha256, mismatch_cnt 0"
fi

# --- 2. the error filter on one member under fio -----------------------------

log "raid5: nbdkit's error filter armed on one member under fio"
nbd_start e1 --filter=error memory 40M error=EIO error-rate=100% error-file="$D/e1.inject"
nbd_start e2 memory 40M
mk_conf "$D/e.conf" level=5 chunk_size=64K members="e0.img $(uri e1) $(uri e2)" member_size=32M \
	metadata=1.2 bitmap=internal
serve_and_fail "$D/e.conf" "an NBD member failing" touch "$D/e1.inject"
member_failed e1.sock
log "raid5 degraded: a spare over NBD (ctl add URI) is rebuilt onto"
nbd_start e3 memory 40M
"$RAIDFUSE" ctl "$MNT" add "$NBD_URI" || fail "ctl add $NBD_URI"
wait_mdstat "$MNT" "[3/3] [UUU]" "recovery onto the NBD spare"
fio_verify --verify_only "$IMG" "${FIO[@]}"
check_clean
stop_array "$MNT"
nbd_stop e1
nbd_stop e2
nbd_stop e3

# --- 3. a server that answers late: member_timeout ----------------------------

log "raid5: writes to one member take 1.5 s, member_timeout 400ms: it fails within its bound"
truncate -s 40M "$D/t1.back"
nbd_start t1 file "$D/t1.back"
nbd_start t2 memory 40M
mk_conf "$D/t.conf" level=5 chunk_size=64K members="t0.img $(uri t1) $(uri t2)" member_size=32M \
	metadata=1.2 member_timeout=400ms
create_array --assume-clean "$D/t.conf"
nbd_stop t1
nbd_start t1 --filter=delay file "$D/t1.back" delay-write=1500ms
start_array "$D/t.conf" "$MNT"
check '[ "$(dev t1.sock timeout)" = 400ms ]' "dev-NAME/timeout reads the config's member_timeout"
check '[ "$(dev t0.img timeout)" = none ]' "a file member has no timeout"
echo 2 >"$MNT/md/dev-t2.sock/timeout" || fail "setting dev-t2.sock/timeout"
check '[ "$(dev t2.sock timeout)" = 2 ]' "dev-NAME/timeout takes seconds"
echo 30 >"$MNT/md/dev-t2.sock/timeout"
if echo 1x >"$MNT/md/dev-t2.sock/timeout" 2>/dev/null; then fail "dev-NAME/timeout took '1x'"; fi
check '[ "$(dev t1.sock state)" = in_sync ]' "the late member is in sync before any write"
fio --filename="$IMG" --direct=1 --ioengine=io_uring --iodepth=16 --rw=randwrite --bs=4k --size=8M \
	--name=late --verify=crc32c --verify_fatal=1 --verify_state_save=0 --output-format=json >"$WORK/late.json" 2>&1 ||
	fail "fio saw an error with a late NBD member: $(tail -n 20 "$WORK/late.json")"
member_failed t1.sock
maxms=$(jq '[.jobs[0].write.clat_ns.max, .jobs[0].read.clat_ns.max] | max / 1000000 | floor' "$WORK/late.json")
log "slowest request: $maxms ms (timeout 400 ms)"
check "[ $maxms -lt 1400 ]" "no request waits longer than member_timeout plus 1 s"
check "[ $maxms -ge 350 ]" "a write did wait for the late member (else this part tests nothing)"
stop_array "$MNT"
nbd_stop t1
nbd_stop t2

# --- 4. one nbdkit killed under fio -----------------------------------------------

log "raid1 with a bitmap: one nbdkit killed under fio"
truncate -s 40M "$D/k1.back"
nbd_start k1 file "$D/k1.back"
mk_conf "$D/k.conf" level=1 members="k0.img $(uri k1)" member_size=32M metadata=1.2 bitmap=internal \
	bitmap_chunk=1M
# The initial resync's bits cleared first (a pass every 5 s), so that
# what the re-add rebuilds is what was written while it was away.
bits_clear() {
	local i
	for ((i = 0; i < 200; i++)); do
		[[ $("$RAIDFUSE" examine-bitmap "$D/k0.img") == *" 0 dirty"* ]] && return 0
		sleep 0.1
	done
	fail "the bitmap never came clean: $("$RAIDFUSE" examine-bitmap "$D/k0.img" | grep dirty)"
}
BEFORE_FIO=bits_clear serve_and_fail "$D/k.conf" "its NBD server killed" kill -KILL "$(pgrep -P "${NBD_PID[k1]}" nbdkit)"
member_failed k1.sock
nbd_stop k1
expect_fail "$RAIDFUSE" ctl "$MNT" re-add k1.sock
check '[ "$(dev k1.sock state)" = faulty ]' "re-add with its server still down: still faulty"
grep -qF "re-add: $(uri k1): reconnecting" "$(daemon_log_file "$MNT")" ||
	fail "re-add with the server down: the log says nothing: $(tail -n 3 "$(daemon_log_file "$MNT")")"
log "its server back: ctl re-add reconnects and rebuilds only what the bitmap marks"
fio_verify "$IMG" --rw=write --bs=64k --size=2M --offset=20M --name=degraded
dirty=$("$RAIDFUSE" examine-bitmap "$D/k0.img" | sed -n 's/.*, \([0-9]*\) dirty.*/\1/p')
log "  the bitmap marks $dirty of 31 chunks"
nbd_start k1 --filter=log file "$D/k1.back" logfile="$WORK/k1.writes"
"$RAIDFUSE" ctl "$MNT" re-add k1.sock || fail "ctl re-add k1.sock"
wait_mdstat "$MNT" "[2/2] [UU]" "recovery after re-add"
wait_sync_idle "$MNT" "recovery after re-add"
# What the rebuild wrote on it: the bitmap's dirty chunks (1 MiB each),
# not the 31 MiB of data.
written=0
while read -r hex; do
	written=$((written + 16#${hex#0x}))
done < <(sed -n 's/.* Write id=[0-9]* offset=0x[0-9a-f]* count=\(0x[0-9a-f]*\) .*/\1/p' "$WORK/k1.writes")
log "  the re-added member was written $((written >> 10)) KiB"
check "[ $written -gt 0 ] && [ $written -le $(((dirty + 1) << 20)) ] && [ $dirty -lt 28 ]" \
	"re-add rebuilds only what the bitmap marks ($written bytes written, $dirty chunks of 1 MiB dirty)"
echo faulty >"$MNT/md/dev-k0.img/state"
fio_verify --verify_only "$IMG" "${FIO[@]}"
fio_verify --verify_only "$IMG" --rw=write --bs=64k --size=2M --offset=20M --name=degraded
stop_array "$MNT"
nbd_stop k1

# --- 5. bad input ----------------------------------------------------------------

log "bad input: each a one-line error naming the member; nothing written"
head -c 4M /dev/urandom >"$D/b0.img"
head -c 4M /dev/urandom >"$D/b2.img"
sums() { sha256sum "$D/b0.img" "$D/b2.img"; }
before=$(sums)
nbd_start small memory 8M
nbd_start dup memory 40M
port=$((20000 + RANDOM % 20000))
for bad in "$D/nobody.sock" "tcp" "small" "dup"; do
	case $bad in
	tcp) m1="nbd://127.0.0.1:$port/x" ;;
	small | dup) m1=$(uri "$bad") ;;
	*) m1="nbd+unix:///?socket=$bad" ;;
	esac
	m2=$D/b2.img
	[ "$bad" = dup ] && m2=$m1
	mk_conf "$D/b.conf" level=5 members="b0.img $m1 $m2" member_size=32M metadata=1.2
	expect_fail "$RAIDFUSE" create --force "$D/b.conf"
	check '[ "$(wc -l <<<"$OUT")" = 1 ]' "one line for $bad: $OUT"
	grep -qF "$m1" <<<"$OUT" && { [ "$bad" = dup ] || grep -qF "member 1 ($m1)" <<<"$OUT"; } ||
		fail "$bad: the error names no member: $OUT"
	log "  $bad: $OUT"
	check '[ "$(sums)" = "$before" ]' "$bad: no member written"
done
# mount: a member that went away since create is refused the same way
mk_conf "$D/m.conf" level=1 members="b0.img $(uri nobody)" metadata=none
mkdir -p "$MNT"
expect_fail timeout 20 "$RAIDFUSE" mount "$D/m.conf" "$MNT" -f
grep -qF "member 1 ($(uri nobody))" <<<"$OUT" || fail "mount: the error names no member: $OUT"
check '[ "$(sums)" = "$before" ]' "mount: no member written"
exit 0
