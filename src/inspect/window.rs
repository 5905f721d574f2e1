//! Spans of a large sidecar near one offset, so the decoder view shows a
//! multi-GB file by reading only its header and the bytes around the cursor.
//!
//! Decoding a 100M-quad store's `.s.dict` whole is 20 million tokens and
//! 60 million spans (gigabytes, seconds); a person looks at one screen of it.
//! The five sidecar kinds are fixed layouts: where element `i` of each array
//! lies is arithmetic on the header's counts (the offsets the `format`
//! modules define), and a dictionary's tokens are found by a binary search
//! of its `bounds[]`. Parquet bases and delta logs are not windowed here.

use std::ops::Range;

use crate::format::kind::FileKind;
use crate::format::span::{Role, Span};
use crate::format::{dict, p_offsets, po_presence, presence, s_offsets};

/// Bytes on each side of the cursor that get spans.
pub const REACH: u64 = 4 << 10;

/// A large sidecar's header, decoded once.
#[derive(Clone, Debug)]
pub struct Windowed {
    pub kind: FileKind,
    pub header: Vec<Span>,
    dims: Dims,
}

#[derive(Clone, Copy, Debug)]
enum Dims {
    Dict { n: u64 },
    Presence { rgs: u64, tokens: u64 },
    POffsets { cells: u64 },
    PoPresence { rgs: u64 },
    SOffsets { n: u64 },
}

impl Windowed {
    /// `None` for kinds that are not windowed; `Err` (the header's problem)
    /// when the header does not decode.
    pub fn open(kind: FileKind, bytes: &[u8]) -> Option<Result<Windowed, String>> {
        let (dims, header) = match kind {
            FileKind::Dict => {
                (dict::decode_header(bytes).map(|n| Dims::Dict { n }), dict::header_spans(bytes))
            }
            FileKind::Presence => (
                presence::decode_header(bytes)
                    .map(|(r, t)| Dims::Presence { rgs: u64::from(r), tokens: u64::from(t) }),
                presence::header_spans(bytes),
            ),
            FileKind::POffsets => (
                p_offsets::decode_header(bytes)
                    .map(|(r, p)| Dims::POffsets { cells: u64::from(r) * u64::from(p) }),
                p_offsets::header_spans(bytes),
            ),
            FileKind::PoPresence => (
                po_presence::decode_header(bytes).map(|(r, _, _)| Dims::PoPresence { rgs: u64::from(r) }),
                po_presence::header_spans(bytes),
            ),
            FileKind::SOffsets => (
                s_offsets::decode_header(bytes).map(|(n, _)| Dims::SOffsets { n }),
                s_offsets::header_spans(bytes),
            ),
            _ => return None,
        };
        Some(dims.map(|dims| Windowed { kind, header, dims }).map_err(|e| e.to_string()))
    }

    /// The header's spans, then the spans of the elements overlapping
    /// `REACH` bytes either side of `around`; and the byte range covered.
    pub fn spans(&self, bytes: &[u8], around: u64) -> (Range<u64>, Vec<Span>) {
        let len = bytes.len() as u64;
        let window = around.saturating_sub(REACH)..around.saturating_add(REACH).min(len);
        let mut out = self.header.clone();
        let w = &window;
        match self.dims {
            Dims::Dict { n } => {
                let ids = dict::ids_offset();
                fixed(
                    &mut out,
                    w,
                    bytes,
                    ids,
                    n,
                    4,
                    Role::Value,
                    |i| format!("ids[{i}]"),
                    |b| u32v(b).to_string(),
                );
                let bounds = dict::bounds_offset(n);
                fixed(
                    &mut out,
                    w,
                    bytes,
                    bounds,
                    n + 1,
                    8,
                    Role::Offset,
                    |k| format!("bounds[{k}]"),
                    |b| u64v(b).to_string(),
                );
                tokens(&mut out, w, bytes, n);
            }
            Dims::Presence { rgs, tokens } => bit_rows(&mut out, w, rgs, tokens),
            Dims::POffsets { cells } => {
                let index = p_offsets::HEADER_LEN;
                fixed(
                    &mut out,
                    w,
                    bytes,
                    index,
                    cells + 1,
                    8,
                    Role::Offset,
                    |c| format!("index[{c}]"),
                    |b| u64v(b).to_string(),
                );
                let data = p_offsets::data_offset(cells);
                let rows = len.saturating_sub(data) / 4;
                fixed(
                    &mut out,
                    w,
                    bytes,
                    data,
                    rows,
                    4,
                    Role::Payload,
                    |i| format!("rows[{i}]"),
                    |b| u32v(b).to_string(),
                );
            }
            Dims::PoPresence { rgs } => {
                let offsets = po_presence::HEADER_LEN;
                fixed(
                    &mut out,
                    w,
                    bytes,
                    offsets,
                    rgs + 1,
                    8,
                    Role::Offset,
                    |k| format!("rg_offsets[{k}]"),
                    |b| u64v(b).to_string(),
                );
                let data = po_presence::data_offset(rgs);
                let pairs = len.saturating_sub(data) / 8;
                fixed(
                    &mut out,
                    w,
                    bytes,
                    data,
                    pairs,
                    8,
                    Role::Payload,
                    |i| format!("pairs[{i}]"),
                    |b| {
                        let v = u64v(b);
                        format!("p {} o {}", v >> 32, v & 0xffff_ffff)
                    },
                );
            }
            Dims::SOffsets { n } => {
                let at = s_offsets::HEADER_LEN;
                fixed(
                    &mut out,
                    w,
                    bytes,
                    at,
                    2 * n,
                    8,
                    Role::Payload,
                    |k| format!("ranges[{}].{}", k / 2, if k % 2 == 0 { "start" } else { "end" }),
                    |b| u64v(b).to_string(),
                );
            }
        }
        for s in &mut out {
            s.range.end = s.range.end.min(len);
        }
        (window, out)
    }
}

fn u32v(b: &[u8]) -> u32 {
    u32::from_le_bytes(b.try_into().unwrap_or([0; 4]))
}

fn u64v(b: &[u8]) -> u64 {
    u64::from_le_bytes(b.try_into().unwrap_or([0; 8]))
}

fn span(name: String, range: Range<u64>, role: Role, value: Option<String>) -> Span {
    Span { name, range, role, value, reason: None }
}

/// Elements `i` of an array of `count` elements of `size` bytes at `start`
/// that overlap `w`, with their values where the whole element is in the file.
#[allow(clippy::too_many_arguments)]
fn fixed(
    out: &mut Vec<Span>,
    w: &Range<u64>,
    bytes: &[u8],
    start: u64,
    count: u64,
    size: u64,
    role: Role,
    name: impl Fn(u64) -> String,
    value: impl Fn(&[u8]) -> String,
) {
    let end = start.saturating_add(count.saturating_mul(size));
    if w.end <= start || w.start >= end {
        return;
    }
    let first = w.start.saturating_sub(start) / size;
    let last = (w.end.min(end) - start).div_ceil(size).min(count);
    for i in first..last {
        let at = start + i * size;
        let v = bytes.get(at as usize..(at + size) as usize).map(&value);
        out.push(span(name(i), at..at + size, role, v));
    }
}

/// The tokens of a dictionary overlapping `w`, found by binary search of
/// `bounds[]` (absolute offsets, non-decreasing in a valid file).
fn tokens(out: &mut Vec<Span>, w: &Range<u64>, bytes: &[u8], n: u64) {
    let bound = |k: u64| -> Option<u64> {
        let at = (dict::bounds_offset(n) + 8 * k) as usize;
        bytes.get(at..at + 8).map(u64v)
    };
    // The first token whose end lies past the window's start.
    let (mut lo, mut hi) = (0u64, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match bound(mid + 1) {
            Some(end) if end <= w.start => lo = mid + 1,
            _ => hi = mid,
        }
    }
    let mut k = lo;
    while k < n {
        let (Some(a), Some(b)) = (bound(k), bound(k + 1)) else { break };
        if a >= w.end {
            break;
        }
        if a <= b {
            let text = bytes.get(a as usize..b as usize).map(|t| String::from_utf8_lossy(t).into_owned());
            let text = text.map(|t| {
                if t.chars().count() > 80 {
                    format!("{}…", t.chars().take(80).collect::<String>())
                } else {
                    t
                }
            });
            out.push(span(format!("token[{k}]"), a..b, Role::Payload, text));
        }
        k += 1;
    }
}

/// A presence bitmap's row groups overlapping `w`: row group `rg` is bits
/// rg·n .. (rg+1)·n, so neighbouring rows can share a byte.
fn bit_rows(out: &mut Vec<Span>, w: &Range<u64>, rgs: u64, tokens: u64) {
    let start = presence::HEADER_LEN;
    if tokens == 0 || w.end <= start {
        return;
    }
    let bit_of = |off: u64| (off.saturating_sub(start)) * 8;
    let first = bit_of(w.start) / tokens;
    let last = (bit_of(w.end).div_ceil(tokens)).min(rgs);
    for rg in first..last {
        let (a, b) = (start + rg * tokens / 8, start + ((rg + 1) * tokens).div_ceil(8));
        let value = format!("{tokens} bits from bit {}", rg * tokens);
        out.push(span(format!("bitmap.row_group[{rg}]"), a..b, Role::Payload, Some(value)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every windowed span lies inside a span of the same role that the full
    /// decoder records (which has one span per array), wherever the window is.
    #[test]
    fn windowed_spans_are_the_full_decoders_spans() {
        let rows: Vec<[String; 4]> = (0..300)
            .map(|i| {
                [format!("<s{:03}>", i / 3), format!("<p{}>", i % 5), format!("\"{i}\""), "DEFAULT".into()]
            })
            .collect();
        let sizes = [100, 100, 100];
        let sc = crate::store::sidecars::build(&rows, &sizes);
        for (suffix, bytes) in sc.files() {
            let kind = crate::format::kind::detect(&format!("data.cottas{suffix}"), &bytes).unwrap();
            let full = crate::inspect::inspect_as(kind, &bytes).spans;
            let win = Windowed::open(kind, &bytes).unwrap().unwrap();
            for around in [0, 40, bytes.len() as u64 / 2, bytes.len() as u64 - 1] {
                let (_, spans) = win.spans(&bytes, around);
                assert!(spans.len() > win.header.len(), "{suffix} at {around}: no element spans");
                for s in &spans {
                    let inside = full.iter().any(|f| {
                        f.role == s.role && f.range.start <= s.range.start && s.range.end <= f.range.end
                    });
                    assert!(
                        inside,
                        "{suffix} at {around}: {} {:?} is in no span of the full decode",
                        s.name, s.range
                    );
                }
            }
        }
    }
}
