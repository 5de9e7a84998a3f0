#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 42-member-regrown: a member truncated and grown back to its size while
# the array is served.
#
# Bug: truncate -s 1M d1.img; truncate -s 32M d1.img (superblock kept, size
# and inode the same) was not noticed: mdstat said [UUUU] and reads served
# the zeros where d1's data had been.  md, on a block device that shrank,
# would have met IO errors.  Expected: within 10 s the member is failed
# (mdstat [4/3] [U_UU], md/dev-d1.img/state faulty) and the data written
# before reads back right (from parity).
#
# 1. Negative control: a healthy array under random writes for a while
#    (fio, 4 KiB and 64 KiB, verified) keeps every member (the detector
#    does not take the daemon's own writes for a truncate).
# 2. Daemonized mount: one open, ftruncate to 1 MiB, ftruncate to 32 MiB,
#    close (inotify's close event comes when the size is whole again; two
#    truncate(1) runs were mostly caught already, by the size check run
#    at the first one's close).
# 3. Foreground mount (its log kept), truncate(2) by path twice (no open:
#    no inotify event, the once-a-second look sees it); the log names the
#    member and says why.
# Members on a disk file system (/var/tmp, not tmpfs: lib.sh's WORK may be
# on /dev/shm), removed at exit.
. "$(dirname "$0")/lib.sh"
requires fuse fio
command -v perl >/dev/null || skip "perl not installed (truncate(2) by path)"

D=$(mktemp -d "${RF_DISK_TMP:-/var/tmp}/raidfuse-$TEST_NAME.XXXXXX") || fail "cannot make a directory in /var/tmp"
chmod 755 "$D"
# The arrays end before their members go; then lib.sh's cleanup.
_end_disk() {
	local mnt pid i
	for mnt in "${!_DAEMON_OF[@]}"; do
		pid=${_DAEMON_OF[$mnt]}
		mountpoint -q "$mnt" && fusermount3 -u -z "$mnt"
		for ((i = 0; i < 100; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
	done
	rm -rf "$D"
}
trap 'rc=$?; _main_shell || exit $rc; set +e; _end_disk; (exit $rc); _cleanup' EXIT

MNT=$WORK/mnt IMG=$WORK/mnt/array.img
awk 'BEGIN { for (k = 0; k < 4096; k++) for (i = 0; i < 512; i++) printf "%07d\n", k }' >"$WORK/pat"

# fresh: a raid5 of 4 members of 32 MiB in D, superblocks 1.2, in sync.
fresh() {
	rm -f "$D"/d*.img
	mk_conf "$D/raid.conf" metadata=1.2 level=5 chunk_size=64K members="$(members 4)" member_size=32M
	create_array "$D/raid.conf" --assume-clean
}

# write_known: 16 MiB of numbered blocks at the image's start.
write_known() {
	dd if="$WORK/pat" of="$IMG" bs=1M count=16 oflag=direct conv=notrunc status=none
}

# reads_back WHAT: those 16 MiB read back right.
reads_back() {
	cmp <(dd if="$IMG" bs=1M count=16 iflag=direct status=none) "$WORK/pat" ||
		fail "$1: the data written before reads back wrong"
}

# d1_failed WHAT: within 10 s mdstat shows d1 failed, its state faulty.
d1_failed() {
	wait_mdstat "$MNT" "[4/3] [U_UU]" "$1" 10
	check '[ "$(cat "$MNT/md/dev-d1.img/state")" = faulty ]' "$1: d1.img is $(cat "$MNT/md/dev-d1.img/state")"
	for m in d0 d2 d3; do
		check '[ "$(cat "$MNT/md/dev-$m.img/state")" = in_sync ]' "$1: $m.img is $(cat "$MNT/md/dev-$m.img/state")"
	done
}

fresh
start_array_daemon "$D/raid.conf" "$MNT"

log "control: random writes for a while keep every member"
fio_verify "$IMG" --name=w4k --rw=randwrite --bs=4k --size=24M --time_based --runtime=8 \
	--name=w64k --rw=randwrite --bs=64k --offset=24M --size=24M --time_based --runtime=8
sleep 2         # two looks of the once-a-second tick after the last write
grep -qF "[4/4] [UUUU]" "$MNT/mdstat" || fail "control: writes alone failed a member: $(cat "$MNT/mdstat")"

log "d1 truncated to 1 MiB and grown back to 32 MiB in one open: d1 fails, the data reads back"
write_known
reads_back "before the truncate"
sleep 2         # a look at the members holding the data (the tick's)
perl -e 'open(my $f, "+<", $ARGV[0]) or die "$!"; truncate($f, 1 << 20) or die "$!";
	truncate($f, 32 << 20) or die "$!"; close($f)' "$D/d1.img"
d1_failed "truncated and grown back"
reads_back "d1 truncated and grown back"
stop_array "$MNT"

log "truncate(2) by path, twice: the tick sees it, the log says so"
fresh
start_array "$D/raid.conf" "$MNT"
write_known
sleep 2         # a look at the members holding the data (the tick's)
perl -e 'truncate($ARGV[0], 1 << 20) or die "$!"; truncate($ARGV[0], 32 << 20) or die "$!"' "$D/d1.img"
d1_failed "truncate(2) by path"
reads_back "d1 truncated by path and grown back"
log_has "$MNT" "member 1 \(.*d1\.img\): .*blocks were freed" ||
	fail "the log does not say why d1 failed: $(grep d1 "$(daemon_log_file "$MNT")")"
stop_array "$MNT"
log "a member truncated and grown back fails within 10 s, its data is rebuilt from parity"
