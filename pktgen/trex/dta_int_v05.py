"""TRex STL profile: the INT v05 workload of dta-pktgen (`--workload int-v05`; same parameters, same first frame).

    start -f dta_int_v05.py -t pps=1000000,seed=1,keys=1000000
Tunables: seed, keys, key_base, dist, zipf_s, k, drop_per_mille (v05), the addresses (see dta_int.DEFAULTS),
plus pps.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import dta_int  # noqa: E402


class STLS1(object):
    def get_streams(self, direction=0, pps=1000.0, **kwargs):
        return dta_int.streams("int_v05", pps=float(pps), **kwargs)


def register():
    return STLS1()
