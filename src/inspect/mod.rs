//! Explains one store file to a person: its kind, header fields, a short
//! listing, every problem with its byte offset, and the byte spans behind it.
//!
//! `dump` prints an [`Inspection`]; `verify` and the TUI's Files and Decoder
//! views reuse it, so a file reads the same everywhere.

mod log;
mod parquet;
mod sidecar;
pub mod window;

use std::path::Path;

use serde_json::Value;

use crate::format::kind::{detect, FileKind};
use crate::format::{FormatError, Span};

/// A problem found while decoding, located at a byte.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub offset: u64,
    /// Stable class name (`truncated`, `checksum`, `torn-frame`, …).
    pub class: String,
    pub message: String,
}

impl Problem {
    pub fn from_error(e: &FormatError) -> Self {
        Problem { offset: e.offset, class: e.class().to_string(), message: e.to_string() }
    }
}

#[derive(Clone, Debug)]
pub struct Inspection {
    pub kind: FileKind,
    pub size: u64,
    /// Header and summary fields, in display order.
    pub fields: Vec<(String, String)>,
    /// A listing: first/last entries, one line per batch or row group.
    pub items: Vec<String>,
    pub problems: Vec<Problem>,
    /// Facts worth knowing that are not damage (e.g. the legacy transport).
    pub notes: Vec<String>,
    pub spans: Vec<Span>,
    /// The kind-specific decoded value, for `--json`.
    pub value: Value,
}

impl Inspection {
    fn new(kind: FileKind, bytes: &[u8]) -> Self {
        Inspection {
            kind,
            size: bytes.len() as u64,
            fields: Vec::new(),
            items: Vec::new(),
            problems: Vec::new(),
            notes: Vec::new(),
            spans: Vec::new(),
            value: Value::Null,
        }
    }
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }
    fn field(&mut self, k: &str, v: impl ToString) {
        self.fields.push((k.to_string(), v.to_string()));
    }
    fn problem(&mut self, e: &FormatError) {
        self.problems.push(Problem::from_error(e));
    }
}

/// Inspects `bytes`, detecting the kind by magic and then by `name`.
/// `None` when neither identifies a store file.
pub fn inspect(name: &str, bytes: &[u8]) -> Option<Inspection> {
    detect(name, bytes).map(|k| inspect_as(k, bytes))
}

pub fn inspect_as(kind: FileKind, bytes: &[u8]) -> Inspection {
    let mut ins = Inspection::new(kind, bytes);
    match kind {
        FileKind::DeltaLog => log::inspect(&mut ins, bytes),
        FileKind::Parquet => parquet::inspect(&mut ins, bytes),
        _ => sidecar::inspect(&mut ins, bytes),
    }
    ins
}

/// What the records of a base's version say about it: its length, leading
/// magic and footer against the digests written with it, with the footer
/// copy naming the changed byte (`store::base::footer_copy::check_recorded`,
/// the check every reader of the store makes). `dump` and the decoder add
/// these to what the bytes alone show, so they agree with `verify`. Empty
/// for any other file, and for a base without a digest file.
pub fn recorded_problems(path: &Path, bytes: &[u8]) -> Vec<Problem> {
    use crate::store::base::{digests, footer_copy};
    if path.file_name().is_none_or(|n| n != crate::store::versions::layout::BASE) {
        return Vec::new();
    }
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    match digests::read(dir) {
        Ok(None) => Vec::new(),
        Ok(Some(d)) => match footer_copy::check_recorded(path, bytes, &d.base) {
            Ok(()) => Vec::new(),
            Err(damage) => vec![Problem {
                offset: damage.offset,
                class: "digest".into(),
                message: format!("at byte {}: {}", damage.offset, damage.message),
            }],
        },
        Err(e) => vec![Problem { offset: 0, class: "digests".into(), message: e.to_string() }],
    }
}

/// Marks the innermost span holding each problem's byte as bad, with the
/// problem's text, so the field shows ✗ wherever the spans are drawn.
pub fn mark_spans(spans: &mut [Span], problems: &[Problem]) {
    for p in problems {
        let inner = spans
            .iter()
            .enumerate()
            .filter(|(_, s)| s.contains(p.offset))
            .min_by_key(|(_, s)| s.len())
            .map(|(i, _)| i);
        if let Some(i) = inner {
            spans[i].reason.get_or_insert_with(|| p.message.clone());
        }
    }
}

/// Token bytes for display: valid UTF-8 as is, otherwise lossy.
fn show(token: &[u8]) -> String {
    String::from_utf8_lossy(token).into_owned()
}

/// Indices of the first `k` and last `k` of `n` items, without repeats.
fn ends(n: usize, k: usize) -> Vec<usize> {
    if n <= 2 * k {
        (0..n).collect()
    } else {
        (0..k).chain(n - k..n).collect()
    }
}
