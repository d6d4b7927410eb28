//! Both postcard sub-headers as a report carries them (see `dta/subheader.rs`); a file of its own so that
//! `postcard.rs` stays under 500 lines.

use super::{field, invalid, PostcardPathLenRepr, PostcardRepr, Variant, HEADER_LEN};
use super::{HEADER_LEN_PATH_LEN, MAX_HOPS};
use crate::dta::format::ReportFormat;
use crate::dta::subheader::{self, StateKey, SubHeader};
use crate::field::get_u32;
use crate::refusal::{ensure, Refusal};

impl<'a> SubHeader<'a> for PostcardRepr {
    /// Exactly [`HEADER_LEN`] bytes, with a hop in `1..=MAX_HOPS` (the configured B is the translator's).
    #[inline(always)]
    fn parse_body<M: Refusal>(rest: &'a [u8], _: &ReportFormat) -> Result<Self, M::Err> {
        let v = Variant::Postcard;
        let b = subheader::exact::<M, HEADER_LEN>(rest, v.name())?;
        let hop = b[field::HOP];
        ensure::<M>(hop != 0 && hop <= MAX_HOPS, || invalid(v, "hop", hop))?;
        Ok(PostcardRepr {
            key: get_u32(&b[field::KEY]),
            hop,
            data: get_u32(&b[field::DATA]),
        })
    }

    /// The flow key (both postcard sub-headers start with it).
    #[inline(always)]
    fn state(sub: &[u8]) -> Option<StateKey> {
        subheader::u32_at(sub, field::KEY).map(StateKey::Flow)
    }
}

impl<'a> SubHeader<'a> for PostcardPathLenRepr {
    /// Exactly [`HEADER_LEN_PATH_LEN`] bytes, a path length in `1..=MAX_HOPS`, then a hop in `1..=path_len`.
    #[inline(always)]
    fn parse_body<M: Refusal>(rest: &'a [u8], _: &ReportFormat) -> Result<Self, M::Err> {
        let v = Variant::PathLen;
        let b = subheader::exact::<M, HEADER_LEN_PATH_LEN>(rest, v.name())?;
        let (hop, path_len) = (b[field::HOP], b[field::PATH_LEN]);
        ensure::<M>(path_len != 0 && path_len <= MAX_HOPS, || {
            invalid(v, "path_len", path_len)
        })?;
        ensure::<M>(hop != 0 && hop <= path_len, || invalid(v, "hop", hop))?;
        Ok(PostcardPathLenRepr {
            key: get_u32(&b[field::KEY]),
            hop,
            path_len,
            data: get_u32(&b[field::DATA_WITH_PATH_LEN]),
        })
    }

    #[inline(always)]
    fn state(sub: &[u8]) -> Option<StateKey> {
        subheader::u32_at(sub, field::KEY).map(StateKey::Flow)
    }
}
