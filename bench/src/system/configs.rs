//! The daemons' configurations in the whole-system run.

/// The collector's configuration: one Key-Write region big enough that N = 1 keys rarely collide.
pub(super) fn collector_toml(control: u16, http: u16) -> String {
    format!(
        r#"[collector]
mac = "02:00:00:00:00:02"
ip = "198.18.0.2"
max_dest_rd_atomic = 16
path_mtu = 1024

[control]
bind = "127.0.0.1:{control}"
token = "bench"

[http]
bind = "127.0.0.1:{http}"

[[region]]
kind = "key_write"
slots = 1048576
entry_size = 8
n_max = 1
"#
    )
}

/// The translator's: two memif ports (reports in on the first, RoCE out of the second), one worker, and a
/// requester sized for a software collector over memif rather than for a NIC. What limits a QP is its
/// window over the round trip (W / RTT), and the round trip to a collector on a shared machine includes
/// the scheduler: measured here with the engine's defaults (window 256, adaptive, 1 ms least timeout), the
/// smoothed RTT read 100-400 us with spikes of 5-7 ms, each spike fired the 1 ms timeout, go-back-N and a
/// halved window, and the run wrote 0.2-2.0 M/s while the translator took 10 M/s. A window of 16,384
/// covers 3 ms at 5 M/s; the link loses nothing, so the adaptive window only shrinks it on scheduling
/// stalls, and a 20 ms least timeout keeps a stall from reading as a loss (docs/deploy.md says the same
/// for users).
pub(super) fn translator_toml(
    to_sender: &str,
    to_collector: &str,
    control: u16,
    metrics: u16,
) -> String {
    format!(
        r#"[io]
kind = "dpdk"
ports = ["{to_sender}", "{to_collector}"]

[workers]
count = 1

[[collectors]]
control = "127.0.0.1:{control}"
token = "bench"

[metrics]
bind = "127.0.0.1:{metrics}"

[local]
mac = "02:00:00:00:00:01"
ip = [198, 18, 0, 1]

[requester]
window = {SYSTEM_WINDOW}
adaptive_window = false
queue_capacity = {SYSTEM_QUEUE}
retransmit_timeout_us = 20000
"#
    )
}

/// The translator's QP window in the whole-system run (see [`translator_toml`]).
pub(super) const SYSTEM_WINDOW: u32 = 16_384;
/// Work requests waiting for that window: with it, 16 ms of stalled ACKs at 5 M/s.
pub(super) const SYSTEM_QUEUE: u32 = 65_536;
