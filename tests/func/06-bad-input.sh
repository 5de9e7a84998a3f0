#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 06-bad-input: mistakes are refused, said clearly, and cost nothing.
#
# A bad config makes both `raidfuse create` and `raidfuse mount` exit 1
# with a message that names the config file and line (or the member), and
# neither creates, truncates nor writes any member file.  create leaves
# members with data alone unless --force.  Command line mistakes exit 2
# with the usage; --help and --version exit 0.
. "$(dirname "$0")/lib.sh"
requires fuse

D=$WORK/d
MNT=$WORK/mnt
mkdir -p "$D" "$MNT"
cd "$D"
# Four members with data in them, 1 MiB each; d9.img does not exist.
for i in 0 1 2 3; do
	head -c $((1 << 20)) /dev/urandom >d$i.img
done
touch -d '2020-01-01 00:00:00' d?.img

# Everything in $D but the configs: name, size, mtime, checksum.
fingerprint() {
	local f
	for f in "$D"/*; do
		[[ $f == *.conf ]] && continue
		echo "${f##*/} $(stat -c '%s %Y' "$f") $(sha256sum <"$f")"
	done
}
BEFORE=$(fingerprint)
unchanged() {
	local now
	now=$(fingerprint)
	[ "$now" = "$BEFORE" ] || fail "$1 changed the member files:"$'\n'"before:"$'\n'"$BEFORE"$'\n'"after:"$'\n'"$now"
}

# refused NAME 'REGEX': the config on stdin (written to NAME.conf) is
# refused by create and by mount, with exit status 1, a message matching
# REGEX, and no member touched.
refused() {
	local name=$1 want=$2 cmd
	cat >"$D/$name.conf"
	for cmd in create mount; do
		if [ $cmd = create ]; then
			expect_fail "$RAIDFUSE" create "$D/$name.conf"
		else
			# -f: should it wrongly start, timeout ends it (and it
			# unmounts) instead of a daemon left behind.
			expect_fail timeout 5 "$RAIDFUSE" mount "$D/$name.conf" "$MNT" -f
		fi
		[ "$RC" = 1 ] || fail "$name: raidfuse $cmd exited $RC, expected 1: $OUT"
		grep -qE -- "$want" <<<"$OUT" || fail "$name: raidfuse $cmd said '$OUT'; expected it to match '$want'"
		mountpoint -q "$MNT" && fail "$name: $MNT is mounted after a refused config"
		unchanged "$name: raidfuse $cmd"
	done
	vlog "$name: $OUT"
	return 0
}

log "bad configs: refused with file and line, members untouched"

refused unknown-key 'unknown-key\.conf:4: .*colour' <<'EOF'
array: {
	name = "array.img";
	level = 5;
	colour = "blue";
	members = ( "d0.img", "d1.img", "d2.img" );
};
EOF

refused unknown-group 'unknown-group\.conf:5: .*extra' <<'EOF'
array: {
	level = 5;
	members = ( "d0.img", "d1.img", "d2.img" );
};
extra: { x = 1; };
EOF

refused syntax 'syntax\.conf:3: ' <<'EOF'
array: {
	name = "array.img";
	level = ;
	members = ( "d0.img", "d1.img", "d2.img" );
};
EOF

refused no-level 'no-level\.conf:[0-9]+: .*level' <<'EOF'
array: {
	name = "array.img";
	members = ( "d0.img", "d1.img", "d2.img" );
};
EOF

refused bad-level 'bad-level\.conf:3: .*level' <<'EOF'
array: {
	name = "array.img";
	level = 3;
	members = ( "d0.img", "d1.img", "d2.img" );
};
EOF

refused level-string 'level-string\.conf:3: .*level' <<'EOF'
array: {
	name = "array.img";
	level = "five";
	members = ( "d0.img", "d1.img", "d2.img" );
};
EOF

refused bad-layout 'bad-layout\.conf:4: .*layout' <<'EOF'
array: {
	name = "array.img";
	level = 5;
	layout = "n2";
	members = ( "d0.img", "d1.img", "d2.img" );
};
EOF

refused bad-layout10 'bad-layout10\.conf:4: .*layout' <<'EOF'
array: {
	name = "array.img";
	level = 10;
	layout = "left-symmetric";
	members = ( "d0.img", "d1.img", "d2.img", "d3.img" );
};
EOF

refused chunk-not-pow2 'chunk-not-pow2\.conf:4: .*chunk_size' <<'EOF'
array: {
	name = "array.img";
	level = 5;
	chunk_size = "96K";
	members = ( "d0.img", "d1.img", "d2.img" );
};
EOF

refused chunk-too-small 'chunk-too-small\.conf:4: .*chunk_size' <<'EOF'
array: {
	name = "array.img";
	level = 0;
	chunk_size = "2K";
	members = ( "d0.img", "d1.img" );
};
EOF

refused chunk-not-size 'chunk-not-size\.conf:4: .*chunk_size' <<'EOF'
array: {
	name = "array.img";
	level = 5;
	chunk_size = "banana";
	members = ( "d0.img", "d1.img", "d2.img" );
};
EOF

refused duplicate 'duplicate\.conf:4: .*members' <<'EOF'
array: {
	name = "array.img";
	level = 5;
	members = ( "d0.img", "d1.img", "d0.img" );
};
EOF

refused duplicate-spelt 'duplicate-spelt\.conf:5: .*members' <<'EOF'
array: {
	name = "array.img";
	level = 5;
	members = ( "d0.img", "d1.img",
		    "./d1.img" );
};
EOF

refused too-few 'too-few\.conf:4: .*members' <<'EOF'
array: {
	name = "array.img";
	level = 6;
	members = ( "d0.img", "d1.img", "d2.img" );
};
EOF

refused raid5-two-missing 'raid5-two-missing\.conf:5: .*missing' <<'EOF'
array: {
	name = "array.img";
	level = 5;
	metadata = "none";
	members = ( "d0.img", "missing", "missing", "d3.img" );
};
EOF

refused raid6-three-missing 'raid6-three-missing\.conf:5: .*missing' <<'EOF'
array: {
	name = "array.img";
	level = 6;
	metadata = "none";
	members = ( "missing", "d1.img", "missing", "missing", "d3.img" );
};
EOF

refused raid0-missing 'raid0-missing\.conf:5: .*missing' <<'EOF'
array: {
	name = "array.img";
	level = 0;
	metadata = "none";
	members = ( "d0.img", "missing" );
};
EOF

refused raid10-n2-both-copies 'raid10-n2-both-copies\.conf:6: .*missing' <<'EOF'
array: {
	name = "array.img";
	level = 10;
	layout = "n2";
	metadata = "none";
	members = ( "missing", "missing", "d2.img", "d3.img" );
};
EOF

# With md superblocks (the default) the superblocks place the files at
# mount (a spare may hold a role written "missing"): create refuses.
cat >"$D/r5-sb-two-missing.conf" <<'EOF'
array: {
	name = "array.img";
	level = 5;
	members = ( "d0.img", "missing", "missing", "d3.img" );
};
EOF
expect_fail "$RAIDFUSE" create "$D/r5-sb-two-missing.conf"
grep -qE 'r5-sb-two-missing\.conf:4: .*2 of 4 members are "missing"' <<<"$OUT" || fail "create, two missing: $OUT"
unchanged "r5-sb-two-missing: raidfuse create"

refused name-with-slash 'name-with-slash\.conf:2: .*name' <<'EOF'
array: {
	name = "sub/array.img";
	level = 5;
	members = ( "d0.img", "d1.img", "d2.img" );
};
EOF

refused data-offset-unaligned 'data-offset-unaligned\.conf:4: .*data_offset' <<'EOF'
array: {
	name = "array.img";
	level = 5;
	data_offset = 1001;
	members = ( "d0.img", "d1.img", "d2.img" );
};
EOF

refused member-size-no-room 'member-size-no-room\.conf:6: .*member_size' <<'EOF'
array: {
	name = "array.img";
	level = 5;
	data_offset = "1M";
	members = ( "d0.img", "d1.img", "d2.img", "d9.img" );
	member_size = "512K";
};
EOF

refused tuning-range 'tuning-range\.conf:7: .*stripe_cache_size' <<'EOF'
array: {
	name = "array.img";
	level = 5;
	members = ( "d0.img", "d1.img", "d2.img" );
};
tuning: {
	stripe_cache_size = 5;
};
EOF

expect_fail "$RAIDFUSE" mount "$D/nonexistent.conf" "$MNT"
[ "$RC" = 1 ] && grep -q "nonexistent.conf" <<<"$OUT" || fail "a config that is not there: exit $RC, '$OUT'"

log "members that cannot serve: mount names the member"

# mount_refused NAME 'REGEX': the config on stdin is fine, but mount must
# refuse the members it names (exit 1, message matching REGEX).
mount_refused() {
	local name=$1 want=$2
	cat >"$D/$name.conf"
	expect_fail timeout 5 "$RAIDFUSE" mount "$D/$name.conf" "$MNT" -f
	[ "$RC" = 1 ] || fail "$name: mount exited $RC, expected 1: $OUT"
	grep -qE -- "$want" <<<"$OUT" || fail "$name: mount said '$OUT'; expected it to match '$want'"
	unchanged "$name: raidfuse mount"
}

mount_refused member-not-there 'member 3 .*d9\.img.*No such file' <<'EOF'
array: {
	name = "array.img";
	metadata = "none";
	level = 5;
	members = ( "d0.img", "d1.img", "d2.img", "d9.img" );
};
EOF

# Members without superblocks, and a config that says they have them
# (metadata 1.2 by default): mount names create, and writes nothing.
mount_refused no-superblock 'no member has an md superblock.*the default.*raidfuse create' <<'EOF'
array: {
	name = "array.img";
	level = 5;
	members = ( "d0.img", "d1.img", "d2.img" );
};
EOF

mount_refused member-too-small-for-offset 'member 0 .*d0\.img' <<'EOF'
array: {
	name = "array.img";
	metadata = "none";
	level = 5;
	data_offset = "1M";
	members = ( "d0.img", "d1.img", "d2.img" );
};
EOF

mount_refused member-too-small-for-size 'member 0 .*d0\.img' <<'EOF'
array: {
	name = "array.img";
	metadata = "none";
	level = 5;
	size = "2M";
	members = ( "d0.img", "d1.img", "d2.img" );
};
EOF

# 1 MiB members cannot hold one 2 MiB chunk.  The message must say which
# member (and ideally the sizes): today it is "raid5: members hold no
# whole chunk", naming neither the file nor a member.
cat >"$D/member-too-small-for-chunk.conf" <<'EOF'
array: {
	name = "array.img";
	metadata = "none";
	level = 5;
	chunk_size = "2M";
	members = ( "d0.img", "d1.img", "d2.img" );
};
EOF
too_small_for_chunk() {
	expect_fail timeout 5 "$RAIDFUSE" mount "$D/member-too-small-for-chunk.conf" "$MNT" -f
	[ "$RC" = 1 ] || fail "mount exited $RC, expected 1: $OUT"
	unchanged "member-too-small-for-chunk: raidfuse mount"
	grep -qE 'member [0-9]+ .*d[0-9]\.img|member-too-small-for-chunk\.conf:[0-9]+' <<<"$OUT" ||
		fail "members too small for one chunk: mount said '$OUT', naming neither a member nor the config line"
}
too_small_for_chunk

log "a member already served by another daemon is refused"
cat >"$D/ok.conf" <<'EOF'
array: {
	name = "array.img";
	metadata = "none";
	level = 5;
	chunk_size = "64K";
	members = ( "d0.img", "d1.img", "d2.img" );
};
EOF
start_array "$D/ok.conf" "$MNT"
mkdir -p "$WORK/mnt2"
expect_fail timeout 5 "$RAIDFUSE" mount "$D/ok.conf" "$WORK/mnt2" -f
[ "$RC" = 1 ] || fail "a second mount of the same members exited $RC, expected 1: $OUT"
grep -qE 'member 0 .*d0\.img' <<<"$OUT" || fail "a second mount of the same members: '$OUT' names no member"
mountpoint -q "$WORK/mnt2" && fail "the second mount is mounted"
stop_array "$MNT"
touch -d '2020-01-01 00:00:00' d?.img # (a mount may update mtimes; the checks above are done)
BEFORE=$(fingerprint)

log "create: members with data are left alone without --force"
# metadata = "none": the members must come out all zeros (10-md-format
# tests the superblocks create writes).
cat >"$D/create.conf" <<'EOF'
array: {
	name = "array.img";
	metadata = "none";
	level = 5;
	members = ( "d0.img", "d9.img", "d2.img" );
	member_size = "2M";
};
EOF
expect_fail "$RAIDFUSE" create "$D/create.conf"
[ "$RC" = 1 ] || fail "create over members with data exited $RC, expected 1"
grep -qE 'member 0 .*d0\.img.*--force' <<<"$OUT" || fail "create over members with data said '$OUT'"
grep -qE 'member 2 .*d2\.img' <<<"$OUT" || fail "create should name every member it refuses: '$OUT'"
[ ! -e d9.img ] || fail "create refused the config but still made d9.img (it must touch none until all are fine)"
unchanged "a refused create"

log "create: an empty member gets member_size, a missing one is made"
: >e0.img
cat >"$D/empty.conf" <<'EOF'
array: {
	name = "array.img";
	metadata = "none";
	level = 5;
	members = ( "e0.img", "e1.img", "e2.img" );
	member_size = "2M";
};
EOF
"$RAIDFUSE" create "$D/empty.conf" >/dev/null || fail "create over an empty member and missing ones failed"
for f in e0.img e1.img e2.img; do
	[ "$(fsize "$f")" = $((2 << 20)) ] || fail "create: $f is $(fsize "$f") bytes, expected member_size 2M"
	cmp -s "$f" /dev/zero -n $((2 << 20)) || fail "create: $f is not all zeros"
done
rm -f e?.img

log "create --force: members with data are made anew, zeros"
"$RAIDFUSE" create "$D/create.conf" --force >/dev/null || fail "create --force failed"
for f in d0.img d9.img d2.img; do
	[ "$(fsize "$f")" = $((2 << 20)) ] || fail "create --force: $f is $(fsize "$f") bytes, expected member_size 2M"
	cmp -s "$f" /dev/zero -n $((2 << 20)) || fail "create --force: $f is not all zeros"
done
[ "$(grep '^d1.img ' <<<"$(fingerprint)")" = "$(grep '^d1.img ' <<<"$BEFORE")" ] ||
	fail "create --force touched d1.img, which its config does not name"
rm -f d9.img
"$RAIDFUSE" create "$D/create.conf" >/dev/null 2>&1 && fail "create without --force over members now holding zeros"
[ ! -e d9.img ] || fail "a refused create made d9.img"

# member_size must hold data_offset plus at least one chunk: create checks
# that, but today only for data_offset plus one byte, so it makes 256K
# members for a 512K chunk, which no mount can use ("members hold no whole
# chunk").
cat >"$D/tiny.conf" <<'EOF'
array: {
	name = "array.img";
	level = 5;
	chunk_size = "512K";
	members = ( "n0.img", "n1.img", "n2.img" );
	member_size = "256K";
};
EOF
member_size_below_chunk() {
	expect_fail "$RAIDFUSE" create "$D/tiny.conf"
	[ ! -e n0.img ] || fail "create made members of 256K for a 512K chunk (exit $RC: $OUT)"
	[ "$RC" = 1 ] && grep -qE 'tiny\.conf:6: .*member_size' <<<"$OUT" ||
		fail "create refused a member_size below one chunk with exit $RC and '$OUT' (want tiny.conf:6 and member_size)"
}
member_size_below_chunk
rm -f n?.img

log "command line: usage errors exit 2, --help and --version exit 0"
usage_error() {
	expect_fail "$RAIDFUSE" "$@"
	[ "$RC" = 2 ] || fail "raidfuse $*: exit $RC, expected 2 (usage error): $OUT"
	grep -q 'usage:' <<<"$OUT" || fail "raidfuse $*: no usage in '$OUT'"
}
usage_error
usage_error frobnicate
usage_error create
usage_error create "$D/ok.conf" extra
usage_error create --bogus "$D/ok.conf"
usage_error mount
usage_error mount "$D/ok.conf"
usage_error mount "$D/ok.conf" "$MNT" extra
usage_error mount "$D/ok.conf" "$MNT" --bogus
usage_error mount "$D/ok.conf" "$MNT" -o
mountpoint -q "$MNT" && fail "a usage error mounted something"

OUT=$("$RAIDFUSE" --help) || fail "--help exited $?"
grep -q 'raidfuse create CONFIG' <<<"$OUT" && grep -q 'raidfuse mount .*CONFIG MOUNTPOINT' <<<"$OUT" ||
	fail "--help does not show the usage: $OUT"
OUT=$("$RAIDFUSE" --version) || fail "--version exited $?"
[[ $OUT =~ ^raidfuse\ [0-9]+\.[0-9]+ ]] || fail "--version said '$OUT'"

log "mount on a directory that is not there fails cleanly"
expect_fail timeout 5 "$RAIDFUSE" mount "$D/ok.conf" "$WORK/no/such/dir" -f
[ "$RC" = 1 ] || fail "mount on a missing mount point exited $RC, expected 1: $OUT"
