#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 51-json-typed: status --json and ctl --json as a script reads them with
# jq, in the daemonized default mode (no -f): numbers are numbers, md's
# "none" is null, pairs are objects.
#
# Expected (before: every value that was not a plain integer came as md's
# text: "120832 / 520192", "1000 (system)", "none", the fault spec as one
# string, and the mount point as typed on the command line):
# - an idle array: sync_completed, sync_speed, resync_start null; each
#   device's recovery_start null, fault null, slot a number; sync_speed_min
#   a number with sync_speed_min_source "system" ("local" once set);
#   mountpoint absolute when a relative one was given.
# - a fault spec: an object (error a string, rate and count numbers, ops
#   an array, its counters numbers).
# - while a spare is rebuilt: sync_completed {"done":N,"total":N} with
#   0 <= done <= total, the spare's recovery_start a number, sync_speed a
#   number; once in sync its recovery_start is null again.
. "$(dirname "$0")/lib.sh"
requires fuse
command -v jq >/dev/null || skip "no jq (tools/setup-deps.sh installs it)"

R=$RAIDFUSE
D=$WORK/a
MNT=$WORK/mnt
mkdir -p "$D"
mk_conf "$D/a.conf" level=5 chunk_size=64K members="$(members 4)" member_size=64M metadata=1.2
create_array --assume-clean "$D/a.conf"
start_array_daemon "$D/a.conf" "$MNT"

# jqok JSON FILTER MESSAGE: jq -e FILTER on JSON must be true.
jqok() {
	jq -e "$2" >/dev/null <<<"$1" || fail "$3: $(jq -c "$2" <<<"$1" 2>&1) from $(jq -c . <<<"$1" | head -c 3000)"
}

log "an idle array: none is null, numbers are numbers, the mount point absolute"
J=$(cd "$WORK" && "$R" status --json mnt)
jqok "$J" ".mountpoint == \"$MNT\"" "mountpoint is not $MNT"
jqok "$J" '(.raid_disks | type) == "number" and (.chunk_size | type) == "number" and (.degraded | type) == "number"' \
	"integers"
jqok "$J" '.sync_completed == null and .sync_speed == null and .resync_start == null and .reshape_position == null' \
	"md's none as null"
jqok "$J" '.sync_speed_min == 1000 and .sync_speed_min_source == "system" and (.sync_speed_max | type) == "number"' \
	"sync_speed_min"
jqok "$J" '[.devices[] | .recovery_start == null and .fault == null and (.slot | type) == "number"] | all' \
	"devices of an idle array"
jqok "$J" '(.events | type) == "number" and (.creation_time | type) == "number" and (.uuid | type) == "string"' \
	"events, creation_time, uuid"
log "  $(jq -c '{sync_completed, sync_speed_min, sync_speed_min_source, resync_start}' <<<"$J")"

log "ctl --json: a local speed limit, a fault spec as an object"
"$R" ctl "$MNT" sync_speed_min 5000
c=$("$R" ctl --json "$MNT" sync_speed_min)
jqok "$c" '. == {"sync_speed_min": 5000, "sync_speed_min_source": "local"}' "ctl --json sync_speed_min"
"$R" ctl "$MNT" sync_speed_min system
"$R" ctl "$MNT" dev-d0.img/fault "error=EIO rate=0.5 ops=read,write count=3"
c=$("$R" ctl --json "$MNT" dev-d0.img/fault)
jqok "$c" '.["dev-d0.img/fault"] | .error == "EIO" and .rate == 0.5 and .ops == ["read", "write"] and .count == 3 and
	(.matched | type) == "number" and (.errors | type) == "number"' "ctl --json dev-d0.img/fault"
log "  $c"
"$R" ctl "$MNT" dev-d0.img/fault off
jqok "$("$R" ctl --json "$MNT" dev-d0.img/fault)" '.["dev-d0.img/fault"] == null' "a fault switched off"

log "a spare rebuilt: sync_completed an object, recovery_start a number, then null"
"$R" ctl "$MNT" sync_speed_max 4000     # 64 MiB at 4 MiB/s: the rebuild lasts
"$R" ctl "$MNT" fail d1.img
"$R" ctl "$MNT" remove d1.img
truncate -s 64M "$D/s0.img"
"$R" ctl "$MNT" add "$D/s0.img"
seen=0
for ((i = 0; i < 100; i++)); do
	J=$("$R" status --json "$MNT")
	if jq -e '.sync_action == "recover" and .sync_completed != null' >/dev/null <<<"$J"; then
		seen=1
		break
	fi
	sleep 0.1
done
[ $seen = 1 ] || fail "no recovery seen in 10 s: $(jq -c '{sync_action, sync_completed}' <<<"$J")"
jqok "$J" '(.sync_completed | keys) == ["done", "total"] and (.sync_completed.done | type) == "number" and
	.sync_completed.done <= .sync_completed.total and .sync_completed.total > 0' "sync_completed while recovering"
jqok "$J" '(.sync_speed | type) == "number"' "sync_speed while recovering"
jqok "$J" '.devices[] | select(.name == "s0.img") | (.recovery_start | type) == "number"' \
	"the spare's recovery_start while it is rebuilt"
log "  $(jq -c '{sync_action, sync_completed, sync_speed, spare: (.devices[] | select(.name == "s0.img") | {recovery_start, slot})}' <<<"$J")"
"$R" ctl "$MNT" sync_speed_max system
wait_sync_idle "$MNT" recover 60
J=$("$R" status --json "$MNT")
jqok "$J" '.sync_completed == null and .degraded == 0 and
	(.devices[] | select(.name == "s0.img") | .recovery_start == null and .slot == 1)' "after the rebuild"
"$R" stop "$MNT" || fail "raidfuse stop"
wait_daemon_exit "$MNT"
log "PASS"
