"""TRex STL profile: the DTA postcard workload of dta-pktgen (same parameters, same first frame).

    start -f dta_postcard.py -t pps=1000000,seed=1,keys=1000000
Tunables are dta-pktgen's options with underscores (see dta_workloads.DEFAULTS) plus pps.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import dta_trex  # noqa: E402


class STLS1(object):
    def get_streams(self, direction=0, pps=1000.0, **kwargs):
        return dta_trex.streams("postcard", pps=float(pps), **kwargs)


def register():
    return STLS1()
