#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 52-last-copy: a level without parity never fails the last copy of its
# data (md's raid1_error, raid10_error, raid0_error): the device stays in
# sync, the array is broken (writes fail, reads go on), the superblocks
# never record it faulty, and the array comes back with it after a stop.
#
# For raid1 (2 members), raid10 (4, n2) and raid0 (2), in the daemonized
# default mode, on 1.2 superblocks:
# 1. 8 MiB of a known pattern is written; raid1 and raid10 lose one copy
#    through `ctl fail` (taken: the array survives it).
# 2. `ctl fail` of a device holding the last copy of some data is refused
#    (md's EBUSY); the device reads in_sync; md/array_state says broken and
#    status --detail "FAILED" with exit code 2; a write fails (EIO); the
#    whole image reads back the pattern.
# 3. stopped, and mounted again from the same config: served, with the
#    kept device in its slot (raid1 [2/1] [_U], raid0 whole), its
#    superblock's role active; the pattern reads back, and writes work.
# Before (16e1b68): the kept device was marked faulty and recorded so in its
# own superblock; the mount after the stop refused the array ("records it
# as faulty" / "too few members"), and the data on it was out of reach.
. "$(dirname "$0")/lib.sh"
requires fuse

R=$RAIDFUSE
MNT=$WORK/mnt
PAT=$WORK/pattern
head -c $((8 << 20)) /dev/urandom >"$PAT"

# one LEVEL NMEMBERS FAILFIRST LAST EXPECT-MDSTAT-AFTER
one() {
	local level=$1 n=$2 first=$3 last=$4 want=$5 D=$WORK/r$1 st out rc
	mkdir -p "$D"
	log "raid$level, $n members: fail ${first:-nothing}, then the last copy $last"
	mk_conf "$D/a.conf" level="$level" chunk_size=64K members="$(members "$n" "$D/d")" \
		member_size=32M metadata=1.2
	create_array --assume-clean "$D/a.conf"
	start_array_daemon "$D/a.conf" "$MNT"
	dd if="$PAT" of="$MNT/array.img" bs=1M oflag=direct conv=notrunc status=none ||
		fail "raid$level: writing the pattern failed"
	if [ -n "$first" ]; then
		"$R" ctl "$MNT" fail "$first" >/dev/null 2>&1 || fail "raid$level: ctl fail $first refused (the array survives it)"
	fi
	expect_fail "$R" ctl "$MNT" fail "$last"
	check "grep -q 'busy' <<<\"\$OUT\"" "raid$level: ctl fail of the last copy says busy (md's EBUSY): $OUT"
	st=$(cat "$MNT/md/dev-$last/state")
	check "[ '$st' = in_sync ]" "raid$level: $last, kept, reads '$st', not in_sync"
	st=$(cat "$MNT/md/array_state")
	check "[ '$st' = broken ]" "raid$level: md/array_state reads '$st', not broken"
	rc=0
	out=$("$R" status --detail "$MNT" 2>&1) || rc=$?
	check "[ $rc = 2 ] && grep -q 'State : .*FAILED' <<<\"\$out\"" \
		"raid$level: status --detail exits $rc (want 2, mdadm --detail --test's failed) or lacks FAILED"
	expect_fail dd if=/dev/zero of="$MNT/array.img" bs=4k count=1 seek=7 oflag=direct conv=notrunc status=none
	check "grep -q 'Input/output error' <<<\"\$OUT\"" "raid$level: a write to the broken array: $OUT"
	check "cmp -s '$PAT' <(head -c $((8 << 20)) '$MNT/array.img')" "raid$level: the image no longer reads the pattern"
	stop_array "$MNT"
	out=$("$R" examine "$D/$last" 2>&1)
	check "grep -q 'Device Role : Active device' <<<\"\$out\"" \
		"raid$level: $last's superblock does not say active: $(grep 'Device Role' <<<"$out")"
	start_array_daemon "$D/a.conf" "$MNT"
	check "grep -qF '$want' '$MNT/mdstat'" "raid$level: after the stop mdstat reads $(sed -n 3p "$MNT/mdstat"), want $want"
	check "cmp -s '$PAT' <(head -c $((8 << 20)) '$MNT/array.img')" \
		"raid$level: after the stop the image no longer reads the pattern"
	dd if=/dev/zero of="$MNT/array.img" bs=4k count=1 seek=7 oflag=direct conv=notrunc status=none ||
		fail "raid$level: a write after the array came back failed"
	stop_array "$MNT"
}

one 1 2 d0.img d1.img "[2/1] [_U]"
one 10 4 d2.img d3.img "[4/3] [UU_U]"
one 0 2 "" d1.img "active raid0"
log "the last copy of the data stays in sync, the array broken; it comes back with it"
