//! Which worker a received frame belongs to. Each worker's engine owns state that must see every report
//! that touches it: an Append list's head, a postcard flow's cache line, a sketch's merge, a reporter's
//! sequence numbers, and each QP's PSNs. So the worker that receives a frame reads just enough of it to
//! pick the owner, and hands it over when that is another worker:
//!
//! * Append: the list id; Postcarding: the flow key; Sketch-Merge: the sketch id.
//! * Key-Write / Key-Increment: the reporter (source IP) when the report is retransmittable, so one engine
//!   tracks its sequence numbers; otherwise no owner ([`Target::Any`]): the worker that received it
//!   keeps it.
//! * RoCE responses: the worker whose QPN range holds the BTH destination QP.
//!
//! * INT reports (when `[int]` is enabled): kept by the worker that received them ([`Target::Int`]), whose
//!   engine counts the packet, tracks the reporting switch's sequence numbers (a switch's reports share
//!   one outer 5-tuple, so RSS or the fanout hash keeps them on one worker) and translates it, and hands
//!   the work on other workers' flows to their owners as messages (`Engine::handle_int_frames`); each
//!   worker appends its events to a drop and a queue list of its own.
//!
//! Frames that are neither (and RoCE not addressed to us) are forwarded untouched. A report too short to
//! read goes to worker 0, whose engine counts it as malformed.

use dta_protocol::dta::{peek, HeaderForm, Opcode};
use dta_protocol::hash::key_checksum;
use dta_protocol::roce::{bth, ROCEV2_UDP_PORT};
use dta_protocol::udp::{ether_type, UdpView, ETHERTYPE_ARP};

/// Where a frame goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A report (or anything else DTA) for this worker's engine.
    Worker(usize),
    /// A report whose translation needs no state of any worker (a Key-Write or Key-Increment that is not
    /// retransmittable): any worker may take it, so a run-to-completion worker keeps what it received
    /// (RSS spreads the load). No owner is computed for it: the hash and the division by the worker count
    /// were a fifth of steering's instructions a report, for an index nobody read.
    Any,
    /// A RoCE response (ACK, NAK, ATOMIC ACK, CNP) for this worker's QP: it overtakes the worker's queued
    /// reports, since its delay is the QP's round-trip time and the retransmit timer's business.
    Response(usize),
    /// An INT report: the receiving worker's engine takes it first (its packet and sequence), and hands
    /// it to the owners of its reports' flows.
    Int,
    /// An ARP request (the ARP module decides whether it is for us); not for the engines.
    Arp,
    /// Not DTA, not our RoCE: forward untouched.
    Forward,
}

/// What steering needs to know, fixed at start.
#[derive(Debug, Clone, Copy)]
pub struct Steering {
    /// Workers.
    pub workers: usize,
    /// Collectors (QPNs per worker).
    pub collectors: usize,
    /// QPN of worker 0, collector 0.
    pub qpn_base: u32,
    /// The translator's IPv4 address (RoCE responses are addressed to it).
    pub local_ip: [u8; 4],
    /// UDP port of reports.
    pub report_port: u16,
    /// UDP port of INT reports, when the engines take them.
    pub int_port: Option<u16>,
    /// Report base header form.
    pub form: HeaderForm,
}

impl Steering {
    /// The steering of a configured daemon.
    pub fn of(s: &super::settings::Settings) -> Self {
        Steering {
            workers: s.daemon.workers.count,
            collectors: s.daemon.collectors.len(),
            qpn_base: s.engine.local.qpn_base,
            local_ip: s.engine.local.ip,
            report_port: s.engine.report.udp_port,
            int_port: s.engine.int.enabled.then_some(s.engine.int.udp_port),
            form: s.engine.report.dta_header,
        }
    }

    /// Steers one frame.
    pub fn target(&self, frame: &[u8]) -> Target {
        if ether_type(frame) == Some(ETHERTYPE_ARP) {
            return Target::Arp;
        }
        // The engine's own view (fixed offsets for the common frame, the general parse otherwise).
        let Some(ep) = UdpView::parse(frame) else {
            return Target::Forward;
        };
        let udp = &ep;
        if ep.dst_port == self.report_port {
            return self.report_target(ep.src_ip, udp.payload);
        }
        if Some(ep.dst_port) == self.int_port {
            return Target::Int;
        }
        if ep.dst_port == ROCEV2_UDP_PORT && ep.dst_ip == self.local_ip {
            // Only the BTH's destination QP is read; the owner's engine parses and judges the rest.
            let Some(qpn) = bth::peek_dest_qp(udp.payload) else {
                return Target::Forward;
            };
            let per = self.collectors as u32;
            return match qpn.checked_sub(self.qpn_base).map(|d| (d / per) as usize) {
                Some(k) if k < self.workers => Target::Response(k),
                _ => Target::Forward,
            };
        }
        Target::Forward
    }

    fn report_target(&self, src_ip: [u8; 4], p: &[u8]) -> Target {
        if self.workers == 1 {
            return Target::Worker(0);
        }
        let by = |o: u32| key_checksum(o) as usize % self.workers;
        let Some(r) = peek(p, self.form) else {
            return Target::Worker(0);
        };
        match r.opcode {
            // A retransmittable Key-Write or Key-Increment goes by reporter, so that one engine tracks its
            // sequence numbers.
            Opcode::KeyWrite | Opcode::KeyIncrement if r.retransmit => {
                Target::Worker(by(u32::from_be_bytes(src_ip)))
            }
            // Otherwise nothing of it is kept: whoever has it may write it.
            Opcode::KeyWrite | Opcode::KeyIncrement => Target::Any,
            _ => Target::Worker(r.state.map_or(0, |k| by(k.value()))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dta_protocol::udp::UdpEndpoints;

    fn steering(workers: usize) -> Steering {
        Steering {
            workers,
            collectors: 2,
            qpn_base: 0x100,
            local_ip: [198, 18, 0, 1],
            report_port: 40040,
            int_port: Some(32766),
            form: HeaderForm::Seq,
        }
    }

    #[test]
    fn int_reports_stay_with_their_receiver_and_only_when_enabled() {
        let s = steering(4);
        let int = udp([10, 0, 0, 9], [198, 18, 0, 2], 32766, &[0x02; 40]);
        assert_eq!(s.target(&int), Target::Int);
        let off = Steering {
            int_port: None,
            ..s
        };
        assert_eq!(off.target(&int), Target::Forward);
    }

    fn udp(src_ip: [u8; 4], dst_ip: [u8; 4], dst_port: u16, payload: &[u8]) -> Vec<u8> {
        let ep = UdpEndpoints::new(
            [2, 0, 0, 0, 0, 9],
            [2, 0, 0, 0, 0, 1],
            src_ip,
            dst_ip,
            1234,
            dst_port,
        );
        let mut buf = vec![0u8; 42 + payload.len()];
        let n = ep.emit_frame(&mut buf, payload).unwrap();
        buf.truncate(n);
        buf
    }

    fn report(src: u8, payload: &[u8]) -> Vec<u8> {
        udp([198, 18, 0, src], [198, 18, 0, 2], 40040, payload)
    }

    #[test]
    fn reports_go_to_the_owner_of_their_state() {
        let s = steering(4);
        let list = |id: u32, src: u8| {
            let mut p = vec![0x02, 0, 0];
            p.extend_from_slice(&id.to_be_bytes());
            p.extend_from_slice(&[1, 2, 3, 4]);
            s.target(&report(src, &p))
        };
        // The same list from two reporters lands on one worker; its index is crc32(list) mod 4.
        assert_eq!(list(7, 10), list(7, 11));
        assert_eq!(list(7, 10), Target::Worker(key_checksum(7) as usize % 4));
        // Key-Write: any worker unless retransmittable, then by reporter.
        let kw = |key: u32, flags: u8, src: u8| {
            let mut p = vec![0x01, 5, flags, 1];
            p.extend_from_slice(&key.to_be_bytes());
            p.extend_from_slice(&[0; 4]);
            s.target(&report(src, &p))
        };
        assert_eq!(kw(123, 0, 10), Target::Any);
        let by_src = key_checksum(u32::from_be_bytes([198, 18, 0, 10])) as usize % 4;
        for key in 0..32 {
            assert_eq!(kw(key, 0x40, 10), Target::Worker(by_src));
        }
        // Sketch: by sketch id.
        let sk = s.target(&report(
            10,
            &[0x05, 0, 0, 9, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 1],
        ));
        assert_eq!(sk, Target::Worker(key_checksum(9) as usize % 4));
        // Too short to read: worker 0 counts it.
        assert_eq!(s.target(&report(10, &[0x02])), Target::Worker(0));
        // Key-Increment: likewise by key or reporter; the same bytes read in the compact form, where the
        // flags are byte 1.
        let ki = |flags: u8, form: HeaderForm| {
            let c = Steering { form, ..s };
            let mut p = vec![0x03, flags, flags, 1];
            p.extend_from_slice(&77u32.to_be_bytes());
            p.extend_from_slice(&[0; 8]);
            if form == HeaderForm::Compact {
                p.remove(1);
            }
            c.target(&report(10, &p))
        };
        assert_eq!(ki(0, HeaderForm::Seq), Target::Any);
        assert_eq!(ki(0, HeaderForm::Compact), Target::Any);
        assert_eq!(ki(0x40, HeaderForm::Seq), Target::Worker(by_src));
        assert_eq!(ki(0x40, HeaderForm::Compact), Target::Worker(by_src));
    }

    #[test]
    fn roce_responses_go_to_the_qp_owner_and_other_frames_are_forwarded() {
        let s = steering(3);
        let ack = |qpn: u32, dst: [u8; 4]| {
            let mut bth = [0u8; 16];
            bth[0] = 0x11;
            bth[5..8].copy_from_slice(&qpn.to_be_bytes()[1..]);
            s.target(&udp([198, 18, 0, 2], dst, 4791, &bth))
        };
        let me = [198, 18, 0, 1];
        // Worker k owns QPNs 0x100 + 2k and 0x100 + 2k + 1 (two collectors).
        assert_eq!(ack(0x100, me), Target::Response(0));
        assert_eq!(ack(0x101, me), Target::Response(0));
        assert_eq!(ack(0x104, me), Target::Response(2));
        assert_eq!(ack(0x106, me), Target::Forward, "beyond the last worker");
        assert_eq!(ack(0xff, me), Target::Forward, "below the base");
        assert_eq!(
            ack(0x100, [198, 18, 0, 77]),
            Target::Forward,
            "RoCE for another host"
        );
        assert_eq!(
            s.target(&udp(me, [198, 18, 0, 2], 53, b"dns")),
            Target::Forward
        );
        let mut arp = vec![0xff; 6];
        arp.extend_from_slice(&[2, 0, 0, 0, 0, 9, 0x08, 0x06]);
        arp.resize(42, 0);
        assert_eq!(s.target(&arp), Target::Arp);
        assert_eq!(s.target(&[0u8; 10]), Target::Forward);
    }
}
