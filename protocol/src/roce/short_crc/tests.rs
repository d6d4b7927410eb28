use super::*;
use proptest::prelude::*;

fn reference(state: u32, bytes: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new_with_initial(!state);
    h.update(bytes);
    !h.finalize()
}

#[test]
fn constants() {
    // The Barrett constants as published for this polynomial (reflected, 33 bits).
    assert_eq!(BARRETT_P, 0x1_db71_0641);
    assert_eq!(BARRETT_MU, 0x1_f701_1641);
    assert_eq!(x_pow_mod(32), POLY);
}

#[test]
fn check_value_and_lengths() {
    let c = Crc32Short::detect();
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("pclmulqdq") {
        assert!(c.uses_clmul());
    }
    let s = b"123456789abcdef0123456789abcdef0123456789";
    assert_eq!(!c.update(!0, &s[..9]), 0xcbf4_3926);
    for n in 0..=s.len() {
        assert_eq!(!c.update(!0, &s[..n]), crc32fast::hash(&s[..n]), "{n}");
        let want = reference(0, &s[s.len() - n..]);
        assert_eq!(c.linear_tail(s, n), want, "{n}");
        assert_eq!(Crc32Short::table_only().linear_tail(s, n), want, "{n}");
    }
}

proptest! {
    /// Both paths equal crc32fast for random states, lengths 0..300 and bytes.
    #[test]
    fn update_equals_crc32fast(
        state in any::<u32>(),
        bytes in proptest::collection::vec(any::<u8>(), 0..300),
    ) {
        let want = reference(state, &bytes);
        prop_assert_eq!(Crc32Short::detect().update(state, &bytes), want);
        prop_assert_eq!(Crc32Short::table_only().update(state, &bytes), want);
    }

    /// The state's zeros plus the bytes' linear part equal the CRC from that state, whatever sits
    /// before the bytes (masked out) and however many bytes are asked for (clamped).
    #[test]
    fn zeros_plus_linear_tail_equals_crc32fast(
        state in any::<u32>(),
        buf in proptest::collection::vec(any::<u8>(), 0..300),
        n in 0usize..320,
    ) {
        let k = n.min(buf.len());
        let tail = &buf[buf.len() - k..];
        let want = reference(state, tail);
        for c in [Crc32Short::detect(), Crc32Short::table_only()] {
            prop_assert_eq!(Crc32Short::zeros(state, k) ^ c.linear_tail(&buf, n), want);
            // A fixed tail length over a buffer with fewer bytes before the tail than a window
            // needs, or with the tail cut: the same as `linear_tail` over the same bytes.
            let t = TailCrc::new(c, n);
            prop_assert_eq!(t.linear(&buf), c.linear_tail(&buf, n));
            prop_assert_eq!((t.len(), t.is_empty()), (n, n == 0));
        }
    }
}
