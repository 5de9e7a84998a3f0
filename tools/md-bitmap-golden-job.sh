#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# md-bitmap-golden-job.sh - kernel md makes tests/data/md-images/r5-ls-3d-64k-bitmap-degraded.
#
# A guest job for mdpeer's run-guest.sh (kernel md and mdadm 4.2 in QEMU), over three
# blank 32 MiB member files attached as /dev/vda..vdc:
#     truncate -s 32M role0.img role1.img role2.img
#     ../shared/tools/mdpeer/run-guest.sh --share OUT tools/md-bitmap-golden-job.sh role0.img role1.img role2.img
# mdadm creates a raid5 (3 members, chunk 64K) with an internal bitmap of 1 MiB chunks and
# lets it resync; then role 2 is failed and two places are written (zeros: 256 KiB at
# array offset 6400 KiB and 64 KiB at 51200 KiB), so their bits stay set (md keeps bits
# while degraded), and the array is stopped.  OUT gets mdadm -X and -E of every member.
# role2 keeps the bitmap it had when it failed (older events, every bit set since the
# initial resync had them all set when it was written last).
O=/host
echo 2000000 > /proc/sys/dev/raid/speed_limit_min
yes | mdadm --create /dev/md0 --run --level=5 --raid-devices=3 --chunk=64K --metadata=1.2 \
	--bitmap=internal --bitmap-chunk=1M /dev/vda /dev/vdb /dev/vdc > $O/create.log 2>&1 || exit 1
mdadm --wait /dev/md0; sleep 1
while grep -qE 'resync|recovery' /proc/mdstat; do sleep 1; done
sleep 11
mdadm /dev/md0 --fail /dev/vdc > $O/fail.log 2>&1
dd if=/dev/zero of=/dev/md0 bs=64k count=4 seek=100 oflag=direct 2>/dev/null
dd if=/dev/zero of=/dev/md0 bs=64k count=1 seek=800 oflag=direct 2>/dev/null
sleep 11
mdadm --stop /dev/md0 >> $O/fail.log 2>&1
for d in /dev/vda /dev/vdb /dev/vdc; do mdadm -X $d > $O/X-${d##*/}.txt 2>&1; mdadm -E $d > $O/E-${d##*/}.txt 2>&1; done
