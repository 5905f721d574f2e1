//! Decode errors. Every error carries the byte offset it is about, so a person
//! can go straight to the byte (`dump --hex`, the TUI's `g` key).

use std::fmt;

/// The version every COTTAS companion file has carried so far.
pub const SUPPORTED_VERSION: u32 = 1;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormatError {
    /// Byte offset in the file the problem is about.
    pub offset: u64,
    pub kind: ErrorKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The first bytes are not this file kind's magic.
    UnknownMagic { expected: [u8; 4], found: Vec<u8> },
    /// A magic that an older, buggy writer produced (e.g. `COKD` for `.dict`).
    LegacyMagic { found: [u8; 4], advice: &'static str },
    /// Known magic, but a version older than any this build reads.
    VersionTooOld { found: u32, supported: u32 },
    /// Known magic, but written by a newer format revision than this build knows.
    VersionTooNew { found: u32, supported: u32 },
    /// The file ends before a field it announces.
    Truncated { field: String, needed: u64, file_len: u64 },
    /// A stored checksum does not match the bytes it covers.
    Checksum { field: String, stored: u32, computed: u32 },
    /// The bytes parse but break a rule of the format.
    Structure { field: String, detail: String },
    /// Bytes after the last field of a fixed-size file.
    TrailingBytes { count: u64 },
}

impl FormatError {
    pub fn new(offset: u64, kind: ErrorKind) -> Self {
        FormatError { offset, kind }
    }
    pub fn structure(offset: u64, field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(offset, ErrorKind::Structure { field: field.into(), detail: detail.into() })
    }
    /// Short machine-friendly class name, used in JSON output and by verify.
    pub fn class(&self) -> &'static str {
        match self.kind {
            ErrorKind::UnknownMagic { .. } => "unknown-magic",
            ErrorKind::LegacyMagic { .. } => "legacy-magic",
            ErrorKind::VersionTooOld { .. } => "version-too-old",
            ErrorKind::VersionTooNew { .. } => "version-too-new",
            ErrorKind::Truncated { .. } => "truncated",
            ErrorKind::Checksum { .. } => "checksum",
            ErrorKind::Structure { .. } => "structure",
            ErrorKind::TrailingBytes { .. } => "trailing-bytes",
        }
    }
}

fn show_bytes(b: &[u8]) -> String {
    let hex: Vec<String> = b.iter().map(|x| format!("{x:02x}")).collect();
    let ascii: String = b.iter().map(|&x| if x.is_ascii_graphic() { x as char } else { '.' }).collect();
    format!("{} ({ascii:?})", hex.join(" "))
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at byte {} ({:#x}): ", self.offset, self.offset)?;
        match &self.kind {
            ErrorKind::UnknownMagic { expected, found } => write!(
                f,
                "unknown magic: expected {}, found {}",
                show_bytes(expected),
                show_bytes(found)
            ),
            ErrorKind::LegacyMagic { found, advice } => {
                write!(f, "legacy magic {}: {advice}", show_bytes(found))
            }
            ErrorKind::VersionTooOld { found, supported } => write!(
                f,
                "version {found} is older than any version this build reads (it reads version {supported})"
            ),
            ErrorKind::VersionTooNew { found, supported } => write!(
                f,
                "version {found} is newer than this build understands (it reads version {supported}); upgrade cottas-tui"
            ),
            ErrorKind::Truncated { field, needed, file_len } => write!(
                f,
                "truncated: expected {} of `{field}` at offset {}, the file has {}",
                crate::text::plural(*needed, "byte", "bytes"),
                self.offset,
                crate::text::plural(*file_len, "byte", "bytes")
            ),
            ErrorKind::Checksum { field, stored, computed } => write!(
                f,
                "checksum mismatch in `{field}`: stored {stored:#010x}, computed {computed:#010x}"
            ),
            ErrorKind::Structure { field, detail } => write!(f, "`{field}`: {detail}"),
            ErrorKind::TrailingBytes { count } => {
                write!(f, "{count} unexpected trailing bytes after the last field")
            }
        }
    }
}

impl std::error::Error for FormatError {}

pub type Result<T, E = FormatError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_truncation_counts_its_bytes_in_words_that_agree() {
        let one =
            FormatError::new(3, ErrorKind::Truncated { field: "version".into(), needed: 1, file_len: 3 });
        assert_eq!(
            one.to_string(),
            "at byte 3 (0x3): truncated: expected 1 byte of `version` at offset 3, the file has 3 bytes"
        );
        let few = FormatError::new(0, ErrorKind::Truncated { field: "magic".into(), needed: 4, file_len: 1 });
        assert_eq!(
            few.to_string(),
            "at byte 0 (0x0): truncated: expected 4 bytes of `magic` at offset 0, the file has 1 byte"
        );
    }
}
