#!/usr/bin/env python3
"""Prints, as JSON, the base packet of each profile's first stream for the cases given as JSON in argv[1]
([{"workload": ..., "params": {...}}, ...]). TRex is not needed: a stub trex_stl_lib records what the
profile builds, and the stub checks that every field-engine write lands inside the packet.
"""
import importlib
import json
import os
import sys
import types

from scapy.all import raw

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


class STLVM:
    def __init__(self):
        self.vars, self.writes = {}, []

    def var(self, name, min_value, max_value, size, op):
        assert name not in self.vars and min_value <= max_value < 1 << (8 * size), (name, min_value, max_value)
        assert op in ("inc", "dec", "random")
        self.vars[name] = size

    def write(self, fv_name, pkt_offset):
        self.writes.append((fv_name, pkt_offset))


class STLPktBuilder:
    def __init__(self, pkt, vm):
        self.pkt, self.vm = pkt, vm
        data = raw(pkt)
        for name, off in vm.writes:
            assert off + vm.vars[name] <= len(data), (name, off, len(data))


class STLStream:
    def __init__(self, packet, mode):
        self.packet, self.mode = packet, mode


class STLTXCont:
    def __init__(self, pps):
        self.pps = pps


api = types.ModuleType("trex_stl_lib.api")
api.STLVM, api.STLPktBuilder, api.STLStream, api.STLTXCont = STLVM, STLPktBuilder, STLStream, STLTXCont
sys.modules["trex_stl_lib"] = types.ModuleType("trex_stl_lib")
sys.modules["trex_stl_lib.api"] = api

out = []
for case in json.loads(sys.argv[1]):
    profile = importlib.import_module("dta_" + case["workload"].replace("-", "_")).register()
    streams = profile.get_streams(direction=0, pps=1000, **case["params"])
    out.append({"hex": raw(streams[0].packet.pkt).hex(), "streams": len(streams),
                "vars": sorted(streams[0].packet.vm.vars)})
print(json.dumps(out))
