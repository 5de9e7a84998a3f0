#!/usr/bin/env bash
# bench.sh - raidfuse beside fuse-ceiling, same run, same machine.
#
# fuse-ceiling (../shared/tools/fuse-ceiling) is a bare pread/pwrite FUSE
# passthrough: the fastest any FUSE-exported file gets here.  Each fio job
# runs on it and on raidfuse arrays with members on /dev/shm, one after the
# other, and the table gives raidfuse / ceiling.
#
# fuse-ceiling.c asks for FUSE_USE_VERSION 34, where libfuse 3.14's
# fuse_session_loop_mt() reads its fuse_loop_config as the older struct:
# max_idle_threads becomes 1 and a FUSE thread is started and ended per
# request.  So the table also has "ceil312", the same source built for the
# 3.12 loop API (the one raidfuse uses), and ratios against both.
#
# usage: tools/bench.sh [-t SECONDS] [-l "0 5"] [-c CHUNK]
#        (RAIDFUSE, CEILING_SRC, BENCH_DIR override)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
RAIDFUSE=${RAIDFUSE:-$here/build/raidfuse}
CEILING_SRC=${CEILING_SRC:-$here/../shared/tools/fuse-ceiling/fuse-ceiling.c}
runtime=10 levels="0 5" chunk=512K
while getopts "t:l:c:" o; do
	case $o in
	t) runtime=$OPTARG ;;
	l) levels=$OPTARG ;;
	c) chunk=$OPTARG ;;
	*) echo "usage: $0 [-t SECONDS] [-l LEVELS] [-c CHUNK]" >&2; exit 2 ;;
	esac
done
work=$(mktemp -d "${BENCH_DIR:-/dev/shm}/rf-bench-XXXXXX")
cleanup() {
	for m in "$work"/mnt-*; do fusermount3 -uz "$m" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

cc -O2 -o "$work/fuse-ceiling" "$CEILING_SRC" $(pkg-config --cflags --libs fuse3)
sed 's/^#define FUSE_USE_VERSION 34$/#define FUSE_USE_VERSION 312/' "$CEILING_SRC" >"$work/ceil312.c"
cc -O2 -o "$work/fuse-ceiling312" "$work/ceil312.c" $(pkg-config --cflags --libs fuse3)
targets=()
for c in ceil ceil312; do
	bin=$work/fuse-ceiling
	[ $c = ceil ] || bin=$work/fuse-ceiling312
	truncate -s 2G "$work/$c.img"
	mkdir -p "$work/mnt-$c"
	"$bin" "$work/$c.img" "$work/mnt-$c" &
	for _ in $(seq 50); do [ -e "$work/mnt-$c/img" ] && break; sleep 0.1; done
	# Fill the backing file so reads hit real pages.
	dd if=/dev/zero of="$work/mnt-$c/img" bs=1M count=1024 oflag=direct status=none
	targets+=("$c:$work/mnt-$c/img")
done

for l in $levels; do
	mkdir -p "$work/mnt-r$l"
	cat > "$work/r$l.conf" <<CONF
array: {
  name = "array.img"; level = $l; chunk_size = "$chunk";
  members = ( "$work/r$l-0.img", "$work/r$l-1.img", "$work/r$l-2.img", "$work/r$l-3.img" );
  member_size = "1G";
};
tuning: { stripe_cache_size = 4096; };
CONF
	"$RAIDFUSE" create "$work/r$l.conf" >/dev/null
	"$RAIDFUSE" mount "$work/r$l.conf" "$work/mnt-r$l"
	dd if=/dev/zero of="$work/mnt-r$l/array.img" bs=1M count=1024 oflag=direct status=none
	targets+=("raid$l:$work/mnt-r$l/array.img")
done

jobs=("randread 4k 32" "randwrite 4k 32" "write 1M 8" "read 1M 8")
declare -A res
for j in "${jobs[@]}"; do
	set -- $j
	for t in "${targets[@]}"; do
		name=${t%%:*} file=${t#*:}
		out=$(fio --name=b --filename="$file" --rw="$1" --bs="$2" --iodepth="$3" --ioengine=io_uring \
			--direct=1 --size=1G --runtime="$runtime" --time_based --output-format=terse --terse-version=3)
		# terse v3: read iops field 8, read bw KiB 7; write iops 49, write bw 48
		case $1 in
		*read) iops=$(echo "$out" | cut -d';' -f8); bw=$(echo "$out" | cut -d';' -f7) ;;
		*) iops=$(echo "$out" | cut -d';' -f49); bw=$(echo "$out" | cut -d';' -f48) ;;
		esac
		res["$j|$name"]="$iops $bw"
	done
done
printf '%-18s %-8s %12s %12s %10s %10s\n' job target IOPS MiB/s "/ceil" "/ceil312"
for j in "${jobs[@]}"; do
	read -r ci _ <<<"${res["$j|ceil"]}"
	read -r c3 _ <<<"${res["$j|ceil312"]}"
	for t in "${targets[@]}"; do
		name=${t%%:*}
		read -r i b <<<"${res["$j|$name"]}"
		awk -v j="$j" -v n="$name" -v i="$i" -v b="$b" -v ci="$ci" -v c3="$c3" \
			'BEGIN { printf "%-18s %-8s %12d %12.0f %10.2f %10.2f\n", j, n, i, b / 1024, ci ? i / ci : 0, c3 ? i / c3 : 0 }'
	done
done
