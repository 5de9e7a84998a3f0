# SPDX-License-Identifier: GPL-2.0-or-later
# conf.sh - sourced by tools/bench.sh and tools/bench-resync.sh: the config
# of the arrays they mount.
# shellcheck shell=bash

# bench_array_conf CONF LEVEL CHUNK MEMBER_SIZE MEMBER...: an array without
# superblocks (members hold data alone, from their first byte: an md
# superblock only moves the data by data_offset, the IO is the same),
# raid10 near 2, and no tuning group: the stripe cache and worker threads
# at their defaults.
bench_array_conf() {
	local conf=$1 level=$2 chunk=$3 size=$4 list="" m layout=""
	shift 4
	for m; do list+="${list:+, }\"$m\""; done
	[ "$level" = 10 ] && layout='layout = "n2";'
	cat >"$conf" <<CONF
array: {
  name = "array.img"; metadata = "none"; level = $level; $layout chunk_size = "$chunk";
  members = ( $list );
  member_size = "$size";
};
CONF
}
