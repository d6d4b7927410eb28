//! Windows of the INT event lists: 16-byte entries of an Append list, decoded and filtered.

use dta_protocol::int::mapping::{DropEvent, QueueEvent, EVENT_LEN};
use dta_protocol::layout::AppendGeometry;
use serde::{Deserialize, Serialize};

use super::from_hex;
use crate::error::{Error, Result};
use crate::query::append_read;

/// The events of interest found in a window of an event list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventWindow<E> {
    /// The list's id.
    pub list: u32,
    /// The list's head word when read.
    pub head: u64,
    /// Absolute index of the first entry scanned.
    pub first: u64,
    /// Entries scanned (`first..first + scanned`), kept or not.
    pub scanned: u64,
    /// Entries before `first` that the asked-for tail wanted but the ring had overwritten.
    pub overrun: u64,
    /// Where a next read continues.
    pub next_tail: u64,
    /// The events kept, oldest first.
    pub events: Vec<E>,
}

/// The contract's `DropEvent`, as answers carry it (serde on the type itself). Defined here, with the
/// windows that carry it, so that the event lists' readers (`drops`, `queues`) depend on this module and
/// not the other way round.
pub type DropEventView = DropEvent;
/// The contract's `QueueEvent`, as answers carry it.
pub type QueueEventView = QueueEvent;

/// The drop events of one node in a window of the drop list.
pub type DropEvents = EventWindow<DropEventView>;
/// The queue events of one node in a window of the queue list.
pub type QueueEvents = EventWindow<QueueEventView>;

/// Where an event list read starts and how far it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// First entry to scan; none: the newest `max` entries.
    pub tail: Option<u64>,
    /// Most entries to scan.
    pub max: usize,
}

/// Scans a window of the event list `mem` (id `list`), decoding each 16-byte entry with `decode` and
/// keeping those `keep` accepts. The ring's overruns are handled as by the Append query.
pub(super) fn scan<E>(
    mem: &[u8],
    g: &AppendGeometry,
    list: u32,
    window: Window,
    decode: impl Fn(&[u8]) -> Option<E>,
    keep: impl Fn(&E) -> bool,
) -> Result<EventWindow<E>> {
    if g.entry_size() as usize != EVENT_LEN {
        return Err(Error::BadQuery(format!(
            "list {list} has {}-byte entries, not {EVENT_LEN}-byte INT events",
            g.entry_size()
        )));
    }
    let tail = match window.tail {
        Some(t) => t,
        None => AppendGeometry::decode_head(mem)
            .ok_or_else(|| Error::BadQuery(format!("list {list} is shorter than its header")))?
            .saturating_sub(window.max as u64),
    };
    let read = append_read(mem, g, tail, window.max)?;
    let mut events = Vec::new();
    for hex in &read.entries {
        let e = decode(&from_hex(hex)?)
            .ok_or_else(|| Error::BadQuery(format!("list {list} entry {hex} is too short")))?;
        if keep(&e) {
            events.push(e);
        }
    }
    Ok(EventWindow {
        list,
        head: read.head,
        first: read.first,
        scanned: read.entries.len() as u64,
        overrun: read.overrun,
        next_tail: read.next_tail,
        events,
    })
}

/// Orders the windows of several lists by list id, refusing a list answered twice (two collectors
/// configured with the same `[int] {what}` list: one of them does not hold it).
pub(super) fn one_answer_per_list<E>(windows: &mut [EventWindow<E>], what: &str) -> Result<()> {
    windows.sort_by_key(|w| w.list);
    match windows.windows(2).find(|w| w[0].list == w[1].list) {
        Some(w) => Err(Error::BadQuery(format!(
            "two collectors answer with list {}: configure it in [int] {what} on the one that \
             holds it only",
            w[0].list
        ))),
        None => Ok(()),
    }
}
