import pytest

import reporter_cp as cp

CFG = {
    "switch_id": 7, "switch_mac": "02:00:00:00:07:00", "switch_ip": "198.18.1.7", "ki_threshold": 64,
    "kw_probability": 1 / 64, "pc_probability": 1 / 16,
    "collectors": [{"ip": "198.18.0.2", "next_hop_mac": "02:00:00:00:00:02", "port": 136,
                    "udp_src_port": 50000, "redundancy": 2}],
    "report_collector": {"keywrite": 0, "keyincrement": 0, "postcard": 0},
    "routes": [{"prefix": "10.0.0.0/8", "port": 4, "sink": False}, {"prefix": "10.1.0.0/16", "port": 8, "sink": True}],
    "host_ports": [8],
    "queue_events": [{"port": 4, "threshold": 1000, "collector": 0, "list_id": 3}],
}


def test_sample_ranges():
    assert cp.sample_ranges(1 / 64, 1 / 16) == [
        {"key": {"ig_md.rand_val": (0, 1023)}, "action": "set_sample", "data": {"kw": 1, "pc": 1}},
        {"key": {"ig_md.rand_val": (1024, 4095)}, "action": "set_sample", "data": {"kw": 0, "pc": 1}}]
    assert cp.sample_ranges(0, 0) == []
    assert cp.sample_ranges(1, 0) == [
        {"key": {"ig_md.rand_val": (0, 65535)}, "action": "set_sample", "data": {"kw": 1, "pc": 0}}]
    with pytest.raises(ValueError):
        cp.sample_ranges(1.5, 0)


def test_entries():
    e = cp.compute_entries(CFG)
    assert e["tbl_switch_config"] == {"action": "set_thresholds", "data": {"switch_id": 7, "ki_threshold_": 64}}
    assert e["mirror_sessions"] == [{"sid": 1, "port": 136, "max_pkt_len": 34},
                                    {"sid": 2, "port": 136, "max_pkt_len": 58}]
    assert e["tbl_collector"] == [
        {"key": {"ig_md.report_type": op}, "action": "set_collector",
         "data": {"collector_idx": 0, "session_no_shim": 1, "session_shim": 2}} for op in (3, 1, 4)]
    assert e["tbl_collector_info"][0]["data"] == {
        "switch_mac": 0x020000000700, "next_hop_mac": 0x020000000002, "switch_ip": 0xC6120107,
        "collector_ip": 0xC6120002, "udp_src_port": 50000, "redundancy_": 2}
    assert e["tbl_forward"][1] == {"key": {"hdr.ipv4.dst_addr": (0x0A010000, 16)}, "action": "forward",
                                   "data": {"port": 8, "is_sink": 1}}
    assert e["tbl_port_role"] == [{"key": {"ig_intr_md.ingress_port": 8}, "action": "set_port_role",
                                   "data": {"is_source": 1}}]
    assert e["tbl_event_config"] == [{
        "key": {"eg_intr_md.egress_port": 4, "eg_intr_md.enq_qdepth": (1001, (1 << 19) - 1)},
        "action": "over_threshold",
        "data": {"collector_idx": 0, "list_id": 3, "session_no_shim_": 1, "session_shim_": 2}}]


def test_rejects_bad_config():
    with pytest.raises(ValueError):
        cp.compute_entries(dict(CFG, ki_threshold=40000))
    with pytest.raises(ValueError):
        cp.qdepth_range(1 << 19)
