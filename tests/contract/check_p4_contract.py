#!/usr/bin/env python3
"""The P4 programs and dta-protocol must not drift apart.

p4test (p4c's front end) dumps each P4 program's IR as JSON; this script reads every header type and the
contract constants from it and compares them with the tables dta-protocol publishes
(`cargo run -p dta-protocol --example contract`): for each header, the same fields with the same widths in
the same order; the same UDP ports; the same DTA and BTH opcodes. Any difference fails.

Usage: check_p4_contract.py CONTRACT.json PROGRAM.p4 [-D...]...
For the translator without a -DTR_ profile it also checks each build profile (-DTR_POSTCARDING, -DTR_SKETCH)
with the same defines.
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
P4C = os.path.join(os.path.dirname(ROOT), "shared", "tools", "p4c")

# P4 constant names for the contract's ports and opcodes (p4/include/define.p4).
PORT_CONSTANTS = {"dta": "DTA_UDP_PORT", "dta_nack": "DTA_NACK_UDP_PORT", "rocev2": "ROCEV2_UDP_PORT"}
DTA_OPCODE_CONSTANTS = {
    "key_write": "DTA_OP_KEYWRITE", "append": "DTA_OP_APPEND", "key_increment": "DTA_OP_KEYINCREMENT",
    "postcard": "DTA_OP_POSTCARD", "sketch_merge": "DTA_OP_SKETCH", "postcard_pathlen": "DTA_OP_POSTCARD_PATHLEN",
}
BTH_OPCODE_CONSTANTS = {
    "rc_rdma_write_only": "BTH_OP_RC_WRITE_ONLY", "rc_acknowledge": "BTH_OP_RC_ACK",
    "rc_atomic_acknowledge": "BTH_OP_RC_ATOMIC_ACK", "rc_fetch_add": "BTH_OP_RC_FETCH_ADD", "cnp": "BTH_OP_CNP",
}


def dump_ir(program, defines):
    # --parse-only keeps the program as written: the front end would inline and drop the constants.
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "ir.json")
        cmd = [os.path.join(P4C, "bin", "p4test"), "-I", os.path.join(P4C, "p4include"),
               "-D__TARGET_TOFINO__=1", *defines, "--parse-only", "--toJSON", out, program]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)
        with open(out) as f:
            return json.load(f)


def index_nodes(ir):
    """Every node with a body, by Node_ID (later occurrences of a node are bare references)."""
    nodes = {}
    stack = [ir]
    while stack:
        n = stack.pop()
        if isinstance(n, dict):
            if "Node_ID" in n and len(n) > 1 and n["Node_ID"] not in nodes:
                nodes[n["Node_ID"]] = n
            stack.extend(n.values())
        elif isinstance(n, list):
            stack.extend(n)
    return nodes


def resolve(node, nodes):
    if isinstance(node, dict) and len(node) == 1 and "Node_ID" in node:
        return nodes[node["Node_ID"]]
    return node


def header_types(nodes, wanted):
    headers = {}
    for n in nodes.values():
        if n.get("Node_Type") != "Type_Header" or n["name"] in headers or n["name"] not in wanted:
            continue
        fields = []
        for fld in resolve(n["fields"], nodes)["vec"]:
            fld = resolve(fld, nodes)
            t = resolve(fld["type"], nodes)
            if t.get("Node_Type") != "Type_Bits":
                raise SystemExit("header %s field %s is not bit<N>: %s" % (n["name"], fld["name"], t.get("Node_Type")))
            fields.append([fld["name"], t["size"]])
        headers[n["name"]] = fields
    return headers


def constants(nodes):
    out = {}
    for n in nodes.values():
        if n.get("Node_Type") == "Declaration_Constant":
            init = resolve(n["initializer"], nodes)
            if init.get("Node_Type") == "Constant":
                out[n["name"]] = int(init["value"])
    return out


# The translator's build profiles (p4/include/define.p4): each is checked in the header form it is called with.
TRANSLATOR_PROFILES = (["-DTR_POSTCARDING"], ["-DTR_SKETCH"])


def check(contract, program, defines):
    nodes = index_nodes(dump_ir(program, defines))
    p4_headers = header_types(nodes, {name + "_h" for name in contract["headers"]})
    p4_consts = constants(nodes)
    errors = []
    compared = 0
    for name, fields in sorted(contract["headers"].items()):
        p4 = p4_headers.get(name + "_h")
        if p4 is None:
            errors.append("header %s_h missing in P4 (p4/include/header.p4 declares every contract header)" % name)
            continue
        compared += 1
        if p4 != fields:
            errors.append("%s_h: P4 %s != Rust %s" % (name, p4, fields))
    for table, names in (("udp_ports", PORT_CONSTANTS), ("dta_opcodes", DTA_OPCODE_CONSTANTS),
                         ("bth_opcodes", BTH_OPCODE_CONSTANTS)):
        for key, const in names.items():
            if const not in p4_consts:
                errors.append("constant %s missing in P4" % const)
            elif p4_consts[const] != contract[table][key]:
                errors.append("%s = %d in P4, %d in Rust" % (const, p4_consts[const], contract[table][key]))
    print("%s %s: %d headers compared" % (os.path.relpath(program, ROOT), " ".join(defines),  compared))
    print("HEADERS " + " ".join(sorted(n[:-2] for n in p4_headers if n[:-2] in contract["headers"])))
    if errors:
        print("\n".join("  DRIFT: " + e for e in errors))
    return not errors


def main():
    contract_path, program, defines = sys.argv[1], sys.argv[2], sys.argv[3:]
    with open(contract_path) as f:
        contract = json.load(f)
    ok = check(contract, program, defines)
    if os.path.basename(program) == "dta_translator.p4" and not any(d.startswith("-DTR_") for d in defines):
        for profile in TRANSLATOR_PROFILES:
            ok = check(contract, program, profile + defines) and ok
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
