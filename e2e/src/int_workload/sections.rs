//! The INT run's ports, redundancy and the daemons' INT sections.

/// The translator's INT port (fabric-tna's default).
pub const INT_PORT: u16 = 32766;
/// INT-MD over UDP in reported packets.
pub const INT_MD_PORT: u16 = 5000;
/// Copies of hop records and drop counters (`int.redundancy`).
pub const INT_N: u8 = 2;

/// The translator sections of an INT run (appended to the engine sections).
pub const INT_SECTIONS: &str = r#"
[report]
keywrite_data_len = 12

[int]
enabled = true
md_udp_port = 5000
drop_list = [10, 12]
queue_list = [11, 13]
redundancy = 2
"#;

/// The collector's `[int]` section of an INT run (the node universe is the Postcarding one).
pub const COLLECTOR_INT: &str = "\n[int]\ndrop_list = [10, 12]\nqueue_list = [11, 13]\n";
