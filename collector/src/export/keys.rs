//! The key set an operator names for the per-epoch answers: a file with one key per line,
//! `keywrite 42`, `keyincrement 42`, or a bare `42` for both; `#` starts a comment, blank lines are skipped.

use std::path::Path;

use crate::error::{Error, Result};

/// The keys, per kind, in file order without repeats.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeySet {
    /// Keys whose Key-Write answer is exported.
    pub keywrite: Vec<u32>,
    /// Keys whose Key-Increment estimate is exported.
    pub keyincrement: Vec<u32>,
}

impl KeySet {
    /// Reads `path`.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io(format!("reading the export keys {}", path.display()), e))?;
        Self::parse(&text).map_err(|m| Error::Config(format!("{}: {m}", path.display())))
    }

    /// Parses the file's text; the error names the line.
    pub fn parse(text: &str) -> std::result::Result<Self, String> {
        let mut set = KeySet::default();
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let words: Vec<&str> = line.split_whitespace().collect();
            let (write, increment, key) = match words.as_slice() {
                [key] => (true, true, *key),
                ["keywrite", key] => (true, false, *key),
                ["keyincrement", key] => (false, true, *key),
                _ => {
                    return Err(format!(
                        "line {}: {line:?} is not `keywrite KEY`, `keyincrement KEY` or `KEY`",
                        n + 1
                    ))
                }
            };
            let key = parse_key(key).ok_or_else(|| {
                format!(
                    "line {}: {key:?} is not a 32-bit key (decimal or 0x hex)",
                    n + 1
                )
            })?;
            if write && !set.keywrite.contains(&key) {
                set.keywrite.push(key);
            }
            if increment && !set.keyincrement.contains(&key) {
                set.keyincrement.push(key);
            }
        }
        Ok(set)
    }
}

fn parse_key(s: &str) -> Option<u32> {
    match s.strip_prefix("0x") {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kinds_comments_and_hex() {
        let s = KeySet::parse("# flows\n42\nkeywrite 0x10  # hex\n\nkeyincrement 7\n42\n").unwrap();
        assert_eq!(s.keywrite, [42, 16]);
        assert_eq!(s.keyincrement, [42, 7]);
        for bad in ["keywrite", "postcard 1", "keywrite -1", "1 2", "4294967296"] {
            let e = KeySet::parse(bad).unwrap_err();
            assert!(e.starts_with("line 1: "), "{bad}: {e}");
        }
    }
}
