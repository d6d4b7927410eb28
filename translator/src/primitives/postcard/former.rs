use super::*;
use dta_protocol::roce::crc_table::postcard_cell;

#[derive(Debug, Clone, Copy)]
struct Flow {
    key: u32,
    values: [u32; MAX_HOPS as usize],
    have: u8,
    path_len: u8,
    length_known: bool,
    gen: u64,
}

#[derive(Debug)]
pub(super) struct Former {
    slots: Vec<Option<Flow>>,
    idle: Duration,
    redundancy: u8,
    gen: u64,
    expiry: VecDeque<(Instant, usize, u64)>,
}

impl Former {
    pub(super) fn new(size: usize, idle: Duration, redundancy: u8) -> Self {
        Former {
            slots: vec![None; size],
            idle,
            redundancy,
            gen: 0,
            expiry: VecDeque::new(),
        }
    }

    pub(super) fn handle(
        &mut self,
        now: Instant,
        p: &Postcard,
        region: &Region,
        out: &mut Sink<'_>,
    ) -> Result<Outcome, DropReason> {
        let Geometry::Postcarding(g) = region.geometry else {
            return Err(DropReason::NoRegion);
        };
        if self.redundancy > g.n_max() {
            return Err(DropReason::GeometryMismatch);
        }
        if p.path_len == 0 || p.path_len > g.hops() || p.hop == 0 || p.hop > p.path_len {
            return Err(DropReason::BadHop);
        }
        let len = self.slots.len();
        let i = (key_checksum(p.key) as usize) % len;
        let slot = &mut self.slots[i];
        if slot.as_ref().is_some_and(|f| f.key != p.key) {
            if let Some(old) = slot.take() {
                out.counters.postcard_evictions += 1;
                write_flow(&old, region, &g, self.redundancy, out);
            }
        }
        let flow = match slot {
            Some(f) => f,
            None => {
                self.gen += 1;
                self.expiry.push_back((now + self.idle, i, self.gen));
                slot.insert(Flow {
                    key: p.key,
                    values: [POSTCARD_BLANK; MAX_HOPS as usize],
                    have: 0,
                    path_len: p.path_len,
                    length_known: p.length_known,
                    gen: self.gen,
                })
            }
        };
        flow.values[usize::from(p.hop - 1)] = p.data;
        flow.have |= 1 << (p.hop - 1);
        if flow.have.count_ones() >= u32::from(flow.path_len) {
            let f = *flow;
            *slot = None;
            write_flow(&f, region, &g, self.redundancy, out);
        }
        Ok(Outcome::Accepted)
    }

    pub(super) fn flush(
        &mut self,
        now: Instant,
        mode: FlushMode,
        regions: &Regions,
        out: &mut Sink<'_>,
    ) {
        let Some(region) = regions.postcard.as_ref() else {
            return;
        };
        let Geometry::Postcarding(g) = region.geometry else {
            return;
        };
        while let Some(&(at, i, gen)) = self.expiry.front() {
            if mode == FlushMode::Due && at > now {
                break;
            }
            self.expiry.pop_front();
            if let Some(slot) = self.slots.get_mut(i) {
                if let Some(f) = slot.filter(|f| f.gen == gen) {
                    *slot = None;
                    out.counters.postcard_timeouts += 1;
                    write_flow(&f, region, &g, self.redundancy, out);
                }
            }
        }
    }

    pub(super) fn poll_timeout(&self) -> Option<Instant> {
        self.expiry.front().map(|e| e.0)
    }

    /// The earliest deadline of a flow still cached (the stale entries' skipped).
    pub(super) fn live_timeout(&self) -> Option<Instant> {
        self.expiry
            .iter()
            .find(|&&(_, i, gen)| self.slots[i].is_some_and(|f| f.gen == gen))
            .map(|e| e.0)
    }
}

fn write_flow(f: &Flow, region: &Region, g: &PostcardGeometry, n: u8, out: &mut Sink<'_>) {
    let hops = usize::from(g.hops());
    let mut chunk = [0u8; CHUNK_STRIDE];
    for hop in 1..=g.hops() {
        let cell = postcard_cell(f.key, hop, f.values[usize::from(hop - 1)]).unwrap();
        let at = usize::from(hop - 1) * CELL_LEN;
        chunk[at..at + CELL_LEN].copy_from_slice(&cell.to_be_bytes());
    }
    if f.have & 1 == 0 {
        out.counters.postcard_continuations += 1;
    }
    let low = |n: usize| ((1u16 << n.min(8)) - 1) as u8;
    let all = low(hops);
    let mask = if f.length_known {
        f.have | (all & !low(usize::from(f.path_len)))
    } else if f.have & 1 != 0 {
        all
    } else {
        f.have
    };
    let mut runs = Vec::new();
    if mask == all {
        runs.push((0, usize::from(MAX_HOPS)));
    } else {
        let mut i = 0;
        while i < hops {
            if mask & (1 << i) == 0 {
                i += 1;
                continue;
            }
            let start = i;
            while i < hops && mask & (1 << i) != 0 {
                i += 1;
            }
            runs.push((start, i));
        }
    }
    for copy in 0..n {
        let va = region.va + g.offset(f.key, copy);
        for &(start, end) in &runs {
            super::super::write(
                out.qp,
                Opcode::Postcard,
                va + (start * CELL_LEN) as u64,
                region.rkey,
                Payload::from_slice(&chunk[start * CELL_LEN..end * CELL_LEN]),
            );
        }
    }
}
