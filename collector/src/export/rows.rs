//! Append entries as rows: decoded by the list's schema where the collector knows it (the INT drop and
//! queue event layouts of `dta_protocol::int::mapping`), hex bytes otherwise; and a gap row for what the
//! ring overwrote before it was read.

use dta_protocol::int::mapping::{DropEvent, QueueEvent};

use super::table::{Batch, Table, Value};
use super::tail::TailRead;
use crate::error::Result;
use crate::query::to_hex;

/// What a list's entries are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListSchema {
    /// `[int] drop_list`: [`DropEvent`]s.
    Drops,
    /// `[int] queue_list`: [`QueueEvent`]s.
    Queues,
    /// Anything else: bytes.
    Raw,
}

impl ListSchema {
    /// The table its entries go to.
    pub fn table(self) -> Table {
        match self {
            ListSchema::Drops => Table::DropEvents,
            ListSchema::Queues => Table::QueueEvents,
            ListSchema::Raw => Table::AppendEntries,
        }
    }
}

/// The rows of one read of list `list`: the entries' batch, and a gap row when the ring overran.
pub fn rows(
    list: u32,
    schema: ListSchema,
    entry_size: usize,
    read: &TailRead,
    now_ms: u64,
) -> Result<Vec<Batch>> {
    let mut out = Vec::with_capacity(2);
    if read.overrun > 0 {
        let mut gap = Batch::new(Table::AppendGaps, Some(list), now_ms, 1);
        gap.push(vec![
            Value::U64(now_ms),
            Value::U32(list),
            Value::U64(read.first - read.overrun),
            Value::U64(read.overrun),
        ])?;
        out.push(gap);
    }
    let n = read.count(entry_size) as usize;
    if n == 0 {
        return Ok(out);
    }
    let mut b = Batch::new(schema.table(), Some(list), now_ms, n);
    for (i, e) in (read.first..).zip(read.bytes.chunks_exact(entry_size)) {
        let head = [Value::U64(now_ms), Value::U32(list), Value::U64(i)];
        // The config refuses INT lists whose entries are not 16 bytes, so these decodes find their
        // bytes; an entry that still does not decode is kept raw in its list's table rather than lost.
        let row: Vec<Value> = match schema {
            ListSchema::Drops => match DropEvent::decode(e) {
                Some(d) => head
                    .into_iter()
                    .chain([
                        Value::U32(d.flow),
                        Value::U32(d.node),
                        Value::U16(d.port),
                        Value::U8(d.reason),
                        Value::U8(d.queue_id),
                        Value::U32(d.timestamp),
                    ])
                    .collect(),
                None => return rows(list, ListSchema::Raw, entry_size, read, now_ms),
            },
            ListSchema::Queues => match QueueEvent::decode(e) {
                Some(q) => head
                    .into_iter()
                    .chain([
                        Value::U32(q.node),
                        Value::U16(q.port),
                        Value::U8(q.queue_id),
                        Value::U32(q.occupancy),
                        Value::U32(q.timestamp),
                    ])
                    .collect(),
                None => return rows(list, ListSchema::Raw, entry_size, read, now_ms),
            },
            ListSchema::Raw => head.into_iter().chain([Value::Str(to_hex(e))]).collect(),
        };
        b.push(row)?;
    }
    out.push(b);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::table::Column;

    #[test]
    fn drop_events_decode_with_their_index_and_a_gap_row() {
        let d = DropEvent {
            flow: 0x3db5_e2e5,
            node: 7,
            port: 130,
            reason: 71,
            queue_id: 2,
            timestamp: 1000,
        };
        let read = TailRead {
            first: 40,
            bytes: [d.encode(), d.encode()].concat(),
            overrun: 3,
            head: 42,
        };
        let out = rows(10, ListSchema::Drops, 16, &read, 5).unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].table, Table::AppendGaps);
        assert_eq!(out[0].columns[2], Column::U64(vec![37]));
        assert_eq!(out[0].columns[3], Column::U64(vec![3]));
        assert_eq!(out[1].table, Table::DropEvents);
        assert_eq!(out[1].columns[2], Column::U64(vec![40, 41]));
        assert_eq!(out[1].columns[4], Column::U32(vec![7, 7]));
        assert_eq!(out[1].columns[6], Column::U8(vec![71, 71]));
    }

    #[test]
    fn other_lists_are_hex() {
        let read = TailRead {
            first: 0,
            bytes: vec![1, 2, 3, 4],
            overrun: 0,
            head: 1,
        };
        let out = rows(3, ListSchema::Raw, 4, &read, 5).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].columns[3], Column::Str(vec!["01020304".into()]));
    }
}
