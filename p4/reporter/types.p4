/* dta reporter: header struct, metadata and mirror/bridge headers (program-local). */
#ifndef _DTA_REPORTER_TYPES_P4_
#define _DTA_REPORTER_TYPES_P4_

typedef bit<8> pkt_type_t;
const pkt_type_t PKT_TYPE_NORMAL = 1;
const pkt_type_t PKT_TYPE_MIRROR = 2;

typedef bit<3> mirror_type_t;
const mirror_type_t MIRROR_TYPE_I2E = 1;
const mirror_type_t MIRROR_TYPE_E2E = 2;

/* report types carried to egress (value = DTA opcode) */
const bit<8> REPORT_NONE = 0;

/* ingress -> egress for forwarded packets */
header rep_bridge_h {
    pkt_type_t pkt_type;
    bit<7>     pad;
    bit<1>     is_sink;
}

/* mirror metadata: what the egress turns into a DTA report */
header rep_mirror_h {
    pkt_type_t pkt_type;
    bit<8>     report_type;   /* a DTA opcode */
    bit<8>     collector_idx;
    bit<8>     hop;
    bit<32>    key;
    bit<32>    data;
}

struct rep_headers_t {
    rep_bridge_h        bridge;
    rep_mirror_h        mirror_md;
    ethernet_h          ethernet;
    ipv4_h              ipv4;
    int_shim_h          int_shim;
    udp_h               udp;
    DTA_BASE_T          dta_base;
    dta_keywrite_h      dta_keywrite;
    dta_keywrite_data_h dta_keywrite_data;
    dta_keyincrement_h  dta_keyincrement;
    dta_postcard_h      dta_postcard;
    dta_append_h        dta_append;
    dta_append_data_h   dta_append_data;
    l4_ports_h          l4;
}

struct rep_ig_md_t {
    bit<8>        l4_proto;
    bit<32>       flow_key;
    bit<32>       switch_id;
    bit<1>        is_source;
    bit<1>        is_sink;
    bit<8>        report_type;
    bit<8>        collector_idx;
    bit<8>        hop;
    bit<32>       data;
    MirrorId_t    mirror_session;
    pkt_type_t    pkt_type;
    bit<16>       ki_limit;
    bit<16>       rand_val;
    bit<16>       ki_threshold;
}

struct rep_eg_md_t {
    bit<8>     over;
    bit<1>     is_report;
    bit<1>     csum_update;
    bit<8>     seq_index_op;
    MirrorId_t mirror_session;
    pkt_type_t pkt_type;
    bit<8>     report_type;
    bit<8>     collector_idx;
    bit<32>    data;
    bit<32>    key;
}

#endif
