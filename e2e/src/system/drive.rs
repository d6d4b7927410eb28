//! Driving a run: reports sent through the reporters, the translator waited for, the collector's state
//! checked.

use std::time::Duration;

use anyhow::{Context, Result};

use super::settle::send_and_settle;
use super::{Outcome, System};
use crate::workload::Workload;

impl System {
    /// Reports the translator has taken in so far.
    pub fn reports_taken(&self) -> Result<u64> {
        self.metrics.value("dta_translator_reports_total", "")
    }

    /// Sends reports without waiting for the translator to settle.
    pub fn send(&mut self, reports: &[Vec<u8>], timeout: Duration) -> Result<()> {
        let base = self.reports_taken()?;
        self.sender
            .send_all(reports, &self.metrics, base, 4096, timeout)
    }

    /// Sends `reports` (cycled) open-loop at `rate` per second for `duration`: (sent, refused by the
    /// reporter's kernel).
    pub fn send_at_rate(
        &mut self,
        reports: &[Vec<u8>],
        rate: u64,
        duration: Duration,
    ) -> Result<(u64, u64)> {
        self.sender.send_at_rate(reports, rate, duration)
    }

    /// Sends a workload, waits for the translator to settle, checks every answer.
    pub fn run(&mut self, w: &Workload) -> Result<Outcome> {
        let o = send_and_settle(&mut self.sender, &self.metrics, w)?;
        self.finish(w, o)
    }

    /// [`run`](Self::run) for INT reports (the run must have been started with `int`).
    pub fn run_int(&mut self, w: &Workload) -> Result<Outcome> {
        let s = self.int_sender.as_mut().context("started without int")?;
        let o = send_and_settle(s, &self.metrics, w)?;
        self.finish(w, o)
    }

    /// Sends INT reports and waits for the translator to settle, without the check (`checked` 0): for
    /// a caller that waits for something more before [`verify`](Self::verify).
    pub fn send_int(&mut self, w: &Workload) -> Result<Outcome> {
        let s = self.int_sender.as_mut().context("started without int")?;
        send_and_settle(s, &self.metrics, w)
    }

    /// [`run`](Self::run) through the second reporter and translator.
    pub fn run_second(&mut self, w: &Workload) -> Result<Outcome> {
        let s = self.second.as_mut().context("no second translator")?;
        let o = send_and_settle(&mut s.sender, &s.metrics, w)?;
        self.finish(w, o)
    }

    /// Sends a workload through the second reporter and translator and waits for it to settle, without
    /// the check (`checked` 0): for reports the second translator is expected to refuse.
    pub fn send_second(&mut self, w: &Workload) -> Result<Outcome> {
        let s = self.second.as_mut().context("no second translator")?;
        send_and_settle(&mut s.sender, &s.metrics, w)
    }

    fn finish(&self, w: &Workload, mut o: Outcome) -> Result<Outcome> {
        o.checked = self.verify(w)?;
        Ok(o)
    }

    /// Runs a workload's check from inside the collector namespace.
    pub fn verify(&self, w: &Workload) -> Result<u64> {
        let http = self.http;
        let v = &w.verify;
        crate::netns::enter_and_run(self.topo.collector.name(), move || v(http))?
            .with_context(|| format!("checking {}", w.name))
    }

    /// Collector metrics text (from its HTTP API).
    pub fn collector_metrics(&self) -> Result<String> {
        let http = self.http;
        crate::netns::enter_and_run(self.topo.collector.name(), move || {
            crate::http::get(http, "/metrics")
        })?
    }
}
