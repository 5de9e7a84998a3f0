#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 50-list-detail: a raidfuse array seen as a storage admin sees an md one,
# in the daemonized default mode (no -f).
#
# 1. findmnt shows the mount as raidfuse:NAME, type fuse.raidfuse (before:
#    raidfuse:PID, type fuse); a user's -o fsname= wins, and raidfuse stop
#    still finds the daemon of such a mount.
# 2. raidfuse list (and --json): the mount with its name, mount point, the
#    UUID examine prints, level, state and size (before: no such command).
#    md/uuid and md/array_size (KiB) say the same as examine and the image.
# 3. raidfuse status --detail: mdadm --detail's fields and device table,
#    and mdadm --detail --test's exit status: 0 whole, 1 degraded (a
#    member failed: "clean, degraded", list says degraded), 2 failed (too
#    few members: "FAILED", list says failed), 4 not a raidfuse mount.
# 4. examine --scan and status --scan: the same mdadm.conf ARRAY line.
. "$(dirname "$0")/lib.sh"
requires fuse
command -v jq >/dev/null || skip "no jq (tools/setup-deps.sh installs it)"

R=$RAIDFUSE
D=$WORK/a
MNT=$WORK/mnt
mkdir -p "$D"
mk_conf "$D/a.conf" level=5 chunk_size=64K members="$(members 4)" member_size=32M metadata=1.2
create_array --assume-clean "$D/a.conf"
UUID=$("$R" examine "$D/d0.img" | sed -n 's/^ *Array UUID : //p')
[ -n "$UUID" ] || fail "examine prints no Array UUID"

# --- 1. the mount's name ---------------------------------------------------------

log "findmnt: raidfuse:array.img, type fuse.raidfuse"
start_array_daemon "$D/a.conf" "$MNT"
src=$(findmnt -n -o SOURCE --mountpoint "$MNT")
typ=$(findmnt -n -o FSTYPE --mountpoint "$MNT")
check '[ "$src" = raidfuse:array.img ]' "the mount's source is '$src'"
check '[ "$typ" = fuse.raidfuse ]' "the mount's type is '$typ'"
log "  $src on $MNT type $typ"

# --- 2. list, md/uuid, md/array_size ------------------------------------------------

log "raidfuse list: name, mount point, UUID, level, state, size"
size=$(stat -c %s "$MNT/array.img")
check '[ "$(cat "$MNT/md/uuid")" = "$UUID" ]' "md/uuid '$(cat "$MNT/md/uuid")' is not examine's $UUID"
check '[ $(($(cat "$MNT/md/array_size") * 1024)) = "$size" ]' "md/array_size $(cat "$MNT/md/array_size") KiB is not the image's $size bytes"
line=$("$R" list | grep -F " $MNT ") || fail "raidfuse list does not show $MNT: $("$R" list)"
log "  $line"
read -r name _ uuid level state _ pid <<<"$line"
check '[ "$name" = array.img ] && [ "$uuid" = "$UUID" ] && [ "$level" = raid5 ] && [ "$state" = clean ]' \
	"raidfuse list: $line"
check '[ "$pid" = "$DAEMON_PID" ]' "list's pid $pid is not the daemon's $DAEMON_PID"
J=$("$R" list --json | jq -c --arg m "$MNT" '.[] | select(.mountpoint == $m)')
[ -n "$J" ] || fail "raidfuse list --json does not show $MNT"
check '[ "$(jq -r .uuid <<<"$J")" = "$UUID" ] && [ "$(jq -r .state <<<"$J")" = clean ]' "list --json: $J"
check '[ "$(jq .size <<<"$J")" = "$size" ] && [ "$(jq .pid <<<"$J")" = "$DAEMON_PID" ]' "list --json size/pid: $J"
check '[ "$(jq -r .level <<<"$J")" = raid5 ] && [ "$(jq -r .name <<<"$J")" = array.img ]' "list --json: $J"

# --- 3. status --detail --------------------------------------------------------------

log "status --detail: mdadm --detail's fields, exit 0 when whole"
rc=0
out=$("$R" status --detail "$MNT") || rc=$?
check '[ $rc = 0 ]' "status --detail of a whole array exits $rc"
field() { sed -n "s/^ *$1 : //p" <<<"$out"; }
check '[ "$(field Version)" = 1.2 ] && [ "$(field "Raid Level")" = raid5 ]' "Version/Raid Level: $out"
check '[ "$(field "Raid Devices")" = 4 ] && [ "$(field "Total Devices")" = 4 ]' "device counts: $out"
check '[ "$(field State)" = clean ] && [ "$(field "Active Devices")" = 4 ] && [ "$(field "Failed Devices")" = 0 ]' \
	"state: $out"
check '[ "$(field UUID)" = "$UUID" ] && [ "$(field Layout)" = left-symmetric ] && [ "$(field "Chunk Size")" = 64K ]' \
	"UUID/Layout/Chunk: $out"
check '[ "$(field "Array Size" | cut -d" " -f1)" = $((size / 1024)) ]' "Array Size: $(field "Array Size")"
ev=$("$R" examine "$D/d0.img" | sed -n 's/^ *Events : //p')
check '[ "$(field Events)" = "$ev" ]' "Events $(field Events), examine says $ev"
check '[ -n "$(field "Creation Time")" ]' "no Creation Time: $out"
for i in 0 1 2 3; do
	grep -Eq "^ +$i +0 +0 +$i +active sync +$D/d$i.img\$" <<<"$out" || fail "no device row for d$i: $out"
done
dj=$("$R" status --detail --json "$MNT")
check '[ "$(jq -r .uuid <<<"$dj")" = "$UUID" ] && [ "$(jq .active_devices <<<"$dj")" = 4 ]' "detail --json: $dj"
check '[ "$(jq "[.devices[] | select(.state == \"active sync\")] | length" <<<"$dj")" = 4 ]' "detail --json devices: $dj"

log "a member failed: exit 1, clean, degraded; list says degraded"
"$R" ctl "$MNT" fail d1.img
rc=0
out=$("$R" status --detail "$MNT") || rc=$?
check '[ $rc = 1 ]' "status --detail of a degraded array exits $rc"
check '[ "$(field State)" = "clean, degraded" ] || [ "$(field State)" = "active, degraded" ]' "state: $(field State)"
check '[ "$(field "Failed Devices")" = 1 ] && [ "$(field "Active Devices")" = 3 ]' "counts: $out"
grep -Eq "^ +- +0 +0 +1 +removed\$" <<<"$out" || fail "slot 1 is not shown removed: $out"
grep -Eq "^ +1 +0 +0 +- +faulty +$D/d1.img\$" <<<"$out" || fail "d1.img is not shown faulty: $out"
check '[ "$("$R" list --json | jq -r --arg m "$MNT" ".[] | select(.mountpoint == \$m) | .state")" = degraded ]' \
	"list does not say degraded"

log "a second member failed: exit 2, FAILED; list says failed"
"$R" ctl "$MNT" fail d2.img || true
rc=0
out=$("$R" status --detail "$MNT") || rc=$?
check '[ $rc = 2 ]' "status --detail of a failed array exits $rc: $(field State)"
check '[[ "$(field State)" == *FAILED* ]]' "state: $(field State)"
check '[ "$("$R" list --json | jq -r --arg m "$MNT" ".[] | select(.mountpoint == \$m) | .state")" = failed ]' \
	"list does not say failed"
log "  State : $(field State)"

log "not a raidfuse mount: exit 4"
mkdir -p "$WORK/plain"
rc=0
out=$("$R" status --detail "$WORK/plain" 2>&1) || rc=$?
check '[ $rc = 4 ]' "status --detail of a plain directory exits $rc: $out"
grep -q "not a raidfuse mount" <<<"$out" || fail "the message does not say so: $out"
"$R" stop "$MNT" || fail "raidfuse stop"

# --- 4. --scan ---------------------------------------------------------------------

log "examine --scan and status --scan: the same ARRAY line"
mk_conf "$D/b.conf" level=1 members="$(members 2 e)" member_size=16M metadata=1.2 name=data.img
create_array --assume-clean "$D/b.conf"
ex=$("$R" examine --scan "$D/e0.img" "$D/e1.img")
check '[ $(wc -l <<<"$ex") = 1 ]' "examine --scan of two members of one array: $ex"
[[ $ex == "ARRAY /dev/md/data.img metadata=1.2 UUID="*" name=data.img" ]] || fail "examine --scan: $ex"
B=$WORK/mntb
start_array_daemon "$D/b.conf" "$B"
sc=$("$R" status --scan | grep -A1 -F "# raidfuse:data.img on $B" | tail -1)
check '[ "$sc" = "$ex" ]' "status --scan '$sc' is not examine --scan's '$ex'"
log "  $ex"

# --- 1 again: a user's fsname --------------------------------------------------------

log "-o fsname=mine wins; raidfuse stop still finds the daemon"
"$R" stop "$B" || fail "raidfuse stop $B"
start_array_daemon "$D/b.conf" "$B" -o fsname=mine
src=$(findmnt -n -o SOURCE --mountpoint "$B")
check '[ "$src" = mine ]' "the user's fsname: the source is '$src'"
pid=$DAEMON_PID
"$R" stop "$B" || fail "raidfuse stop of a mount named by the user"
# (exited: gone, or a zombie its new parent has not reaped yet)
[ -r "/proc/$pid/stat" ] && [ "$(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null)" != Z ] &&
	fail "the daemon $pid still runs after stop"
mountpoint -q "$B" && fail "$B still mounted"
wait_daemon_exit "$B"
log "PASS"
