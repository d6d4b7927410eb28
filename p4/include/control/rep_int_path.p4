/* dta reporter: INT-style path tracing shim. The first hop pushes it, each hop records its switch ID
 * (up to 5), the last hop's egress strips it (RepIntStrip) after the ingress mirror took the report. */
control RepIntPath(inout rep_headers_t hdr, inout rep_ig_md_t ig_md) {
    action push_shim() {
        hdr.int_shim.setValid();
        hdr.int_shim.next_proto = hdr.ipv4.protocol;
        hdr.int_shim.hop_count = 1;
        hdr.int_shim.reserved = 0;
        hdr.int_shim.sw_id1 = ig_md.switch_id;
        hdr.int_shim.sw_id2 = 0;
        hdr.int_shim.sw_id3 = 0;
        hdr.int_shim.sw_id4 = 0;
        hdr.int_shim.sw_id5 = 0;
        hdr.ipv4.protocol = IP_PROTO_INT_SHIM;
        hdr.ipv4.total_len = hdr.ipv4.total_len + INT_SHIM_BYTES;
    }
    action record_2() { hdr.int_shim.sw_id2 = ig_md.switch_id; hdr.int_shim.hop_count = 2; }
    action record_3() { hdr.int_shim.sw_id3 = ig_md.switch_id; hdr.int_shim.hop_count = 3; }
    action record_4() { hdr.int_shim.sw_id4 = ig_md.switch_id; hdr.int_shim.hop_count = 4; }
    action record_5() { hdr.int_shim.sw_id5 = ig_md.switch_id; hdr.int_shim.hop_count = 5; }
    action path_full() { }
    table tbl_int_record {
        key = { hdr.int_shim.hop_count: exact; }
        actions = { record_2; record_3; record_4; record_5; path_full; }
        const entries = {
            1: record_2();
            2: record_3();
            3: record_4();
            4: record_5();
        }
        default_action = path_full();
        size = 8;
    }
    apply {
        if (hdr.int_shim.isValid()) {
            tbl_int_record.apply();
        } else if (ig_md.is_source == 1 && hdr.l4.isValid()) {
            push_shim();
        }
        if (hdr.int_shim.isValid()) {
            ig_md.hop = hdr.int_shim.hop_count;
        } else {
            ig_md.hop = 0;
        }
    }
}

control RepIntStrip(inout rep_headers_t hdr, inout rep_eg_md_t eg_md) {
    apply {
        if (hdr.bridge.is_sink == 1 && hdr.int_shim.isValid()) {
            hdr.ipv4.protocol = hdr.int_shim.next_proto;
            hdr.ipv4.total_len = hdr.ipv4.total_len - INT_SHIM_BYTES;
            hdr.int_shim.setInvalid();
            eg_md.csum_update = 1;
        }
    }
}
