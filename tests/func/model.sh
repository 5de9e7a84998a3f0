# SPDX-License-Identifier: GPL-2.0-or-later
# model.sh - sourced after lib.sh by the tests that hold an image to a model:
# a file of what every sector of the array must hold, each write the test
# makes made to both.  The sourcing test sets IMG (the image), MODEL and MNT,
# or has model_setup set them.

# model_setup: DISK a directory on the disk (/var/tmp: members on a disk
# file system, not in memory), removed at exit; MNT and IMG in WORK; MODEL
# in DISK.
model_setup() {
	DISK=$(mktemp -d "${RF_DISK_TMP:-/var/tmp}/rf-$TEST_NAME.XXXXXX") || fail "cannot make a directory in /var/tmp"
	_RM_DIRS+=("$DISK")
	case $(stat -f -c %T "$DISK") in
	tmpfs | ramfs) log "note: $DISK is in memory here; members are not on a disk file system" ;;
	esac
	MNT=$WORK/mnt
	IMG=$MNT/array.img
	MODEL=$DISK/model.img
}

# model_fill: random data over the whole image, the model the same.
model_fill() {
	head -c "$(fsize "$IMG")" /dev/urandom >"$MODEL"
	dd if="$MODEL" of="$IMG" bs=1M oflag=direct conv=fsync,notrunc,nocreat status=none ||
		fail "cannot fill the array"
}

# put SECTOR KIB: KIB KiB of new random bytes at array SECTOR (4 KiB
# aligned), O_DIRECT and fsync into the image, and into the model.
NPUT=0
put() {
	NPUT=$((NPUT + 1))
	head -c $(($2 * 1024)) /dev/urandom >"$WORK/put.$NPUT"
	dd if="$WORK/put.$NPUT" of="$IMG" bs=4096 seek=$(($1 / 8)) oflag=direct conv=fsync,notrunc,nocreat \
		status=none || fail "write of $2 KiB at sector $1 failed"
	dd if="$WORK/put.$NPUT" of="$MODEL" bs=4096 seek=$(($1 / 8)) conv=notrunc status=none
}

# same_model WHAT SECTORS: the image's first SECTORS sectors are the model's.
same_model() {
	"$RFHELPER" same "$IMG" "$MODEL" $(($2 * 512)) >"$WORK/same.out" || fail "$1: $(cat "$WORK/same.out")"
}

pos() { cat "$MNT/md/reshape_position"; }

# to_end WHAT: the reshape on MNT unfrozen at full speed, to its end.
to_end() {
	echo 0 >"$MNT/md/sync_speed_max"
	echo idle >"$MNT/md/sync_action"
	wait_for "$1 did not end" '[ "$(pos)" = none ]'
}

# kill -9 of the daemon serving MNT, and its mount gone.
kill_daemon() {
	kill -9 "$DAEMON_PID"
	wait_daemon_exit "$MNT" --any-status
	fusermount3 -u -z "$MNT" 2>/dev/null || true
}

# shrink_start N DATA LOG: the array on MNT (served by $G/r.conf, its daemon
# logging to LOG) cut to N members as mdadm does: refused until the image
# is no more than they hold ("set md/array_size first"); --array-size to
# what N members of a chunk (64K) less hold (KEEP KiB: DATA data disks of
# them) with --size that much; then --raid-devices N at 2000 KiB/s: the
# walk goes backwards.  Sets KEEP.
shrink_start() {
	local comp
	comp=$(val component_size)
	KEEP=$(((comp - 64) * $2))
	expect_fail "$RAIDFUSE" grow "$MNT" --raid-devices "$1"
	wait_for "the shrink's refusal does not say why" 'grep -q "set md/array_size first" "'"$3"'"'
	"$RAIDFUSE" grow "$MNT" --array-size ${KEEP}K --size $((comp - 64))K >/dev/null ||
		fail "--array-size with --size refused: $(tail -n 3 "$3")"
	[ "$(fsize "$IMG")" = $((KEEP * 1024)) ] || fail "--array-size ${KEEP}K: image of $(fsize "$IMG") bytes"
	echo 2000 >"$MNT/md/sync_speed_max"
	"$RAIDFUSE" grow "$MNT" --raid-devices "$1" || fail "grow --raid-devices $1 refused: $(tail -n 3 "$3")"
	[ "$(cat "$MNT/md/reshape_direction")" = backwards ] || fail "a shrink runs $(cat "$MNT/md/reshape_direction")"
}

# shrink_killed N DEV: the shrink shrink_start began moves 4096 sectors
# down; writes below and above the position; kill -9; served again by
# $G/r.conf (frozen) at or below the position seen: the model; to the end:
# N members, DEV a spare, the model, check 0; served again: the same.
# Sets SEEN.
shrink_killed() {
	local start
	start=$(pos)
	wait_for "the shrink did not move" '[ "$(pos)" -lt $(('"$start"' - 4096)) ]'
	put $(($(pos) / 2 / 8 * 8)) 256
	put $(((start + $(pos)) / 2 / 8 * 8)) 128
	SEEN=$(pos)
	kill_daemon
	start_array_daemon "$G/r.conf" "$MNT" --freeze
	[ "$(pos)" -le "$SEEN" ] || fail "served again after kill -9: position $(pos), $SEEN was seen before"
	same_model "mid-shrink, served again after kill -9" $((KEEP * 2))
	to_end "the shrink"
	[ "$(val raid_disks)" = "$1" ] || fail "after the shrink: md/raid_disks $(val raid_disks)"
	[ "$(dev_state "$2")" = spare ] || fail "after the shrink: $2 $(dev_state "$2")"
	same_model "shrunk to $1" $((KEEP * 2))
	check_clean "check after the shrink"
	stop_array "$MNT"
	start_array_daemon "$G/r.conf" "$MNT"
	[ "$(fsize "$IMG")" = $((KEEP * 1024)) ] || fail "shrunk, served again: $(fsize "$IMG") bytes"
	same_model "shrunk, served again" $((KEEP * 2))
	stop_array "$MNT"
}

# check_clean WHAT: md's check over the array on MNT finds no mismatch
# (after the resync a reshape may leave due).
check_clean() {
	wait_for "$1: the resync did not end" '[ "$(val sync_action)" = idle ]'
	echo check >"$MNT/md/sync_action"
	wait_for "$1: check did not end" '[ "$(val sync_action)" = idle ]'
	[ "$(val mismatch_cnt)" = 0 ] || fail "$1: check: mismatch_cnt $(val mismatch_cnt)"
}

# judge_model SECTORS MEMBER...: (md_judge said yes) kernel md assembles
# the members and reads the model's first SECTORS sectors, mismatch_cnt 0
# (a raid0 has no check).
judge_model() {
	local n=$1 want
	shift
	"$MDJUDGE" --check "$@" >"$WORK/judge.out" 2>&1 || fail "md-judge: $(tail -n 5 "$WORK/judge.out")"
	want=$(head -c $((n * 512)) "$MODEL" | sha256sum | cut -d' ' -f1)
	grep -q "JUDGE sha256=$want sectors=$n" "$WORK/judge.out" ||
		fail "kernel md reads other data: $(grep JUDGE "$WORK/judge.out")"
	grep -qE "JUDGE mismatch_cnt=(0 |na reason=raid0)" "$WORK/judge.out" ||
		fail "kernel md's check: $(grep JUDGE "$WORK/judge.out")"
}

# md_continues DIR SECTORS: (md_judge said yes) mdpeer's guest assembles
# snapshots of DIR/d?.img, which a reshape raidfuse began was killed in, and
# kernel md goes on to its end (tools/md-golden-job.sh reshape-verify), then
# reads md's pattern over the first SECTORS sectors and runs its check.  V
# gets the guest's verify.log; a guest that could not finish fails the test.
# JOB_BACKUP=FILE (in DIR/share) has mdadm assemble with --backup-file.
md_continues() {
	md_verify "$1" "$2" ||
		fail "kernel md did not finish the reshape: $(tail -n 20 "$WORK/guest.out"; echo "$V")"
}

# md_verify DIR SECTORS: md_continues' guest run, for a run that may fail:
# its status (0: md finished, the pattern read back, check ran), V the
# guest's verify.log.
md_verify() {
	local rc=0
	mkdir -p "$1/share"
	echo "array_sectors before the reshape=$2" >"$1/share/job.log"
	rm -f "$1/share/verify.log"
	JOB_KIND=reshape-verify MDPEER_DISK_OPTS=snapshot=on TMPDIR=$1 \
		"$(dirname "$MDJUDGE")/run-guest.sh" --share "$1/share" --timeout 600 \
		"$TOP_DIR/tools/md-golden-job.sh" "$1"/d?.img >"$WORK/guest.out" 2>&1 || rc=$?
	V=$(cat "$1/share/verify.log" 2>/dev/null || true)
	return $rc
}

# md_finishes_grow DIR [CONF KEYS...]: (md_judge said yes) md's pattern over
# a raid5 of 3 x 32 MiB made in DIR (chunk 64K, a spare; more config keys
# given), `grow --raid-devices 4`, kill -9 mid-way; kernel md continues the
# reshape from the superblocks to its end (md_continues): the pattern reads
# back, md's check finds 0, every data offset is the new one.  Logs where
# md took it up.
md_finishes_grow() {
	md_finishes_grow_of "$1" 3 1664 level=5 "${@:2}"
}

# md_finishes_grow_of DIR N OFFSET [CONF KEYS...]: the same for an array
# of N members (the level and more in the keys; chunk 64K), grown to N + 1,
# every data offset OFFSET sectors after it.
md_finishes_grow_of() {
	local g=$1 n=$2 off=$3 s want="" i letters=abcdefghijklmnopqrstuvwxyz
	shift 3
	mkdir -p "$g"
	mk_conf "$g/r.conf" metadata=1.2 chunk_size=64K members="$(members "$n" "$g/d")" \
		spares="$g/d$n.img" member_size=32M "$@"
	create_array "$g/r.conf" --assume-clean
	start_array_daemon "$g/r.conf" "$MNT"
	s=$(($(fsize "$IMG") / 512))
	"$RFHELPER" fill "$IMG" "$s" >/dev/null || fail "cannot write md's pattern"
	echo 500 >"$MNT/md/sync_speed_max"
	"$RAIDFUSE" grow "$MNT" --raid-devices $((n + 1)) || fail "grow --raid-devices $((n + 1)) refused"
	wait_for "the grow did not move" '[ "$(pos)" -ge 4096 ]'
	kill_daemon
	md_continues "$g" "$s"
	for ((i = 0; i <= n; i++)); do
		want+="${want:+ }vd${letters:i:1}=$off"     # the guest's disks, in order
	done
	[[ $V == *"reshape finished: reshape_position none, raid_disks $((n + 1))"* && $V == *" OK"* &&
		$V == *"mismatch_cnt=0"* && $V == *"$want"* ]] ||
		fail "kernel md's run of the grow raidfuse began: $V"
	log "kernel md finished the grow raidfuse began ($*): $(grep -o 'assembled at reshape_position [0-9]*' <<<"$V"), pattern OK, mismatch_cnt 0"
	rm -rf "$g"
}
