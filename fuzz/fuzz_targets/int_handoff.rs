//! Fuzzes the reader of the messages INT workers hand each other (`dta_translator::int::handoff`):
//! arbitrary bytes are refused or read whole, never a panic; a message read re-emits to one that reads
//! the same; and the marker check agrees with the parse.
#![no_main]

use dta_translator::int::handoff::{emit, is_message, Message, MAX_LEN};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(m) = Message::parse(data) else {
        return;
    };
    assert!(is_message(data));
    let items: Vec<_> = m.items().collect();
    assert_eq!(items.len(), usize::from(data[18]));
    let mut buf = [0u8; MAX_LEN];
    let n = emit(m.dst_ip(), items.iter().copied(), &mut buf).expect("a message read re-emits");
    assert_eq!(n, data.len());
    let again = Message::parse(&buf[..n]).expect("re-reads");
    assert_eq!(again.dst_ip(), m.dst_ip());
    assert_eq!(again.items().collect::<Vec<_>>(), items);
});
