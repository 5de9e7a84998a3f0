#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 24-cli: the command line as scripts and people use it.
#
# 1. Usage: every command names an unknown option or a missing value in one
#    line, prints its usage and exits 2; COMMAND --help prints that
#    command's help on stdout and exits 0; long and short forms are the
#    same option; options go after the arguments too.
# 2. examine --json: one object per member that jq reads, with the same
#    uuid, events, roles and offsets as the text; a member path with a
#    quote, a backslash, a newline and a byte that is not UTF-8 still
#    makes valid JSON; a member without a superblock prints nothing on
#    stdout and exits 1.
# 3. status --json and ctl --json: md's attribute names and values, the
#    devices and their states (a failed one shows as faulty, degraded 1;
#    ctl fail takes the member's path as typed, or its name); a value a
#    file refuses is answered with what it takes.
# 4. ctl check --wait: a check of a member whose data was changed behind
#    the array's back reports mismatch_cnt > 0 and exits 0; after repair
#    --wait, check --wait reports 0 (the negative control); the progress
#    line goes to stderr, redrawn with \r on a terminal.
# 5. status --watch: ends by itself once the check it shows ends (a block
#    with md's check progress line, the last one without), at once when
#    the array is idle; --json --watch prints one object per line.
. "$(dirname "$0")/lib.sh"
requires fuse
command -v jq >/dev/null || skip "jq not installed"

D=$WORK/a
MNT=$WORK/mnt
mkdir -p "$D"
cd "$D"

# --- 1. usage ---------------------------------------------------------------

log "usage errors: named in one line, the command's usage, exit 2"
# usage_error WHAT-IN-THE-FIRST-LINE ARGS...
usage_error() {
	local want=$1 first
	shift
	RC=0
	OUT=$("$RAIDFUSE" "$@" 2>&1 >/dev/null) || RC=$?
	[ "$RC" = 2 ] || fail "raidfuse $*: exit $RC, expected 2: $OUT"
	first=$(head -n 1 <<<"$OUT")
	[[ $first == "raidfuse: "*"$want"* ]] || fail "raidfuse $*: first line '$first' does not name '$want'"
	sed -n 2p <<<"$OUT" | grep -q '^usage: raidfuse' || fail "raidfuse $*: no usage after the error: $OUT"
}
for cmd in create mount assemble examine status ctl; do
	usage_error "unknown option '--bogus'" $cmd --bogus x
	usage_error "unknown option '-Z'" $cmd -Z x
done
usage_error "option '--overlay' needs a value" assemble "$MNT" d0.img --overlay
usage_error "option '-o' needs a value" mount r.conf "$MNT" -o
usage_error "option '--force' takes no value" create --force=yes r.conf
usage_error "--bitmap takes internal or none" create r.conf --bitmap=external
usage_error "status: --watch takes SECONDS" status --watch=0 "$MNT"
usage_error "--wait goes with check" ctl --wait "$MNT" stripe_cache_size
usage_error "unknown command 'frobnicate'" frobnicate
usage_error "unknown option '--bogus'" --bogus
mountpoint -q "$MNT" 2>/dev/null && fail "a usage error mounted something"

log "--help per command: stdout, exit 0"
for cmd in create mount assemble examine status ctl; do
	for h in --help -h; do
		out=$("$RAIDFUSE" $cmd $h 2>"$WORK/err") || fail "raidfuse $cmd $h exited $?"
		[[ $out == "usage: raidfuse $cmd "* ]] || fail "raidfuse $cmd $h: '$(head -n 1 <<<"$out")'"
		grep -q '^Exit status: 0 .*1 .*2 usage error' <<<"$out" || fail "raidfuse $cmd $h: no exit status"
		[ ! -s "$WORK/err" ] || fail "raidfuse $cmd $h wrote to stderr: $(cat "$WORK/err")"
	done
	[ "$("$RAIDFUSE" help $cmd)" = "$("$RAIDFUSE" $cmd --help)" ] || fail "help $cmd differs from $cmd --help"
done
out=$("$RAIDFUSE" --help) || fail "--help exited $?"
for cmd in create mount assemble examine status ctl; do
	grep -q "raidfuse $cmd " <<<"$out" || fail "--help does not show $cmd"
done
# an option after a command's --help still gets the help
"$RAIDFUSE" assemble "$MNT" --help d0.img | grep -q '^usage: raidfuse assemble' || fail "assemble MNT --help"

# --- 2. examine --json --------------------------------------------------------

log "examine --json: one object per member, as the text says"
mk_conf r.conf level=5 chunk_size=64K members="$(members 4)" member_size=16M metadata=1.2
# options after the argument, short and long forms
"$RAIDFUSE" create r.conf -f --assume-clean -b internal >/dev/null || fail "create with options after CONFIG"
"$RAIDFUSE" examine --json d0.img d1.img d2.img d3.img >"$WORK/ex.json" || fail "examine --json exited $?"
[ "$(wc -l <"$WORK/ex.json")" = 4 ] || fail "examine --json: $(wc -l <"$WORK/ex.json") lines for 4 members"
jq -s -e 'length == 4' "$WORK/ex.json" >/dev/null || fail "jq does not read 4 objects: $(cat "$WORK/ex.json")"
cmp -s "$WORK/ex.json" <("$RAIDFUSE" examine -J d0.img d1.img d2.img d3.img) || fail "-J differs from --json"
for i in 0 1 2 3; do
	text=$("$RAIDFUSE" examine d$i.img)
	json=$(sed -n "$((i + 1))p" "$WORK/ex.json")
	field() { sed -n "s/^ *$1 : //p" <<<"$text" | head -n 1; }
	[ "$(jq -r .uuid <<<"$json")" = "$(field 'Array UUID')" ] || fail "d$i: uuid differs: $json"
	[ "$(jq -r .device_uuid <<<"$json")" = "$(field 'Device UUID')" ] || fail "d$i: device_uuid differs"
	[ "$(jq -r .events <<<"$json")" = "$(field Events)" ] || fail "d$i: events differ"
	[ "$(jq -r .data_offset <<<"$json") sectors" = "$(field 'Data Offset')" ] || fail "d$i: data_offset differs"
	[ "$(jq -r .level <<<"$json")" = "$(field 'Raid Level')" ] || fail "d$i: level differs"
	[ "Active device $(jq -r .dev_role <<<"$json")" = "$(field 'Device Role')" ] || fail "d$i: dev_role differs"
	jq -e '.raid_disks == 4 and .chunk_size == 65536 and .layout == 2 and .bitmap and
		.array_state == "clean" and .device_map == "AAAA" and .metadata_version == "1.2"' \
		<<<"$json" >/dev/null || fail "d$i: $json"
done

log "examine --json: a member path with a quote, a backslash, a newline and a byte not UTF-8"
odd=$'q"b\\s\nn\xff.img'
ln -s d0.img "$odd"
"$RAIDFUSE" examine --json "$odd" >"$WORK/odd.json" || fail "examine --json of an odd name exited $?"
[ "$(jq -r .device "$WORK/odd.json" | od -An -tx1 | tr -d ' \n')" = \
	"$(printf 'q"b\\s\nn\xef\xbf\xbd.img\n' | od -An -tx1 | tr -d ' \n')" ] ||
	fail "the odd name came back as '$(jq -r .device "$WORK/odd.json")'"

log "examine --json of a member without a superblock: nothing on stdout, exit 1"
truncate -s 1M blank.img
RC=0
"$RAIDFUSE" examine --json blank.img >"$WORK/blank.json" 2>"$WORK/blank.err" || RC=$?
[ "$RC" = 1 ] || fail "examine --json blank.img exited $RC"
[ ! -s "$WORK/blank.json" ] || fail "examine --json blank.img printed: $(cat "$WORK/blank.json")"
grep -q 'blank.img' "$WORK/blank.err" || fail "the error does not name the member: $(cat "$WORK/blank.err")"

# --- 3. status --json, ctl --json ---------------------------------------------

# Change a data block of d1 behind the array's back: a check must see it.
dd if=/dev/urandom of=d1.img bs=64K count=1 seek=$(($(jq -r .data_offset <(sed -n 2p "$WORK/ex.json")) * 512 / 65536 + 2)) \
	conv=notrunc status=none

start_assemble array.img "$MNT" d0.img d1.img d2.img d3.img

log "status --json: md's names, the devices"
"$RAIDFUSE" status --json "$MNT" >"$WORK/st.json" || fail "status --json exited $?"
jq -e --arg m "$MNT" '.mountpoint == $m and .image == "array.img" and .level == "raid5" and
	.raid_disks == 4 and .chunk_size == 65536 and .layout == 2 and .degraded == 0 and
	.sync_action == "idle" and .metadata_version == "1.2" and (.stripe_cache_size | type) == "number" and
	(.devices | length) == 4 and ([.devices[].state] | unique) == ["in_sync"] and
	([.devices[].slot] | sort) == [0, 1, 2, 3] and (.mdstat | test("md0 : active raid5"))' \
	"$WORK/st.json" >/dev/null || fail "status --json: $(jq . "$WORK/st.json")"
[ "$("$RAIDFUSE" ctl --json "$MNT" stripe_cache_size)" = '{"stripe_cache_size":256}' ] ||
	fail "ctl --json stripe_cache_size: $("$RAIDFUSE" ctl --json "$MNT" stripe_cache_size)"
[ "$("$RAIDFUSE" ctl "$MNT" sync_speed_min -J)" = '{"sync_speed_min":1000,"sync_speed_min_source":"system"}' ] ||
	fail "ctl MNT sync_speed_min -J: $("$RAIDFUSE" ctl "$MNT" sync_speed_min -J)"
# A refused value: the command says what the file takes (the daemon's
# words), for md/, md/bitmap/ and md/dev-NAME/ files alike.
for t in "stripe_cache_size 5|takes 17..32768" "bitmap/backlog 99999|takes 0..16383" \
	"dev-d1.img/state sideways|takes faulty, remove" "array_state sleepy|takes suspended or active"; do
	expect_fail "$RAIDFUSE" ctl "$MNT" ${t%|*}
	grep -q "refused: it ${t#*|}" <<<"$OUT" || fail "ctl MNT ${t%|*}: does not say what it takes: $OUT"
done
[ "$("$RAIDFUSE" ctl "$MNT" stripe_cache_size)" = 256 ] || fail "a refused stripe_cache_size changed it"

# --- 4. check --wait ----------------------------------------------------------

log "ctl check --wait: mismatches found, exit 0; repair; check again: 0"
RC=0
"$RAIDFUSE" ctl "$MNT" check --wait >"$WORK/check.out" 2>"$WORK/check.err" || RC=$?
[ "$RC" = 0 ] || fail "check --wait exited $RC: $(cat "$WORK/check.err")"
n=$(sed -n 's/^mismatch_cnt: \([0-9]*\)$/\1/p' "$WORK/check.out")
[ -n "$n" ] && [ "$n" -gt 0 ] || fail "check --wait after a changed block said: $(cat "$WORK/check.out")"
[ "$n" = "$("$RAIDFUSE" ctl "$MNT" mismatch_cnt)" ] || fail "check --wait said $n, md/mismatch_cnt differs"
grep -q '^check: 100.0% .*: done$' "$WORK/check.err" || fail "no last progress line: $(cat "$WORK/check.err")"
"$RAIDFUSE" ctl --wait "$MNT" repair >/dev/null 2>&1 || fail "repair --wait exited $?"
out=$("$RAIDFUSE" ctl -J -W "$MNT" check 2>/dev/null) || fail "check -J -W exited $?"
[ "$out" = '{"sync_action":"check","mismatch_cnt":0}' ] || fail "check after repair: $out"

log "ctl check --wait on a terminal: one line redrawn with \\r"
if command -v script >/dev/null; then
	"$RAIDFUSE" ctl "$MNT" sync_speed_max 8000
	script -qfec "$RAIDFUSE ctl '$MNT' check --wait" /dev/null >"$WORK/tty.out" </dev/null ||
		fail "check --wait on a pty exited $?"
	[ "$(tr -cd '\r' <"$WORK/tty.out" | wc -c)" -ge 3 ] || fail "no \\r redraws on a terminal: $(od -c "$WORK/tty.out" | head)"
	grep -q 'mismatch_cnt: 0' "$WORK/tty.out" || fail "no mismatch count on the terminal"
	"$RAIDFUSE" ctl "$MNT" sync_speed_max system
else
	log "  (no script(1): skipped)"
fi

# --- 5. status --watch --------------------------------------------------------

log "status --watch: at once when idle"
out=$(timeout 5 "$RAIDFUSE" status --watch "$MNT") || fail "status --watch on an idle array: exit $?"
[ "$(grep -c '^Every 2.0s: raidfuse status' <<<"$out")" = 1 ] || fail "idle --watch printed: $out"

log "status --watch follows a check until it ends"
"$RAIDFUSE" ctl "$MNT" sync_speed_max 8000       # the 16M check takes about 2 s
"$RAIDFUSE" ctl "$MNT" check
timeout 30 "$RAIDFUSE" status "$MNT" --watch 0.3 >"$WORK/watch.out" || fail "status --watch exited $?"
blocks=$(grep -c '^Every 0.3s: raidfuse status' "$WORK/watch.out")
[ "$blocks" -ge 2 ] || fail "status --watch printed $blocks blocks: $(cat "$WORK/watch.out")"
grep -q 'check = *[0-9.]*%' "$WORK/watch.out" || fail "no check progress in --watch: $(cat "$WORK/watch.out")"
sed -n '/^Every/h; /^Every/!H; ${x; p}' "$WORK/watch.out" | grep -q 'check =' &&
	fail "the last --watch block still shows the check"
[ "$("$RAIDFUSE" ctl "$MNT" sync_action)" = idle ] || fail "--watch ended before the check did"

log "status --json --watch: a JSON object per line"
"$RAIDFUSE" ctl "$MNT" check
timeout 30 "$RAIDFUSE" status -J -w0.5 "$MNT" >"$WORK/watch.json" || fail "status -J -w exited $?"
jq -s -e 'length >= 1 and (.[-1].sync_action == "idle")' "$WORK/watch.json" >/dev/null ||
	fail "status -J -w: $(cat "$WORK/watch.json")"
"$RAIDFUSE" ctl "$MNT" sync_speed_max system

# --- 3 again: a failed device -------------------------------------------------

log "a failed device in status --json; a VALUE starting with '-' (md's -faulty)"
# fail takes the path as typed (relative here, as mdadm --fail takes it)
# or the device's name; a path that is no device of the array is refused
expect_fail "$RAIDFUSE" ctl "$MNT" fail ./d9.img
grep -q "d9.img is not a device of the array" <<<"$OUT" || fail "ctl fail of no device's path: $OUT"
"$RAIDFUSE" ctl "$MNT" fail ./d3.img || fail "ctl MNT fail ./d3.img (a path) exited $?"
"$RAIDFUSE" status --json "$MNT" |
	jq -e '.degraded == 1 and (.devices[] | select(.name == "d3.img") | .state) == "faulty"' >/dev/null ||
	fail "after fail d3.img: $("$RAIDFUSE" status --json "$MNT")"
"$RAIDFUSE" ctl "$MNT" dev-d3.img/state -faulty || fail "ctl MNT dev-d3.img/state -faulty exited $?"
# it rebuilds by itself (what the bitmap marks); --watch waits for that
timeout 30 "$RAIDFUSE" status --watch 0.2 "$MNT" >/dev/null || fail "status --watch over the rebuild exited $?"
"$RAIDFUSE" status --json "$MNT" | jq -e '.degraded == 0' >/dev/null || fail "d3.img did not come back"
stop_array "$MNT"
log "ok"
