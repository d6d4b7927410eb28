//! [`MacAddr`]: an Ethernet address as every DTA configuration and command line writes it,
//! `"02:00:00:00:00:01"` (six two-digit hexadecimal bytes, colons between).

use std::fmt;
use std::str::FromStr;

use serde::de::{self, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An Ethernet MAC address. Parses from and displays as `aa:bb:cc:dd:ee:ff` (lower case on output, either
/// case on input); serde reads and writes that string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct MacAddr(pub [u8; 6]);

/// Why a string is not a MAC address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "bad MAC address {0:?}: want six two-digit hex bytes with colons, e.g. \"02:00:00:00:00:01\""
)]
pub struct ParseMacError(pub String);

impl MacAddr {
    /// The six bytes.
    pub const fn octets(self) -> [u8; 6] {
        self.0
    }
}

impl From<[u8; 6]> for MacAddr {
    fn from(b: [u8; 6]) -> Self {
        MacAddr(b)
    }
}

impl From<MacAddr> for [u8; 6] {
    fn from(m: MacAddr) -> Self {
        m.0
    }
}

impl FromStr for MacAddr {
    type Err = ParseMacError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || ParseMacError(s.to_string());
        let mut mac = [0u8; 6];
        let mut parts = s.split(':');
        for b in &mut mac {
            let p = parts.next().ok_or_else(bad)?;
            if p.len() != 2 || !p.bytes().all(|c| c.is_ascii_hexdigit()) {
                return Err(bad());
            }
            *b = u8::from_str_radix(p, 16).map_err(|_| bad())?;
        }
        if parts.next().is_some() {
            return Err(bad());
        }
        Ok(MacAddr(mac))
    }
}

impl fmt::Display for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d, e, g] = self.0;
        write!(f, "{a:02x}:{b:02x}:{c:02x}:{d:02x}:{e:02x}:{g:02x}")
    }
}

impl Serialize for MacAddr {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for MacAddr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(MacVisitor { legacy: None })
    }
}

/// Reads the colon string, and with `legacy` also the array form `[2, 0, 0, 0, 0, 1]` that the translator's
/// configuration used to take (then `legacy` is called once, for a deprecation warning).
struct MacVisitor {
    legacy: Option<fn()>,
}

impl<'de> Visitor<'de> for MacVisitor {
    type Value = MacAddr;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a MAC address such as \"02:00:00:00:00:01\"")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<MacAddr, E> {
        v.parse().map_err(E::custom)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<MacAddr, A::Error> {
        let Some(warn) = self.legacy else {
            return Err(de::Error::invalid_type(de::Unexpected::Seq, &self));
        };
        let mut mac = [0u8; 6];
        for (i, b) in mac.iter_mut().enumerate() {
            *b = seq
                .next_element()?
                .ok_or_else(|| de::Error::invalid_length(i, &"six bytes"))?;
        }
        if seq.next_element::<u8>()?.is_some() {
            return Err(de::Error::invalid_length(7, &"six bytes"));
        }
        warn();
        Ok(MacAddr(mac))
    }
}

/// Deserializes a [`MacAddr`] from the colon string or, deprecated, from an array of six bytes, calling
/// `warn` when it meets the array form. For a configuration field that used to be `[u8; 6]`:
/// `#[serde(deserialize_with = "...")]` with a small function that passes its own warning.
pub fn deserialize_with_legacy_array<'de, D: Deserializer<'de>>(
    d: D,
    warn: fn(),
) -> Result<MacAddr, D::Error> {
    d.deserialize_any(MacVisitor { legacy: Some(warn) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_displays() {
        let m: MacAddr = "02:00:00:00:0A:ff".parse().unwrap();
        assert_eq!(m, MacAddr([2, 0, 0, 0, 0x0a, 0xff]));
        assert_eq!(m.to_string(), "02:00:00:00:0a:ff");
        for bad in [
            "",
            "02:00",
            "02:00:00:00:00:00:00",
            "2:00:00:00:00:00",
            "02:00:00:00:00:0g",
            "+2:00:00:00:00:00",
        ] {
            assert!(bad.parse::<MacAddr>().is_err(), "{bad}");
        }
    }

    #[test]
    fn serde_is_the_string() {
        let m = MacAddr([2, 0, 0, 0, 0, 1]);
        assert_eq!(serde_json::to_string(&m).unwrap(), "\"02:00:00:00:00:01\"");
        assert_eq!(
            serde_json::from_str::<MacAddr>("\"02:00:00:00:00:01\"").unwrap(),
            m
        );
        assert!(serde_json::from_str::<MacAddr>("[2,0,0,0,0,1]").is_err());
    }

    #[test]
    fn the_legacy_array_is_read_with_a_warning() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static WARNED: AtomicUsize = AtomicUsize::new(0);
        fn warn() {
            WARNED.fetch_add(1, Ordering::Relaxed);
        }
        let read = |t: &str| {
            deserialize_with_legacy_array(&mut serde_json::Deserializer::from_str(t), warn)
        };
        assert_eq!(
            read("\"02:00:00:00:00:01\"").unwrap(),
            MacAddr([2, 0, 0, 0, 0, 1])
        );
        assert_eq!(WARNED.load(Ordering::Relaxed), 0);
        assert_eq!(
            read("[2, 0, 0, 0, 0, 1]").unwrap(),
            MacAddr([2, 0, 0, 0, 0, 1])
        );
        assert_eq!(WARNED.load(Ordering::Relaxed), 1);
        assert!(read("[2, 0, 0]").is_err());
        assert!(read("[2, 0, 0, 0, 0, 1, 7]").is_err());
        assert!(read("[2, 0, 0, 0, 0, 256]").is_err());
    }
}
