/* dta: parser pieces shared by both programs (Tofino-1 intrinsic metadata). */
#ifndef _DTA_PARSER_P4_
#define _DTA_PARSER_P4_

parser TofinoIngressParser(packet_in pkt, out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        pkt.extract(ig_intr_md);
        transition select(ig_intr_md.resubmit_flag) {
            0: parse_port_metadata;
            default: reject;   /* neither program resubmits */
        }
    }
    state parse_port_metadata {
        pkt.advance(PORT_METADATA_SIZE);
        transition accept;
    }
}

#endif
