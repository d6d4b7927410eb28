//! The wire as Linux sees it (issue 26, item 10), through the translator as a bump in the wire on
//! AF_PACKET: VLAN-tagged frames keep their tag, jumbo frames on MTU 9000 links pass. The frames are sent
//! from a raw socket of the reporter's namespace and captured on the collector's side by `dumpcap`
//! (libpcap, which puts back the tag the kernel stripped, independently of dta-netio).

use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{bail, ensure, Context, Result};
use dta_e2e::http::metric;
use dta_e2e::system::{Options, System};

/// What the test frames come from: no host in the topology has this MAC, so the capture filter on it
/// sees only them.
const SRC_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0e];
const COLLECTOR_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];

/// An Ethernet frame with `tags` (TPID, TCI) after the MACs, then `ethertype` and `payload`.
fn frame(tags: &[(u16, u16)], ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&COLLECTOR_MAC);
    f.extend_from_slice(&SRC_MAC);
    for (tpid, tci) in tags {
        f.extend_from_slice(&tpid.to_be_bytes());
        f.extend_from_slice(&tci.to_be_bytes());
    }
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// A DTA Key-Write report (seq form) as IPv4/UDP to the collector's port 40040, correct IPv4 checksum,
/// UDP checksum 0: a report the translator takes when it comes untagged.
fn report_payload() -> Vec<u8> {
    let dta = [
        0x01, 0x07, 0x00, // Key-Write, seq 7, flags
        0x01, 0, 0, 0, 42, // redundancy 1, key 42
        0xde, 0xad, 0xbe, 0xef, // data
    ];
    let udp_len = 8 + dta.len();
    let total = 20 + udp_len;
    let mut ip = vec![
        0x45,
        0,
        (total >> 8) as u8,
        total as u8,
        0,
        1,
        0x40,
        0,
        64,
        17,
        0,
        0,
        198,
        18,
        0,
        10,
        198,
        18,
        0,
        2,
    ];
    let sum: u32 = ip
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    let sum = !(((sum & 0xffff) + (sum >> 16)) as u16);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    ip.extend_from_slice(&40041u16.to_be_bytes());
    ip.extend_from_slice(&40040u16.to_be_bytes());
    ip.extend_from_slice(&(udp_len as u16).to_be_bytes());
    ip.extend_from_slice(&[0, 0]);
    ip.extend_from_slice(&dta);
    ip
}

/// Sends `frames` on interface `ifname` of namespace `ns` from a raw socket.
fn send_raw(sys: &System, ifname: &str, frames: &[Vec<u8>]) -> Result<()> {
    let ifname = std::ffi::CString::new(ifname)?;
    sys.topo.reporter.run_in(|| -> Result<()> {
        // SAFETY: plain system calls on a socket this closure owns; the results are checked.
        unsafe {
            let fd = libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0);
            ensure!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
            let _fd = OwnedFd::from_raw_fd(fd);
            let mut addr: libc::sockaddr_ll = std::mem::zeroed();
            addr.sll_family = libc::AF_PACKET as u16;
            addr.sll_ifindex = libc::if_nametoindex(ifname.as_ptr()) as i32;
            addr.sll_halen = 6;
            for f in frames {
                let r = libc::sendto(
                    fd,
                    f.as_ptr().cast(),
                    f.len(),
                    0,
                    (&addr as *const libc::sockaddr_ll).cast(),
                    std::mem::size_of::<libc::sockaddr_ll>() as u32,
                );
                ensure!(
                    r == f.len() as isize,
                    "sendto of {} bytes: {}",
                    f.len(),
                    std::io::Error::last_os_error()
                );
            }
            Ok(())
        }
    })?
}

/// The frames of a classic pcap file (microsecond or nanosecond, either byte order).
fn pcap_frames(bytes: &[u8]) -> Result<Vec<Vec<u8>>> {
    ensure!(bytes.len() >= 24, "pcap file of {} bytes", bytes.len());
    let le = match &bytes[..4] {
        [0xd4, 0xc3, 0xb2, 0xa1] | [0x4d, 0x3c, 0xb2, 0xa1] => true,
        [0xa1, 0xb2, 0xc3, 0xd4] | [0xa1, 0xb2, 0x3c, 0x4d] => false,
        m => bail!("not a pcap file (magic {m:02x?})"),
    };
    let u32_at = |at: usize| {
        let b = [bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]];
        if le {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        }
    };
    ensure!(u32_at(20) == 1, "link type {} is not Ethernet", u32_at(20));
    let mut at = 24;
    let mut out = Vec::new();
    while at + 16 <= bytes.len() {
        let (incl, orig) = (u32_at(at + 8) as usize, u32_at(at + 12) as usize);
        ensure!(
            incl == orig,
            "a frame of {orig} bytes was captured cut to {incl}"
        );
        let start = at + 16;
        out.push(bytes[start..start + incl].to_vec());
        at = start + incl;
    }
    Ok(out)
}

/// Tagged frames keep their tag through the AF_PACKET bump in the wire, and jumbo frames of an MTU 9000
/// link pass: 802.1Q with PCP (an arbitrary EtherType, and a DTA report, which the translator takes only
/// untagged, as on DPDK), QinQ, tagged and untagged 9000-byte IP MTU frames, captured on the collector's
/// link byte for byte. Before: the tags were gone (and the tagged report was translated as untagged), and
/// the jumbo frames were dropped.
#[test]
fn tagged_and_jumbo_frames_cross_the_bump_in_the_wire_intact() -> Result<()> {
    let opts = Options {
        limit: Duration::from_secs(240),
        workers: 1,
        ..Options::default()
    };
    let Some(sys) = System::start("w", opts)? else {
        return Ok(());
    };
    for dev in ["ta", "tb"] {
        sys.topo
            .translator
            .ip(&["link", "set", dev, "mtu", "9000"])?;
    }
    sys.topo
        .reporter
        .ip(&["link", "set", "r0", "mtu", "9000"])?;
    sys.topo
        .collector
        .ip(&["link", "set", "c0", "mtu", "9000"])?;

    let pattern = |n: usize| (0..n).map(|i| (i * 7 + 3) as u8).collect::<Vec<_>>();
    let sent = vec![
        frame(&[(0x8100, 0xa064)], 0x88b5, &pattern(46)),
        frame(&[(0x8100, 0x6064)], 0x0800, &report_payload()),
        frame(&[(0x88a8, 0x00c8), (0x8100, 0x012c)], 0x88b5, &pattern(60)),
        frame(&[(0x8100, 0x0064)], 0x88b5, &pattern(9000)),
        frame(&[], 0x88b5, &pattern(9000)),
    ];

    let dir = std::env::temp_dir().join(format!("dta-wire-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let pcap = dir.join("c0.pcap");
    let _ = std::fs::remove_file(&pcap);
    let capture = Command::new("ip")
        .args([
            "netns",
            "exec",
            sys.topo.collector.name(),
            "dumpcap",
            "-q",
            "-i",
            "c0",
        ])
        .args([
            "-f",
            "ether src 02:00:00:00:00:0e",
            "-a",
            "duration:6",
            "-P",
            "-w",
        ])
        .arg(&pcap)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting dumpcap (tshark's capture tool)")?;
    // dumpcap takes a moment to open the interface.
    std::thread::sleep(Duration::from_secs(2));
    send_raw(&sys, "r0", &sent)?;
    let out = capture.wait_with_output()?;
    ensure!(
        out.status.success(),
        "dumpcap: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = pcap_frames(&std::fs::read(&pcap)?)?;
    let _ = std::fs::remove_dir_all(&dir);

    let lens = |v: &[Vec<u8>]| v.iter().map(Vec::len).collect::<Vec<_>>();
    ensure!(
        lens(&got) == lens(&sent),
        "frame lengths on the collector's link: {:?}, sent {:?}",
        lens(&got),
        lens(&sent)
    );
    for (i, (g, s)) in got.iter().zip(&sent).enumerate() {
        ensure!(g == s, "frame {i} changed on the way: {:02x?}", &g[..22]);
    }
    let m = sys.metrics.scrape()?;
    ensure!(
        metric(&m, "dta_translator_port_rx_dropped_total", "") == 0,
        "no frame dropped by the translator's ports"
    );
    let taken = sys.reports_taken()?;
    ensure!(
        taken == 0,
        "the tagged report was forwarded, not taken: {taken} taken"
    );
    Ok(())
}
