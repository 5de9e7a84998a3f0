#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 19-member-safety: members are what they were checked to be, from create
# to the last write.
#
# 1. create checks every member and spare before it writes the first byte:
#    a failing `create --force` (member 2 a dangling symlink, /proc/self/mem,
#    a file uid 1000 may not open) leaves d0 and d1 as they were (sha256),
#    and unlinks the member files it made; a hard link to a member is "the
#    same file twice" for create and mount.  (Before: d0/d1 were recreated,
#    then member 2 failed; /proc/self/mem passed as a regular file; the
#    hard link got two roles.)  Control: a good create --force does change
#    d0.
# 2. As root, members in a directory another user owns are refused, so
#    that user's symlink to a root-only file is not written through;
#    --allow-unsafe-dirs accepts them with a warning.  (Before: the
#    daemon wrote the array's superblock into the root-only file.)
# 3. A member truncated while mounted, then extended again by a write
#    (raid1 and raid5), fails before a read returns what was not written:
#    the data reads back right, mdstat shows the member faulty, a raid5
#    check counts no mismatch.  (Before: reads returned zeros, [UU].)
# 4. A member unlinked under IO (rm) is failed, the log and mdstat say so.
# 5. mount with "missing" refuses a dirty degraded raid5 as assemble does;
#    --force serves it, saying what may be wrong.
# 6. The array's own image written to md/new_dev fails at once, the daemon
#    goes on serving.  (Before: the writer hung in D state.)
# 7. Clearer errors: examine of a directory, a too small member_size, a
#    member_size over the free space (a warning).
. "$(dirname "$0")/lib.sh"
requires fuse root

C=$WORK/c
mkdir -p "$C"
sums() { sha256sum "$C/d0.img" "$C/d1.img" | cut -d' ' -f1 | tr '\n' ' '; }
fill() { # fill FILE: 4 MiB that no create writes
	head -c 4M /dev/urandom >"$1"
}

log "1. a failing create --force writes nothing"
fill "$C/d0.img"
fill "$C/d1.img"
ln -s "$C/nowhere" "$C/dangling.img"
for bad in "$C/dangling.img" /proc/self/mem; do
	before=$(sums)
	rm -f "$C/n3.img"
	mk_conf "$C/bad.conf" level=5 members="d0.img d1.img $bad n3.img" member_size=4M metadata=1.2
	expect_fail "$RAIDFUSE" create --force "$C/bad.conf"
	grep -q "member 2 " <<<"$OUT" || fail "create with member 2 = $bad: '$OUT' does not name member 2"
	check '[ "$(sums)" = "$before" ]' "create --force failing on member 2 ($bad) changed d0/d1"
	check '[ ! -e "$C/n3.img" ]' "create failing on member 2 ($bad) left member 3's new file behind"
	check '[ ! -e "$C/nowhere" ]' "create made the dangling symlink's target"
	log "   member 2 = $bad: refused ($(tail -n 1 <<<"$OUT")), d0/d1 unchanged"
done
if command -v setpriv >/dev/null; then
	U=$WORK/u
	mkdir -p "$U"
	fill "$U/d0.img"
	fill "$U/d1.img"
	: >"$U/locked.img"
	chown -R 1000:1000 "$U"
	chmod 000 "$U/locked.img"
	before=$(sha256sum "$U/d0.img" "$U/d1.img")
	mk_conf "$U/bad.conf" level=5 members="d0.img d1.img locked.img n3.img" member_size=4M metadata=1.2
	chown 1000:1000 "$U/bad.conf"
	expect_fail setpriv --reuid=1000 --regid=1000 --clear-groups "$RAIDFUSE" create --force "$U/bad.conf"
	grep -q "member 2 .*Permission denied" <<<"$OUT" || fail "unreadable member 2 as uid 1000: '$OUT'"
	check '[ "$(sha256sum "$U/d0.img" "$U/d1.img")" = "$before" ]' "a failing create as uid 1000 changed d0/d1"
	check '[ ! -e "$U/n3.img" ]' "a failing create as uid 1000 left n3.img"
	log "   member 2 unreadable by uid 1000: refused, d0/d1 unchanged"
fi
# The same file twice, by a hard link: refused by create and by mount.
ln "$C/d1.img" "$C/hl1.img"
before=$(sums)
mk_conf "$C/hl.conf" level=5 members="d0.img d1.img hl1.img" member_size=4M metadata=1.2
expect_fail "$RAIDFUSE" create --force "$C/hl.conf"
grep -q "member 1 (.*d1.img) and member 2 (.*hl1.img) are the same file twice" <<<"$OUT" ||
	fail "create with a hard link: '$OUT'"
check '[ "$(sums)" = "$before" ]' "create with a hard link changed d0/d1"
mk_conf "$C/hlm.conf" level=5 members="d0.img d1.img hl1.img" metadata=none
expect_fail "$RAIDFUSE" mount "$C/hlm.conf" "$WORK/mnt-hl" -f
grep -q "member 1 (.*d1.img) and member 2 (.*hl1.img) are the same file twice" <<<"$OUT" ||
	fail "mount with a hard link: '$OUT'"
rm "$C/hl1.img"
log "   a hard link is the same file twice for create and mount"
# Control: the checksum sees a create that does write.
mk_conf "$C/good.conf" level=5 members="d0.img d1.img n2.img" member_size=4M metadata=1.2
create_array --force "$C/good.conf"
check '[ "$(sums)" != "$before" ]' "control: a create --force that succeeded left d0/d1 unchanged"
log "   control: a good create --force rewrites d0/d1"

log "2. as root, no member in a directory another user may write"
if command -v setpriv >/dev/null; then
	AS_1000=(setpriv --reuid=1000 --regid=1000 --clear-groups)
	V=$WORK/v
	mkdir -p "$V"
	chown 1000:1000 "$V"
	mk_conf "$V/r.conf" level=1 members="d0.img d1.img" member_size=1M
	"${AS_1000[@]}" "$RAIDFUSE" create "$V/r.conf" >/dev/null
	SECRET=$WORK/secret
	head -c 1M /dev/urandom >"$SECRET"
	chmod 600 "$SECRET"
	before=$(sha256sum <"$SECRET")
	"${AS_1000[@]}" sh -c "rm '$V/d1.img' && ln -s '$SECRET' '$V/d1.img'"
	mkdir -p "$WORK/mnt-v"
	expect_fail timeout 10 "$RAIDFUSE" mount "$V/r.conf" "$WORK/mnt-v" -f
	grep -q "member 0 .*d0.img: refused as root: directory $V belongs to uid 1000" <<<"$OUT" ||
		fail "a member in uid 1000's directory, mounted as root: '$OUT'"
	expect_fail "$RAIDFUSE" create --force "$V/r.conf"
	grep -q "refused as root: directory $V belongs to uid 1000" <<<"$OUT" || fail "create as root in uid 1000's directory: '$OUT'"
	check '[ "$(sha256sum <"$SECRET")" = "$before" ]' "the root-only file behind uid 1000's symlink changed"
	# Control: allowed, the symlink is followed and the root-only file
	# written: what the refusal prevents.
	start_array "$V/r.conf" "$WORK/mnt-v" --allow-unsafe-dirs
	grep -q "directory $V belongs to uid 1000.*allowed by --allow-unsafe-dirs" "$(daemon_log_file "$WORK/mnt-v")" ||
		fail "--allow-unsafe-dirs did not warn: $(cat "$(daemon_log_file "$WORK/mnt-v")")"
	head -c 64K /dev/urandom | dd of="$WORK/mnt-v/array.img" bs=64K conv=fsync status=none
	stop_array "$WORK/mnt-v"
	check '[ "$(sha256sum <"$SECRET")" != "$before" ]' "control: --allow-unsafe-dirs did not write through the symlink"
	log "   refused (uid 1000's directory); control: allowed, it writes through the link"
fi

log "3. a member truncated while mounted fails before a read returns what was not written"
T=$WORK/t
mkdir -p "$T"
MNT=$WORK/mnt
# trunc_round NAME LEVEL N TAIL keys...: write the whole image (fsync),
# truncate member 1 to 1M, and once the daemon has seen it (its inotify
# watch on the member; at most 15 s) write the last TAIL bytes (raid5: a
# full stripe) with no read in between; every byte must read back as
# written (before: the reads that went to member 1 past 1M returned
# zeros).  Known open window: a write that reaches member 1 before the
# watch has seen the truncation extends the file again, and the hole it
# leaves then reads as zeros; so the test waits for the watch first.
trunc_round() {
	local name=$1 level=$2 n=$3 tail=$4 size
	shift 4
	mk_conf "$T/$name.conf" level="$level" members="$(members "$n" "$name-")" member_size=8M metadata=1.2 "$@"
	create_array --assume-clean "$T/$name.conf"
	start_array "$T/$name.conf" "$MNT"
	size=$(fsize "$MNT/array.img")
	head -c "$size" /dev/urandom >"$T/want"
	head -c "$tail" /dev/urandom >"$T/tail"
	dd if="$T/want" of="$MNT/array.img" bs=1M oflag=direct conv=fsync,notrunc status=none
	dd if="$T/tail" of="$T/want" bs="$tail" seek=$((size / tail - 1)) conv=notrunc status=none
	truncate -s 1M "$T/$name-1.img"
	wait_mdstat "$MNT" "$name-1.img[1](F)" "$name: member 1 truncated" 15
	dd if="$T/tail" of="$MNT/array.img" bs="$tail" seek=$((size / tail - 1)) oflag=direct conv=fsync,notrunc status=none
	dd if="$MNT/array.img" bs=1M iflag=direct status=none of="$T/got"
	cmp "$T/got" "$T/want" ||
		fail "$name: the image does not read back what was written after member 1 was truncated"
	grep -q "member 1 (.*$name-1.img): truncated to 1048576 bytes" "$(daemon_log_file "$MNT")" ||
		fail "$name: the log does not say member 1 was truncated: $(cat "$(daemon_log_file "$MNT")")"
	if [ "$level" = 5 ]; then
		echo check >"$MNT/md/sync_action" 2>/dev/null || true
		wait_sync_idle "$MNT" check 20
		check '[ "$(cat "$MNT/md/mismatch_cnt")" = 0 ]' "$name: a check counted mismatches with member 1 truncated"
	fi
	stop_array "$MNT"
	log "   $name: member 1 truncated to 1M: marked faulty, every byte reads back"
}
trunc_round r1 1 2 65536
trunc_round r5 5 4 196608 chunk_size=64K

log "4. a member unlinked under IO is failed"
mk_conf "$T/u.conf" level=5 members="$(members 3 u-)" member_size=8M metadata=1.2 chunk_size=64K
create_array --assume-clean "$T/u.conf"
start_array "$T/u.conf" "$MNT"
(for i in $(seq 200); do
	dd if=/dev/urandom of="$MNT/array.img" bs=64K count=4 seek=$((i % 32 * 4)) oflag=direct conv=notrunc status=none || exit 1
done) &
IO=$!
sleep 0.2
rm "$T/u-2.img"
wait_mdstat "$MNT" "u-2.img[2](F)" "member 2 unlinked under IO" 15
wait $IO || fail "writes failed while member 2 was unlinked (the array is only degraded)"
grep -q "member 2 (.*u-2.img): unlinked" "$(daemon_log_file "$MNT")" ||
	fail "the log does not say member 2 was unlinked: $(cat "$(daemon_log_file "$MNT")")"
stop_array "$MNT"
log "   rm of member 2 under IO: marked faulty, mdstat and the log say so"

log "5. mount with \"missing\" refuses a dirty degraded raid5, as assemble does"
mk_conf "$T/dd.conf" level=5 members="$(members 3 dd-)" member_size=8M metadata=1.2 chunk_size=64K
create_array "$T/dd.conf"      # no --assume-clean: a resync is due, not clean
mk_conf "$T/ddm.conf" level=5 members="dd-0.img dd-1.img missing" metadata=1.2 chunk_size=64K
expect_fail "$RAIDFUSE" mount "$T/ddm.conf" "$MNT" -f
grep -q "degraded (role(s) 2 missing) and not clean" <<<"$OUT" || fail "mount of a dirty degraded raid5: '$OUT'"
MOUNT_MSG=$(sed 's/^raidfuse: [^:]*: //' <<<"$OUT")
expect_fail "$RAIDFUSE" assemble -f "$MNT" "$T/dd-0.img" "$T/dd-1.img"
check '[ "$(sed "s/^raidfuse: //" <<<"$OUT")" = "$MOUNT_MSG" ]' "mount and assemble refuse a dirty degraded raid5 differently: '$OUT' / '$MOUNT_MSG'"
start_array "$T/ddm.conf" "$MNT" --force --freeze
grep -q "served because of --force: data in the stripes that were being written at the crash may be wrong" \
	"$(daemon_log_file "$MNT")" || fail "mount --force did not say what may be wrong: $(cat "$(daemon_log_file "$MNT")")"
stop_array "$MNT"
start_assemble array.img "$MNT" --force --freeze "$T/dd-0.img" "$T/dd-1.img"
stop_array "$MNT"
log "   refused by mount and assemble alike; --force serves it with a warning"

log "6. the array's own image as a spare is refused at once"
# raid5: the image (16M) is big enough to be a spare of its own members
# (8M), so only the served-file-system check stands in the way.
mk_conf "$T/own.conf" level=5 members="$(members 3 own-)" member_size=8M metadata=1.2 chunk_size=64K
create_array --assume-clean "$T/own.conf"
start_array "$T/own.conf" "$MNT"
t0=${EPOCHREALTIME/./}
RC=0
OUT=$(timeout 10 sh -c "echo '$MNT/array.img' > '$MNT/md/new_dev'" 2>&1) || RC=$?
ms=$(((${EPOCHREALTIME/./} - t0) / 1000))
[ "$RC" != 124 ] || fail "writing the array's own image to md/new_dev hung (10 s)"
[ "$RC" != 0 ] || fail "the array's own image was accepted as a spare"
check '[ $ms -lt 3000 ]' "refusing the array's own image took $ms ms"
grep -q "array.img: refused: it is on the file system this raidfuse serves" "$(daemon_log_file "$MNT")" ||
	fail "the log does not say why the image was refused: $(cat "$(daemon_log_file "$MNT")")"
timeout 5 cat "$MNT/mdstat" >/dev/null || fail "mdstat does not answer after the refusal"
timeout 5 dd if="$MNT/array.img" of=/dev/null bs=1M count=1 iflag=direct status=none ||
	fail "the image does not answer after the refusal"
# Control: a good spare through the same file is taken.
truncate -s 8M "$T/own-s.img"
timeout 10 sh -c "echo '$T/own-s.img' > '$MNT/md/new_dev'" || fail "a good spare was refused"
grep -q 'own-s.img\[3\](S)' "$MNT/mdstat" || fail "the good spare is not listed: $(cat "$MNT/mdstat")"
stop_array "$MNT"
log "   refused in $ms ms, the daemon goes on serving; control: a good spare is added"

log "7. clearer errors"
mkdir -p "$T/adir"
expect_fail "$RAIDFUSE" examine "$T/adir"
grep -q "adir: is a directory, not a member" <<<"$OUT" || fail "examine of a directory: '$OUT'"
mk_conf "$T/small.conf" level=5 members="$(members 3 sm-)" member_size=6M chunk_size=2M metadata=1.2
expect_fail "$RAIDFUSE" create "$T/small.conf"
grep -q "members too small for one chunk (2097152 bytes) after data_offset [0-9]* bytes" <<<"$OUT" ||
	fail "member_size too small for one chunk: '$OUT' does not name the data offset"
check '[ ! -e "$T/sm-0.img" ]' "a refused create left sm-0.img"
mk_conf "$T/huge.conf" level=1 members="$(members 2 hg-)" member_size=64T metadata=none
OUT=$("$RAIDFUSE" create "$T/huge.conf" 2>&1) || fail "create of sparse 64T members failed: $OUT"
grep -q "warning: member 0 (.*hg-0.img): its file system has [0-9]* bytes free, the members made there take up to" <<<"$OUT" ||
	fail "member_size over the free space: no warning: '$OUT'"
rm -f "$T"/hg-*.img
# A daemon that died with the image open leaves a dead mount behind.
mk_conf "$T/dead.conf" level=1 members="$(members 2 dead-)" member_size=8M
create_array "$T/dead.conf"
start_array "$T/dead.conf" "$MNT"
exec 9<"$MNT/array.img"
kill -9 "$DAEMON_PID"
wait_daemon_exit "$MNT" --any-status
for i in $(seq 50); do # the kernel ends the connection once the daemon's files are released
	timeout 2 stat "$MNT" 2>&1 | grep -q "not connected" && break
	sleep 0.1
done
expect_fail timeout 10 "$RAIDFUSE" mount "$T/dead.conf" "$MNT" -f
grep -q "fusermount3 -uz $MNT" <<<"$OUT" || fail "a remount over a dead mount: '$OUT' does not say fusermount3 -uz"
exec 9<&-
fusermount3 -uz "$MNT"
log "   examine DIR, too small for one chunk, over the free space, a dead mount: each says what and why"
