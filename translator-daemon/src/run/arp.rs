//! ARP for the translator's own IPv4 address. The translator's ports carry no kernel address (the kernel
//! must not answer RoCE with ICMP), so the collector, which needs our MAC to reach the address its NIC
//! responds to, asks us and we answer here.

/// Ethernet + ARP for IPv4 over Ethernet.
pub const ARP_FRAME_LEN: usize = 42;

/// If `frame` is an ARP request for `ip`, writes the reply (from `mac`) into `out` and returns its length.
pub fn reply(frame: &[u8], ip: [u8; 4], mac: [u8; 6], out: &mut [u8]) -> Option<usize> {
    if frame.len() < ARP_FRAME_LEN || out.len() < ARP_FRAME_LEN {
        return None;
    }
    let arp = &frame[14..];
    // Ethernet (1), IPv4 (0x0800), hardware length 6, protocol length 4, request (1).
    if arp[0..8] != [0, 1, 8, 0, 6, 4, 0, 1] || arp[24..28] != ip {
        return None;
    }
    let (sender_mac, sender_ip) = (&arp[8..14], &arp[14..18]);
    let out = &mut out[..ARP_FRAME_LEN];
    out[0..6].copy_from_slice(sender_mac);
    out[6..12].copy_from_slice(&mac);
    out[12..14].copy_from_slice(&[0x08, 0x06]);
    out[14..22].copy_from_slice(&[0, 1, 8, 0, 6, 4, 0, 2]);
    out[22..28].copy_from_slice(&mac);
    out[28..32].copy_from_slice(&ip);
    out[32..38].copy_from_slice(sender_mac);
    out[38..42].copy_from_slice(sender_ip);
    Some(ARP_FRAME_LEN)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(target: [u8; 4]) -> Vec<u8> {
        let mut f = vec![0xff; 6];
        f.extend_from_slice(&[2, 0, 0, 0, 0, 2, 0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 1]);
        f.extend_from_slice(&[2, 0, 0, 0, 0, 2, 198, 18, 0, 2]);
        f.extend_from_slice(&[0; 6]);
        f.extend_from_slice(&target);
        f
    }

    #[test]
    fn answers_requests_for_our_address_only() {
        let me = [198, 18, 0, 1];
        let mac = [2, 0, 0, 0, 0, 1];
        let mut out = [0u8; 64];
        let n = reply(&request(me), me, mac, &mut out).unwrap();
        let expected: Vec<u8> = [
            &[2, 0, 0, 0, 0, 2][..],
            &mac,
            &[0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 2],
            &mac,
            &me,
            &[2, 0, 0, 0, 0, 2],
            &[198, 18, 0, 2],
        ]
        .concat();
        assert_eq!(&out[..n], &expected[..]);
        assert_eq!(reply(&request([198, 18, 0, 9]), me, mac, &mut out), None);
        let mut answer = request(me);
        answer[21] = 2;
        assert_eq!(
            reply(&answer, me, mac, &mut out),
            None,
            "a reply is not answered"
        );
        assert_eq!(reply(&request(me)[..30], me, mac, &mut out), None);
    }
}
