#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# md-golden-job.sh - the guest side of tools/md-golden.sh: kernel md makes one array.
#
# Runs as /job.sh in mdpeer's QEMU guest (busybox sh, root), with the member images
# attached as /dev/vda, /dev/vdb, ... in the order md-golden.sh gives.  It builds one
# array in the shape JOB_KIND names, fills it with the golden pattern (every 512-byte
# array sector s holds u64le(s) 64 times, written by mdpeer-pattern), reads it back
# after dropping caches, runs md's "check" where the array is redundant and whole, and
# leaves its notes in /host (the 9p share, the set's info/ directory) in the form
# mdpeer's golden_manifest.py reads: job.log (its first line is the mdadm --create
# command), detail.txt, sysfs.txt, mdstat.txt and examine-vdX.txt of every member.
#
# Kinds (JOB_KIND):
#   plain    create, let md resync, then the pattern, check, stop.
#   grow     create JOB_NDEV0 members from the first disks, resync, add the next disk,
#            mdadm --grow --raid-devices=JOB_NDEV, let the reshape finish; then the
#            pattern: it is written in the array's final shape.
#   replace  create JOB_NDEV0 members over vda, the LAST disk, vdc, ...; resync; grow
#            to JOB_NDEV with the next disks if JOB_NDEV is larger; then add vdb as a
#            spare, set its data offset to JOB_NEW_OFFSET sectors through sysfs (mdadm
#            4.2 gives a new member the array's offset and has no --data-offset for
#            --add), and mdadm --replace the last disk with it; let the
#            rebuild finish, remove the old disk; then the pattern.  vdb ends in role 1,
#            so the attach order is the role order of the final array.
#   reshape  create, resync, the pattern, check; then a reshape (JOB_GROW_ARGS, e.g.
#            --raid-devices=4 after adding the last disk, or --array-size/--raid-devices
#            for a shrink) limited to a crawl, frozen and stopped once reshape_position
#            has passed JOB_STOP_PCT percent of the array, and examined.
#   reshape-backup  a grow in place, each disk partitioned (p1 the member, p2 small):
#            create over the p1s (JOB_CREATE_OPTS with a --data-offset that leaves
#            no room before the data), resync, the pattern, check; add the last
#            disk's p1; mdadm --grow JOB_GROW_ARGS --backup-file (a file in /tmp) at
#            a crawl, held until mdadm's background process has written its backup;
#            then md runs until it records a reshape_position, and that process is
#            killed, md frozen and stopped there: inside the critical section (below
#            the backup's end).  The file goes to /host/md.backup.  The hold: mdadm
#            4.2 starts md's reshape with sync_max at max before its background
#            process reads the critical section, and md moves rows there first, so
#            the file would hold rows of the new geometry.  So a raid1 over vda2 and
#            vdb2 checks at a crawl while mdadm starts the grow (md delays the
#            reshape of an array that shares a disk with one syncing), the reshape
#            is frozen, sync_max set to 0 and the reshape let go on; the raid1
#            stops, md's reshape waits at sync_max, and the background process,
#            which waits for md to run, reads the critical section untouched and
#            lets md go on (sync_max), as mdadm means it to.
#   reshape-verify  (members attached as snapshots, so they stay mid-reshape) assemble:
#            md goes on with the reshape from where the members say; once it is done,
#            the pattern must read back over the array's size before the reshape, and
#            md's check must find no mismatch.  (Kernel 6.1 serves no reads of an
#            array frozen mid-reshape, read-only or not: they block until the reshape
#            moves on, so the members are verified through md finishing the reshape.)
#            With JOB_BACKUP mdadm assembles with --backup-file=/host/JOB_BACKUP (a grow
#            in place stopped in its critical section: mdadm writes the file's rows back
#            first); verify.log says whether it did ("restoring critical section"), or
#            why the assembly failed.
#   midreplace  create JOB_NDEV members over all disks but the last, resync, the
#            pattern, check; then add the last disk as a spare and mdadm --replace
#            role 1 (vdb) with it, the copy limited to a crawl, frozen and stopped once
#            sync_completed has passed JOB_STOP_PCT percent, and examined: the last
#            disk's superblock records it as role 1's replacement with its recovery
#            offset, the other four are the array as it was.
#   midreplace-verify  (members attached as snapshots, so they stay mid-replace)
#            assemble all five at a crawl, note where md's copy resumes, let it finish:
#            the replacement must take role 1 and the old member be left faulty; then
#            the pattern must read back and md's check find no mismatch.
#   crash    create (JOB_CREATE_OPTS: a PPL array), resync, the pattern, check; then
#            partial-stripe writes of the "new" pattern (sector s holds u64le(s + 2^32))
#            at the places plan.txt lists, and a hard reset (sysrq b) mid-write.  The
#            guest never powers off cleanly and writes no examine: crash-verify does.
#   crash-verify  (members attached as snapshots) examine every member, assemble
#            read-write so that md recovers from its log, run check, read the pattern
#            outside the planned writes, and copy the planned region to /host/region.img
#            for the host to sort into old and new sectors.
#
# Parameters (JOB_* from run-guest.sh): JOB_KIND, JOB_CREATE_OPTS (mdadm --create
# options without devices), JOB_NDEV (raid devices at the end), JOB_NDEV0 (grow, replace,
# reshape: at create), JOB_NEW_OFFSET (replace: sectors), JOB_GROW_ARGS, JOB_ARRAY_SIZE (reshape: optional
# --array-size before the grow), JOB_STOP_PCT, JOB_STOP_SYNC_MAX (reshape: stop at that member
# sector by sync_max instead), JOB_SPEED_KIB (reshape, midreplace: crawl speed),
# JOB_PLAN_START / JOB_PLAN_STRIPES / JOB_PLAN_STRIDE / JOB_PLAN_OFFSETS / JOB_PLAN_BLOCK
# (crash: sectors), JOB_CRASH_AFTER (crash: seconds of writing before the reset),
# JOB_BACKUP (reshape-verify: mdadm --assemble --backup-file=/host/JOB_BACKUP).
#
# It does NOT decide whether the result is right beyond md's own read-back and check:
# the host cross-checks the notes (golden_manifest.py) and the images (check_raid5.py).
O=/host
MD=/sys/block/md0/md
say() { echo "md-golden-job: $*"; echo "$*" >> $O/job.log; }
now() { cut -d' ' -f1 /proc/uptime; }
since() { echo "$(now) $1" | awk '{printf "%.1f", $1-$2}'; }
die() { say "FAILED: $*"; cat /proc/mdstat; dmesg | tail -n 30; exit 1; }
# run CMD...: log the command to job.log, run it, its output to the console
run() { say "$*"; "$@" 2>&1; }

[ -d /sys/module/md_mod ] || die "md_mod not loaded"
case "$JOB_KIND" in *-verify) ;; *) : > $O/job.log ;; esac
disks=""
for d in /dev/vd?; do disks="$disks $d"; done
set -- $disks

# wait_idle: until md has no resync, recovery or reshape running
wait_idle() {
	sleep 1
	[ -r $MD/sync_action ] || return 0   # raid0 and linear never sync
	mdadm --wait /dev/md0 >/dev/null 2>&1
	while [ "$(cat $MD/sync_action)" != idle ] || grep -qE 'resync|recovery|reshape' /proc/mdstat; do
		sleep 1
	done
}

# pattern_write / pattern_check: the golden pattern over the whole md device
pattern_write() {
	mdpeer-pattern write /dev/md0 | tee -a $O/job.log || die "pattern write"
	sync
}
pattern_check() {
	echo 3 > /proc/sys/vm/drop_caches
	timeout 150 mdpeer-pattern check /dev/md0 | tee -a $O/job.log
	[ "$(tail -n 1 $O/job.log | grep -c ' OK$')" = 1 ] || die "pattern check"
}

# md_check: md's own scrub; prints mismatch_cnt
md_check() {
	echo check > $MD/sync_action || die "echo check > sync_action"
	wait_idle
	cat $MD/mismatch_cnt
}

# record MISMATCH: detail.txt, mdstat.txt and sysfs.txt of the running array.  sysfs
# prints "new (old)" for a layout, chunk or raid_disks that a reshape changes: md.X is
# the old one (the shape the data is in up to the reshape position), md.new_X the new.
record() {
	mdadm --detail /dev/md0 > $O/detail.txt 2>&1
	cat /proc/mdstat > $O/mdstat.txt
	{
		echo "kernel=$(uname -r)"
		echo "mdadm=$(mdadm --version 2>&1)"
		echo "array_sectors=$(blockdev --getsz /dev/md0)"
		for f in level layout chunk_size raid_disks component_size metadata_version \
			array_state reshape_position reshape_direction consistency_policy; do
			[ -r $MD/$f ] || continue
			v=$(cat $MD/$f)
			case "$v" in
			*" ("*")") o=${v#*(}; echo "md.$f=${o%)}"; echo "md.new_$f=${v%% (*}" ;;
			*) echo "md.$f=$v" ;;
			esac
		done
		for dev in $MD/dev-*; do
			n=${dev##*/dev-}
			echo "rdev.$n.slot=$(cat $dev/slot) rdev.$n.offset=$(cat $dev/offset)" \
				"rdev.$n.new_offset=$(cat $dev/new_offset) rdev.$n.size=$(cat $dev/size)" \
				"rdev.$n.state=$(cat $dev/state)"
		done
		echo "mismatch_cnt=$1"
	} > $O/sysfs.txt
}

offsets() { # offsets WHEN: each member's data offset (sectors) into job.log
	l=""
	for dev in $MD/dev-*; do l="$l ${dev##*/dev-}=$(cat $dev/offset)"; done
	say "data offsets $1:$l"
}

examine_all() { # examine_all: examine-vdX.txt of every member
	for d in $disks; do mdadm --examine $d > $O/examine-${d##*/}.txt 2>&1; done
}

create() { # create DEVICES...
	say "mdadm --create /dev/md0 --run $JOB_CREATE_OPTS $*"
	yes | mdadm --create /dev/md0 --run $JOB_CREATE_OPTS "$@" > $O/create.log 2>&1 ||
		{ cat $O/create.log; die "mdadm --create"; }
	cat $O/create.log
	wait_idle
}

redundant() { case "$JOB_CREATE_OPTS" in *--level=0*) return 1 ;; esac; return 0; }

# finish: the array is in its final shape: the pattern, md's check, the records, stop
finish() {
	pattern_write; pattern_check
	mm=na; redundant && mm=$(md_check)
	say "check mismatch_cnt=$mm"
	record "$mm"
	run mdadm --stop /dev/md0 || die "stop"
}

wait_pct() { # wait_pct reshape|copy: sync_completed past JOB_STOP_PCT % (5 min at most)
	local what=$1 pct=0 n=0 idle=0 more=
	while [ $pct -lt "$JOB_STOP_PCT" ]; do
		sleep 0.2
		# shellcheck disable=SC2046 # "done / total": two words wanted
		set -- $(cat $MD/sync_completed 2>/dev/null | tr -d '/')
		[ $# = 2 ] && [ "$2" -gt 0 ] && pct=$(($1 * 100 / $2))
		n=$((n + 1))
		[ $n -gt 1500 ] && die "the $what did not reach $JOB_STOP_PCT% (sync_completed $(cat $MD/sync_completed))"
		if [ "$(cat $MD/sync_action)" = idle ]; then idle=$((idle + 1)); else idle=0; fi
		[ "$what" = reshape ] && more=" (reshape_position $(cat $MD/reshape_position))"
		[ $idle -gt 25 ] && die "no $what running at $pct%$more"
	done
	return 0
}
crawl() { # crawl KIB_PER_S: limit resync/reshape speed, system-wide and for md0
	echo 1 > /proc/sys/dev/raid/speed_limit_min
	echo "$1" > /proc/sys/dev/raid/speed_limit_max
	echo 1 > $MD/sync_speed_min
	echo "$1" > $MD/sync_speed_max
}

t0=$(now)
case "$JOB_KIND" in
plain)
	create $disks
	finish
	examine_all
	;;
grow)
	first=""; i=0
	for d in $disks; do [ $i -lt "$JOB_NDEV0" ] && first="$first $d"; i=$((i + 1)); done
	create $first
	shift "$JOB_NDEV0"
	run mdadm /dev/md0 --add "$@" || die "add"
	offsets "before the reshape"
	run mdadm --grow /dev/md0 --raid-devices="$JOB_NDEV" || die "grow"
	cat /proc/mdstat
	wait_idle
	say "reshape done after $(since $t0)s"
	offsets "after the reshape"
	finish
	examine_all
	;;
replace)
	old=$(echo $disks | awk '{print $NF}')
	# roles 0 .. JOB_NDEV-1 are the first disks; role 1 starts on the old (last) disk
	cdevs=""; adevs=""; i=0
	for d in $disks; do
		[ "$d" = "$old" ] && break
		if [ $i -ge "$JOB_NDEV0" ]; then adevs="$adevs $d"
		elif [ $i = 1 ]; then cdevs="$cdevs $old"
		else cdevs="$cdevs $d"; fi
		i=$((i + 1))
	done
	create $cdevs
	if [ -n "$adevs" ]; then
		offsets "before the reshape"
		run mdadm /dev/md0 --add $adevs || die "add"
		run mdadm --grow /dev/md0 --raid-devices="$JOB_NDEV" || die "grow"
		wait_idle
		offsets "after the reshape"
	fi
	# md takes a spare's data offset (and size) through sysfs while the spare is
	# not in use: frozen, so that no recovery starts on it before that
	echo frozen > $MD/sync_action
	run mdadm /dev/md0 --add /dev/vdb || die "add vdb"
	if [ -n "${JOB_NEW_OFFSET:-}" ]; then
		kib=$((($(blockdev --getsz /dev/vdb) - JOB_NEW_OFFSET) / 2))
		say "echo $JOB_NEW_OFFSET > $MD/dev-vdb/offset; echo $kib > $MD/dev-vdb/size"
		echo "$JOB_NEW_OFFSET" > $MD/dev-vdb/offset || die "dev-vdb/offset"
		echo "$kib" > $MD/dev-vdb/size || die "dev-vdb/size"
	fi
	run mdadm /dev/md0 --replace "$old" --with /dev/vdb || die "replace"
	echo idle > $MD/sync_action
	cat /proc/mdstat
	wait_idle
	run mdadm /dev/md0 --remove "$old" || die "remove $old"
	offsets "after the replacement"
	say "replacement done after $(since $t0)s"
	finish
	# the old member is no longer part of the array
	mdadm --examine "$old" > $O/examine-replaced-member.txt 2>&1
	disks=$(echo $disks | sed "s|$old||")
	examine_all
	;;
reshape)
	first=""; i=0
	for d in $disks; do [ $i -lt "$JOB_NDEV0" ] && first="$first $d"; i=$((i + 1)); done
	create $first
	pattern_write; pattern_check
	mm=$(md_check)
	say "check before the reshape mismatch_cnt=$mm"
	shift "$JOB_NDEV0"
	[ $# -gt 0 ] && { run mdadm /dev/md0 --add "$@" || die "add"; }
	[ -n "${JOB_ARRAY_SIZE:-}" ] && { run mdadm --grow /dev/md0 --array-size="$JOB_ARRAY_SIZE" || die "array-size"; }
	size=$(blockdev --getsz /dev/md0)
	say "array_sectors before the reshape=$size"
	offsets "before the reshape"
	crawl "$JOB_SPEED_KIB"
	# JOB_STOP_SYNC_MAX: md's reshape stops at that member sector itself, as
	# mdadm has it wait (it records its position before it waits), instead
	# of being frozen on the way
	[ -n "${JOB_STOP_SYNC_MAX:-}" ] && { echo "$JOB_STOP_SYNC_MAX" > $MD/sync_max || die "sync_max"; }
	# the check's sync thread may still be going away: md refuses new offsets until then
	sleep 3
	run mdadm --grow /dev/md0 $JOB_GROW_ARGS || {
		sleep 5
		run mdadm --grow /dev/md0 $JOB_GROW_ARGS || die "grow"
	}
	# reshape_position counts array sectors (of the new shape for a grow, from the end
	# for a backwards reshape); sync_completed counts per-member progress: use it
	if [ -n "${JOB_STOP_SYNC_MAX:-}" ]; then
		n=0
		until [ "$(cut -d' ' -f1 $MD/sync_completed 2>/dev/null)" = "$JOB_STOP_SYNC_MAX" ]; do
			sleep 0.2
			n=$((n + 1))
			[ $n -gt 1500 ] && die "the reshape did not reach sync_max (sync_completed $(cat $MD/sync_completed))"
		done
		sleep 1
		say "stopped by sync_max at sync_completed $(cat $MD/sync_completed), reshape_position $(cat $MD/reshape_position)"
	else
		wait_pct reshape
		echo frozen > $MD/sync_action
		say "frozen at sync_completed $(cat $MD/sync_completed), reshape_position $(cat $MD/reshape_position)"
	fi
	record "$mm"
	run mdadm --stop /dev/md0 || die "stop"
	examine_all
	for d in $disks; do
		grep -q "Reshape pos'n" $O/examine-${d##*/}.txt || die "$d: no reshape position after the stop"
	done
	;;
reshape-backup)
	export MDADM_NO_SYSTEMCTL=1     # no systemd here: mdadm forks its own process
	M1=/sys/block/md1/md
	first=""; i=0
	for d in $disks; do [ $i -lt "$JOB_NDEV0" ] && first="$first ${d}1"; i=$((i + 1)); done
	create $first
	pattern_write; pattern_check
	mm=$(md_check)
	say "check before the reshape mismatch_cnt=$mm"
	shift "$JOB_NDEV0"
	more=""
	for d in "$@"; do more="$more ${d}1"; done
	run mdadm /dev/md0 --add $more || die "add"
	say "array_sectors before the reshape=$(blockdev --getsz /dev/md0)"
	offsets "before the reshape"
	crawl 1
	yes | mdadm --create /dev/md1 --run --level=1 --raid-devices=2 --metadata=1.2 --bitmap=none \
		--assume-clean /dev/vda2 /dev/vdb2 > /dev/null 2>&1 || die "create md1"
	echo 1 > $M1/sync_speed_min
	echo 1 > $M1/sync_speed_max
	echo check > $M1/sync_action
	sleep 3
	bk=/tmp/md.backup
	run mdadm --grow /dev/md0 $JOB_GROW_ARGS --backup-file=$bk || die "grow"
	grep -q 'resync=DELAYED' /proc/mdstat || die "md0's reshape is not held: $(cat /proc/mdstat)"
	echo frozen > $MD/sync_action
	n=0
	until [ "$(cat $MD/sync_completed)" = none ]; do
		sleep 0.1
		n=$((n + 1))
		[ $n -gt 300 ] && die "md0's reshape did not stop for the freeze"
	done
	echo 0 > $MD/sync_max || die "sync_max 0"
	echo reshape > $MD/sync_action || die "sync_action reshape"
	echo frozen > $M1/sync_action
	hdr() { od -A n -t u8 -j "$1" -N 8 $bk 2>/dev/null | tr -d ' '; }
	n=0
	until [ "$(hdr 56)" -gt 0 ] 2>/dev/null; do
		sleep 0.1
		n=$((n + 1))
		[ $n -gt 600 ] && die "mdadm wrote no backup in 60 s (sync_max $(cat $MD/sync_max), sync_completed $(cat $MD/sync_completed))"
	done
	start=$(hdr 48)
	len=$(hdr 56)
	say "mdadm's backup header: $(od -A n -c -N 16 $bk | tr -d ' '), array sectors [$start, $((start + len)))"
	n=0
	while [ "$(cat $MD/reshape_position)" = 0 ]; do
		sleep 0.1
		n=$((n + 1))
		[ $n -gt 600 ] && die "md recorded no reshape_position in 60 s (sync_max $(cat $MD/sync_max), sync_completed $(cat $MD/sync_completed))"
	done
	sm=$(cat $MD/sync_max)
	pids=$(pidof mdadm)
	[ -n "$pids" ] && kill -9 $pids
	echo frozen > $MD/sync_action
	pos=$(cat $MD/reshape_position)
	say "mdadm's process killed (sync_max $sm), md frozen at reshape_position $pos"
	[ "$pos" -lt $((start + len)) ] || die "reshape_position $pos is past the critical section"
	record "$mm"
	run mdadm --stop /dev/md0 || die "stop"
	run mdadm --stop /dev/md1 || die "stop md1"
	for d in $disks; do mdadm --examine ${d}1 > $O/examine-${d##*/}.txt 2>&1; done
	cp $bk $O/md.backup || die "cp $bk"
	;;
reshape-verify)
	: > $O/verify.log
	size=$(sed -n 's/^array_sectors before the reshape=//p' $O/job.log)
	[ -n "$size" ] || die "no 'array_sectors before the reshape' in job.log"
	bk=
	[ -n "${JOB_BACKUP:-}" ] && bk="--backup-file=$O/$JOB_BACKUP"
	mdadm --assemble /dev/md0 $bk $disks > $O/verify-assemble.log 2>&1 ||
		{ cat $O/verify-assemble.log; echo "verify: assemble failed: $(tr '\n' ' ' < $O/verify-assemble.log)" >> $O/verify.log; die "assemble"; }
	cat $O/verify-assemble.log /proc/mdstat
	echo "verify: assembled at reshape_position $(cat $MD/reshape_position)${bk:+ ($bk; mdadm: $(grep -o 'restoring critical section' $O/verify-assemble.log))}" | tee -a $O/verify.log
	wait_idle
	cat /proc/mdstat
	echo "verify: reshape finished: reshape_position $(cat $MD/reshape_position), raid_disks $(cat $MD/raid_disks), array_sectors $(blockdev --getsz /dev/md0)" | tee -a $O/verify.log
	echo 3 > /proc/sys/vm/drop_caches
	mdpeer-pattern check /dev/md0 0 "$size" | tee -a $O/verify.log
	tail -n 1 $O/verify.log | grep -q ' OK$' || die "pattern check after the reshape"
	echo "verify: md check after the reshape mismatch_cnt=$(md_check)" | tee -a $O/verify.log
	l=""
	for dev in $MD/dev-*; do l="$l ${dev##*/dev-}=$(cat $dev/offset)"; done
	echo "verify: data offsets after the reshape:$l" | tee -a $O/verify.log
	run mdadm --stop /dev/md0 || die "stop"
	;;
midreplace)
	new=$(echo $disks | awk '{print $NF}')
	old=/dev/vdb
	cdevs=$(echo $disks | sed "s|$new||")
	create $cdevs
	pattern_write; pattern_check
	mm=$(md_check)
	say "check before the replacement mismatch_cnt=$mm"
	crawl "$JOB_SPEED_KIB"
	sleep 3
	run mdadm /dev/md0 --add "$new" || die "add $new"
	run mdadm /dev/md0 --replace "$old" --with "$new" || die "replace"
	# sync_completed counts the copy in sectors of each member: done / dev_sectors
	wait_pct copy
	cat /proc/mdstat
	say "mdstat before the freeze: $(grep -o 'recovery = .*' /proc/mdstat)"
	sc=$(cat $MD/sync_completed)
	echo frozen > $MD/sync_action
	nd=${new##*/} od=${old##*/}
	say "frozen at sync_completed $sc; $nd: slot $(cat $MD/dev-$nd/slot) state $(cat $MD/dev-$nd/state)" \
		"recovery_start $(cat $MD/dev-$nd/recovery_start); $od: slot $(cat $MD/dev-$od/slot)" \
		"state $(cat $MD/dev-$od/state) recovery_start $(cat $MD/dev-$od/recovery_start)"
	record "$mm"
	{
		echo "sync_completed_at_freeze=$sc"
		for dev in $MD/dev-*; do
			echo "rdev.${dev##*/dev-}.recovery_start=$(cat $dev/recovery_start)"
		done
	} >> $O/sysfs.txt
	run mdadm --stop /dev/md0 || die "stop"
	examine_all
	grep -q "Device Role : Replacement device 1" $O/examine-$nd.txt ||
		die "$new: not role 1's replacement after the stop: $(grep 'Device Role' $O/examine-$nd.txt)"
	grep -q "Recovery Offset :" $O/examine-$nd.txt || die "$new: no recovery offset after the stop"
	;;
midreplace-verify)
	: > $O/verify.log
	v() { echo "verify: $*" | tee -a $O/verify.log; }
	devstates() { # devstates: slot, state and recovery_start of every member
		l=""
		for dev in $MD/dev-*; do
			l="$l ${dev##*/dev-}=$(cat $dev/slot),$(cat $dev/state | tr , +),$(cat $dev/recovery_start)"
		done
		echo "$l"
	}
	# the copy crawls while it is looked at, as it did when it was stopped
	echo 1 > /proc/sys/dev/raid/speed_limit_min
	echo "${JOB_SPEED_KIB:-1000}" > /proc/sys/dev/raid/speed_limit_max
	say "mdadm --assemble /dev/md0$disks"
	mdadm --assemble /dev/md0 $disks > $O/verify-assemble.log 2>&1 || { cat $O/verify-assemble.log; die "assemble"; }
	cat $O/verify-assemble.log
	v "assembled: sync_action $(cat $MD/sync_action), sync_completed $(cat $MD/sync_completed);$(devstates)"
	sleep 2
	cat /proc/mdstat
	v "2 s later: sync_action $(cat $MD/sync_action), sync_completed $(cat $MD/sync_completed);$(devstates)"
	v "mdstat: $(grep -o 'recovery = .*' /proc/mdstat)"
	echo 1000000 > /proc/sys/dev/raid/speed_limit_max
	echo 1000000 > $MD/sync_speed_max
	wait_idle
	cat /proc/mdstat
	dmesg | grep -iE 'md0|md:|raid' > $O/verify-dmesg.txt
	v "md said: $(grep md0 $O/verify-dmesg.txt | grep -iE 'recover|resum|replac|checkpoint|spare' |
		sed 's/^\[[^]]*\] //' | tr '\n' ';')"
	v "copy finished: sync_action $(cat $MD/sync_action), degraded $(cat $MD/degraded);$(devstates)"
	mdadm --detail /dev/md0 > $O/verify-detail.txt 2>&1
	v "detail: $(sed -n '/RaidDevice State/,$p' $O/verify-detail.txt | sed '1d;s/  */ /g;s/^ //' | tr '\n' ';')"
	echo 3 > /proc/sys/vm/drop_caches
	mdpeer-pattern check /dev/md0 | tee -a $O/verify.log
	tail -n 1 $O/verify.log | grep -q ' OK$' || die "pattern check after the replacement"
	v "md check after the replacement mismatch_cnt=$(md_check)"
	run mdadm --stop /dev/md0 || die "stop"
	for d in $disks; do
		mdadm --examine $d > /tmp/ex 2>&1
		v "after the stop: ${d##*/}: $(grep -E 'Feature Map|Device Role|Recovery Offset|Array State|Events' /tmp/ex |
			sed 's/^ *//;s/  */ /g' | tr '\n' ';')"
	done
	;;
crash)
	create $disks
	pattern_write; pattern_check
	mm=$(md_check)
	say "check mismatch_cnt=$mm"
	record "$mm"
	SZ=$(blockdev --getsz /dev/md0)
	# the new data: sector s of /tmp/new.img at offset (s + 2^32) * 512 holds
	# u64le(s + 2^32): a sparse file, only the array's worth is written
	: > /tmp/new.img
	mdpeer-pattern write /tmp/new.img 4294967296 "$SZ" > /dev/null || die "new pattern"
	B=${JOB_PLAN_BLOCK:-8}
	{
		echo "# partial-stripe writes started before the reset: one writer per offset, in"
		echo "# parallel, each writing block_sectors at start + i * stride + its offset for"
		echo "# i = 0 .. stripes-1 in turn (O_DIRECT, one at a time); a written block holds"
		echo "# the new pattern u64le(s + 2^32) in each of its sectors s"
		echo "plan_start_sector=$JOB_PLAN_START"
		echo "plan_stripes=$JOB_PLAN_STRIPES"
		echo "plan_stride_sectors=$JOB_PLAN_STRIDE"
		echo "plan_offsets_sectors=\"$JOB_PLAN_OFFSETS\""
		echo "block_sectors=$B"
	} > $O/plan.txt
	sync
	writer() { # writer OFFSET: every stripe of the plan, at OFFSET
		i=0
		while [ $i -lt "$JOB_PLAN_STRIPES" ]; do
			s=$((JOB_PLAN_START + i * JOB_PLAN_STRIDE + $1))
			dd if=/tmp/new.img of=/dev/md0 bs=$((B * 512)) count=1 skip=$(((s + 4294967296) / B)) \
				seek=$((s / B)) oflag=direct conv=notrunc 2>/dev/null
			i=$((i + 1))
			[ $((i % 32)) = 0 ] && echo "md-golden-job: writer $1: $i blocks"
		done
	}
	say "writers start"
	for off in $JOB_PLAN_OFFSETS; do writer "$off" & done
	sleep "${JOB_CRASH_AFTER:-3}"
	say "reset mid-write (sysrq b) after ${JOB_CRASH_AFTER:-3}s"
	echo "md-golden-job: MD-GOLDEN-RESET"
	echo b > /proc/sysrq-trigger
	sleep 30
	die "still alive after sysrq b"
	;;
crash-verify)
	: > $O/verify.log
	examine_all
	mdadm --assemble --run /dev/md0 $disks > $O/verify-assemble.log 2>&1 || die "assemble"
	cat $O/verify-assemble.log
	wait_idle
	dmesg | grep -iE 'md0|ppl|raid' > $O/verify-dmesg.txt
	mm=$(md_check)
	echo "verify: md check after assembly mismatch_cnt=$mm" | tee -a $O/verify.log
	. $O/plan.txt
	# shellcheck disable=SC2154
	end=$((plan_start_sector + plan_stripes * plan_stride_sectors))
	SZ=$(blockdev --getsz /dev/md0)
	echo 3 > /proc/sys/vm/drop_caches
	mdpeer-pattern check /dev/md0 0 "$plan_start_sector" | tee -a $O/verify.log || die "pattern before the plan"
	mdpeer-pattern check /dev/md0 "$end" $((SZ - end)) | tee -a $O/verify.log || die "pattern after the plan"
	dd if=/dev/md0 of=$O/region.img bs=512 skip="$plan_start_sector" count=$((end - plan_start_sector)) 2>/dev/null ||
		die "copy of the planned region"
	echo "verify: region_start=$plan_start_sector region_sectors=$((end - plan_start_sector))" | tee -a $O/verify.log
	mdadm --detail /dev/md0 > $O/verify-detail.txt 2>&1
	run mdadm --stop /dev/md0 || die "stop"
	;;
*) die "unknown JOB_KIND '$JOB_KIND'" ;;
esac
sync
say "done after $(since $t0)s"
exit 0
