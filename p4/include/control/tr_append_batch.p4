/* dta translator (ingress): Append batching. The list (index and last head) comes from tbl_region. Per list: a count of buffered entries, APPEND_BATCH-1 entry registers,
 * a head (byte offset of the next batch in the entries, wrapping to 0 when the next batch would pass the list's end, so no
 * slot is written twice per lap) and a batch counter. A report that completes a batch carries the whole batch
 * to the egress (one RDMA WRITE at region + 64 + head*4); others are buffered and consumed here. Every
 * 2^APPEND_HDR_EVERY_LOG2-th batch also goes to the multicast group with RIDs 0 and 1, and the egress turns
 * copy 1 into the list header write (total_entries_written, same frame length). */
control TrAppendBatch(inout tr_headers_t hdr, inout tr_ig_md_t ig_md,
                      inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    Register<bit<32>, bit<16>>(MAX_LISTS, 0) reg_count;
    RegisterAction<bit<32>, bit<16>, bit<32>>(reg_count) count_entry = {
        void apply(inout bit<32> count, out bit<32> old) {
            old = count;
            if (count >= APPEND_BATCH - 1) {
                count = 0;
            } else {
                count = count + 1;
            }
        }
    };

    Register<bit<32>, bit<16>>(MAX_LISTS, 0) reg_head;
    RegisterAction<bit<32>, bit<16>, bit<32>>(reg_head) next_head = {
        void apply(inout bit<32> head, out bit<32> old) {
            old = head;
            if (head >= ig_md.last_head) {
                head = 0;
            } else {
                head = head + APPEND_BATCH * APPEND_ENTRY_BYTES;
            }
        }
    };

    Register<bit<32>, bit<16>>(MAX_LISTS, 0) reg_batches;
    RegisterAction<bit<32>, bit<16>, bit<32>>(reg_batches) count_batch = {
        void apply(inout bit<32> n, out bit<32> result) {
            n = n + 1;
            result = n;
        }
    };

#if APPEND_BATCH > 1
    Register<bit<32>, bit<16>>(MAX_LISTS, 0) reg_e0;
    RegisterAction<bit<32>, bit<16>, bit<32>>(reg_e0) store_e0 = {
        void apply(inout bit<32> v) { v = ig_md.append_data; }
    };
    RegisterAction<bit<32>, bit<16>, bit<32>>(reg_e0) load_e0 = {
        void apply(inout bit<32> v, out bit<32> result) { result = v; }
    };
#endif
#if APPEND_BATCH > 2
    Register<bit<32>, bit<16>>(MAX_LISTS, 0) reg_e1;
    RegisterAction<bit<32>, bit<16>, bit<32>>(reg_e1) store_e1 = {
        void apply(inout bit<32> v) { v = ig_md.append_data; }
    };
    RegisterAction<bit<32>, bit<16>, bit<32>>(reg_e1) load_e1 = {
        void apply(inout bit<32> v, out bit<32> result) { result = v; }
    };
#endif
#if APPEND_BATCH > 3
    Register<bit<32>, bit<16>>(MAX_LISTS, 0) reg_e2;
    RegisterAction<bit<32>, bit<16>, bit<32>>(reg_e2) store_e2 = {
        void apply(inout bit<32> v) { v = ig_md.append_data; }
    };
    RegisterAction<bit<32>, bit<16>, bit<32>>(reg_e2) load_e2 = {
        void apply(inout bit<32> v, out bit<32> result) { result = v; }
    };
#endif
#if APPEND_BATCH > 4
    Register<bit<32>, bit<16>>(MAX_LISTS, 0) reg_e3;
    RegisterAction<bit<32>, bit<16>, bit<32>>(reg_e3) store_e3 = {
        void apply(inout bit<32> v) { v = ig_md.append_data; }
    };
    RegisterAction<bit<32>, bit<16>, bit<32>>(reg_e3) load_e3 = {
        void apply(inout bit<32> v, out bit<32> result) { result = v; }
    };
#endif
#if APPEND_BATCH > 5
    Register<bit<32>, bit<16>>(MAX_LISTS, 0) reg_e4;
    RegisterAction<bit<32>, bit<16>, bit<32>>(reg_e4) store_e4 = {
        void apply(inout bit<32> v) { v = ig_md.append_data; }
    };
    RegisterAction<bit<32>, bit<16>, bit<32>>(reg_e4) load_e4 = {
        void apply(inout bit<32> v, out bit<32> result) { result = v; }
    };
#endif
#if APPEND_BATCH > 6
    Register<bit<32>, bit<16>>(MAX_LISTS, 0) reg_e5;
    RegisterAction<bit<32>, bit<16>, bit<32>>(reg_e5) store_e5 = {
        void apply(inout bit<32> v) { v = ig_md.append_data; }
    };
    RegisterAction<bit<32>, bit<16>, bit<32>>(reg_e5) load_e5 = {
        void apply(inout bit<32> v, out bit<32> result) { result = v; }
    };
#endif
#if APPEND_BATCH > 7
    Register<bit<32>, bit<16>>(MAX_LISTS, 0) reg_e6;
    RegisterAction<bit<32>, bit<16>, bit<32>>(reg_e6) store_e6 = {
        void apply(inout bit<32> v) { v = ig_md.append_data; }
    };
    RegisterAction<bit<32>, bit<16>, bit<32>>(reg_e6) load_e6 = {
        void apply(inout bit<32> v, out bit<32> result) { result = v; }
    };
#endif
#if APPEND_BATCH > 8
    Register<bit<32>, bit<16>>(MAX_LISTS, 0) reg_e7;
    RegisterAction<bit<32>, bit<16>, bit<32>>(reg_e7) store_e7 = {
        void apply(inout bit<32> v) { v = ig_md.append_data; }
    };
    RegisterAction<bit<32>, bit<16>, bit<32>>(reg_e7) load_e7 = {
        void apply(inout bit<32> v, out bit<32> result) { result = v; }
    };
#endif
#if APPEND_BATCH > 9
    Register<bit<32>, bit<16>>(MAX_LISTS, 0) reg_e8;
    RegisterAction<bit<32>, bit<16>, bit<32>>(reg_e8) store_e8 = {
        void apply(inout bit<32> v) { v = ig_md.append_data; }
    };
    RegisterAction<bit<32>, bit<16>, bit<32>>(reg_e8) load_e8 = {
        void apply(inout bit<32> v, out bit<32> result) { result = v; }
    };
#endif
#if APPEND_BATCH > 10
    Register<bit<32>, bit<16>>(MAX_LISTS, 0) reg_e9;
    RegisterAction<bit<32>, bit<16>, bit<32>>(reg_e9) store_e9 = {
        void apply(inout bit<32> v) { v = ig_md.append_data; }
    };
    RegisterAction<bit<32>, bit<16>, bit<32>>(reg_e9) load_e9 = {
        void apply(inout bit<32> v, out bit<32> result) { result = v; }
    };
#endif
#if APPEND_BATCH > 11
    Register<bit<32>, bit<16>>(MAX_LISTS, 0) reg_e10;
    RegisterAction<bit<32>, bit<16>, bit<32>>(reg_e10) store_e10 = {
        void apply(inout bit<32> v) { v = ig_md.append_data; }
    };
    RegisterAction<bit<32>, bit<16>, bit<32>>(reg_e10) load_e10 = {
        void apply(inout bit<32> v, out bit<32> result) { result = v; }
    };
#endif
#if APPEND_BATCH > 12
    Register<bit<32>, bit<16>>(MAX_LISTS, 0) reg_e11;
    RegisterAction<bit<32>, bit<16>, bit<32>>(reg_e11) store_e11 = {
        void apply(inout bit<32> v) { v = ig_md.append_data; }
    };
    RegisterAction<bit<32>, bit<16>, bit<32>>(reg_e11) load_e11 = {
        void apply(inout bit<32> v, out bit<32> result) { result = v; }
    };
#endif
#if APPEND_BATCH > 13
    Register<bit<32>, bit<16>>(MAX_LISTS, 0) reg_e12;
    RegisterAction<bit<32>, bit<16>, bit<32>>(reg_e12) store_e12 = {
        void apply(inout bit<32> v) { v = ig_md.append_data; }
    };
    RegisterAction<bit<32>, bit<16>, bit<32>>(reg_e12) load_e12 = {
        void apply(inout bit<32> v, out bit<32> result) { result = v; }
    };
#endif
#if APPEND_BATCH > 14
    Register<bit<32>, bit<16>>(MAX_LISTS, 0) reg_e13;
    RegisterAction<bit<32>, bit<16>, bit<32>>(reg_e13) store_e13 = {
        void apply(inout bit<32> v) { v = ig_md.append_data; }
    };
    RegisterAction<bit<32>, bit<16>, bit<32>>(reg_e13) load_e13 = {
        void apply(inout bit<32> v, out bit<32> result) { result = v; }
    };
#endif
#if APPEND_BATCH > 15
    Register<bit<32>, bit<16>>(MAX_LISTS, 0) reg_e14;
    RegisterAction<bit<32>, bit<16>, bit<32>>(reg_e14) store_e14 = {
        void apply(inout bit<32> v) { v = ig_md.append_data; }
    };
    RegisterAction<bit<32>, bit<16>, bit<32>>(reg_e14) load_e14 = {
        void apply(inout bit<32> v, out bit<32> result) { result = v; }
    };
#endif

    apply {
        hdr.dta_base.setInvalid();
        {
            ig_md.append_count = count_entry.execute(ig_md.list_idx);
            ig_md.handled = 1;
            if (ig_md.append_count == APPEND_BATCH - 1) {
                /* the batch is complete: read the buffered entries, this report's entry is the last */
                hdr.append_batch.setValid();
#if APPEND_BATCH > 1
                hdr.append_batch.e0 = load_e0.execute(ig_md.list_idx);
#endif
#if APPEND_BATCH > 2
                hdr.append_batch.e1 = load_e1.execute(ig_md.list_idx);
#endif
#if APPEND_BATCH > 3
                hdr.append_batch.e2 = load_e2.execute(ig_md.list_idx);
#endif
#if APPEND_BATCH > 4
                hdr.append_batch.e3 = load_e3.execute(ig_md.list_idx);
#endif
#if APPEND_BATCH > 5
                hdr.append_batch.e4 = load_e4.execute(ig_md.list_idx);
#endif
#if APPEND_BATCH > 6
                hdr.append_batch.e5 = load_e5.execute(ig_md.list_idx);
#endif
#if APPEND_BATCH > 7
                hdr.append_batch.e6 = load_e6.execute(ig_md.list_idx);
#endif
#if APPEND_BATCH > 8
                hdr.append_batch.e7 = load_e7.execute(ig_md.list_idx);
#endif
#if APPEND_BATCH > 9
                hdr.append_batch.e8 = load_e8.execute(ig_md.list_idx);
#endif
#if APPEND_BATCH > 10
                hdr.append_batch.e9 = load_e9.execute(ig_md.list_idx);
#endif
#if APPEND_BATCH > 11
                hdr.append_batch.e10 = load_e10.execute(ig_md.list_idx);
#endif
#if APPEND_BATCH > 12
                hdr.append_batch.e11 = load_e11.execute(ig_md.list_idx);
#endif
#if APPEND_BATCH > 13
                hdr.append_batch.e12 = load_e12.execute(ig_md.list_idx);
#endif
#if APPEND_BATCH > 14
                hdr.append_batch.e13 = load_e13.execute(ig_md.list_idx);
#endif
#if APPEND_BATCH > 15
                hdr.append_batch.e14 = load_e14.execute(ig_md.list_idx);
#endif
#if APPEND_BATCH == 1
                hdr.append_batch.e0 = ig_md.append_data;
#elif APPEND_BATCH == 2
                hdr.append_batch.e1 = ig_md.append_data;
#elif APPEND_BATCH == 4
                hdr.append_batch.e3 = ig_md.append_data;
#elif APPEND_BATCH == 8
                hdr.append_batch.e7 = ig_md.append_data;
#else
                hdr.append_batch.e15 = ig_md.append_data;
#endif
                hdr.bridge.kind = KIND_APPEND;
                hdr.bridge.offset = next_head.execute(ig_md.list_idx);
                ig_md.batches = count_batch.execute(ig_md.list_idx);
                hdr.bridge.total = ig_md.batches << APPEND_BATCH_LOG2;
#if APPEND_BATCH_LOG2 > 0
                hdr.bridge.total_hi = (bit<8>)(ig_md.batches >> (32 - APPEND_BATCH_LOG2));
#endif
                if (ig_md.batches[APPEND_HDR_EVERY_LOG2 - 1:0] == 0) {
                    ig_tm_md.mcast_grp_a = ig_md.mcast_append_hdr;
                } else {
                    ig_tm_md.ucast_egress_port = ig_md.collector_port;
                }
                hdr.dta_append.setInvalid();
                hdr.dta_append_data.setInvalid();
            } else {
#if APPEND_BATCH > 1
                if (ig_md.append_count == 0) { store_e0.execute(ig_md.list_idx); }
#endif
#if APPEND_BATCH > 2
                if (ig_md.append_count == 1) { store_e1.execute(ig_md.list_idx); }
#endif
#if APPEND_BATCH > 3
                if (ig_md.append_count == 2) { store_e2.execute(ig_md.list_idx); }
#endif
#if APPEND_BATCH > 4
                if (ig_md.append_count == 3) { store_e3.execute(ig_md.list_idx); }
#endif
#if APPEND_BATCH > 5
                if (ig_md.append_count == 4) { store_e4.execute(ig_md.list_idx); }
#endif
#if APPEND_BATCH > 6
                if (ig_md.append_count == 5) { store_e5.execute(ig_md.list_idx); }
#endif
#if APPEND_BATCH > 7
                if (ig_md.append_count == 6) { store_e6.execute(ig_md.list_idx); }
#endif
#if APPEND_BATCH > 8
                if (ig_md.append_count == 7) { store_e7.execute(ig_md.list_idx); }
#endif
#if APPEND_BATCH > 9
                if (ig_md.append_count == 8) { store_e8.execute(ig_md.list_idx); }
#endif
#if APPEND_BATCH > 10
                if (ig_md.append_count == 9) { store_e9.execute(ig_md.list_idx); }
#endif
#if APPEND_BATCH > 11
                if (ig_md.append_count == 10) { store_e10.execute(ig_md.list_idx); }
#endif
#if APPEND_BATCH > 12
                if (ig_md.append_count == 11) { store_e11.execute(ig_md.list_idx); }
#endif
#if APPEND_BATCH > 13
                if (ig_md.append_count == 12) { store_e12.execute(ig_md.list_idx); }
#endif
#if APPEND_BATCH > 14
                if (ig_md.append_count == 13) { store_e13.execute(ig_md.list_idx); }
#endif
#if APPEND_BATCH > 15
                if (ig_md.append_count == 14) { store_e14.execute(ig_md.list_idx); }
#endif
                ig_md.count_reason = CNT_APPEND_BUFFERED;
                ig_md.drop = 1;
            }
        }
    }
}
