//! The end-to-end harness: network namespaces with veth links, the collector and translator as processes,
//! workloads whose exact expected collector state is modelled here, a flow-controlled UDP sender, and
//! checks through the collector's HTTP API. The tests in `tests/` and the demo driver use it.

pub mod bins;
pub mod clickhouse_server;
pub mod conformance;
pub mod history;
pub mod http;
pub mod int_fabric;
pub mod int_spec;
pub mod int_workload;
pub mod netns;
pub mod procs;
pub mod prometheus;
pub mod rate;
pub mod rxe;
pub mod send;
pub mod system;
pub mod topo;
pub mod workload;
