#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 23-crash-states: power cuts replayed from the member IO log
# (tools/crash-states.sh, a sample of `make crash`).
#
# 1. raid5 without a bitmap and raid1 with one: a recorded workload, then
#    crash states at its flush boundaries and at random points (volatile
#    writes kept, lost or torn), each assembled, resynced, checked and
#    read back: "crash states: N checked, 0 violations", exit 0.  This
#    fails without the flush before a clean superblock or a bitmap clear
#    (mismatch_cnt after the resync) and without bringing members one
#    event behind up to date (not clean after the clean close).
#    raid5 grown by a spare a third of the way in (--grow, and with a
#    bitmap): every state finishes the reshape from its superblocks'
#    position, 0 violations;
#    its control (--grow --break: the position moves on unrecorded) loses
#    acknowledged writes; so does a write into rows moved since the last
#    record that goes on without having the position recorded first
#    (RAIDFUSE_TEST_BREAK=reshape-lazy).  raid5 changed to raid6 by the
#    spare (--raid6): 0 violations.
#    raid5 grown in place through mdadm's backup file (--backup: no room
#    before the data), the file's writes and fsyncs replayed beside the
#    members', each state assembled with it: 0 violations; its control
#    (RAIDFUSE_TEST_BREAK=reshape-backup-sync: the file's header and data
#    left unsynced before the window's new rows) finds states whose file
#    lost them.  The daemon makes the file: a state has it only once its
#    directory was flushed; the control (RAIDFUSE_TEST_BREAK=backup-name:
#    that flush left out) finds states refused for want of it.
# 2. Negative control: --break (RAIDFUSE_TEST_BREAK=clean, the superblocks
#    marked clean without flushing the data first) must report violations
#    and exit 1, keep each violation's members and the command that
#    replays it, and that command must find the violation again.
. "$(dirname "$0")/lib.sh"

CRASH=${CRASH_STATES:-$(dirname "$RAIDFUSE")/crash-states}
[ -x "$CRASH" ] || skip "no crash-states binary beside $RAIDFUSE (make $(dirname "$RAIDFUSE")/crash-states)"
TOOL=$TOP_DIR/tools/crash-states.sh

# states NAME ARGS...: run the tool into $WORK/NAME; $RC, summary in $LINE.
states() {
	local name=$1
	shift
	RC=0
	CRASH_STATES=$CRASH "$TOOL" --dir "$WORK/$name" "$@" >"$WORK/$name.out" 2>&1 || RC=$?
	LINE=$(tail -n 1 "$WORK/$name.out")
	log "$name: $LINE (exit $RC)"
}

# first NAME: its first violations (for a failure's message).
first() { { grep -A3 '^violation' "$WORK/$1.out" 2>/dev/null | head -n 8; } || true; }

# A short workload: each flush boundary is reached by a few hundred states
# (a quick run, RF_QUICK=1, the sanitizers' pass: 120).
NR5=200
[ "${RF_QUICK:-0}" = 1 ] && NR5=120
states raid5 --level 5 --states $NR5 --rounds 15
check "[ $RC = 0 ]" "raid5: exit $RC: $(first raid5)"
check "[[ '$LINE' =~ ^crash\ states:\ $NR5\ checked,\ 0\ violations$ ]]" "raid5: last line '$LINE'"
check "[ ! -e '$WORK/raid5' ]" "raid5: the directory of a clean run was kept"

full states raid1 --level 1 --bitmap --states 150 --rounds 15
full check "[ $RC = 0 ] && [[ '$LINE' =~ ,\ 0\ violations$ ]]" "raid1 --bitmap: exit $RC, '$LINE': $(first raid1)"

# A grow a third of the way in, the reshape running beside the writes:
# each state finishes it from the position its superblocks record.  Its
# control: the position moved on without being recorded.
full states grow --level 5 --grow --states 120 --rounds 15
full check "[ $RC = 0 ] && [[ '$LINE' =~ ,\ 0\ violations$ ]]" "raid5 --grow: exit $RC, '$LINE': $(first grow)"
full states growbm --level 5 --grow --bitmap --states 120 --rounds 15
full check "[ $RC = 0 ] && [[ '$LINE' =~ ,\ 0\ violations$ ]]" "raid5 --grow --bitmap: exit $RC, '$LINE': $(first growbm)"
full states to6 --level 5 --raid6 --states 120 --rounds 15
full check "[ $RC = 0 ] && [[ '$LINE' =~ ,\ 0\ violations$ ]]" "raid5 --raid6: exit $RC, '$LINE': $(first to6)"
# A grow in place: its critical section through the backup file, which
# each state has as the crash left it.  Its control: the file never
# synced (a state that lost its header or data is refused or restores
# garbage).
full states backup --level 5 --backup --states 50 --rounds 15
full check "[ $RC = 0 ] && [[ '$LINE' =~ ,\ 0\ violations$ ]]" "raid5 --backup: exit $RC, '$LINE': $(first backup)"
RAIDFUSE_TEST_BREAK=reshape-backup-sync full states bksyncbreak --level 5 --backup --states 50 --rounds 15
full check "[ $RC = 1 ]" "reshape-backup-sync: exit $RC, expected 1 (violations): $(tail -n 3 "$WORK/bksyncbreak.out")"
# The file is made by the daemon when the grow names it: a state has it
# only once its directory was flushed.  Control: that flush left out.
RAIDFUSE_TEST_BREAK=backup-name full states bknamebreak --level 5 --backup --states 30 --rounds 15
full check "[ $RC = 1 ]" "backup-name: exit $RC, expected 1 (violations): $(tail -n 3 "$WORK/bknamebreak.out")"
full states growbreak --level 5 --grow --break --states 80 --rounds 15
full check "[ $RC = 1 ]" "--grow --break: exit $RC, expected 1 (violations): $(tail -n 3 "$WORK/growbreak.out")"
full grep -q "acknowledged by a flush before the crash" "$WORK/growbreak.out" ||
	full fail "--grow --break: no acknowledged write lost among: $(first growbreak)"
# The position is recorded only as often as the walk needs (and md's 10
# s): a write to rows moved since the last record has it recorded first.
# Its control: such writes go on unrecorded (RAIDFUSE_TEST_BREAK=
# reshape-lazy, the recorder kept as lazy as the walk allows).
RAIDFUSE_TEST_BREAK=reshape-lazy full states lazybreak --level 5 --grow --states 80 --rounds 15
full check "[ $RC = 1 ]" "reshape-lazy: exit $RC, expected 1 (violations): $(tail -n 3 "$WORK/lazybreak.out")"

# md's takeover of a raid0 as a raid10 (members moved to slots 2i) a third
# of the way in, a copy rebuilt onto a spare beside the writes: a crash
# between the superblock writes leaves members of both levels, the
# freshest one's taken.
full states r10 --level 0 --raid10 --states 100 --rounds 15
full check "[ $RC = 0 ] && [[ '$LINE' =~ ,\ 0\ violations$ ]]" "raid0 --raid10: exit $RC, '$LINE': $(first r10)"

# The negative control.
states break --level 5 --break --states 250 --rounds 15
check "[ $RC = 1 ]" "--break: exit $RC, expected 1 (violations): $(tail -n 3 "$WORK/break.out")"
nviol=$(sed -n 's/^crash states: 250 checked, \([0-9]*\) violations$/\1/p' <<<"$LINE")
check "[ -n '$nviol' ] && [ '$nviol' -gt 0 ]" "--break: last line '$LINE'"
grep -q "mismatch_cnt [0-9]* after the resync" "$WORK/break.out" ||
	fail "--break: no stripe left unsynced among: $(first break)"
# The first violations found (the lowest state numbers) keep their
# members; past the first 8 only the why file and its replay line.
whys=$(ls -v "$WORK"/break/violations/state-*/why 2>/dev/null || true)
why=$(head -n 1 <<<"$whys")
check "[ -n '$why' ]" "--break: no violation saved under $WORK/break/violations"
check "[ -e '$(dirname "$why")/d0.img' ]" "--break: the state's members were not kept"
check "[ $(grep -c . <<<"$whys") = $nviol ]" "--break: $nviol violations, but $(grep -c . <<<"$whys") saved"
check "[ $(ls "$WORK"/break/violations/state-*/d0.img | wc -l) = $((nviol < 8 ? nviol : 8)) ]" \
	"--break: members of $(ls "$WORK"/break/violations/state-*/d0.img | wc -l) violations kept, not of the first 8"
replay=$(sed -n 's/^replay: //p' "$why" || true)
check "[ -n '$replay' ]" "--break: $why says nothing replays it"
RC=0
$replay >"$WORK/replay.out" 2>"$WORK/replay.err" || RC=$?
check "[ $RC = 1 ] && grep -q '^crash states: 1 checked, 1 violations$' '$WORK/replay.out'" \
	"--break: the replay ($replay) exit $RC: $(tail -n 2 "$WORK/replay.out")"
log "the replay finds it again: $(sed -n 2p "$WORK/replay.out")"
