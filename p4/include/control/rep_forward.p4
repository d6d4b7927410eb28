/* dta reporter: IPv4 forwarding; also tells whether this switch is the flow's first (source) or last (sink) hop. */
control RepForward(inout rep_headers_t hdr, inout rep_ig_md_t ig_md,
                   in ingress_intrinsic_metadata_t ig_intr_md,
                   inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                   inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    action forward(PortId_t port, bit<1> is_sink) {
        ig_tm_md.ucast_egress_port = port;
        ig_md.is_sink = is_sink;
    }
    action drop() {
        ig_dprsr_md.drop_ctl = 1;
    }
    table tbl_forward {
        key = { hdr.ipv4.dst_addr: lpm; }
        actions = { forward; drop; }
        default_action = drop();
        size = 1024;
    }

    /* ports that face hosts: packets entering there start their path here */
    /* the sampling random number is drawn here, in its own table: a table has 32 bits of immediate
     * (hash/RNG) data, which the flow hash already fills */
    Random<bit<16>>() rnd;
    action set_port_role(bit<1> is_source) {
        ig_md.is_source = is_source;
    }
    action draw_random() {
        ig_md.rand_val = rnd.get();
    }
    table tbl_port_role {
        key = { ig_intr_md.ingress_port: exact; }
        actions = { set_port_role; }
        default_action = set_port_role(0);
        size = 512;
    }

    apply {
        ig_md.is_sink = 0;
        if (hdr.ipv4.isValid()) {
            tbl_forward.apply();
        } else {
            drop();
        }
        tbl_port_role.apply();
        draw_random();
    }
}
