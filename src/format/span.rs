//! Named byte spans: the shared vocabulary of `dump --spans`, `dump --hex`,
//! `verify` and the TUI's hex pane.
//!
//! Every decoder records, for each field it reads, where the field's bytes are,
//! what role they play and whether they were found good. Tools that explain a
//! file to a person then never re-derive layouts on their own; they read spans.

use std::fmt;
use std::ops::Range;

/// What a span's bytes are for. Colouring and the span table key on this.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    Magic,
    Version,
    Length,
    Count,
    Offset,
    Checksum,
    /// Scalar header values that are none of the above (seq, epoch, tags, flags).
    Value,
    Payload,
    Padding,
    /// Bytes after the last whole, valid frame of an append-only file.
    Tail,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Magic => "magic",
            Role::Version => "version",
            Role::Length => "length",
            Role::Count => "count",
            Role::Offset => "offset",
            Role::Checksum => "checksum",
            Role::Value => "value",
            Role::Payload => "payload",
            Role::Padding => "padding",
            Role::Tail => "tail",
        }
    }
}

/// One field's bytes. `reason` is `Some` when the decoder found the field bad.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Span {
    /// Dotted path, e.g. `batch[2].entry[0].checksum`; the TUI builds its tree from it.
    pub name: String,
    pub range: Range<u64>,
    pub role: Role,
    /// The decoded value, for scalar fields and short strings (`4`, `"COTD"`).
    pub value: Option<String>,
    pub reason: Option<String>,
}

impl Span {
    pub fn is_ok(&self) -> bool {
        self.reason.is_none()
    }
    pub fn len(&self) -> u64 {
        self.range.end - self.range.start
    }
    pub fn is_empty(&self) -> bool {
        self.range.is_empty()
    }
    pub fn contains(&self, offset: u64) -> bool {
        self.range.contains(&offset)
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:#010x}..{:#010x} {:>9} {}",
            self.range.start,
            self.range.end,
            self.role.as_str(),
            self.name
        )?;
        if let Some(v) = &self.value {
            write!(f, " = {v}")?;
        }
        if let Some(reason) = &self.reason {
            write!(f, "  BAD: {reason}")?;
        }
        Ok(())
    }
}

/// The innermost span that owns `offset` (the shortest one containing it).
pub fn span_at(spans: &[Span], offset: u64) -> Option<&Span> {
    spans.iter().filter(|s| s.contains(offset)).min_by_key(|s| s.len())
}
