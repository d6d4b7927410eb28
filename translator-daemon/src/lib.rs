//! The translator daemon as a library: `dta-translator run`'s pieces, so that the benchmarks drive the
//! daemon's own data path (`run::dataplane::DataPlane::poll`) rather than a copy of it.

pub mod run;
