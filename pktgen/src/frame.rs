//! Reports into Ethernet/IPv4/UDP frames, through `dta-reporter` and `dta-protocol`.
//!
//! The envelope is what a switch or TRex sends: DF, TTL 64, DSCP and ECN 0, IP ID 0 and UDP checksum 0
//! (DESIGN.md section 2: the translator does not verify it, and TRex's field engine would not fix it).

use dta_protocol::dta::ReportFormat;
use dta_protocol::udp::{UdpEndpoints, HEADERS_LEN};
use dta_reporter::Report;

/// Builds report frames for one flow of addresses.
#[derive(Debug, Clone)]
pub struct FrameBuilder {
    endpoints: UdpEndpoints,
    fmt: ReportFormat,
    payload: Vec<u8>,
}

impl FrameBuilder {
    /// Frames with `endpoints` (ECN forced to 0: reports are not RoCE) carrying reports in `fmt`.
    pub fn new(endpoints: UdpEndpoints, fmt: ReportFormat) -> Self {
        FrameBuilder {
            endpoints: UdpEndpoints {
                ecn: 0,
                ..endpoints
            },
            fmt,
            payload: Vec::new(),
        }
    }

    /// The envelope.
    pub fn endpoints(&self) -> &UdpEndpoints {
        &self.endpoints
    }

    /// The UDP payload of the last frame built.
    pub fn payload(&self) -> &[u8] {
        &self.payload
    }

    /// Writes the frame of `report` with `seqnum` into `out` (cleared first).
    pub fn build(
        &mut self,
        report: &Report,
        seqnum: u8,
        out: &mut Vec<u8>,
    ) -> dta_reporter::Result<()> {
        report.emit_into(&self.fmt, seqnum, false, &mut self.payload)?;
        out.clear();
        out.resize(HEADERS_LEN + self.payload.len(), 0);
        self.endpoints.emit_frame(out, &self.payload)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_write_frame_bytes() {
        let ep = UdpEndpoints::new(
            [2, 0, 0, 0, 0, 9],
            [2, 0, 0, 0, 0, 1],
            [10, 0, 0, 9],
            [198, 18, 0, 2],
            40041,
            40040,
        );
        let mut b = FrameBuilder::new(ep, ReportFormat::default());
        let r = Report::KeyWrite {
            redundancy: 1,
            key: 7,
            data: vec![0, 0, 0, 0x2a],
        };
        let mut out = Vec::new();
        b.build(&r, 5, &mut out).unwrap();
        // Ethernet; IPv4 45 00, total 20 + 8 + 12 = 40 (0x28), ID 0, DF, TTL 64, UDP, checksum
        // computed by hand: ~(4500+0028+0000+4000+4011+0a00+0009+c612+0002) = 0x6aa8; UDP 40041 -> 40040,
        // length 20, checksum 0; report 01 05 00 01 00000007 0000002a.
        let want: Vec<u8> = [
            &[2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 9, 0x08, 0x00][..],
            &[
                0x45, 0x00, 0x00, 0x28, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x6a, 0xa8,
            ][..],
            &[10, 0, 0, 9, 198, 18, 0, 2][..],
            &[0x9c, 0x69, 0x9c, 0x68, 0x00, 0x14, 0x00, 0x00][..],
            &[0x01, 0x05, 0x00, 0x01, 0, 0, 0, 7, 0, 0, 0, 0x2a][..],
        ]
        .concat();
        assert_eq!(out, want);
    }
}
