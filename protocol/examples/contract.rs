//! Prints the wire contract (header layouts and lengths, UDP ports, opcodes) as JSON, for checks that compare other
//! implementations (the P4 programs) with this crate:
//! `cargo run -q -p dta-protocol --example contract`.

use dta_protocol::contract;
use serde_json::{json, Map, Value};

fn main() {
    let headers: Map<String, Value> = contract::headers()
        .into_iter()
        .map(|(name, layout)| {
            let fields: Vec<Value> = layout.iter().map(|f| json!([f.name, f.bits])).collect();
            (name.to_string(), Value::Array(fields))
        })
        .collect();
    let pairs = |v: Vec<(&str, u64)>| -> Map<String, Value> {
        v.into_iter()
            .map(|(k, n)| (k.to_string(), json!(n)))
            .collect()
    };
    let out = json!({
        "headers": headers,
        "header_lengths": pairs(contract::header_lengths().into_iter().map(|(k, v)| (k, v as u64)).collect()),
        "udp_ports": pairs(contract::udp_ports().into_iter().map(|(k, v)| (k, u64::from(v))).collect()),
        "dta_opcodes": pairs(contract::dta_opcodes().into_iter().map(|(k, v)| (k, u64::from(v))).collect()),
        "bth_opcodes": pairs(contract::bth_opcodes().into_iter().map(|(k, v)| (k, u64::from(v))).collect()),
    });
    println!("{}", serde_json::to_string_pretty(&out).expect("JSON"));
}
