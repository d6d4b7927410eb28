#!/usr/bin/env python3
"""Print a one-program stage and resource summary from a tofino-compile output directory.

Usage: resources.py OUT_DIR LABEL
Reads OUT_DIR/pipe/*.bfa (which MAU stages each gress uses) and OUT_DIR/pipe/logs/resources.json (per-stage
SRAM, TCAM, stateful ALU, hash, crossbar and logical-table use; written with tofino-compile -g). Stdlib only.
"""
import glob
import json
import os
import re
import sys

# Tofino-1 per-stage capacities (the schema's own n* fields where it has them).
SRAM_PER_STAGE = 80
TCAM_PER_STAGE = 24
LTABLES_PER_STAGE = 16
XBAR_BYTES_PER_STAGE = 128 + 66  # exact + ternary crossbar bytes


def stages_by_gress(bfa_text):
    used = {"ingress": set(), "egress": set()}
    for m in re.finditer(r"^stage (\d+) (ingress|egress):", bfa_text, re.M):
        used[m.group(2)].add(int(m.group(1)))
    return used


def summarize(out_dir):
    bfas = glob.glob(os.path.join(out_dir, "pipe", "*.bfa"))
    if not bfas:
        raise SystemExit(f"no .bfa in {out_dir}/pipe")
    with open(bfas[0]) as f:
        used = stages_by_gress(f.read())
    res = {"stages": {g: (max(s) + 1 if s else 0) for g, s in used.items()}}
    rpath = os.path.join(out_dir, "pipe", "logs", "resources.json")
    if os.path.exists(rpath):
        with open(rpath) as f:
            mau = json.load(f)["resources"]["mau"]
        tot = {"sram": 0, "tcam": 0, "salu": 0, "ltables": 0, "xbar_bytes": 0, "hash_bits": 0, "gateways": 0}
        for st in mau["mau_stages"]:
            tot["sram"] += len(st.get("rams", {}).get("srams", []))
            tot["tcam"] += len(st.get("tcams", {}).get("tcams", []))
            tot["salu"] += len(st.get("meter_alus", {}).get("meters", []))
            tot["ltables"] += len(st.get("logical_tables", {}).get("ids", []))
            tot["xbar_bytes"] += len(st.get("xbar_bytes", {}).get("bytes", []))
            tot["hash_bits"] += len(st.get("hash_bits", {}).get("bits", []))
            tot["gateways"] += len(st.get("gateways", {}).get("gateways", []))
        n = mau["nStages"]
        res["totals"] = tot
        res["capacity"] = {"sram": SRAM_PER_STAGE * n, "tcam": TCAM_PER_STAGE * n, "salu": 4 * n,
                           "ltables": LTABLES_PER_STAGE * n}
    return res


def main():
    out_dir, label = sys.argv[1], sys.argv[2]
    r = summarize(out_dir)
    s = r["stages"]
    line = f"{label}: stages ingress {s['ingress']}/12, egress {s['egress']}/12"
    if "totals" in r:
        t, c = r["totals"], r["capacity"]
        line += (f"; SRAM {t['sram']}/{c['sram']}, TCAM {t['tcam']}/{c['tcam']}, stateful ALUs {t['salu']}/{c['salu']}, "
                 f"logical tables {t['ltables']}/{c['ltables']}, gateways {t['gateways']}, "
                 f"hash bits {t['hash_bits']}, crossbar bytes {t['xbar_bytes']}")
    print(line)


if __name__ == "__main__":
    main()
