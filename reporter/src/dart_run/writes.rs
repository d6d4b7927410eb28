//! The writes file: `<key> <data-hex>` per line, with comments and blank lines.

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;

use anyhow::{bail, Context, Result};

/// One line of the writes file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteLine {
    /// 1-based line number, for errors.
    pub line: usize,
    /// Key.
    pub key: u32,
    /// Data bytes.
    pub data: Vec<u8>,
}

fn parse_key(s: &str) -> Result<u32> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16),
        None => s.parse(),
    }
    .with_context(|| format!("key {s:?} is not a 32-bit unsigned integer"))
}

fn parse_hex(s: &str) -> Result<Vec<u8>> {
    let h = s.strip_prefix("0x").unwrap_or(s);
    if h.is_empty() || h.len() % 2 != 0 || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
        bail!("data {s:?} is not an even number of hex digits");
    }
    (0..h.len() / 2)
        .map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).context("hex digit"))
        .collect()
}

/// Parses the writes: `<key> <data-hex>` per line, blank lines and `#` comments ignored.
pub fn parse_writes(input: impl Read) -> Result<Vec<WriteLine>> {
    let mut out = Vec::new();
    for (i, line) in BufReader::new(input).lines().enumerate() {
        let n = i + 1;
        let line = line.with_context(|| format!("reading line {n}"))?;
        let text = line.split('#').next().unwrap_or("").trim();
        if text.is_empty() {
            continue;
        }
        let mut fields = text.split_whitespace();
        let (Some(key), Some(data), None) = (fields.next(), fields.next(), fields.next()) else {
            bail!("line {n}: expected `<key> <data-hex>`, found {text:?}");
        };
        let key = parse_key(key).with_context(|| format!("line {n}"))?;
        let data = parse_hex(data).with_context(|| format!("line {n}"))?;
        out.push(WriteLine { line: n, key, data });
    }
    Ok(out)
}

pub(super) fn read_writes(path: &PathBuf) -> Result<Vec<WriteLine>> {
    if path.as_os_str() == "-" {
        parse_writes(std::io::stdin().lock()).context("writes from standard input")
    } else {
        let f = std::fs::File::open(path)
            .with_context(|| format!("opening the writes file {}", path.display()))?;
        parse_writes(f).with_context(|| format!("writes file {}", path.display()))
    }
}
