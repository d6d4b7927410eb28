//! Runs of plain Key-Write reports: [`Engine::handle_frames`] hands each run to
//! [`Engine::key_write_run`], which takes it in one loop of its own instead of a call per report, through a
//! lane specialised on the data size and header form when one collector takes every report.

use dta_protocol::dta::{HeaderForm, KeyWriteRepr, Opcode, ReportFormat, ReportRepr};
use dta_protocol::hash::key_checksum;
use dta_protocol::udp::UdpView;

use super::link::{self, Collector};
use super::state::Engine;
use super::tracking::tracked;
use crate::config::KeyRouting;
use crate::counters::DropReason;
use crate::primitives::keywrite::{Placement, SizedPlacement};

impl Engine {
    /// Key-Write reports from `first` on, taken from `rest` while they are plain ones (a common frame to
    /// the report port, a Key-Write that parses, no sequence tracking to do): each as the general path
    /// handles it (the same parse, counters and push), but in one loop whose registers are its own, with
    /// the collector's state at hand, instead of a call per report. The first frame that is not such a
    /// report is given back untouched (nothing counted) for the general path; `None` when `rest` ran out.
    #[inline(never)]
    pub(super) fn key_write_run<'f>(
        &mut self,
        first: &'f [u8],
        rest: &mut impl Iterator<Item = &'f [u8]>,
    ) -> Option<&'f [u8]> {
        // With one collector routed by key hash, every report of the run goes to that collector's
        // Key-Write region (what `route` and `Collector::key_write` give each report): the run is
        // specialised on the data size, with the region's placement read once.
        let lane = match self.cfg.routing.keys {
            KeyRouting::KeyHash if self.collectors.len() == 1 => self
                .collectors
                .first()
                .and_then(Collector::key_write_placement),
            _ => None,
        };
        let d = self.fmt.keywrite_data_len;
        let (left, taken) = if let Some(p) = lane.and_then(Placement::sized::<4>).filter(|_| d == 4)
        {
            self.key_write_lane(p, first, rest)
        } else if let Some(p) = lane.and_then(Placement::sized::<12>).filter(|_| d == 12) {
            self.key_write_lane(p, first, rest)
        } else if let Some(p) = lane.and_then(Placement::sized::<28>).filter(|_| d == 28) {
            self.key_write_lane(p, first, rest)
        } else {
            let (port, fmt, tracking) = self.run_format();
            plain_key_writes(first, rest, port, fmt, tracking, |kw, dst| {
                // `key_write_parts`' push; untracked, a drop is only counted.
                if let Err(reason) = self.key_write(kw, dst) {
                    self.counters.drop(reason);
                }
            })
        };
        // `frame`'s and `report`'s counts, added once for the run.
        self.counters.frames_in += taken;
        self.counters.reports_in[Opcode::KeyWrite.index()] += taken;
        left
    }

    /// [`key_write_run`](Self::key_write_run)'s loop when every report goes to placement `p` on the
    /// first collector's QP and the format's data size is `D`, the placement's: the same checks and work
    /// requests as `Engine::key_write` gives each, with the collector's state borrowed once for the run,
    /// and the base header's form a constant too (no form dispatch per report).
    #[inline(always)]
    fn key_write_lane<'f, const D: usize>(
        &mut self,
        p: SizedPlacement<D>,
        first: &'f [u8],
        rest: &mut impl Iterator<Item = &'f [u8]>,
    ) -> (Option<&'f [u8]>, u64) {
        match self.fmt.form {
            HeaderForm::Seq => self.key_write_lane_in::<D, true>(p, first, rest),
            HeaderForm::Compact => self.key_write_lane_in::<D, false>(p, first, rest),
        }
    }

    /// [`key_write_lane`](Self::key_write_lane) for the seq form (`SEQ`) or the compact one.
    #[inline(always)]
    fn key_write_lane_in<'f, const D: usize, const SEQ: bool>(
        &mut self,
        p: SizedPlacement<D>,
        first: &'f [u8],
        rest: &mut impl Iterator<Item = &'f [u8]>,
    ) -> (Option<&'f [u8]>, u64) {
        let (port, mut fmt, tracking) = self.run_format();
        fmt.form = if SEQ {
            HeaderForm::Seq
        } else {
            HeaderForm::Compact
        };
        let Engine {
            collectors,
            counters,
            ..
        } = self;
        let Some(c) = collectors.first_mut() else {
            return (Some(first), 0);
        };
        let qp = &mut c.qp;
        // The run only pushes, so the queue's limit holds for all of it.
        let limit = qp.queue_limit();
        plain_key_writes(first, rest, port, fmt, tracking, |kw, _| {
            let checksum = key_checksum(kw.key);
            // The parse checked the data's length against the format's, D (so the error is never met).
            let written = match <&[u8; D]>::try_from(kw.data) {
                Ok(data) => link::write_placed_sized(&p, qp, limit, kw, data, checksum),
                Err(_) => Err(DropReason::GeometryMismatch),
            };
            if let Err(reason) = written {
                counters.drop(reason);
            }
        })
    }

    /// What a run of plain Key-Write reports is parsed and checked against: the report port, the format,
    /// and whether sequence tracking is on.
    fn run_format(&self) -> (u16, ReportFormat, bool) {
        (
            self.cfg.report.udp_port,
            self.fmt,
            self.cfg.sequence.enabled,
        )
    }
}

/// Plain Key-Write reports from `first` on, taken from `rest` while they are such (a common frame to the
/// report port `port`, a Key-Write that parses under `fmt`, nothing to track with tracking `tracking`),
/// each handed to `push` with its frame's destination address: the first other frame (untouched, for the
/// general path; `None` when `rest` ran out) and how many were taken. [`Engine::key_write_run`]'s loop.
#[inline(always)]
fn plain_key_writes<'f>(
    first: &'f [u8],
    rest: &mut impl Iterator<Item = &'f [u8]>,
    port: u16,
    fmt: ReportFormat,
    tracking: bool,
    mut push: impl FnMut(&KeyWriteRepr<'f>, [u8; 4]),
) -> (Option<&'f [u8]>, u64) {
    let mut f = first;
    let mut taken = 0u64;
    let left = loop {
        let Ok(Some(udp)) = UdpView::parse_common(f) else {
            break Some(f);
        };
        if udp.dst_port != port {
            break Some(f);
        }
        let Some((base, kw)) =
            ReportRepr::parse_key_write_as(udp.payload, fmt.form, fmt.keywrite_data_len)
        else {
            break Some(f);
        };
        if tracked(&base, tracking) {
            break Some(f);
        }
        taken += 1;
        push(&kw, udp.dst_ip);
        match rest.next() {
            Some(next) => f = next,
            None => break None,
        }
    };
    (left, taken)
}
