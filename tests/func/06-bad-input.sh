#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 06-bad-input: mistakes are refused, said clearly, and cost nothing.
#
# Every mistake is a row of bad-input.tab (its head says how a row reads):
# a bad config, a member that cannot serve, a wrong command line, a bad
# value for a control file.  run_table runs each row's commands; each must
# exit with the row's status (1 for a refused config or member, 2 for a
# usage error), print what the row's patterns ask (the config's file and
# line, the member, the option, the control file), and leave the members
# and the mount table as they were: after each command no member file is
# written (mtime), made or removed, and no mount point is added or gone;
# after each row every member's size, inode, mtime, ctime and sha256 are
# as before.  A refused create creates, truncates and writes nothing.
#
# The runner is checked first: rows that are wrong on purpose (a pattern
# the output lacks, a wrong status, a command that writes a member, one
# that leaves a mount behind, a row missing a field) must each make it
# fail, with the failure that names the cause, and a right row must pass;
# a byte flipped in place with its mtime put back must fail the row's
# check.
#
# After the table, what create does to members it may use: an empty one
# gets member_size, --force makes members anew; and --help and --version
# exit 0.  What this test does NOT do: check the message of every bad
# value of every config key (tests/unit/test_config.c does).
. "$(dirname "$0")/lib.sh"
requires fuse

TABLE=$FUNC_DIR/bad-input.tab
D=$WORK/d
MNT=$WORK/mnt
MNT2=$WORK/mnt2
mkdir -p "$D" "$MNT" "$MNT2"
cd "$D"
# Four members with data in them, 256 KiB each (smaller than the 1M
# data_offset, 2M size and 2M chunk some rows give), a 4 KiB one; d9.img
# does not exist.
for i in 0 1 2 3; do
	head -c $((256 << 10)) /dev/urandom >d$i.img
done
head -c 4096 /dev/urandom >small.img
touch -d '2020-01-01 00:00:00' ./*.img
cat >"$D/ok.conf" <<'EOF'
array: {
	name = "array.img";
	metadata = "none";
	level = 5;
	chunk_size = "64K";
	members = ( "d0.img", "d1.img", "d2.img" );
};
EOF

# ---------------------------------------------------------------- runner

# member_files: FILES = every file in $D but the configs, by name.
member_files() {
	local f
	FILES=()
	for f in "$D"/*; do
		[[ -f $f && $f != *.conf ]] && FILES+=("$f")
	done
	return 0
}

# quick_look: QL = the member files' names, each marked when written
# since the baseline (an mtime newer than $REF's), without a process: what
# each command is checked for.
quick_look() {
	local f
	member_files
	QL=
	for f in "${FILES[@]}"; do
		QL+="${f##*/}"
		[[ $f -nt $REF ]] && QL+=" (written since)"
		QL+=$'\n'
	done
}

# full_look: FL = each member file's name, size, inode, mtime and ctime
# (in ns: any write, truncate or touch changes the ctime) and its sha256:
# what each row is checked for, once its commands ran.
full_look() {
	member_files
	FL=
	[ ${#FILES[@]} = 0 ] || FL=$(stat -c '%n %s %i %.9Y %.9Z' -- "${FILES[@]}" && sha256sum -- "${FILES[@]}")
}

# mount_table: MT = the mount points under $ROW_WORK (but $MT_SKIP's), in
# the kernel's order.
ROW_WORK=$WORK
MT_SKIP=$WORK/w2
mount_table() {
	local _a _b _c _d mp _rest
	MT=
	while read -r _a _b _c _d mp _rest; do
		[[ $mp == "$ROW_WORK"/* && $mp != "$MT_SKIP"/* ]] && MT+="$mp "
	done </proc/self/mountinfo
	return 0
}

# baseline: what the rows' keep compares with: BEFORE_FL, REF (a file
# made now), BEFORE_QL, MOUNTS.
baseline() {
	full_look
	BEFORE_FL=$FL
	REF=$ROW_WORK/baseline.ref
	: >"$REF"
	quick_look
	BEFORE_QL=$QL
	mount_table
	MOUNTS=$MT
}

# needs WHAT: stop the state the previous row needed (WHAT_down), start
# this one's (WHAT_up), and take the baseline again.  "" needs nothing.
_NEEDS=
needs() {
	[ "$1" = "$_NEEDS" ] && return 0
	[ -z "$1" ] || declare -F "$1_up" >/dev/null || fail "$TAB: needs '$1': no function $1_up"
	[ -z "$_NEEDS" ] || "${_NEEDS}_down"
	[ -z "$1" ] || "$1_up"
	_NEEDS=$1
	baseline
}

# matches RE TEXT: a line of TEXT matches the extended regex RE (as
# grep -E, without a process).
matches() {
	local l
	while IFS= read -r l; do
		[[ $l =~ $1 ]] && return 0
	done <<<"$2"
	return 1
}

# members_kept WHO HOW: fail unless the member files are as in the
# baseline: HOW "quick" (after each command: quick_look) or "full" (after
# each row: full_look).  WHO: what ran.
members_kept() {
	local before now
	if [ "$2" = quick ]; then
		quick_look
		before=$BEFORE_QL now=$QL
	else
		full_look
		before=$BEFORE_FL now=$FL
	fi
	[ "$now" = "$before" ] ||
		fail "$1 changed the member files:"$'\n'"before:"$'\n'"$before"$'\n'"after:"$'\n'"$now"
}

# run_row: run the commands of the row in R_*, check each (status, every
# pattern, what it keeps); fail naming the row and the command.
run_row() {
	local cmd re words
	for cmd in "${R_RUNS[@]}"; do
		case $cmd in
		create) cmd="raidfuse create @CONF@" ;;
		mount) cmd="raidfuse mount @CONF@ @MNT@ -f" ;;
		esac
		cmd=${cmd//@CONF@/$D/$R_NAME.conf}
		cmd=${cmd//@D@/$D}
		cmd=${cmd//@MNT@/$MNT}
		cmd=${cmd//@MNT2@/$MNT2}
		cmd=${cmd//@WORK@/$ROW_WORK}
		read -r -a words <<<"$cmd"
		[ "${words[0]}" = raidfuse ] && words[0]=$RAIDFUSE
		RC=0
		case ${words[1]:-} in
		mount | assemble)
			# should it wrongly start, timeout ends it (-f: it
			# unmounts) instead of a daemon left behind
			OUT=$(timeout 5 "${words[@]}" 2>&1 </dev/null) || RC=$?
			;;
		*)
			OUT=$("${words[@]}" 2>&1 </dev/null) || RC=$?
			;;
		esac
		vlog "$R_NAME: $cmd: exit $RC: $OUT"
		[ "$RC" = "$R_STATUS" ] || fail "$R_NAME: '$cmd' exited $RC, expected $R_STATUS: $OUT"
		for re in "${R_ERRORS[@]}"; do
			matches "$re" "$OUT" || fail "$R_NAME: '$cmd' said '$OUT'; expected it to match '$re'"
		done
		[[ " $R_KEEP " != *" members "* ]] || members_kept "$R_NAME: '$cmd'" quick
		if [[ " $R_KEEP " == *" mounts "* ]]; then
			mount_table
			[ "$MT" = "$MOUNTS" ] || fail "$R_NAME: '$cmd' left the mounts under $ROW_WORK changed: before '$MOUNTS', after '$MT'"
		fi
	done
	[[ " $R_KEEP " != *" members "* ]] || members_kept "$R_NAME (${#R_RUNS[@]} command(s))" full
}

# parse_row TEXT: R_* = the fields of the row TEXT (its lines, "row"
# first); fail on a line that is no field.
parse_row() {
	local line key rest
	R_NAME='' R_NEEDS='' R_STATUS='' R_KEEP='' R_XFAIL='' R_CONF=''
	R_RUNS=() R_ERRORS=()
	while IFS= read -r line; do
		if [[ $line == '|'* ]]; then
			line=${line#|}
			R_CONF+=${line# }$'\n'
			continue
		fi
		key=${line%%[[:space:]]*}
		rest=${line#"$key"}
		rest=${rest#"${rest%%[![:space:]]*}"}
		case $key in
		row) R_NAME=$rest ;;
		needs) R_NEEDS=$rest ;;
		run) R_RUNS+=("$rest") ;;
		status) R_STATUS=$rest ;;
		error) R_ERRORS+=("$rest") ;;
		keep) R_KEEP=$rest ;;
		xfail) R_XFAIL=$rest ;;
		*) fail "$TAB: row $R_NAME: '$key' is not a field of a row: $line" ;;
		esac
	done <<<"${1%$'\n'}"
	[ ${#R_RUNS[@]} -gt 0 ] || fail "$TAB: row $R_NAME: no run"
	[[ $R_STATUS =~ ^[0-9]+$ ]] || fail "$TAB: row $R_NAME: no status (or not a number: '$R_STATUS')"
	[ ${#R_ERRORS[@]} -gt 0 ] || fail "$TAB: row $R_NAME: no error pattern"
	[ -n "$R_KEEP" ] || fail "$TAB: row $R_NAME: no keep"
	for key in $R_KEEP; do
		[ "$key" = members ] || [ "$key" = mounts ] || fail "$TAB: row $R_NAME: keep $key: members or mounts"
	done
}

# run_rows TEXT...: parse and run each row, in order.
run_rows() {
	local row
	for row; do
		parse_row "$row"
		needs "$R_NEEDS"
		[ -z "$R_CONF" ] || printf '%s' "$R_CONF" >"$D/$R_NAME.conf"
		if [ -n "$R_XFAIL" ]; then
			known_bug "$R_NAME: $R_XFAIL" run_row
			baseline # (whatever the failing row left)
		else
			run_row
		fi
	done
	needs ""
}

# run_table FILE: every row of FILE (bad-input.tab's format); fails at the
# first row that does not hold.  ROWS: how many there are.  Rows that need
# nothing run in two shares at once, the second in $WORK/w2 (@WORK@) on a
# copy of $D (members with their mtimes, ok.conf) with mount points of its
# own: neither share sees the other's files or mounts.  Rows that need a
# state run after them, in order.
run_table() {
	local line i=-1 row first=() second=() later=() w=$MT_SKIP rc=0 pid
	local texts=()
	TAB=$1
	while IFS= read -r -u 3 line || [ -n "$line" ]; do
		[[ -z $line || $line == '#'* ]] && continue
		[[ $line == row[[:space:]]* ]] && texts[++i]=
		[ $i -ge 0 ] || fail "$TAB: '$line' before the first row"
		texts[i]+=$line$'\n'
	done 3<"$TAB"
	ROWS=${#texts[@]}
	[ "$ROWS" -gt 0 ] || fail "$TAB: no rows"
	for row in "${texts[@]}"; do
		if [[ $row == *$'\n'needs[[:space:]]* ]]; then
			later+=("$row")
		elif [ $(((${#first[@]} + ${#second[@]}) % 2)) = 0 ]; then
			first+=("$row")
		else
			second+=("$row")
		fi
	done
	baseline
	if [ ${#second[@]} -gt 0 ]; then
		mkdir -p "$w/d" "$w/mnt" "$w/mnt2"
		cp -p "$D"/*.img "$w/d/"
		[ ! -f "$D/ok.conf" ] || cp -p "$D/ok.conf" "$w/d/"
		(
			D=$w/d MNT=$w/mnt MNT2=$w/mnt2 ROW_WORK=$w MT_SKIP=$w/none
			baseline
			run_rows "${second[@]}"
		) >"$w/out" 2>&1 &
		pid=$!
	fi
	run_rows "${first[@]}"
	if [ ${#second[@]} -gt 0 ]; then
		wait $pid || rc=$?
		if [ $rc != 0 ]; then
			cat "$w/out" >&2
			exit $rc
		fi
		cat "$w/out"
		rm -rf "$w"
	fi
	run_rows "${later[@]}"
}

# ---------------------------------------------------------------- states and commands of rows

# needs serving: ok.conf served on $MNT.
serving_up() { start_array "$D/ok.conf" "$MNT"; }
serving_down() {
	stop_array "$MNT"
	touch -d '2020-01-01 00:00:00' "$D"/d?.img # (a mount may update mtimes)
}

# put_ctl FILE VALUE: write VALUE to the control file $MNT/FILE as echo
# does; prints the write's error, then what the daemon logged meanwhile.
put_ctl() {
	local log n rc=0
	log=$(daemon_log_file "$MNT")
	n=$(wc -l <"$log")
	{ printf '%s\n' "$2" >"$MNT/$1"; } 2>&1 || rc=$?
	tail -n +$((n + 1)) "$log"
	return $rc
}

# scribble FILE: what a broken command might do (the self-check's): one
# byte more at the end of FILE, then fail.
scribble() {
	printf x >>"$1"
	echo "scribbled on $1"
	return 1
}

# ---------------------------------------------------------------- self-check

# self_case WANT ROW: the one-row table ROW, run in a subshell on members
# of its own ($WORK/self/d), must fail saying WANT; with WANT "", it must
# pass.
self_case() {
	local want=$1 rc=0 out
	printf '%s\n' "$2" >"$WORK/self/self.tab"
	out=$(
		D=$WORK/self/d MNT=$WORK/self/mnt ROW_WORK=$WORK/self MT_SKIP=$WORK/self/none
		run_table "$WORK/self/self.tab" 2>&1
	) || rc=$?
	# a row that leaves a mount behind: ours to stop
	if mountpoint -q "$WORK/self/mnt"; then
		"$RAIDFUSE" stop "$WORK/self/mnt" >/dev/null || fail "self-check: cannot stop $WORK/self/mnt"
	fi
	if [ -z "$want" ]; then
		[ $rc = 0 ] || fail "self-check: the runner failed a right row:"$'\n'"$2"$'\n'"it said: $out"
	else
		[ $rc != 0 ] || fail "self-check: the runner passed a row that is wrong on purpose:"$'\n'"$2"
		grep -qF -- "$want" <<<"$out" || fail "self-check: the runner failed, but not with '$want': $out"
	fi
	vlog "self-check: ${want:-passes}: $out"
}

log "self-check: the runner fails rows that do not hold"
mkdir -p "$WORK/self/d" "$WORK/self/mnt"
head -c 65536 /dev/urandom >"$WORK/self/d/m0.img"
head -c 65536 /dev/urandom >"$WORK/self/d/m1.img"
BAD_LEVEL='| array: { level = 3; members = ( "m0.img", "m1.img" ); };'
self_case "" "row right
run	create
status	1
error	right\.conf:1: key 'array\.level'
keep	members mounts
$BAD_LEVEL"
self_case "expected it to match 'level = 3 is fine'" "row wrong-text
run	create
status	1
error	level = 3 is fine
keep	members mounts
$BAD_LEVEL"
self_case "exited 1, expected 2" "row wrong-status
run	create
status	2
error	wrong-status\.conf:1:
keep	members mounts
$BAD_LEVEL"
self_case "changed the member files" "row writes
run	scribble @D@/m0.img
status	1
error	scribbled
keep	members mounts"
self_case "left the mounts under $WORK/self changed" "row mounts
run	raidfuse mount @CONF@ @MNT@
status	0
error	^$
keep	mounts
| array: { metadata = \"none\"; level = 1; members = ( \"m0.img\", \"m1.img\" ); };"
self_case "row no-keep: no keep" "row no-keep
run	create
status	1
error	no-keep
$BAD_LEVEL"
# A byte overwritten in place and the mtime put back: each command's quick
# look misses it, the row's full look (ctime, sha256) does not.
out=$(
	D=$WORK/self/d ROW_WORK=$WORK/self
	baseline
	cp -p "$D/m1.img" "$WORK/self/m1.was"
	byte=$(od -An -tu1 -N1 "$D/m1.img")
	printf "$(printf '\\%03o' $((byte ^ 1)))" | dd of="$D/m1.img" conv=notrunc status=none
	touch -r "$WORK/self/m1.was" "$D/m1.img"
	cmp -s "$WORK/self/m1.was" "$D/m1.img" && exit 0 # (no byte flipped: the check below fails)
	members_kept "one byte flipped" quick
	echo "the quick look missed it"
	members_kept "one byte flipped" full 2>&1
) && fail "self-check: a member with a byte flipped passed the full look: $out"
grep -qF "the quick look missed it" <<<"$out" && grep -qF "one byte flipped changed the member files" <<<"$out" ||
	fail "self-check: a byte flipped in place, mtime put back: '$out'"

# ---------------------------------------------------------------- the table

log "bad input: every row of ${TABLE##*/}"
run_table "$TABLE"
log "bad input: $ROWS rows refused as they say, members and mounts untouched"

# ---------------------------------------------------------------- what create may do

# zeros WHAT FILE...: each FILE is member_size (2M) of zeros.
zeros() {
	local what=$1 f
	shift
	for f; do
		[ "$(fsize "$f")" = $((2 << 20)) ] || fail "$what: $f is $(fsize "$f") bytes, expected member_size 2M"
		cmp -s "$f" /dev/zero -n $((2 << 20)) || fail "$what: $f is not all zeros"
	done
}

log "create: an empty member gets member_size, a missing one is made"
: >e0.img
mk_conf "$D/empty.conf" level=5 members="e0.img e1.img e2.img" member_size=2M
"$RAIDFUSE" create "$D/empty.conf" >/dev/null || fail "create over an empty member and missing ones failed"
zeros create e0.img e1.img e2.img
rm -f e?.img

# metadata "none" (mk_conf's default): the members must come out all
# zeros (10-md-format tests the superblocks create writes).  The table's
# create-over-data row showed this config refused without --force.
log "create --force: members with data are made anew, zeros"
mk_conf "$D/create.conf" level=5 members="d0.img d9.img d2.img" member_size=2M
d1_before=$(stat -c '%s %Y' d1.img; sha256sum <d1.img)
"$RAIDFUSE" create "$D/create.conf" --force >/dev/null || fail "create --force failed"
zeros "create --force" d0.img d9.img d2.img
[ "$(stat -c '%s %Y' d1.img; sha256sum <d1.img)" = "$d1_before" ] ||
	fail "create --force touched d1.img, which its config does not name"
rm -f d9.img
"$RAIDFUSE" create "$D/create.conf" >/dev/null 2>&1 && fail "create without --force over members now holding zeros"
[ ! -e d9.img ] || fail "a refused create made d9.img"

log "--help and --version exit 0"
OUT=$("$RAIDFUSE" --help) || fail "--help exited $?"
grep -q 'raidfuse create CONFIG' <<<"$OUT" && grep -q 'raidfuse mount .*CONFIG MOUNTPOINT' <<<"$OUT" ||
	fail "--help does not show the usage: $OUT"
OUT=$("$RAIDFUSE" --version) || fail "--version exited $?"
[[ $OUT =~ ^raidfuse\ [0-9]+\.[0-9]+ ]] || fail "--version said '$OUT'"
