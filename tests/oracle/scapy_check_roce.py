#!/usr/bin/env python3
"""Independent check of a RoCEv2 capture: scapy recomputes every frame's iCRC and checks the headers.

For each frame of the pcap: it must be Ether/IPv4/UDP to 4791 with a correct IPv4 checksum and UDP checksum 0;
scapy's RoCE layer (scapy.contrib.roce) recomputes the iCRC, which must equal the frame's; RC WRITE ONLY frames
must carry a RETH whose DMA length equals the payload length (pad excluded), RC FETCH_ADD frames an 8-byte
aligned AtomicETH. Prints one summary line and the per-opcode counts as JSON; exits 1 on the first bad frame.

Usage: scapy_check_roce.py CAPTURE.pcap
"""
import json
import struct
import sys

from scapy.contrib.roce import BTH
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.utils import rdpcap


def fail(i, why):
    print("frame %d: %s" % (i, why))
    sys.exit(1)


def main():
    frames = rdpcap(sys.argv[1])
    counts = {}
    for i, pkt in enumerate(frames):
        raw = bytes(pkt)
        e = Ether(raw)
        if IP not in e or UDP not in e or e[UDP].dport != 4791 or BTH not in e:
            fail(i, "not RoCEv2")
        ip = e[IP]
        carried_ip = ip.chksum
        del ip.chksum
        if IP(bytes(ip))[IP].chksum != carried_ip:
            fail(i, "bad IPv4 checksum")
        if e[UDP].chksum != 0:
            fail(i, "UDP checksum not 0")
        carried = e[BTH].icrc
        again = Ether(raw)
        del again[BTH].icrc
        if Ether(bytes(again))[BTH].icrc != carried:
            fail(i, "iCRC mismatch (carried %#010x)" % carried)
        op = e[BTH].opcode
        body = bytes(e[BTH].payload)
        pad = e[BTH].padcount
        if op == 0x0A:
            va, rkey, dma_len = struct.unpack("!QII", body[:16])
            if dma_len != len(body) - 16 - pad:
                fail(i, "RETH DMA length %d for %d payload bytes" % (dma_len, len(body) - 16 - pad))
        elif op == 0x14:
            va, rkey, add, cmp = struct.unpack("!QIQQ", body[:28])
            if va % 8 or len(body) != 28:
                fail(i, "misaligned or malformed FETCH_ADD")
        else:
            fail(i, "unexpected BTH opcode %#x" % op)
        counts[op] = counts.get(op, 0) + 1
    print("scapy_check_roce: %d frames ok" % len(frames))
    print(json.dumps({"frames": len(frames), "by_opcode": {hex(k): v for k, v in sorted(counts.items())}}))


if __name__ == "__main__":
    main()
