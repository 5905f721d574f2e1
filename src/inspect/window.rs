//! Spans of a large sidecar near one offset, so the decoder view shows a
//! multi-GB file by reading only its header and the bytes around the cursor.
//!
//! Decoding a 100M-quad store's `.s.dict` whole is 20 million tokens and
//! 60 million spans (gigabytes, seconds); a person looks at one screen of it.
//! The five sidecar kinds are fixed layouts: where element `i` of each array
//! lies is arithmetic on the header's counts (the offsets the `format`
//! modules define), and a dictionary's tokens are found by a binary search
//! of its `bounds[]`. A Parquet base is windowed by its footer: every
//! column chunk is a span of the header (the tree lists them all), and only
//! the chunks and footer fields near the cursor have their pages and fields
//! decoded (a 100M-quad base has about 110,000 of those). Delta logs are not
//! windowed here.

use std::ops::Range;

use crate::format::kind::FileKind;
use crate::format::span::{Role, Span};
use crate::format::{dict, p_offsets, po_presence, presence, s_offsets};

/// Above this size a sidecar is shown windowed and any file is mapped
/// rather than read (the TUI's decoder), and the file listing checks a
/// sidecar's header only.
pub const LARGE_FILE: u64 = 32 << 20;

/// Above this size a base is shown windowed: decoding every page header of
/// a 23 MiB base (10M quads, 11,000 spans) took 40 ms, and it grows with
/// the base; its windowed tree still lists every row group and chunk.
pub const LARGE_BASE: u64 = 4 << 20;

/// Bytes on each side of the cursor that get spans.
pub const REACH: u64 = 4 << 10;

/// A column chunk's pages kept around the cursor's: a foreign writer may
/// cut a chunk into thousands of small pages.
const PAGES_KEPT: usize = 64;

/// Where a base's column chunks and footer lie, from its validated footer.
#[derive(Clone, Debug)]
struct BaseLayout {
    /// `(row_group[i].col, bytes)`, in file order.
    chunks: Vec<(String, Range<u64>)>,
    /// The Thrift metadata.
    footer: Range<u64>,
}

/// A large sidecar's header, decoded once.
#[derive(Clone, Debug)]
pub struct Windowed {
    pub kind: FileKind,
    pub header: Vec<Span>,
    dims: Dims,
}

#[derive(Clone, Debug)]
enum Dims {
    Base(Box<BaseLayout>),
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
            // A footer that does not validate is small to show whole: the
            // caller decodes the file as usual.
            FileKind::Parquet => return base(bytes).map(Ok),
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
        let mut window = around.saturating_sub(REACH)..around.saturating_add(REACH).min(len);
        let mut out = self.header.clone();
        let w = &window.clone();
        match &self.dims {
            Dims::Base(layout) => window = base_spans(&mut out, w, bytes, layout),
            &Dims::Dict { n } => {
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
            &Dims::Presence { rgs, tokens } => bit_rows(&mut out, w, rgs, tokens),
            &Dims::POffsets { cells } => {
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
            &Dims::PoPresence { rgs } => {
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
            &Dims::SOffsets { n } => {
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

impl Windowed {
    /// Whether every part of the file has a span in the header, so the tree
    /// lists the whole file and only the parts' insides come and go (a
    /// base); a sidecar's tree shows only the elements near the cursor.
    pub fn lists_whole_file(&self) -> bool {
        matches!(self.dims, Dims::Base(_))
    }
}

/// A base's framing and one span per column chunk, from its footer; `None`
/// when the footer does not validate.
fn base(bytes: &[u8]) -> Option<Windowed> {
    let footer = crate::format::parquet::read_footer(bytes).ok()?;
    let schema = footer.meta.file_metadata().schema_descr();
    let names: Vec<String> = schema.columns().iter().map(|c| c.name().to_string()).collect();
    let mut header = footer.spans.clone();
    let mut chunks = Vec::new();
    for (i, rg) in footer.meta.row_groups().iter().enumerate() {
        for (j, col) in rg.columns().iter().enumerate() {
            let name = names.get(j).cloned().unwrap_or_else(|| j.to_string());
            let s = super::parquet::chunk_span(i, &name, col);
            chunks.push((s.name.clone(), s.range.clone()));
            header.push(s);
        }
    }
    chunks.sort_by_key(|(_, r)| r.start);
    let footer = footer.metadata_start..(bytes.len() as u64).saturating_sub(8);
    Some(Windowed {
        kind: FileKind::Parquet,
        header,
        dims: Dims::Base(Box::new(BaseLayout { chunks, footer })),
    })
}

/// The pages of the column chunks and the footer fields that overlap `w`;
/// returns the byte range whose spans are then complete.
fn base_spans(out: &mut Vec<Span>, w: &Range<u64>, bytes: &[u8], layout: &BaseLayout) -> Range<u64> {
    let mut covered = w.clone();
    let first = layout.chunks.partition_point(|(_, r)| r.end <= w.start);
    for (name, chunk) in layout.chunks[first..].iter().take_while(|(_, r)| r.start < w.end) {
        let kept = chunk_pages(out, w, bytes, name, chunk);
        covered = covered.start.min(kept.start)..covered.end.max(kept.end);
    }
    if w.start < layout.footer.end && layout.footer.start < w.end {
        out.extend(crate::format::parquet::footer_fields_within(bytes, w.clone()).0);
    }
    covered
}

/// The pages of one column chunk (at most [`PAGES_KEPT`], around the first
/// one reaching `w`), and a bad span from where its page walk failed to the
/// chunk's end; returns the bytes they cover.
fn chunk_pages(
    out: &mut Vec<Span>,
    w: &Range<u64>,
    bytes: &[u8],
    name: &str,
    chunk: &Range<u64>,
) -> Range<u64> {
    let mut pages = Vec::new();
    let mut failed = None;
    let mut end = chunk.start;
    for (k, page) in crate::format::parquet::pages(bytes, chunk.start, chunk.end).named(name).enumerate() {
        match page {
            Ok(p) => {
                let (header, data) = (p.header_span(name, k), p.data_span(name, k));
                end = data.range.end;
                pages.push((header, p.fields, data));
            }
            Err(e) => {
                let reason = Some(e.to_string());
                let range = end..chunk.end.max(end);
                failed = Some(Span {
                    name: format!("{name}.page[{k}]"),
                    range,
                    role: Role::Payload,
                    value: None,
                    reason,
                });
            }
        }
    }
    let near = pages.partition_point(|(_, _, data)| data.range.end <= w.start);
    let from = near.saturating_sub(PAGES_KEPT / 2).min(pages.len().saturating_sub(PAGES_KEPT));
    let to = (from + PAGES_KEPT).min(pages.len());
    let whole = from == 0 && to == pages.len();
    let mut covered = if whole { chunk.clone() } else { w.clone() };
    for (header, fields, data) in pages.drain(from..to) {
        covered = covered.start.min(header.range.start)..covered.end.max(data.range.end);
        out.push(header);
        out.extend(fields);
        out.push(data);
    }
    out.extend(failed);
    covered
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

    /// A base's windowed header names every column chunk; near any cursor
    /// (a chunk's pages, the footer) every span of the full decode that holds
    /// the cursor is there, the same name and bytes, and nothing else is.
    #[test]
    fn a_windowed_base_has_the_full_decodes_spans_near_the_cursor() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data.cottas");
        let rows: Vec<[String; 4]> = (0..3000)
            .map(|i| [format!("<s{i:05}>"), format!("<p{}>", i % 7), format!("\"{i}\""), "DEFAULT".into()])
            .collect();
        let opts = crate::store::base::writer::BaseOptions { row_group_size: 500, ..Default::default() };
        crate::store::base::writer::write_base(&path, &rows, &opts).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let full = crate::inspect::inspect_as(FileKind::Parquet, &bytes).spans;
        let win = Windowed::open(FileKind::Parquet, &bytes).unwrap().unwrap();
        assert!(win.lists_whole_file());
        let chunks = win.header.iter().filter(|s| s.name.starts_with("row_group[")).count();
        assert_eq!(chunks, 6 * 4, "six row groups of four columns");
        let len = bytes.len() as u64;
        for around in [0, 4, len / 3, len / 2, len - 40, len - 1] {
            let (covered, spans) = win.spans(&bytes, around);
            assert!(covered.contains(&around), "{around} outside {covered:?}");
            for f in full.iter().filter(|f| f.range.contains(&around)) {
                let found = spans.iter().any(|s| s.name == f.name && s.range == f.range);
                assert!(found, "at {around}: {} {:?} missing", f.name, f.range);
            }
            for s in &spans {
                let known = full.iter().any(|f| f.name == s.name && f.range == s.range);
                assert!(known, "at {around}: {} {:?} is not a span of the full decode", s.name, s.range);
            }
            assert!(spans.len() < full.len(), "at {around}: the whole file was decoded");
        }
    }
}
