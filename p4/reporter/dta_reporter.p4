/*
 * dta reporter for Tofino-1 (TNA, P4_16).
 *
 * A switch that forwards IPv4 and reports telemetry as DTA reports (DESIGN.md section 2) to collectors:
 *   - Key-Write:     INT-style path tracing. The first hop pushes a path shim, each hop records its switch ID,
 *                    the last hop (sink) reports the path (up to 5 switch IDs) keyed by a CRC-32 flow hash.
 *   - Postcarding:   per-hop postcards (flow key, hop, switch ID), sampled.
 *   - Key-Increment: per-flow packet counts: every `ki_threshold` packets of a flow, one report of that count.
 *   - Append:        queue events: the egress port's queue depth crossing a threshold upwards.
 * Reports are mirrored copies (ingress-to-egress for the first three, egress-to-egress for Append) that the
 * egress rewrites; the original packet is forwarded. Sequence numbers per (collector, opcode) live in a
 * register; the collector, the switch ID and the thresholds come from tables (controlplane/reporter_cp.py).
 *
 * Compile: tofino-compile [-DDTA_COMPACT] [-DKW_DATA_BYTES=28] dta_reporter.p4
 */
#include <core.p4>
#include <tna.p4>

#include "../include/define.p4"
#include "../include/header.p4"
#include "../include/parser.p4"
#include "types.p4"
#include "parser.p4"
#include "../include/control/rep_forward.p4"
#include "../include/control/rep_int_path.p4"
#include "../include/control/rep_report_select.p4"
#include "../include/control/rep_queue_event.p4"
#include "../include/control/rep_report_build.p4"

control RepIngress(inout rep_headers_t hdr, inout rep_ig_md_t ig_md,
                   in ingress_intrinsic_metadata_t ig_intr_md,
                   in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                   inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                   inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    RepForward() forward;
    RepIntPath() int_path;
    RepReportSelect() report_select;

    apply {
        ig_md.report_type = REPORT_NONE;
        ig_md.collector_idx = 0;
        ig_md.mirror_session = 0;
        ig_md.pkt_type = PKT_TYPE_NORMAL;
        ig_md.hop = 0;
        forward.apply(hdr, ig_md, ig_intr_md, ig_dprsr_md, ig_tm_md);
        /* tbl_switch_config sets the switch ID used by the shim; applied inside report_select first */
        report_select.apply(hdr, ig_md, ig_dprsr_md);
        if (hdr.ipv4.isValid()) {
            int_path.apply(hdr, ig_md);
        }
        hdr.bridge.setValid();
        hdr.bridge.pkt_type = PKT_TYPE_NORMAL;
        hdr.bridge.pad = 0;
        hdr.bridge.is_sink = ig_md.is_sink;
    }
}

control RepEgress(inout rep_headers_t hdr, inout rep_eg_md_t eg_md,
                  in egress_intrinsic_metadata_t eg_intr_md,
                  in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                  inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                  inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    RepIntStrip() int_strip;
    RepQueueEvent() queue_event;
    RepReportBuild() report_build;
    Counter<bit<32>, bit<8>>(256, CounterType_t.PACKETS) reports_sent;

    apply {
        if (eg_md.is_report == 1) {
            report_build.apply(hdr, eg_md);
            if (hdr.dta_base.isValid()) {
                reports_sent.count(hdr.dta_base.opcode);
            } else {
                eg_dprsr_md.drop_ctl = 1;   /* unknown collector or report type */
            }
        } else {
            int_strip.apply(hdr, eg_md);
            queue_event.apply(hdr, eg_md, eg_intr_md, eg_dprsr_md);
        }
    }
}

Pipeline(RepIngressParser(), RepIngress(), RepIngressDeparser(),
         RepEgressParser(), RepEgress(), RepEgressDeparser()) pipe;
Switch(pipe) main;
