//! The flow syntax of the INT queries: `SRC,DST,PROTO,SPORT,DPORT`, parsed and written back.

use std::fmt;
use std::net::IpAddr;

use dta_protocol::int::inner::FlowKey;

use crate::error::{Error, Result};

const TCP: u8 = 6;
const UDP: u8 = 17;

/// Parses a flow written `SRC,DST,PROTO,SPORT,DPORT`: IPv4 or IPv6 addresses (both of one family),
/// the protocol as a number or `tcp` / `udp`, and the ports.
pub fn parse_flow(s: &str) -> Result<FlowKey> {
    let bad = |why: String| Error::BadQuery(format!("flow {s:?}: {why}"));
    let fields: Vec<&str> = s.split(',').map(str::trim).collect();
    let [src, dst, proto, sport, dport] = fields[..] else {
        return Err(bad(format!(
            "{} fields; expected SRC,DST,PROTO,SPORT,DPORT",
            fields.len()
        )));
    };
    let addr = |name: &str, v: &str| {
        v.parse::<IpAddr>()
            .map_err(|_| bad(format!("{name} {v:?} is not an IPv4 or IPv6 address")))
    };
    let (src, dst) = (addr("source", src)?, addr("destination", dst)?);
    if src.is_ipv4() != dst.is_ipv4() {
        return Err(bad(
            "source and destination are of different IP versions".into()
        ));
    }
    let protocol = match proto.to_ascii_lowercase().as_str() {
        "tcp" => TCP,
        "udp" => UDP,
        p => p.parse::<u8>().map_err(|_| {
            bad(format!(
                "protocol {proto:?} is neither tcp, udp nor a number 0..=255"
            ))
        })?,
    };
    let port = |name: &str, v: &str| {
        v.parse::<u16>()
            .map_err(|_| bad(format!("{name} port {v:?} is not a number 0..=65535")))
    };
    let (src_port, dst_port) = (port("source", sport)?, port("destination", dport)?);
    // The front end reads ports for TCP and UDP only and keys every other flow with ports 0
    // (dta_protocol::int::inner): a flow of another protocol with ports was never written.
    if !matches!(protocol, TCP | UDP) && (src_port, dst_port) != (0, 0) {
        return Err(bad(format!(
            "protocol {protocol} carries no ports for INT: give 0,0 (only tcp and udp flows have ports)"
        )));
    }
    Ok(FlowKey {
        src,
        dst,
        protocol,
        src_port,
        dst_port,
    })
}

/// A flow as [`parse_flow`] reads it back: `SRC,DST,PROTO,SPORT,DPORT`, the protocol as a number.
pub struct FlowText<'a>(pub &'a FlowKey);

impl fmt::Display for FlowText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let k = self.0;
        write!(
            f,
            "{},{},{},{},{}",
            k.src, k.dst, k.protocol, k.src_port, k.dst_port
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dta_protocol::int::mapping::flow_key;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn v4(a: [u8; 4]) -> IpAddr {
        IpAddr::V4(Ipv4Addr::from(a))
    }

    #[test]
    fn flows_parse_with_v4_v6_and_protocol_names() {
        let f = parse_flow("10.0.0.1,10.0.0.2,tcp,12345,80").unwrap();
        assert_eq!(
            f,
            FlowKey {
                src: v4([10, 0, 0, 1]),
                dst: v4([10, 0, 0, 2]),
                protocol: 6,
                src_port: 12345,
                dst_port: 80,
            }
        );
        // The contract's Python vector (mapping.rs): the parsed flow keys to it.
        assert_eq!(flow_key(&f), 0x3db5_e2e5);
        assert_eq!(
            parse_flow(" 10.0.0.1 , 10.0.0.2 , TCP , 12345 , 80 ").unwrap(),
            f
        );
        assert_eq!(parse_flow("10.0.0.1,10.0.0.2,6,12345,80").unwrap(), f);
        let f6 = parse_flow("2001:db8::1,2001:db8::2,udp,5000,4791").unwrap();
        assert_eq!(
            f6.src,
            IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1))
        );
        assert_eq!((f6.protocol, f6.src_port, f6.dst_port), (17, 5000, 4791));
        assert_eq!(flow_key(&f6), 0x17a0_24e1);
        assert_eq!(
            parse_flow("10.0.0.1,10.0.0.2,Udp,1,2").unwrap().protocol,
            17
        );
        // Protocols without ports: by number, ports 0.
        let icmp = parse_flow("10.0.0.1,10.0.0.2,1,0,0").unwrap();
        assert_eq!((icmp.protocol, icmp.src_port), (1, 0));
        // Written back the way it parses.
        assert_eq!(
            FlowText(&f6).to_string(),
            "2001:db8::1,2001:db8::2,17,5000,4791"
        );
        assert_eq!(parse_flow(&FlowText(&f6).to_string()).unwrap(), f6);
    }

    #[test]
    fn bad_flows_say_what_is_wrong() {
        let cases = [
            (
                "10.0.0.1,10.0.0.2,tcp,80",
                "4 fields; expected SRC,DST,PROTO,SPORT,DPORT",
            ),
            ("10.0.0.1,10.0.0.2,tcp,1,2,3", "6 fields"),
            ("", "1 fields"),
            (
                "10.0.0.256,10.0.0.2,tcp,1,2",
                "source \"10.0.0.256\" is not an IPv4 or IPv6 address",
            ),
            (
                "10.0.0.1,host,tcp,1,2",
                "destination \"host\" is not an IPv4",
            ),
            ("10.0.0.1,::1,tcp,1,2", "different IP versions"),
            (
                "10.0.0.1,10.0.0.2,sctp,1,2",
                "protocol \"sctp\" is neither tcp, udp nor a number",
            ),
            ("10.0.0.1,10.0.0.2,256,1,2", "protocol \"256\""),
            (
                "10.0.0.1,10.0.0.2,tcp,65536,2",
                "source port \"65536\" is not a number 0..=65535",
            ),
            ("10.0.0.1,10.0.0.2,tcp,1,-2", "destination port \"-2\""),
            (
                "10.0.0.1,10.0.0.2,1,0,7",
                "protocol 1 carries no ports for INT",
            ),
        ];
        for (text, why) in cases {
            let e = parse_flow(text).unwrap_err().to_string();
            assert!(e.contains(why), "{text:?}: {e}");
            assert!(e.contains(&format!("flow {text:?}")), "{e}");
        }
    }
}
