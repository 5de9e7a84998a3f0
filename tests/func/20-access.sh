#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 20-access: with -o allow_other, other users get what the modes say and
# nothing more.
#
# root serves a raid1 (md 1.2, 2 x 8 MiB) with -o allow_other.  Then:
# 1. The mount carries default_permissions; the image is root's, 0600;
#    read-only attributes and mdstat are 0444, writable ones 0644,
#    md/new_dev 0200.
# 2. Negative control: uid 1000 (setpriv --reuid 1000 --regid 1000
#    --clear-groups) does reach the mount: it lists md/, reads mdstat,
#    md/degraded and the 0644 md/sync_action and md/dev-*/state.  Without
#    allow_other every step below would fail for that reason alone.
# 3. uid 1000 cannot write the image (its content unchanged), nor
#    md/dev-d1.img/state (the member stays in_sync), md/sync_action (no
#    frozen sync), md/stripe_cache... nor md/new_dev: a root-owned 0600 file
#    it names is not added as a spare and its content is unchanged (sha256).
# 4. The image's mode and group change as a device node's: uid 1000
#    cannot chmod it; the owner's chmod 644 lets it read, not write;
#    root's chgrp 1000 and chmod 660 let it write; control files keep
#    their modes.
# 5. The owner still does all of it: writes the image, freezes and resumes
#    sync, adds a spare through md/new_dev, fails a member; the spare is
#    rebuilt in its place and the data reads back.
# Before default_permissions and the daemon's own checks, each of 3 was
# possible (the last destroying the file's content).
. "$(dirname "$0")/lib.sh"
requires fuse root
command -v setpriv >/dev/null || skip "setpriv not installed (util-linux)"

D=$WORK/a
MNT=$WORK/mnt
IMG=$MNT/array.img
mkdir -p "$D"
AS_USER=(setpriv --reuid=1000 --regid=1000 --clear-groups --inh-caps=-all)
# uid 1000 must be able to reach the mount point (WORK is 0755).
chmod 755 "$D"

mk_conf "$D/r1.conf" level=1 members="d0.img d1.img" member_size=8M metadata=1.2
create_array --assume-clean "$D/r1.conf"
start_array "$D/r1.conf" "$MNT" -o allow_other

# 1. modes and owners
opts=$(awk -v m="$MNT" '$2 == m { print $4 }' /proc/mounts)
check '[[ ",$opts," == *,default_permissions,* ]]' "the mount has default_permissions (options: $opts)"
check '[[ ",$opts," == *,allow_other,* ]]' "the mount has allow_other (options: $opts)"
mode_of() { stat -c '%u %a' "$1"; }
check '[ "$(mode_of "$IMG")" = "0 600" ]' "the image is root's, 0600 (got $(mode_of "$IMG"))"
check '[ "$(mode_of "$MNT/mdstat")" = "0 444" ]' "mdstat is 0444 (got $(mode_of "$MNT/mdstat"))"
check '[ "$(mode_of "$MNT/md/degraded")" = "0 444" ]' "md/degraded is 0444"
check '[ "$(mode_of "$MNT/md/sync_action")" = "0 644" ]' "md/sync_action is 0644"
check '[ "$(mode_of "$MNT/md/new_dev")" = "0 200" ]' "md/new_dev is 0200"
check '[ "$(mode_of "$MNT/md/dev-d1.img/state")" = "0 644" ]' "md/dev-d1.img/state is 0644"

# 2. negative control: the user reaches the mount and reads what it may
"${AS_USER[@]}" ls "$MNT/md" >/dev/null || fail "uid 1000 cannot list md/ (allow_other not in effect?)"
check '[ "$("${AS_USER[@]}" cat "$MNT/md/degraded")" = "$(cat "$MNT/md/degraded")" ]' \
	"uid 1000 reads md/degraded (0444)"
check '[ "$("${AS_USER[@]}" cat "$MNT/md/sync_action")" = idle ]' "uid 1000 reads md/sync_action (0644)"
check '[ "$("${AS_USER[@]}" cat "$MNT/md/dev-d1.img/state")" = in_sync ]' "uid 1000 reads dev-d1.img/state (0644)"
"${AS_USER[@]}" grep -q '^md0 : active raid1' "$MNT/mdstat" || fail "uid 1000 cannot read mdstat (0444)"

# 3. what the user may not do
dd if=/dev/urandom of="$WORK/pattern" bs=64k count=1 status=none
dd if="$WORK/pattern" of="$IMG" bs=64k count=1 conv=notrunc,fsync status=none
img_sum=$(region_sum "$IMG" 1)
expect_fail "${AS_USER[@]}" dd if=/dev/zero of="$IMG" bs=64k count=1 conv=notrunc status=none
check '[ "$(region_sum "$IMG" 1)" = "$img_sum" ]' "the image is unchanged after uid 1000's write"
expect_fail "${AS_USER[@]}" dd if="$IMG" of=/dev/null bs=64k count=1 status=none
expect_fail "${AS_USER[@]}" sh -c "echo faulty > '$MNT/md/dev-d1.img/state'"
check '[ "$(cat "$MNT/md/dev-d1.img/state")" = in_sync ]' "d1.img is still in_sync"
expect_fail "${AS_USER[@]}" sh -c "echo frozen > '$MNT/md/sync_action'"
check '[ "$(cat "$MNT/md/sync_action")" = idle ]' "sync_action is still idle"
expect_fail "${AS_USER[@]}" sh -c "echo 1 > '$MNT/md/group_thread_cnt'"
check '[ "$(cat "$MNT/md/group_thread_cnt")" = 0 ]' "group_thread_cnt is unchanged"
expect_fail "${AS_USER[@]}" truncate -s 0 "$MNT/md/sync_action"
# root's secret, large enough to be a spare
SECRET=$WORK/secret.img
head -c 8M /dev/urandom >"$SECRET"
chmod 600 "$SECRET"
secret_sum=$(sha256sum <"$SECRET")
expect_fail "${AS_USER[@]}" sh -c "echo '$SECRET' > '$MNT/md/new_dev'"
check '[ "$(sha256sum <"$SECRET")" = "$secret_sum" ]' "root's 0600 file is unchanged"
check '! grep -q secret.img "$MNT/mdstat"' "root's 0600 file is not in the array: $(cat "$MNT/mdstat")"

# 4. the image's modes change like a device node's: by its owner (and
#    root), for as long as it is served
expect_fail "${AS_USER[@]}" chmod 666 "$IMG"
check '[ "$(mode_of "$IMG")" = "0 600" ]' "uid 1000 cannot chmod the image (got $(mode_of "$IMG"))"
chmod 644 "$IMG"
check '[ "$(mode_of "$IMG")" = "0 644" ]' "the owner's chmod 644 holds (got $(mode_of "$IMG"))"
"${AS_USER[@]}" dd if="$IMG" of=/dev/null bs=64k count=1 status=none || fail "uid 1000 cannot read a 0644 image"
expect_fail "${AS_USER[@]}" dd if=/dev/zero of="$IMG" bs=64k count=1 conv=notrunc status=none
chgrp 1000 "$IMG"
chmod 660 "$IMG"
check '[ "$(stat -c %g:%a "$IMG")" = "1000:660" ]' "root's chgrp 1000, chmod 660 (got $(stat -c %g:%a "$IMG"))"
"${AS_USER[@]}" dd if="$WORK/pattern" of="$IMG" bs=64k count=1 conv=notrunc,fsync status=none ||
	fail "uid 1000 of group 1000 cannot write a 0660 image of group 1000"
expect_fail "${AS_USER[@]}" chown 1000 "$IMG"
check '[ "$(stat -c %u "$IMG")" = 0 ]' "uid 1000 cannot take the image (owner $(stat -c %u "$IMG"))"
expect_fail chmod 644 "$MNT/md/sync_action"
check '[ "$(mode_of "$MNT/md/sync_action")" = "0 644" ]' "control files keep their modes"
chgrp 0 "$IMG"
chmod 600 "$IMG"
expect_fail "${AS_USER[@]}" dd if="$IMG" of=/dev/null bs=64k count=1 status=none

# 5. the owner still may
echo frozen >"$MNT/md/sync_action"
check '[ "$(cat "$MNT/md/sync_action")" = frozen ]' "root freezes sync"
echo idle >"$MNT/md/sync_action"
dd if=/dev/zero of="$IMG" bs=64k count=1 seek=1 conv=notrunc,fsync status=none
truncate -s 8M "$D/s0.img"
echo "$D/s0.img" >"$MNT/md/new_dev"
check 'grep -q "s0.img\[[0-9]*\](S)" "$MNT/mdstat"' "root adds a spare: $(cat "$MNT/mdstat")"
echo faulty >"$MNT/md/dev-d1.img/state"
for ((i = 0; i < 200; i++)); do
	[ "$(cat "$MNT/md/dev-s0.img/state")" = in_sync ] && break
	sleep 0.05
done
check '[ "$(cat "$MNT/md/dev-s0.img/state")" = in_sync ]' "the spare is rebuilt: $(cat "$MNT/mdstat")"
check '[ "$(dd if="$IMG" bs=64k count=1 status=none | sha256sum)" = "$(sha256sum <"$WORK/pattern")" ]' \
	"the owner's data reads back"
stop_array "$MNT"
log "uid 1000 was refused the image, dev state, sync_action, group_thread_cnt and new_dev; root was not"
