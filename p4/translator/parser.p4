/* dta translator: parsers and deparsers. */
#ifndef _DTA_TRANSLATOR_PARSER_P4_
#define _DTA_TRANSLATOR_PARSER_P4_

parser TrIngressParser(packet_in pkt, out tr_headers_t hdr, out tr_ig_md_t ig_md,
                       out ingress_intrinsic_metadata_t ig_intr_md) {
    TofinoIngressParser() tofino_parser;
    state start {
        ig_md = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
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
            (5, 0, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            DTA_UDP_PORT: parse_dta_base;
            ROCEV2_UDP_PORT: parse_bth;
            default: accept;
        }
    }
    state parse_bth {
        pkt.extract(hdr.bth);
        transition select(hdr.bth.opcode) {
            BTH_OP_RC_ACK: parse_aeth;
            BTH_OP_RC_ATOMIC_ACK: parse_aeth;
            default: accept;
        }
    }
    state parse_aeth {
        pkt.extract(hdr.aeth);
        transition accept;
    }
    state parse_dta_base {
        pkt.extract(hdr.dta_base);
        transition select(hdr.dta_base.opcode) {
            DTA_OP_KEYWRITE: parse_keywrite;
#ifdef TR_APPEND
            DTA_OP_APPEND: parse_append;
#endif
            DTA_OP_KEYINCREMENT: parse_keyincrement;
#ifdef TR_POSTCARDING
            DTA_OP_POSTCARD: parse_postcard;
            DTA_OP_POSTCARD_PATHLEN: parse_postcard_pathlen;
#endif
#ifdef TR_SKETCH
            DTA_OP_SKETCH: parse_sketch;
#endif
            default: accept;   /* Sketch-Merge, Postcarding unless compiled in, unknown opcodes: dropped and counted */
        }
    }
    state parse_keywrite {
        pkt.extract(hdr.dta_keywrite);
        pkt.extract(hdr.dta_keywrite_data);
        ig_md.kind = KIND_KEYWRITE;
        transition accept;
    }
    state parse_append {
        pkt.extract(hdr.dta_append);
        pkt.extract(hdr.dta_append_data);
        ig_md.kind = KIND_APPEND;
        ig_md.list_id = hdr.dta_append.list_id;
        ig_md.append_data = hdr.dta_append_data.data;
        transition accept;
    }
    state parse_keyincrement {
        pkt.extract(hdr.dta_keyincrement);
        ig_md.kind = KIND_KEYINC;
        transition accept;
    }
    state parse_postcard {
        pkt.extract(hdr.dta_postcard);
        ig_md.kind = KIND_POSTCARD;
        ig_md.pc_key = hdr.dta_postcard.key;
        ig_md.pc_hop = hdr.dta_postcard.hop;
        ig_md.pc_path_len = POSTCARD_HOPS;
        transition accept;
    }
    state parse_postcard_pathlen {
        pkt.extract(hdr.dta_postcard_pathlen);
        ig_md.kind = KIND_POSTCARD;
        ig_md.pc_key = hdr.dta_postcard_pathlen.key;
        ig_md.pc_hop = hdr.dta_postcard_pathlen.hop;
        ig_md.pc_path_len = hdr.dta_postcard_pathlen.path_len;
        transition accept;
    }
#ifdef TR_SKETCH
    /* Sketch-Merge: only columns of SKETCH_ROWS counters with op 0 (sum) or 1 (max); anything else stays
     * KIND_FORWARD and is dropped and counted as unsupported */
    state parse_sketch {
        pkt.extract(hdr.dta_sketch);
        transition select(hdr.dta_sketch.rows, hdr.dta_sketch.op, hdr.dta_sketch.reserved) {
            (SKETCH_ROWS, 0, 0): parse_sketch_column;
            (SKETCH_ROWS, 1, 0): parse_sketch_column;
            default: accept;
        }
    }
    state parse_sketch_column {
        pkt.extract(hdr.sk_column);
        ig_md.kind = KIND_SKETCH;
        ig_md.list_id[7:0] = hdr.dta_sketch.sketch_id;
        transition accept;
    }
#endif
}

/* Emits, for a RoCE write: bridge, Ethernet, IPv4, UDP, BTH, RETH or AtomicETH, the payload (Key-Write
 * checksum + data, Append batch or postcard chunk; the report's headers are invalid by then) and a
 * placeholder iCRC that the egress fills. For a DTA NACK: Ethernet .. UDP, base header, NACK header. */
control TrIngressDeparser(packet_out pkt, inout tr_headers_t hdr, in tr_ig_md_t ig_md,
                          in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Checksum() ipv4_checksum;
    Digest<nak_digest_t>() nak_digest;
    apply {
        if (ig_md.send_digest == 1) {
            nak_digest.pack({hdr.bth.dest_qp, hdr.aeth.syndrome, hdr.bth.psn});
        }
        if (ig_md.csum_update == 1) {
            hdr.ipv4.hdr_checksum = ipv4_checksum.update({
                hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn, hdr.ipv4.total_len,
                hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
                hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr});
        }
        pkt.emit(hdr.bridge);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.bth);
        pkt.emit(hdr.aeth);
        pkt.emit(hdr.reth);
        pkt.emit(hdr.atomic_eth);
        pkt.emit(hdr.dta_base);
        pkt.emit(hdr.dta_nack);
#ifdef TR_SKETCH
        pkt.emit(hdr.dta_nack_sk);
        pkt.emit(hdr.dta_sketch);
#endif
        pkt.emit(hdr.dta_keywrite);
        pkt.emit(hdr.dta_keyincrement);
        pkt.emit(hdr.dta_append);
        pkt.emit(hdr.dta_append_data);
        pkt.emit(hdr.dta_postcard);
        pkt.emit(hdr.dta_postcard_pathlen);
        pkt.emit(hdr.kw_checksum);
        pkt.emit(hdr.dta_keywrite_data);
        pkt.emit(hdr.append_batch);
        pkt.emit(hdr.pc_chunk);
#ifdef TR_SKETCH
        pkt.emit(hdr.sk_column);
#endif
        pkt.emit(hdr.icrc);
    }
}

/* The egress parses the frame the ingress built; which headers it has follows from the bridge's kind, so no
 * header's validity changes in the egress. Forwarded packets are not parsed. */
parser TrEgressParser(packet_in pkt, out tr_headers_t hdr, out tr_eg_md_t eg_md,
                      out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        eg_md = {0, 0, 0, 0};
        pkt.extract(hdr.bridge);
        transition select(hdr.bridge.kind) {
            KIND_FORWARD: accept;
            default: parse_l2_bth;
        }
    }
    state parse_l2_bth {
        pkt.extract(hdr.ethernet);
        pkt.extract(hdr.ipv4);
        pkt.extract(hdr.udp);
        pkt.extract(hdr.bth);
        transition select(hdr.bridge.kind) {
            KIND_KEYWRITE: parse_kw;
            KIND_KEYINC: parse_ki;
#ifdef TR_APPEND
            KIND_APPEND: parse_append;
#endif
#ifdef TR_POSTCARDING
            KIND_POSTCARD: parse_postcard;
#endif
#ifdef TR_SKETCH
            KIND_SKETCH: parse_sketch;
#endif
            default: accept;   /* KIND_RESYNC: the NAK's BTH is all the egress needs */
        }
    }
    state parse_kw {
        pkt.extract(hdr.reth);
        pkt.extract(hdr.kw_checksum);
        pkt.extract(hdr.dta_keywrite_data);
        pkt.extract(hdr.icrc);
        transition accept;
    }
    state parse_ki {
        pkt.extract(hdr.atomic_eth);
        pkt.extract(hdr.icrc);
        transition accept;
    }
    state parse_append {
        pkt.extract(hdr.reth);
        pkt.extract(hdr.append_batch);
        pkt.extract(hdr.icrc);
        transition accept;
    }
    state parse_postcard {
        pkt.extract(hdr.reth);
        pkt.extract(hdr.pc_chunk);
        pkt.extract(hdr.icrc);
        transition accept;
    }
#ifdef TR_SKETCH
    state parse_sketch {
        pkt.extract(hdr.reth);
        pkt.extract(hdr.sk_column);
        pkt.extract(hdr.icrc);
        transition accept;
    }
#endif
}

control TrEgressDeparser(packet_out pkt, inout tr_headers_t hdr, in tr_eg_md_t eg_md,
                         in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.bth);
        pkt.emit(hdr.reth);
        pkt.emit(hdr.atomic_eth);
        pkt.emit(hdr.kw_checksum);
        pkt.emit(hdr.dta_keywrite_data);
        pkt.emit(hdr.append_batch);
        pkt.emit(hdr.pc_chunk);
#ifdef TR_SKETCH
        pkt.emit(hdr.sk_column);
#endif
        pkt.emit(hdr.icrc);
    }
}

#endif
