/* dta reporter: parsers and deparsers. */
#ifndef _DTA_REPORTER_PARSER_P4_
#define _DTA_REPORTER_PARSER_P4_

parser RepIngressParser(packet_in pkt, out rep_headers_t hdr, out rep_ig_md_t ig_md,
                        out ingress_intrinsic_metadata_t ig_intr_md) {
    TofinoIngressParser() tofino_parser;
    state start {
        ig_md.ki_limit = 0x7FFE;
        ig_md.rand_val = 0;
        ig_md.ki_threshold = 0x7FFF;
        ig_md.l4_proto = 0;
        ig_md.flow_key = 0;
        ig_md.switch_id = 0;
        ig_md.is_source = 0;
        ig_md.is_sink = 0;
        ig_md.report_type = 0;
        ig_md.collector_idx = 0;
        ig_md.hop = 0;
        ig_md.data = 0;
        ig_md.mirror_session = 0;
        ig_md.pkt_type = 0;
        tofino_parser.apply(pkt, ig_intr_md);
        transition parse_ethernet;
    }
    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (5, 0, IP_PROTO_INT_SHIM): parse_int_shim;
            (5, 0, IP_PROTO_TCP): parse_l4;
            (5, 0, IP_PROTO_UDP): parse_l4;
            default: accept;
        }
    }
    state parse_int_shim {
        pkt.extract(hdr.int_shim);
        transition select(hdr.int_shim.next_proto) {
            IP_PROTO_TCP: parse_l4;
            IP_PROTO_UDP: parse_l4;
            default: accept;
        }
    }
    state parse_l4 {
        pkt.extract(hdr.l4);
        transition accept;
    }
}

control RepIngressDeparser(packet_out pkt, inout rep_headers_t hdr, in rep_ig_md_t ig_md,
                           in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Mirror() mirror;
    Checksum() ipv4_checksum;
    apply {
        if (ig_dprsr_md.mirror_type == MIRROR_TYPE_I2E) {
            mirror.emit<rep_mirror_h>(ig_md.mirror_session,
                {ig_md.pkt_type, ig_md.report_type, ig_md.collector_idx, ig_md.hop, ig_md.flow_key, ig_md.data});
        }
        /* the shim push changes total_len and protocol */
        if (hdr.int_shim.isValid()) {
            hdr.ipv4.hdr_checksum = ipv4_checksum.update({
                hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn, hdr.ipv4.total_len,
                hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
                hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr});
        }
        pkt.emit(hdr.bridge);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.int_shim);
        pkt.emit(hdr.l4);
    }
}

parser RepEgressParser(packet_in pkt, out rep_headers_t hdr, out rep_eg_md_t eg_md,
                       out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        eg_md.is_report = 0;
        eg_md.over = 0;
        eg_md.csum_update = 0;
        eg_md.seq_index_op = 0;
        eg_md.mirror_session = 0;
        eg_md.pkt_type = 0;
        eg_md.report_type = 0;
        eg_md.collector_idx = 0;
        eg_md.data = 0;
        eg_md.key = 0;
        pkt_type_t t = pkt.lookahead<pkt_type_t>();
        transition select(t) {
            PKT_TYPE_MIRROR: parse_mirror;
            default: parse_bridge;
        }
    }
    state parse_bridge {
        pkt.extract(hdr.bridge);
        transition parse_ethernet;
    }
    state parse_mirror {
        pkt.extract(hdr.mirror_md);
        eg_md.is_report = 1;
        transition parse_ethernet;
    }
    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (5, 0, IP_PROTO_INT_SHIM): parse_int_shim;
            default: accept;
        }
    }
    state parse_int_shim {
        pkt.extract(hdr.int_shim);
        transition accept;
    }
}

control RepEgressDeparser(packet_out pkt, inout rep_headers_t hdr, in rep_eg_md_t eg_md,
                          in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    Mirror() mirror;
    Checksum() ipv4_checksum;
    apply {
        if (eg_dprsr_md.mirror_type == MIRROR_TYPE_E2E) {
            mirror.emit<rep_mirror_h>(eg_md.mirror_session,
                {eg_md.pkt_type, eg_md.report_type, eg_md.collector_idx, 8w0, eg_md.key, eg_md.data});
        }
        if (eg_md.csum_update == 1) {
            hdr.ipv4.hdr_checksum = ipv4_checksum.update({
                hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn, hdr.ipv4.total_len,
                hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
                hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr});
        }
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.int_shim);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.dta_base);
        pkt.emit(hdr.dta_keywrite);
        pkt.emit(hdr.dta_keywrite_data);
        pkt.emit(hdr.dta_keyincrement);
        pkt.emit(hdr.dta_postcard);
        pkt.emit(hdr.dta_append);
        pkt.emit(hdr.dta_append_data);
    }
}

#endif
