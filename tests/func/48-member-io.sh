#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 48-member-io: the member IO mode (array.member_io, md/dev-NAME/io_mode)
# with members as files on a disk file system (a directory under
# /var/tmp, not $WORK: that is on /dev/shm, whose files are memory).
#
# For raid5 (4 members) and raid1 (2; full runs only, not RF_QUICK=1), each
# in direct and buffered mode,
# served the way users run it (the daemon detaches; the remount after the
# crash, which only reads, runs in the foreground):
# 1. md/dev-*/io_mode says the mode asked.  The member files' pages are
#    dropped from the page cache, then fio writes and verifies 4 KiB random
#    and 1 MiB sequential IO on the image, and a write of a few bytes at an
#    odd offset reads back.  Direct: the member files' pages in the page
#    cache (fincore) stay ~0 (under 64 pages: 256 KiB); buffered (the
#    control): they grow by at least the bytes written to one member.
# 2. kill -9 while dd (O_DIRECT + fsync, each block logged once its write
#    returned) and fio write: the next mount reads every acknowledged block
#    back.
# Then, at run time on a direct raid5: io_mode "buffered" takes effect (the
#    page cache grows under IO), "direct" again (it stays put, and data
#    written in either mode verifies), a word it does not take is refused
#    and changes nothing.
. "$(dirname "$0")/lib.sh"
requires fuse fio

command -v fincore >/dev/null || skip "fincore (util-linux) not installed"
DISK=$(mktemp -d /var/tmp/rf48.XXXXXX)
# Removed at exit too, before lib.sh's cleanup (which keeps the status).
trap '_rc=$?; _main_shell || exit $_rc; rm -rf "$DISK"; (exit $_rc); _cleanup' EXIT
case $(stat -f -c %T "$DISK") in
tmpfs | ramfs) skip "/var/tmp is in memory: no disk file system to test on" ;;
esac

MNT=$WORK/mnt
IMG=$MNT/array.img
NBLK=2048               # numbered blocks in the first 8 MiB of the image
STEP=7919
MEMBER=64M

# cached D N: pages of D's member files d0..d(N-1) in the page cache.
cached() {
	local i f=()
	for ((i = 0; i < $2; i++)); do
		f+=("$1/d$i.img")
	done
	fincore --raw --noheadings --output PAGES "${f[@]}" | awk '{ s += $1 } END { print s + 0 }'
}

# drop D N: the member files' pages out of the page cache.
drop() {
	local i
	for ((i = 0; i < $2; i++)); do
		dd if=/dev/null of="$1/d$i.img" oflag=nocache conv=notrunc,fdatasync count=0 status=none
	done
}

kill_daemon() {
	kill -9 "$DAEMON_PID"
	wait_daemon_exit "$MNT" --any-status
	fusermount3 -u -z "$MNT" 2>/dev/null || true
}

modes() { cat "$MNT"/md/dev-*/io_mode | sort -u | tr '\n' ' '; }

# round NAME N MODE conf keys...
round() {
	local name=$1 n=$2 mode=$3 D=$DISK/$1-$3 before after acked grown
	shift 3
	mkdir -p "$D"
	acked=$D/acked
	mk_conf "$D/raid.conf" metadata=1.2 members="$(members "$n")" member_size=$MEMBER member_io="$mode" "$@"
	create_array "$D/raid.conf" --assume-clean
	drop "$D" "$n"
	# Detached as users run it; the remount after the crash only reads.
	start_array_daemon "$D/raid.conf" "$MNT"
	check '[ "$(modes)" = "$mode " ]' "$name $mode: md/dev-*/io_mode says '$(modes)'"

	before=$(cached "$D" "$n")
	fio_verify "$IMG" --rw=randwrite --bs=4k --size=8M --iodepth=32
	fio_verify "$IMG" --rw=write --bs=1M --offset=32M --size=24M --iodepth=8
	head -c 5000 /dev/urandom >"$D/odd"
	dd if="$D/odd" of="$IMG" bs=1 seek=$((40 << 20 | 4097)) conv=notrunc status=none
	cmp -s "$D/odd" <(dd if="$IMG" bs=1 skip=$((40 << 20 | 4097)) count=5000 status=none) ||
		fail "$name $mode: 5000 bytes written at an odd offset read back wrong"
	after=$(cached "$D" "$n")
	log "$name $mode: member pages in the page cache: $before before, $after after"
	if [ "$mode" = direct ]; then
		check '[ $((after - before)) -lt 64 ]' "$name direct: member IO filled the page cache ($before -> $after pages)"
	else
		# 32 MiB written to the image: each member gets 8 MiB at least.
		grown=$(((8 << 20) / 4096))
		check '[ $((after - before)) -ge $grown ]' \
			"$name buffered: member IO did not go through the page cache ($before -> $after pages, want +$grown)"
	fi

	log "$name $mode: kill -9 while dd and fio write"
	ack_start "$acked" --iodepth=8
	sleep 0.5
	kill_daemon
	ack_wait "$acked" "$name $mode"
	start_array "$D/raid.conf" "$MNT"
	ack_verify "$acked" "$name $mode"
	stop_array "$MNT"
	rm -rf "$D"
}

round raid5 4 direct level=5 chunk_size=64K
round raid5 4 buffered level=5 chunk_size=64K
full round raid1 2 direct level=1
full round raid1 2 buffered level=1

log "run time: io_mode changed under a mounted raid5"
D=$DISK/switch
mkdir -p "$D"
mk_conf "$D/raid.conf" metadata=1.2 level=5 chunk_size=64K members="$(members 4)" member_size=$MEMBER
create_array "$D/raid.conf" --assume-clean
drop "$D" 4
start_array_daemon "$D/raid.conf" "$MNT"
check '[ "$(modes)" = "direct " ]' "auto on a disk: want direct, io_mode says '$(modes)'"
for f in "$MNT"/md/dev-*/io_mode; do echo buffered >"$f"; done
check '[ "$(modes)" = "buffered " ]' "io_mode after writing buffered: '$(modes)'"
before=$(cached "$D" 4)
fio_verify "$IMG" --rw=randwrite --bs=4k --size=16M --iodepth=16
after=$(cached "$D" 4)
check '[ $((after - before)) -ge 1024 ]' "switched to buffered: the page cache did not grow ($before -> $after)"
for f in "$MNT"/md/dev-*/io_mode; do echo direct >"$f"; done
check '[ "$(modes)" = "direct " ]' "io_mode after writing direct: '$(modes)'"
check '[ "$(cached "$D" 4)" -lt 64 ]' "switched to direct: the cache of buffered IO was not dropped ($(cached "$D" 4) pages)"
fio_verify --verify_only "$IMG" --rw=randwrite --bs=4k --size=16M --iodepth=16
before=$(cached "$D" 4)
fio_verify "$IMG" --rw=randwrite --bs=4k --offset=16M --size=16M --iodepth=16
after=$(cached "$D" 4)
check '[ $((after - before)) -lt 64 ]' "switched back to direct: member IO filled the page cache ($before -> $after)"
f=$(ls -d "$MNT"/md/dev-* | head -n 1)/io_mode
expect_fail sh -c "echo sideways >'$f'"
check '[ "$(modes)" = "direct " ]' "a refused word changed io_mode: '$(modes)'"
stop_array "$MNT"
log "ok"
