//! The DTA collector: memory regions, the software RoCEv2 responder, the ibverbs backend, the control
//! channel and the query engine.
