//! `.s.offsets` (COTS): each subject id's contiguous global row range, so a
//! bound subject narrows to the rows (and row groups) that hold it (reference §9).
//!
//! Correct only when each subject's rows are contiguous (SPOG order). The
//! decoder checks what it can alone: ranges inside the row count and pairwise
//! disjoint. `verify` checks the ranges against the rows themselves.

use super::cursor::{Cursor, Decoded, RawSource};
use super::error::{FormatError, Result};
use super::span::Role;
use super::{put_u32, put_u64};

pub const MAGIC: [u8; 4] = *b"COTS";
pub const HEADER_LEN: u64 = 16;

#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct SOffsets {
    pub num_rows_total: u32,
    /// Global `[start, end)` per subject id; `(0, 0)` for a subject never seen.
    pub ranges: Vec<(u64, u64)>,
}

impl SOffsets {
    /// The subject id of each of `rows` rows from global row `start`, read off
    /// the ranges alone (no cell is decoded). Works when subject ids follow row
    /// order, as every known writer's do; `None` otherwise, or when a row is in
    /// no range. Ranges are disjoint (the decoder checks), so a range holding a
    /// row names that row's subject.
    pub fn ids_for_rows(&self, start: u64, rows: usize) -> Option<Vec<u32>> {
        let mut id = self.ranges.partition_point(|r| r.1 <= start);
        let mut out = Vec::with_capacity(rows);
        for r in start..start + rows as u64 {
            while self.ranges.get(id)?.1 <= r {
                id += 1;
            }
            if self.ranges[id].0 > r {
                return None;
            }
            out.push(id as u32);
        }
        Some(out)
    }
}

/// The [`HEADER_LEN`] bytes before the ranges.
pub fn encode_header(num_subjects: u32, num_rows_total: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN as usize);
    out.extend_from_slice(&MAGIC);
    put_u32(&mut out, 1);
    put_u32(&mut out, num_subjects);
    put_u32(&mut out, num_rows_total);
    out
}

pub fn encode(s: &SOffsets) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN as usize + 16 * s.ranges.len());
    out.extend_from_slice(&encode_header(s.ranges.len() as u32, s.num_rows_total));
    for &(a, b) in &s.ranges {
        put_u64(&mut out, a);
        put_u64(&mut out, b);
    }
    out
}

pub fn decode(bytes: &[u8]) -> Decoded<SOffsets> {
    super::cursor::decode_with(bytes, decode_inner)
}

/// The header's named spans, read from the header alone: the decoder view of
/// a multi-GB file shows these without decoding the rest.
pub fn header_spans(bytes: &[u8]) -> Vec<super::span::Span> {
    super::cursor::spans_of(bytes, header)
}

fn header(c: &mut Cursor<RawSource>) -> Result<(u64, u32)> {
    c.magic(MAGIC, &[])?;
    c.version()?;
    let n = u64::from(c.u32("num_subjects", Role::Count)?);
    let total = c.u32("num_rows_total", Role::Count)?;
    Ok((n, total))
}

/// `(num_subjects, num_rows_total)`, once the file is exactly as long as they
/// say. Reads only the first [`HEADER_LEN`] bytes of `bytes` (the whole file).
pub fn decode_header(bytes: &[u8]) -> Result<(u64, u32)> {
    super::cursor::read_unspanned(bytes, |c| {
        let (n, total) = header(c)?;
        c.need(16 * n, "ranges[]", Role::Payload)?;
        c.skip(16 * n as usize, "ranges[]", Role::Payload)?;
        c.expect_end()?;
        Ok((n, total))
    })
}

fn decode_inner(c: &mut Cursor<RawSource>) -> Result<SOffsets> {
    let (n, total) = header(c)?;
    let at = c.here();
    let flat = c.u64_array(n.saturating_mul(2), "ranges[]", Role::Payload)?;
    let ranges: Vec<(u64, u64)> = flat.chunks_exact(2).map(|r| (r[0], r[1])).collect();
    for (i, &(a, b)) in ranges.iter().enumerate() {
        if a > b || b > u64::from(total) {
            let e = FormatError::structure(
                at + 16 * i as u64,
                format!("ranges[{i}]"),
                format!("[{a}, {b}) is not a range inside the {total} rows"),
            );
            return Err(c.fail(e));
        }
    }
    let mut nonempty: Vec<(u64, u64, usize)> =
        ranges.iter().enumerate().filter(|(_, r)| r.0 < r.1).map(|(i, r)| (r.0, r.1, i)).collect();
    // Writers emit ranges in row order already; sort only when they did not.
    if !nonempty.windows(2).all(|w| w[0] <= w[1]) {
        nonempty.sort_unstable();
    }
    for w in nonempty.windows(2) {
        if w[1].0 < w[0].1 {
            let e = FormatError::structure(
                at + 16 * w[1].2 as u64,
                format!("ranges[{}]", w[1].2),
                format!(
                    "[{}, {}) overlaps subject {}'s range [{}, {})",
                    w[1].0, w[1].1, w[0].2, w[0].0, w[0].1
                ),
            );
            return Err(c.fail(e));
        }
    }
    c.expect_end()?;
    Ok(SOffsets { num_rows_total: total, ranges })
}
