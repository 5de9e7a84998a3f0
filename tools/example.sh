#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# example.sh - from a fresh Debian 12 machine to a mounted raid5 image:
# install the packages, build, create the bundled example array's members
# (conf/example-raid5.conf: 4 x 256 MiB under conf/example/) if they are
# not there yet, and serve it on MOUNTPOINT (default /tmp/raidfuse).
# Safe to run again: existing members are kept, as is their data.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
mnt=${1:-/tmp/raidfuse}
conf=$here/conf/example-raid5.conf

"$here/tools/setup-deps.sh"
make -C "$here" -s
if [ ! -e "$here/conf/example/d0.img" ]; then
	# New members are zeros, whose parity is zero: in sync already.
	"$here/build/raidfuse" create --assume-clean "$conf"
fi
mkdir -p "$mnt"
if mountpoint -q "$mnt"; then
	fusermount3 -u "$mnt"
fi
# A daemon that was just unmounted holds its members until it has exited.
for _ in $(seq 100); do
	flock -n "$here/conf/example/d0.img" true && break
	sleep 0.1
done
"$here/build/raidfuse" mount "$conf" "$mnt"
ls -l "$mnt"
cat <<MSG

$mnt/array.img is a raid5 of the four members in conf/example/.  Try:
  fio --name=t --filename=$mnt/array.img --rw=randwrite --bs=4k --size=64M --direct=1 --ioengine=io_uring --iodepth=16 --verify=crc32c
  sudo losetup -f --show --direct-io=on $mnt/array.img
Stop it with: $here/build/raidfuse stop $mnt (or fusermount3 -u $mnt)
MSG
