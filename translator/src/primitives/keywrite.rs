//! Key-Write: N WRITE ONLY frames per report, each an entry `checksum(key) LE ‖ data` at the slot of
//! copy n.

use dta_protocol::dta::{KeyWriteRepr, Opcode};
use dta_protocol::layout::{Geometry, Region};

use crate::counters::DropReason;
use crate::requester::Requester;

/// Queues the N writes of `r` into `region`. The caller has checked the queue has room for N.
pub fn handle(r: &KeyWriteRepr, region: &Region, qp: &mut Requester) -> Result<(), DropReason> {
    let Geometry::KeyWrite(g) = region.geometry else {
        return Err(DropReason::NoRegion);
    };
    if r.redundancy > g.n_max() || r.data.len() != g.data_len() {
        return Err(DropReason::GeometryMismatch);
    }
    for n in 0..r.redundancy {
        let mut entry = vec![0u8; g.entry_size() as usize];
        g.encode_entry(r.key, r.data, &mut entry)
            .ok_or(DropReason::GeometryMismatch)?;
        super::write(
            qp,
            Opcode::KeyWrite,
            region.va + g.offset(r.key, n),
            region.rkey,
            entry,
        );
    }
    Ok(())
}
