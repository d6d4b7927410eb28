/* dta translator: everything that is not for us is forwarded untouched (bump in the wire: port to port). */
control TrForward(in ingress_intrinsic_metadata_t ig_intr_md,
                  inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                  inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    action to_port(PortId_t port) {
        ig_tm_md.ucast_egress_port = port;
    }
    action drop() {
        ig_dprsr_md.drop_ctl = 1;
    }
    table tbl_forward {
        key = { ig_intr_md.ingress_port: exact; }
        actions = { to_port; drop; }
        default_action = drop();
        size = 512;
    }
    apply {
        tbl_forward.apply();
    }
}
