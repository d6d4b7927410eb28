//! A translator's line checked and answered: version, token and QPs of a hello, its QPs opened (once no
//! other live connection holds them) and its welcome, without the regions other translators hold.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use dta_protocol::control::{Hello, TranslatorMessage, Welcome, CONTROL_VERSION, REFUSED_IN_USE};
use dta_protocol::layout::Geometry;

use super::shared::Shared;
use super::{Holder, LeaseId, QpTable, SingleWriter};

/// How long a hello whose QPs another connection holds waits for that connection to end before it is
/// refused: a translator that restarts at once says hello on its new connection while its old one's close
/// may still be on its way to the connection's thread.
const IN_USE_WAIT: Duration = Duration::from_millis(500);
const IN_USE_POLL: Duration = Duration::from_millis(20);

/// Checks a line of a translator: a hello gets its QPs (held by `lease`) and the welcome, a keep-alive on a
/// welcomed connection nothing; anything else is refused with the reason.
pub(super) fn answer(
    line: &str,
    server: &Shared,
    lease: LeaseId,
    welcomed: bool,
) -> std::result::Result<Option<Welcome>, String> {
    let ad = &server.ad;
    // The version is checked before the rest of the schema, so that a peer of another version learns that,
    // not that its fields look malformed to us.
    let value: serde_json::Value =
        serde_json::from_str(line).map_err(|e| format!("malformed JSON: {e}"))?;
    match value.get("version").and_then(|v| v.as_u64()) {
        Some(v) if v == u64::from(CONTROL_VERSION) => {}
        Some(v) => {
            return Err(format!(
                "control protocol version {v} is not supported; this collector speaks version {CONTROL_VERSION}"
            ))
        }
        None => return Err("hello has no numeric \"version\" field".into()),
    }
    let hello = match serde_json::from_value(value).map_err(|e| format!("malformed hello: {e}"))? {
        TranslatorMessage::Hello(h) => h,
        TranslatorMessage::KeepAlive(_) if welcomed => return Ok(None),
        // Before a welcome nothing is held, and the token has not been checked.
        TranslatorMessage::KeepAlive(_) => return Err("keep-alive before a hello".into()),
    };
    if !token_eq(hello.token.as_bytes(), ad.token.as_bytes()) {
        return Err(
            "wrong token: the translator's control token does not match the collector's".into(),
        );
    }
    if let Some(q) = hello
        .qps
        .iter()
        .find(|q| q.qpn > 0xFF_FFFF || q.start_psn > 0xFF_FFFF)
    {
        return Err(format!(
            "QPN {:#x} or start PSN {:#x} does not fit in 24 bits",
            q.qpn, q.start_psn
        ));
    }
    // Regions one translator writes at a time (their state lives in it): Append lists and sketches.
    let single: Vec<SingleWriter> = ad
        .regions
        .iter()
        .filter_map(|r| match r.geometry {
            Geometry::Append(_) => Some(SingleWriter::Append(r.id)),
            Geometry::Sketch(_) => Some(SingleWriter::Sketch(r.id)),
            // Every kind named, so that a new one must say whether its state lives in a translator.
            Geometry::KeyWrite(_) | Geometry::KeyIncrement(_) | Geometry::Postcarding(_) => None,
        })
        .collect();
    let (qps, withheld) = {
        let mut table = free_table(server, &hello, lease)?;
        let qps = table.open(
            server.opener.as_ref(),
            &hello,
            lease,
            &server.limits.qps,
            &server.qp_stats,
        )?;
        (qps, table.take_regions(&hello, &single))
    };
    let mut regions = ad.regions.clone();
    let mut append_heads = ad
        .memory
        .as_ref()
        .map(|m| m.append_heads())
        .unwrap_or_default();
    if !withheld.is_empty() {
        withhold(server, &hello, &withheld, &mut regions, &mut append_heads);
    }
    Ok(Some(Welcome {
        version: CONTROL_VERSION,
        mac: ad.mac,
        ip: ad.ip,
        qps,
        max_dest_rd_atomic: ad.max_dest_rd_atomic,
        path_mtu: ad.path_mtu,
        regions,
        // Read at each hello: the memory outlives the translators that write it.
        append_heads,
    }))
}

/// The QP table once no other live connection holds `hello`'s translator QPs, waiting up to
/// [`IN_USE_WAIT`] for the holder's connection to end; otherwise the refusal (logged and counted). The
/// collector cannot tell a second translator configured like the first from a restart whose old
/// connection has not ended yet, but only the first keeps its connection alive: it is refused until that
/// connection ends (a restart after a crash of the translator's host waits out the idle deadline).
fn free_table<'a>(
    server: &'a Shared,
    hello: &Hello,
    lease: LeaseId,
) -> std::result::Result<std::sync::MutexGuard<'a, QpTable>, String> {
    let end = Instant::now() + IN_USE_WAIT;
    loop {
        let table = server.table();
        let Some(held) = table.in_use(hello, lease) else {
            return Ok(table);
        };
        drop(table);
        if Instant::now() < end {
            std::thread::sleep(IN_USE_POLL);
            continue;
        }
        server
            .qp_stats
            .refused_in_use
            .fetch_add(1, Ordering::Relaxed);
        let holder = held
            .peer
            .map_or_else(|| "another connection".to_string(), |p| format!("{p}"));
        return Err(format!(
            "translator QP {:#x} of {} {REFUSED_IN_USE} from {holder}: a second \
             translator with the same address and QPNs? Give each translator its own address; a restarted \
             translator is let in once its old connection ends (closed, or silent for {:?})",
            held.qpn,
            std::net::Ipv4Addr::from(hello.ip),
            server.limits.idle_deadline
        ));
    }
}

/// Leaves the regions other translators hold out of `hello`'s welcome, saying so in the log and the
/// counters: that translator then drops its reports for them as no_region, counted, instead of writing
/// over the holder's.
fn withhold(
    server: &Shared,
    hello: &Hello,
    withheld: &[(SingleWriter, Holder)],
    regions: &mut Vec<dta_protocol::layout::Region>,
    append_heads: &mut Vec<dta_protocol::control::AppendHead>,
) {
    let me = std::net::Ipv4Addr::from(hello.ip);
    for &(r, (ip, _)) in withheld {
        let holder = std::net::Ipv4Addr::from(ip);
        let (counter, what) = match r {
            SingleWriter::Append(id) => (
                &server.qp_stats.append_lists_withheld,
                format!("Append list {id} is written by the translator at {holder} (an Append list has one writer)"),
            ),
            SingleWriter::Sketch(id) => (
                &server.qp_stats.sketches_withheld,
                format!("sketch {id} is merged by the translator at {holder} (a sketch has one merging translator)"),
            ),
        };
        counter.fetch_add(1, Ordering::Relaxed);
        log::warn!(
            "{what}; left out of the welcome of the translator at {me} (its reports for it are dropped \
             there as no_region until the holder's QPs are reclaimed)"
        );
    }
    let out = |g: &Geometry, id: u32| {
        withheld.iter().any(|&(r, _)| match (r, g) {
            (SingleWriter::Append(w), Geometry::Append(_))
            | (SingleWriter::Sketch(w), Geometry::Sketch(_)) => w == id,
            _ => false,
        })
    };
    regions.retain(|r| !out(&r.geometry, r.id));
    append_heads.retain(|h| {
        !withheld
            .iter()
            .any(|&(r, _)| r == SingleWriter::Append(h.list))
    });
}

/// Compares tokens in time independent of where they differ.
fn token_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
