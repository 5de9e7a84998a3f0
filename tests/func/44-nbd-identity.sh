#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 44-nbd-identity: one NBD export is one member, however its URI spells
# it: the server (a unix socket by its inode, or the address and port
# reached) and the export's name, and, where superblocks are, the md
# device UUID.
#
# 1. Metadata "none": an export named twice, through a symbolic link to
#    its socket, is refused by create and by mount, naming both URIs.
#    (Before: create and mount took it as two raid5 members, whose data
#    is wrong from the first byte.)  The same over TCP: 127.0.0.1 and
#    [::ffff:127.0.0.1], the export "exp" and "%65xp".  Control: two
#    exports on two servers serve.
# 2. Metadata 1.2: create refuses the export named twice.  (Before: create
#    wrote two superblocks to one export, and only mount refused.)
# 3. A degraded raid5 with NBD members: member 0's export written to
#    md/new_dev through the
#    socket link is refused; the array stays as it was (degraded 1, the
#    data reads back, member 0 "Active device 0") and assembles from its
#    URIs; assemble given member 0 twice (two spellings) is refused,
#    naming both, and the refusal's words reach the log of a foreground
#    daemon.  (Before: the spare superblock landed on member 0.)
# 4. Two servers of one file (no socket or address ties them): the device
#    UUID on it is one member's; assemble, mount and md/new_dev refuse the
#    second, naming both.
# Arrays of NBD members are served in the foreground (-f): detached, a
# daemon that connected before it forked has no NBD poller threads and
# its first write hangs (38-nbd-daemon).  Refusals come before any fork,
# from the command users run.  Every nbdkit is bounded by timeout(1)
# (120 s, so each section starts its own) and stopped at exit.
. "$(dirname "$0")/lib.sh"
requires fuse fio
. "$(dirname "$0")/nbdkit.sh"

role() { "$RAIDFUSE" examine "$1" | sed -n 's/^ *Device Role : //p'; }
# refused_serve ARGS...: raidfuse ARGS (mount or assemble, detaching) must
# fail; one that served is unmounted before the test fails.
refused_serve() {
	RC=0
	OUT=$(timeout 30 "$RAIDFUSE" "$@" 2>&1) || RC=$?
	if [ $RC = 0 ]; then
		local mnt=$3 i
		[ "$1" = assemble ] && mnt=$2
		for ((i = 0; i < 50; i++)); do
			fusermount3 -u "$mnt" 2>/dev/null && break
			sleep 0.1
		done
		sleep 1
		fail "expected a refusal, but it served: raidfuse $*"
	fi
}
FIO=(--rw=write --bs=64k --size=20M)

nbd_start n0 memory 32M
nbd_start n1 memory 32M
nbd_start n2 memory 32M
ln -s "$D/n0.sock" "$D/n0-link.sock"
U0="nbd+unix:///exp?socket=$D/n0.sock"
U0L="nbd+unix:///exp?socket=$D/n0-link.sock"
U1="nbd+unix:///exp?socket=$D/n1.sock"
U2="nbd+unix:///exp?socket=$D/n2.sock"

log "1. metadata none: one export named twice"
mk_conf "$D/none.conf" level=5 members="$U0 $U1 f.img $U0L" member_size=32M chunk_size=64K
expect_fail "$RAIDFUSE" create "$D/none.conf"
grep -qF "member 0 ($U0) and member 3 ($U0L) are the same NBD export twice (export \"exp\" of the server at unix socket " <<<"$OUT" ||
	fail "create, one export twice: '$OUT'"
log "   create: $(tail -n 1 <<<"${OUT#raidfuse: }")"
refused_serve mount "$D/none.conf" "$MNT"
grep -qF "member 0 ($U0) and member 3 ($U0L) are the same NBD export twice" <<<"$OUT" || fail "mount, one export twice: '$OUT'"
log "   mount refused likewise"
# TCP: an address and its v4-mapped spelling, an export name and its
# percent-encoding.
port=$((20000 + RANDOM % 20000))
nbd_start t0 -p "$port" -P "$WORK/nbdkit.t0.pid" memory 32M
T0="nbd://127.0.0.1:$port/exp"
T0B="nbd://[::ffff:127.0.0.1]:$port/%65xp"
mk_conf "$D/tcp.conf" level=5 members="$T0 $U1 f.img $T0B" member_size=32M chunk_size=64K
expect_fail "$RAIDFUSE" create "$D/tcp.conf"
grep -qF "member 0 ($T0) and member 3 ($T0B) are the same NBD export twice (export \"exp\" of the server at 127.0.0.1 port $port)" <<<"$OUT" ||
	fail "create over TCP, one export twice: '$OUT'"
refused_serve mount "$D/tcp.conf" "$MNT"
grep -qF "member 0 ($T0) and member 3 ($T0B) are the same NBD export twice" <<<"$OUT" || fail "mount over TCP: '$OUT'"
log "   TCP: ${OUT#raidfuse: }"
# Control: four different members serve.
mk_conf "$D/ok.conf" level=5 members="$U0 $U1 f.img $T0B" member_size=32M chunk_size=64K
create_array "$D/ok.conf"
start_array "$D/ok.conf" "$MNT"
fio_verify "$IMG" "${FIO[@]}"
stop_array "$MNT"
log "   control: two servers' exports and a file serve"

log "2. metadata 1.2: create refuses one export named twice"
mk_conf "$D/sb.conf" level=5 members="$U0 $U1 f.img $U0L" member_size=32M chunk_size=64K metadata=1.2
expect_fail "$RAIDFUSE" create --force "$D/sb.conf"
grep -qF "member 0 ($U0) and member 3 ($U0L) are the same NBD export twice" <<<"$OUT" || fail "create 1.2: '$OUT'"
log "   ${OUT#raidfuse: }"

log "3. md/new_dev, assemble: member 0 under another spelling"
mk_conf "$D/r5.conf" level=5 members="$U0 $U1 $U2 missing" member_size=32M chunk_size=64K metadata=1.2
create_array --force --assume-clean "$D/r5.conf"
start_array "$D/r5.conf" "$MNT"
fio_verify "$IMG" "${FIO[@]}"
expect_fail bash -c "echo '$U0L' >'$MNT/md/new_dev'"
log "   new_dev $U0L: refused (${OUT##*: })"
check '[ "$(val degraded)" = 1 ]' "md/degraded after the refusal"
grep -q "(F)" "$MNT/mdstat" && fail "a member is faulty after the refusal: $(cat "$MNT/mdstat")"
fio_verify --verify_only "$IMG" "${FIO[@]}"
check '[ "$(role "$U0")" = "Active device 0" ]' "member 0's superblock after the refusal"
stop_array "$MNT"
refused_serve assemble "$MNT" "$U0" "$U1" "$U2" "$U0L"
grep -qF "$U0 and $U0L are the same NBD export twice" <<<"$OUT" || fail "assemble, member 0 twice: '$OUT'"
log "   assemble: ${OUT#raidfuse: }"
start_assemble array.img "$MNT" "$U0" "$U1" "$U2"
fio_verify --verify_only "$IMG" "${FIO[@]}"
expect_fail bash -c "echo '$U0L' >'$MNT/md/new_dev'"
grep -qF "md/new_dev: $U0L and member 0 ($U0) are the same NBD export twice" "${_LOG_OF[$MNT]}" ||
	fail "new_dev $U0L: the log says: $(grep new_dev "${_LOG_OF[$MNT]}")"
log "   $(grep -o "md/new_dev: .*twice" "${_LOG_OF[$MNT]}")"
check '[ "$(val degraded)" = 1 ]' "md/degraded after the second refusal"
stop_array "$MNT"
log "   the array assembles from its URIs, member 0 Active device 0, data intact"

log "4. two servers of one file: one device UUID"
truncate -s 32M "$D/b0.back" "$D/b1.back" "$D/b2.back"
nbd_start b0 file "$D/b0.back"
nbd_start b0twin file "$D/b0.back"
nbd_start b1 file "$D/b1.back"
nbd_start b2 file "$D/b2.back"
B0=$(uri b0) B0T=$(uri b0twin) B1=$(uri b1) B2=$(uri b2)
mk_conf "$D/b.conf" level=5 members="$B0 $B1 $B2 missing" member_size=32M chunk_size=64K metadata=1.2
create_array --assume-clean "$D/b.conf"
refused_serve assemble "$MNT" "$B0" "$B1" "$B2" "$B0T"
grep -qF "$B0 and $B0T carry the same md device UUID" <<<"$OUT" || fail "assemble, two servers of one file: '$OUT'"
log "   assemble: ${OUT#raidfuse: }"
mk_conf "$D/b2.conf" level=5 members="$B0 $B1 $B2 $B0T" member_size=32M chunk_size=64K metadata=1.2
refused_serve mount "$D/b2.conf" "$MNT"
grep -qF "member 0 ($B0) and member 3 ($B0T) carry the same md device UUID" <<<"$OUT" || fail "mount, two servers of one file: '$OUT'"
log "   mount refused likewise"
start_assemble array.img "$MNT" "$B0" "$B1" "$B2"
fio_verify "$IMG" "${FIO[@]}"
expect_fail bash -c "echo '$B0T' >'$MNT/md/new_dev'"
grep -qF "md/new_dev: $B0T and device 0 ($B0) carry the same md device UUID" "${_LOG_OF[$MNT]}" ||
	fail "new_dev $B0T: the log says: $(grep new_dev "${_LOG_OF[$MNT]}")"
log "   $(grep -o "md/new_dev: $B0T.*UUID" "${_LOG_OF[$MNT]}")"
check '[ "$(val degraded)" = 1 ]' "md/degraded after the refusal"
fio_verify --verify_only "$IMG" "${FIO[@]}"
stop_array "$MNT"
check '[ "$(role "$B0")" = "Active device 0" ]' "member 0's superblock after the refusals"
exit 0
