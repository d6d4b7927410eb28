/* dta reporter: turn a mirrored copy into a DTA report (DESIGN.md section 2): Ethernet/IPv4/UDP to the
 * collector on port 40040, the base header (seq form by default, compact with -DDTA_COMPACT) with a sequence
 * number per (collector, opcode) kept in a register, and the primitive's sub-header. */
control RepReportBuild(inout rep_headers_t hdr, inout rep_eg_md_t eg_md) {
    bit<8>  redundancy;
    bit<16> payload_len;   /* DTA bytes after UDP */
#ifndef DTA_COMPACT
    /* Only the seq form numbers its reports (the compact base header has no sequence number). */
    bit<11> seq_index;
#endif

    action set_collector_info(bit<48> switch_mac, bit<48> next_hop_mac, bit<32> switch_ip,
                              bit<32> collector_ip, bit<16> udp_src_port, bit<8> redundancy_) {
        hdr.ethernet.src_addr = switch_mac;
        hdr.ethernet.dst_addr = next_hop_mac;
        hdr.ethernet.ether_type = ETHERTYPE_IPV4;
        hdr.ipv4.src_addr = switch_ip;
        hdr.ipv4.dst_addr = collector_ip;
        hdr.udp.setValid();
        hdr.udp.src_port = udp_src_port;
        redundancy = redundancy_;
    }
    action unknown_collector() {
        redundancy = 0;
    }
    table tbl_collector_info {
        key = { hdr.mirror_md.collector_idx: exact; }
        actions = { set_collector_info; unknown_collector; }
        default_action = unknown_collector();
        size = 256;
    }

#ifndef DTA_COMPACT
    /* sequence numbers per (collector, opcode): index collector_idx ++ opcode[2:0] */
    Register<bit<8>, bit<11>>(2048, 0) reg_seq;
    RegisterAction<bit<8>, bit<11>, bit<8>>(reg_seq) next_seq = {
        void apply(inout bit<8> seq, out bit<8> result) {
            seq = seq + 1;
            result = seq;
        }
    };
#endif

    action base(bit<8> opcode) {
        hdr.dta_base.setValid();
        hdr.dta_base.opcode = opcode;
        hdr.dta_base.immediate = 0;
        /* a switch keeps no copy of its reports, so it cannot retransmit: the translator does not NACK them */
        hdr.dta_base.retransmit = 0;
        hdr.dta_base.reserved = 0;
    }
    action build_keywrite() {
        base(DTA_OP_KEYWRITE);
        hdr.dta_keywrite.setValid();
        hdr.dta_keywrite.redundancy = redundancy;
        hdr.dta_keywrite.key = hdr.mirror_md.key;
        hdr.dta_keywrite_data.setValid();
#if KW_DATA_BYTES == 28
        hdr.dta_keywrite_data.data = hdr.int_shim.sw_id1 ++ hdr.int_shim.sw_id2 ++ hdr.int_shim.sw_id3 ++
                                     hdr.int_shim.sw_id4 ++ hdr.int_shim.sw_id5 ++ 64w0;
#elif KW_DATA_BYTES == 12
        hdr.dta_keywrite_data.data = hdr.int_shim.sw_id1 ++ hdr.int_shim.sw_id2 ++ hdr.int_shim.sw_id3;
#else
        hdr.dta_keywrite_data.data = hdr.int_shim.sw_id1;
#endif
        payload_len = DTA_BASE_BYTES + 5 + KW_DATA_BYTES;
    }
    action build_keyincrement() {
        base(DTA_OP_KEYINCREMENT);
        hdr.dta_keyincrement.setValid();
        hdr.dta_keyincrement.redundancy = redundancy;
        hdr.dta_keyincrement.key = hdr.mirror_md.key;
        hdr.dta_keyincrement.counter = (bit<64>)hdr.mirror_md.data;
        payload_len = DTA_BASE_BYTES + 13;
    }
    action build_postcard() {
        base(DTA_OP_POSTCARD);
        hdr.dta_postcard.setValid();
        hdr.dta_postcard.key = hdr.mirror_md.key;
        hdr.dta_postcard.hop = hdr.mirror_md.hop;
        hdr.dta_postcard.data = hdr.mirror_md.data;
        payload_len = DTA_BASE_BYTES + 9;
    }
    action build_append() {
        base(DTA_OP_APPEND);
        hdr.dta_append.setValid();
        /* list id = the collector-side list of queue events (same index space as the key) */
        hdr.dta_append.list_id = hdr.mirror_md.key;
        hdr.dta_append_data.setValid();
        hdr.dta_append_data.data = hdr.mirror_md.data;
        payload_len = DTA_BASE_BYTES + 8;
    }
    action bad_report() {
        payload_len = 0;
    }
    table tbl_build {
        key = { hdr.mirror_md.report_type: exact; }
        actions = { build_keywrite; build_keyincrement; build_postcard; build_append; bad_report; }
        const entries = {
            DTA_OP_KEYWRITE: build_keywrite();
            DTA_OP_KEYINCREMENT: build_keyincrement();
            DTA_OP_POSTCARD: build_postcard();
            DTA_OP_APPEND: build_append();
        }
        default_action = bad_report();
        size = 8;
    }

    action finish() {
        hdr.ipv4.version = 4;
        hdr.ipv4.ihl = 5;
        hdr.ipv4.dscp = 0;
        hdr.ipv4.ecn = 0;
        hdr.ipv4.total_len = payload_len + 28;
        hdr.ipv4.identification = 0;
        hdr.ipv4.flags = 0b010;
        hdr.ipv4.frag_offset = 0;
        hdr.ipv4.ttl = 64;
        hdr.ipv4.protocol = IP_PROTO_UDP;
        hdr.udp.dst_port = DTA_UDP_PORT;
        hdr.udp.length = payload_len + 8;
        hdr.udp.checksum = 0;
        hdr.int_shim.setInvalid();
        eg_md.csum_update = 1;
    }

    apply {
        if (tbl_collector_info.apply().hit) {
            tbl_build.apply();
            finish();
#ifndef DTA_COMPACT
            seq_index = hdr.mirror_md.collector_idx ++ hdr.mirror_md.report_type[2:0];
            hdr.dta_base.seqnum = next_seq.execute(seq_index);
#endif
        }
    }
}
