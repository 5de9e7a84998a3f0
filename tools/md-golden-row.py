#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""md-golden-row.py - what tools/md-golden.sh adds to an md-images row.

mdpeer's golden_manifest.py writes NAME/manifest.json for an array made by one mdadm
--create over equal members.  The arrays md-golden.sh makes have more to say, and this
adds it from the guest's notes in NAME/info/ (never from assumptions):

  kind                  how the array was made (md-golden-job.sh's JOB_KIND)
  data_offsets_logged   sysfs data offsets by guest device, before/after a reshape or
                        a replacement, as the guest logged them
  mdadm_commands        every mdadm command the guest ran, in order
  member_sizes_bytes    each member's size (member_size_bytes is null when they differ)
  members[i]            + size_bytes, feature_map, new_offset_sectors, layout (raid0)
  raid0_layout          multi-zone raid0: md's layout name, number and feature bit
  reshape               mid-reshape: reshape_position_sectors, delta_disks, new_level,
                        new_layout, new_chunk_kib, direction (from mdadm --examine)
  consistency_policy    and ppl (offset/size from --examine) where md keeps a log
  crash                 the reset mid-write: the plan of writes, what each planned block
                        holds on the members as left (raw) and after md's own recovery
  replacement           mid-replace: the 5th device, role 1's replacement as md stopped
                        it: its file, the role it replaces, its recovery offset (from
                        --examine, cross-checked with sysfs and its superblock), its
                        superblock's dev_roles, how far its data equals role 1's
  md_verify             reshape, crash, midreplace: what kernel md said of snapshots of
                        the members
  check_raid5           what mdpeer's check_raid5.py said, or why it was not run

usage: md-golden-row.py NAMEDIR KIND                  (members still raw roleK.img)
       md-golden-row.py --check CHECK_RAID5 NAMEDIR KIND   (after compression)
It refuses (exit 1, one line) when a note it needs is missing or disagrees.
"""
import hashlib
import json
import os
import re
import struct
import subprocess
import sys

SECT = 512
NEW_BIAS = 1 << 32
# md's raid5 layout numbers (ALGORITHM_* in the kernel's raid5.h), by mdadm's names
R5_LAYOUTS = {"left-asymmetric": 0, "right-asymmetric": 1, "left-symmetric": 2,
              "right-symmetric": 3, "parity-first": 4, "parity-last": 5}  # the crash writes' pattern: sector s holds u64le(s + 2^32)


def die(msg):
    sys.exit("md-golden-row: %s" % msg)


def examine_field(text, label):
    m = re.search(r"^\s*%s : (.*?)\s*$" % re.escape(label), text, re.M)
    return m.group(1) if m else None


def sectors_of(value):
    """'2048 sectors' / '-1024 sectors' -> int."""
    m = re.match(r"(-?\d+) sectors", value or "")
    return int(m.group(1)) if m else None


def old_sector(s):
    return struct.pack("<Q", s) * 64


def new_sector(s):
    return struct.pack("<Q", s + NEW_BIAS) * 64


PAGE = 8  # sectors: md's raid5 works in 4 KiB stripe units


def classify(data, first, count):
    """'old' | 'new' | 'mixed' (some 4 KiB pages old, the others new) | 'other' (a page
    that is neither, or torn within) for array sectors first .. first+count-1."""
    pages = set()
    for p in range(0, count, PAGE):
        kinds = set()
        for i in range(p, min(p + PAGE, count)):
            b = data[i * SECT:(i + 1) * SECT]
            kinds.add("old" if b == old_sector(first + i) else "new" if b == new_sector(first + i) else "other")
        pages.add(kinds.pop() if len(kinds) == 1 else "other")
    if "other" in pages:
        return "other"
    return pages.pop() if len(pages) == 1 else "mixed"


def raid5_ls_place(s, n, spc, offsets):
    """left-symmetric raid5: array sector s -> (member, member sector, stripe, parity member)."""
    dd = n - 1
    stripe, within = divmod(s, dd * spc)
    k, off = divmod(within, spc)
    pd = dd - stripe % n
    disk = (pd + 1 + k) % n
    return disk, offsets[disk] + stripe * spc + off, stripe, pd


def crash_notes(d, row):
    info = os.path.join(d, "info")
    plan = {}
    for line in open(os.path.join(info, "plan.txt")):
        m = re.match(r"(\w+)=\"?([^\"]*)\"?$", line.strip())
        if m:
            plan[m.group(1)] = m.group(2)
    start, stripes = int(plan["plan_start_sector"]), int(plan["plan_stripes"])
    stride, offs = int(plan["plan_stride_sectors"]), [int(x) for x in plan["plan_offsets_sectors"].split()]
    blk = int(plan["block_sectors"])
    end = start + stripes * stride
    blocks = [start + i * stride + o for i in range(stripes) for o in offs]
    verify = open(os.path.join(info, "verify.log")).read()
    m = re.search(r"mismatch_cnt=(\d+)", verify)
    if not m:
        die("%s: no md check result in info/verify.log" % d)
    region = open(os.path.join(info, "region.img"), "rb").read()
    if len(region) != (end - start) * SECT:
        die("%s: info/region.img holds %d bytes, the plan %d sectors" % (d, len(region), end - start))
    planned = set()
    for b in blocks:
        planned.update(range(b, b + blk))
    stray = [s for s in range(start, end) if s not in planned
             and region[(s - start) * SECT:(s - start + 1) * SECT] != old_sector(s)]
    if stray:
        die("%s: after md's recovery, sectors outside the planned writes changed (first %d)" % (d, stray[0]))
    after = {b: classify(region[(b - start) * SECT:(b - start + blk) * SECT], b, blk) for b in blocks}
    # the members as left by the reset, read directly (left-symmetric raid5 only)
    n, spc = row["raid_disks"], row["chunk_kib"] * 2
    mem = [open(os.path.join(d, "role%d.img" % r), "rb").read() for r in range(n)]
    raw, stale = {}, set()
    for b in blocks:
        disk, ms, stripe, _pd = raid5_ls_place(b, n, spc, row["data_offset_sectors"])
        raw[b] = classify(mem[disk][ms * SECT:(ms + blk) * SECT], b, blk)
    for stripe in sorted({raid5_ls_place(b, n, spc, row["data_offset_sectors"])[2] for b in blocks}):
        x = 0
        for r in range(n):
            o = (row["data_offset_sectors"][r] + stripe * spc) * SECT
            x ^= int.from_bytes(mem[r][o:o + spc * SECT], "little")
        if x:
            stale.add(stripe)
    pick = lambda table, what: [b for b in blocks if table[b] == what]
    return {
        "plan": {"start_sector": start, "stripes": stripes, "stride_sectors": stride,
                 "offsets_sectors": offs, "block_sectors": blk,
                 "blocks": "start_sector + i * stride_sectors + o, i < stripes, o in offsets_sectors",
                 "new_data": "a written block holds u64le(s + 2^32) 64 times in each of its sectors s"},
        "rule": ("every sector outside the planned blocks must read as the pattern; in a planned block "
                 "each 4 KiB page reads either as the pattern (old) or as the new data, whole"),
        "raw_new_blocks": pick(raw, "new"),
        "raw_mixed_blocks": pick(raw, "mixed"),
        "raw_other_blocks": pick(raw, "other"),
        "raw_parity_inconsistent_stripes": sorted(stale),
        "md_recovered": {"mismatch_cnt_after": int(m.group(1)),
                         "new_blocks": pick(after, "new"), "old_blocks": len(pick(after, "old")),
                         "mixed_blocks": pick(after, "mixed"), "other_blocks": pick(after, "other")},
    }


MD_FEATURE_RECOVERY_OFFSET = 0x2
MD_FEATURE_REPLACEMENT = 0x10
SB_ROLES = {0xffff: "spare", 0xfffe: "faulty", 0xfffd: "journal"}


def superblock(path, super_offset):
    """The fields of a 1.x superblock (md_p.h's mdp_superblock_1) that a replacement
    in progress touches, read from the member itself."""
    with open(path, "rb") as f:
        f.seek(super_offset * SECT)
        b = f.read(4096)
    if struct.unpack_from("<I", b, 0)[0] != 0xa92b4efc:
        die("%s: no md 1.x superblock at sector %d" % (path, super_offset))
    max_dev = struct.unpack_from("<I", b, 220)[0]
    roles = list(struct.unpack_from("<%dH" % max_dev, b, 256))
    while roles and roles[-1] == 0xffff:
        roles.pop()
    return {"feature_map": "0x%x" % struct.unpack_from("<I", b, 8)[0],
            "recovery_offset_sectors": struct.unpack_from("<Q", b, 152)[0],
            "dev_number": struct.unpack_from("<I", b, 160)[0],
            "events": struct.unpack_from("<Q", b, 200)[0],
            "max_dev": max_dev,
            "dev_roles": [SB_ROLES.get(r, r) for r in roles]}


def sysfs_notes(info):
    notes = {}
    for line in open(os.path.join(info, "sysfs.txt")):
        for m in re.finditer(r"(\S+?)=(\S.*?)(?=\s+rdev\.|$)", line.strip()):
            notes[m.group(1)] = m.group(2).strip()
    return notes


def replacement_notes(d, row):
    """The device md was copying role 1 to when it stopped: attached after the roles."""
    info = os.path.join(d, "info")
    dev = "vd" + chr(ord("a") + row["raid_disks"])
    ex_path = os.path.join(info, "examine-replacement.txt")
    if os.path.exists(os.path.join(info, "examine-%s.txt" % dev)):
        os.replace(os.path.join(info, "examine-%s.txt" % dev), ex_path)
    ex = open(ex_path).read()
    img = os.path.join(d, "replacement.img")
    fm = examine_field(ex, "Feature Map")
    role = examine_field(ex, "Device Role") or ""
    m = re.match(r"Replacement device (\d+)$", role)
    if not m:
        die("%s: the replacement's Device Role is '%s', not 'Replacement device N'" % (d, role))
    slot = int(m.group(1))
    if not fm or not int(fm, 16) & MD_FEATURE_REPLACEMENT:
        die("%s: the replacement's feature map %s lacks MD_FEATURE_REPLACEMENT (0x10)" % (d, fm))
    rec = sectors_of(examine_field(ex, "Recovery Offset"))
    if rec is None:
        die("%s: the replacement's --examine has no Recovery Offset" % d)
    if examine_field(ex, "Array UUID") != row["array_uuid"]:
        die("%s: the replacement is of array %s, not %s" % (d, examine_field(ex, "Array UUID"), row["array_uuid"]))
    sysfs = sysfs_notes(info)
    if sysfs.get("rdev.%s.recovery_start" % dev) != str(rec):
        die("%s: recovery offset %d in --examine, %s in sysfs at the freeze"
            % (d, rec, sysfs.get("rdev.%s.recovery_start" % dev)))
    if sysfs.get("rdev.%s.slot" % dev) != str(slot):
        die("%s: the replacement is in slot %s in sysfs, role %d in --examine" % (d, sysfs.get("rdev.%s.slot" % dev), slot))
    off = sectors_of(examine_field(ex, "Data Offset"))
    so = sectors_of(examine_field(ex, "Super Offset"))
    sb = superblock(img, so)
    if sb["recovery_offset_sectors"] != rec or sb["feature_map"] != fm:
        die("%s: the replacement's superblock says %s, --examine %s / %d" % (d, sb, fm, rec))
    old = row["members"][slot]
    old_ex = open(os.path.join(info, "examine-role%d.txt" % slot)).read()
    old_img = os.path.join(d, "role%d.img" % slot)
    old_sb = superblock(old_img, old["super_offset_sectors"])
    # how far the replacement's data area equals the replaced member's: md copied
    # at least up to the recovery offset
    n = row["component_sectors"]
    same = 0
    stray = 0
    with open(img, "rb") as f, open(old_img, "rb") as g:
        f.seek(off * SECT)
        g.seek(old["data_offset_sectors"] * SECT)
        differ = False
        for s in range(0, n, PAGE):
            a, b = f.read(PAGE * SECT), g.read(PAGE * SECT)
            if not differ and a == b:
                same = s + PAGE
                continue
            differ = True
            if a != bytes(len(a)):
                stray += 1
    same = min(same, n)
    if same < rec:
        die("%s: the replacement equals role %d only up to sector %d, below its recovery offset %d"
            % (d, slot, same, rec))
    h = hashlib.sha256()
    with open(img, "rb") as f:
        for blk in iter(lambda: f.read(1 << 20), b""):
            h.update(blk)
    return {
        "file": "%s/replacement.img.xz" % row["name"],
        "guest_dev": "/dev/" + dev,
        "replaces_role": slot,
        "recovery_offset_sectors": rec,
        "recovery_offset_of": ("sectors of the member's data area (from its data offset) md had copied; "
                               "component_sectors %d in all" % n),
        "device_uuid": examine_field(ex, "Device UUID"),
        "feature_map": fm,
        "feature_bits": {"recovery_offset": bool(int(fm, 16) & MD_FEATURE_RECOVERY_OFFSET),
                         "replacement": bool(int(fm, 16) & MD_FEATURE_REPLACEMENT)},
        "data_offset_sectors": off,
        "super_offset_sectors": so,
        "size_bytes": os.path.getsize(img),
        "raw_sha256": h.hexdigest(),
        "examine_device_role": role,
        "examine_array_state": examine_field(ex, "Array State"),
        "superblock": sb,
        "replaced_member": {"role": slot, "device_uuid": old["device_uuid"], "feature_map": old["feature_map"],
                            "examine_device_role": examine_field(old_ex, "Device Role"),
                            "examine_array_state": examine_field(old_ex, "Array State"),
                            "superblock": old_sb},
        "data_equal_to_replaced_sectors": same,
        "pages_not_zero_past_that": stray,
        "sysfs_at_freeze": {"sync_completed": sysfs.get("sync_completed_at_freeze"),
                            "replacement_state": sysfs.get("rdev.%s.state" % dev),
                            "replaced_state": sysfs.get("rdev.%s.state" % old["guest_dev"][5:])},
        "how_to_read": ("roles 0..%d (members) are the array as it was, role %d still in sync on its old member; "
                        "the replacement holds role %d's data in sectors 0 .. recovery_offset_sectors-1 of its "
                        "data area; kernel md resumes the copy there" % (row["raid_disks"] - 1, slot, slot)),
    }


def augment(d, kind):
    path = os.path.join(d, "manifest.json")
    row = json.load(open(path))
    info = os.path.join(d, "info")
    row["kind"] = kind
    row["mdadm_commands"] = [l.strip() for l in open(os.path.join(info, "job.log")) if l.startswith("mdadm ")]
    logged = {}
    for l in open(os.path.join(info, "job.log")):
        m = re.match(r"data offsets (.*?): (.*)$", l.strip())
        if m:
            logged[m.group(1)] = {k: int(v) for k, v in (x.split("=") for x in m.group(2).split())}
    if logged:
        row["data_offsets_logged"] = logged
    sizes = []
    reshape = None
    for m in row["members"]:
        if m.get("missing"):
            sizes.append(None)
            continue
        ex = open(os.path.join(info, "examine-role%d.txt" % m["role"])).read()
        m["size_bytes"] = os.path.getsize(os.path.join(d, "role%d.img" % m["role"]))
        sizes.append(m["size_bytes"])
        m["feature_map"] = examine_field(ex, "Feature Map")
        no = examine_field(ex, "New Offset")
        if no is not None:
            m["new_offset_sectors"] = sectors_of(no)
        if row["level"] == 0:
            m["layout"] = examine_field(ex, "Layout")
        ppl = examine_field(ex, "PPL")
        if ppl:
            mm = re.match(r"(\d+) sectors at offset (-?\d+) sectors", ppl)
            m["ppl"] = {"size_sectors": int(mm.group(1)), "offset_sectors": int(mm.group(2))} if mm else ppl
        pos = examine_field(ex, "Reshape pos'n")
        if pos:
            # mdadm prints the reshape position in KiB
            r = {"reshape_position_sectors": 2 * int(pos.split()[0]), "examine_reshape_pos": pos,
                 "delta_disks": examine_field(ex, "Delta Devices"),
                 "new_level": examine_field(ex, "New Level"),
                 "new_layout": examine_field(ex, "New Layout"),
                 "new_chunk": examine_field(ex, "New Chunksize")}
            if reshape is not None and reshape != r:
                die("%s: members disagree on the reshape: %s vs %s" % (d, reshape, r))
            reshape = r
        cp = examine_field(ex, "Consistency Policy")
        if cp:
            row["consistency_policy"] = cp
    row["member_sizes_bytes"] = sizes
    if len({s for s in sizes if s is not None}) > 1:
        row["member_size_bytes"] = None
    if row["level"] == 0:
        fm = row["members"][0]["feature_map"]
        row["raid0_layout"] = {"name": row["members"][0].get("layout"), "layout_num": row["layout_num"],
                               "feature_map": fm,
                               "raid0_layout_feature_bit": bool(int(fm, 16) & 0x1000) if fm else None}
    if kind == "reshape":
        if reshape is None:
            die("%s: the members are not mid-reshape (no Reshape pos'n in --examine)" % d)
        ex = open(os.path.join(info, "examine-role0.txt")).read()
        reshape["delta_disks"] = int(reshape["delta_disks"].split()[0]) if reshape["delta_disks"] else 0
        # MD_FEATURE_RESHAPE_BACKWARDS (32) in the superblock's feature map
        fm = int(row["members"][0]["feature_map"], 16)
        reshape["direction"] = "backwards" if fm & 0x20 else "forwards"
        reshape["feature_map"] = row["members"][0]["feature_map"]
        reshape["raid_disks_before"] = row["raid_disks"] - max(reshape["delta_disks"], 0)
        reshape["raid_disks_after"] = row["raid_disks"] + min(reshape["delta_disks"], 0)
        # sysfs shows md's in-memory layout, which a layout reshape already changed;
        # the superblock's (and --detail's) is the old one, in which the data is
        # from the reshape position on
        lay = examine_field(ex, "Layout")
        if lay in R5_LAYOUTS:
            row["layout_num_sysfs"] = row["layout_num"]
            row["layout_num"] = R5_LAYOUTS[lay]
        if reshape["new_layout"] in R5_LAYOUTS:
            reshape["new_layout_num"] = R5_LAYOUTS[reshape["new_layout"]]
        reshape["examine_role0"] = {k: examine_field(ex, k) for k in ("Raid Devices", "Array Size", "Used Dev Size")}
        row["reshape"] = reshape
        row["pattern_written"] = ("before the reshape started; read back through md after md finished the "
                                  "reshape on snapshots of these members (md_verify)")
    elif reshape is not None:
        die("%s: kind %s but the members are mid-reshape" % (d, kind))
    if kind == "midreplace":
        row["replacement"] = replacement_notes(d, row)
        row["pattern_written"] = ("before the replacement started; read back through md after md finished the "
                                  "replacement on snapshots of these members and the replacement (md_verify)")
    if kind == "crash":
        row["crash"] = crash_notes(d, row)
        row["pattern_written"] = "before the crash writes; see crash for what may differ"
    vl = os.path.join(info, "verify.log")
    if os.path.exists(vl):
        row["md_verify"] = [l.strip() for l in open(vl) if l.strip()]
    row["records"] = "%s/info/ (%s)" % (row["name"], ", ".join(sorted(os.listdir(info))))
    row["check_raid5"] = None
    with open(path, "w") as f:
        json.dump(row, f)
        f.write("\n")


def check(tool, d, kind):
    path = os.path.join(d, "manifest.json")
    row = json.load(open(path))
    why = None
    if row["level"] == 0 and len(set(row["member_sizes_bytes"])) > 1:
        why = "multi-zone raid0 (check_raid5.py knows a single zone only)"
    elif kind == "reshape":
        why = "mid-reshape (check_raid5.py knows one geometry per array)"
    if why:
        row["check_raid5"] = {"result": "not run", "why": why}
    else:
        tmp = os.path.join(os.path.dirname(os.path.abspath(d)), ".check-%s.jsonl" % row["name"])
        with open(tmp, "w") as f:
            json.dump(row, f)
            f.write("\n")
        p = subprocess.run([sys.executable, tool, "--manifest", tmp], capture_output=True, text=True)
        os.unlink(tmp)
        out = (p.stdout + p.stderr).strip().splitlines()
        print("\n".join(out))
        row["check_raid5"] = {"result": "OK" if p.returncode == 0 else "FAIL",
                              "summary": out[-1] if out else "",
                              "mismatches": [l.strip() for l in out if "MISMATCH" in l][:10]}
        if kind == "crash":
            row["check_raid5"]["why"] = "stripes written at the reset may disagree with the pattern or parity"
        elif p.returncode != 0:
            die("%s: check_raid5.py found mismatches" % d)
        if kind == "midreplace":
            row["check_raid5"]["why"] = "the members of roles 0..%d only (not the replacement)" % (row["raid_disks"] - 1)
    if kind == "midreplace":
        rp = row["replacement"]
        p = subprocess.run("xz -dc '%s' | sha256sum" % os.path.join(os.path.dirname(os.path.abspath(d)), rp["file"]),
                           shell=True, capture_output=True, text=True)
        if p.returncode != 0 or p.stdout.split()[0] != rp["raw_sha256"]:
            die("%s: %s does not decompress to the replacement that was examined" % (d, rp["file"]))
    with open(path, "w") as f:
        json.dump(row, f)
        f.write("\n")


def main():
    a = sys.argv[1:]
    if len(a) == 4 and a[0] == "--check":
        check(a[1], a[2], a[3])
    elif len(a) == 2:
        augment(a[0], a[1])
    else:
        die("usage: md-golden-row.py [--check CHECK_RAID5] NAMEDIR KIND")


if __name__ == "__main__":
    main()
