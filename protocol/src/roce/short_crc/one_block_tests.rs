use super::*;
use proptest::prelude::*;

proptest! {
    /// Both paths of the one-block fold equal crc32fast's CRC from any state: the state's zeros
    /// plus the block's linear part (crc32fast, the independent oracle).
    #[test]
    fn linear_block_equals_crc32fast(state in any::<u32>(), block in any::<[u8; 16]>()) {
        let mut h = crc32fast::Hasher::new_with_initial(!state);
        h.update(&block);
        let want = !h.finalize();
        for c in [Crc32Short::detect(), Crc32Short::table_only()] {
            prop_assert_eq!(Crc32Short::zeros(state, 16) ^ c.linear_block(&block), want);
            prop_assert_eq!(c.linear_block(&block), c.linear_tail(&block, 16));
        }
    }
}
