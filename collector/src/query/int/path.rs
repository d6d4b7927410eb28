//! `int-path`: a flow's path is the Postcarding answer for its flow key.

use serde::Serialize;

use crate::query::PathAnswer;

/// A flow's path (`int-path`): the Postcarding answer for `flow_key(flow)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IntPathAnswer {
    /// The flow, `SRC,DST,PROTO,SPORT,DPORT`.
    pub flow: String,
    /// Its key, `flow_key(flow)`.
    pub flow_key: u32,
    /// The path (node ids hop by hop), or why there is none.
    #[serde(flatten)]
    pub path: PathAnswer,
}
