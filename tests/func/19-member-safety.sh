#!/bin/bash
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
