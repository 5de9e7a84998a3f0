#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# layers.sh - the layer graph, checked from the objects themselves.
#
#   tools/layers.sh [BUILD]     check BUILD/obj (default build/obj)
#   tools/layers.sh --selftest  plant an upward call in a scratch tree: the
#                               check must fail on it, and pass without it
#
# The order of the source directories is written once, in README.md, on
# the line that starts "Layers, top to bottom:" (A > B = C > D: A may call
# B, C and D; B and C are peers and may not call each other; nothing calls
# upwards; nothing calls into src/front/main.c, the program).  Each
# object's undefined symbols (nm) are matched to the object
# that defines them; an edge from a file in one directory to a file in
# another that the order does not allow is a violation.  tools/layers.allow
# lists the edges the tree still has ("src/a/x.c -> src/b/y.c", one per
# line, # comments): each is reported as known, and one that no longer
# exists must leave the list (so the list only shrinks).
#
# Exit status: 0 no violation, 1 violations (each printed with the names
# it uses) or a stale allowance, 2 usage error.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)

# order_of README: "layer rank" lines, rank 0 at the top.
order_of() {
	local line
	line=$(grep -m1 '^Layers, top to bottom:' "$1") ||
		{ echo "layers.sh: $1 has no line starting 'Layers, top to bottom:'" >&2; return 2; }
	line=${line#Layers, top to bottom:}
	line=${line//\`/}
	awk -v s="$line" 'BEGIN { n = split(s, tier, ">")
		for (i = 1; i <= n; i++) { m = split(tier[i], peer, "=")
			for (j = 1; j <= m; j++) { gsub(/[ .]/, "", peer[j]); if (peer[j] != "") print peer[j], i } } }'
}

# check OBJDIR ORDERFILE ALLOWFILE [SRCDIR]: with SRCDIR, objects without
# a source there are left out
check() {
	local obj=$1 order=$2 allow=$3 srcdir=${4:-} o
	[ -d "$obj" ] || { echo "layers.sh: no objects in $obj (build first)" >&2; return 2; }
	for o in "$obj"/*/*.o; do
		[ -e "$o" ] || continue
		case ${o#"$obj"/} in tests/*) continue ;; esac   # the test fixtures' own
		# an object whose source moved or went is not the tree's
		[ -z "$srcdir" ] || [ -e "$srcdir/$(basename "$(dirname "$o")")/$(basename "$o" .o).c" ] || continue
		echo "@ ${o#"$obj"/}"
		nm -P "$o" | awk '{ print $2, $1 }'
	done | awk -v orderfile="$order" -v allowfile="$allow" '
		BEGIN {
			while ((getline l < orderfile) > 0) { split(l, f, " "); rank[f[1]] = f[2] }
			while ((getline l < allowfile) > 0) {
				sub(/#.*/, "", l); gsub(/^[ \t]+|[ \t]+$/, "", l)
				if (l != "") { allowed[l] = 1; nallow++ }
			}
		}
		$1 == "@" { cur = $2; dir = cur; sub(/\/.*/, "", dir); dirof[cur] = dir; next }
		$1 == "U" { use[cur, $2] = 1; uses[cur] = uses[cur] " " $2; next }
		$1 ~ /^[TDBRCVWG]$/ { def[$2] = cur }
		function src(o) { sub(/\.o$/, ".c", o); return "src/" o }
		END {
			for (o in uses) {
				n = split(uses[o], u, " ")
				for (i = 1; i <= n; i++) {
					d = def[u[i]]
					# the program: nothing calls into it
					if (d == "front/main.o" && d != o) {
						names[src(o) " -> " src(d)] = names[src(o) " -> " src(d)] " " u[i]
						continue
					}
					if (d == "" || d == o || dirof[d] == dirof[o]) continue
					a = dirof[o]; b = dirof[d]
					if (!(a in rank)) { unknown[a] = 1; continue }
					if (!(b in rank)) { unknown[b] = 1; continue }
					if (rank[b] > rank[a]) continue
					e = src(o) " -> " src(d)
					names[e] = names[e] " " u[i]
				}
			}
			bad = 0
			for (x in unknown) { printf "layers: directory %s is not in the README'\''s order\n", x; bad = 1 }
			for (e in names) {
				if (e in allowed) { known++; seen[e] = 1; continue }
				printf "layers: %s (%s ) runs against the order\n", e, names[e]
				bad = 1
			}
			for (e in allowed)
				if (!(e in seen)) {
					printf "layers: %s is allowed in the list but no longer in the tree: remove it\n", e
					bad = 1
				}
			printf "layers: %d edges against the order that the list still allows, %s\n", known + 0,
				bad ? "and violations" : "no others"
			exit bad
		}'
}

selftest() {
	local t rc=0
	t=$(mktemp -d)
	mkdir -p "$t/obj/util" "$t/obj/front"
	printf 'Layers, top to bottom: front > util\n' >"$t/README"
	: >"$t/allow"
	printf 'int rf_front_fn(void) { return 1; }\n' >"$t/front.c"
	printf 'int rf_util_fn(void) { return 2; }\n' >"$t/util.c"
	printf 'int rf_front_fn(void);\nint rf_util_up(void) { return rf_front_fn(); }\n' >"$t/up.c"
	printf 'int rf_util_fn(void);\nint rf_front_down(void) { return rf_util_fn(); }\n' >"$t/down.c"
	cc -c -o "$t/obj/front/front.o" "$t/front.c"
	cc -c -o "$t/obj/util/util.o" "$t/util.c"
	cc -c -o "$t/obj/front/down.o" "$t/down.c"
	order_of "$t/README" >"$t/order"
	if ! check "$t/obj" "$t/order" "$t/allow" >"$t/out"; then
		echo "layers selftest: a downward call was refused: $(cat "$t/out")"
		rc=1
	fi
	cc -c -o "$t/obj/util/up.o" "$t/up.c"
	if check "$t/obj" "$t/order" "$t/allow" >"$t/out" ||
		! grep -q 'src/util/up.c -> src/front/front.c ( rf_front_fn ) runs against the order' "$t/out"; then
		echo "layers selftest: the planted upward call was not found: $(cat "$t/out")"
		rc=1
	fi
	echo "src/util/up.c -> src/front/front.c" >"$t/allow"
	if ! check "$t/obj" "$t/order" "$t/allow" >"$t/out"; then
		echo "layers selftest: an allowed edge was refused: $(cat "$t/out")"
		rc=1
	fi
	printf 'int rf_main_fn(void) { return 3; }\n' >"$t/main.c"
	printf 'int rf_main_fn(void);\nint rf_front_up(void) { return rf_main_fn(); }\n' >"$t/lib.c"
	cc -c -o "$t/obj/front/main.o" "$t/main.c"
	cc -c -o "$t/obj/front/lib.o" "$t/lib.c"
	if check "$t/obj" "$t/order" "$t/allow" >"$t/out" ||
		! grep -q 'src/front/lib.c -> src/front/main.c ( rf_main_fn ) runs against the order' "$t/out"; then
		echo "layers selftest: a call into main.c was not found: $(cat "$t/out")"
		rc=1
	fi
	rm "$t/obj/front/main.o" "$t/obj/front/lib.o"
	rm "$t/obj/util/up.o"
	if check "$t/obj" "$t/order" "$t/allow" >"$t/out" || ! grep -q 'no longer in the tree' "$t/out"; then
		echo "layers selftest: a stale allowance was not reported: $(cat "$t/out")"
		rc=1
	fi
	rm -rf "$t"
	[ $rc = 0 ] && echo "layers selftest: a planted upward call and a call into main.c are found, an allowed one passes, a stale allowance fails"
	return $rc
}

case ${1:-} in
--selftest) selftest ;;
-h | --help) sed -n '3,9p' "$0" | sed 's/^# \{0,1\}//' ;;
-*) echo "usage: tools/layers.sh [BUILD] | --selftest" >&2; exit 2 ;;
*)
	build=${1:-$here/build}
	order=$(mktemp)
	trap 'rm -f "$order"' EXIT
	order_of "$here/README.md" >"$order"
	check "$build/obj" "$order" "$here/tools/layers.allow" "$here/src"
	;;
esac
