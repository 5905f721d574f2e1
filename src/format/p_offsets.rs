//! `.p.offsets` (COTO): for each (row group, predicate id), the ascending
//! row-group-local row positions holding that predicate (reference §7).
//!
//! The index holds absolute file offsets (the writer's and reader's reading,
//! not the F* banner's count-based one).

use super::cursor::{offsets_to_indices, Cursor, Decoded, RawSource};
use super::error::{FormatError, Result};
use super::span::Role;
use super::{put_u32, put_u64};

pub const MAGIC: [u8; 4] = *b"COTO";
pub const HEADER_LEN: u64 = 16;

#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct POffsets {
    pub num_rgs: u32,
    pub num_preds: u32,
    /// `starts[c]..starts[c+1]` indexes `rows` for cell c = rg·P + p (R·P+1 entries).
    pub starts: Vec<usize>,
    pub rows: Vec<u32>,
}

impl POffsets {
    pub fn cells(&self) -> u64 {
        u64::from(self.num_rgs) * u64::from(self.num_preds)
    }
    /// Local row positions of predicate `p` in row group `rg`.
    pub fn rows_of(&self, rg: u32, p: u32) -> &[u32] {
        if rg >= self.num_rgs || p >= self.num_preds {
            return &[];
        }
        let c = (rg as usize) * self.num_preds as usize + p as usize;
        &self.rows[self.starts[c]..self.starts[c + 1]]
    }
    /// Builds from per-cell row lists in (rg major, p minor) order.
    pub fn from_cells(num_rgs: u32, num_preds: u32, cells: &[Vec<u32>]) -> Self {
        let mut starts = Vec::with_capacity(cells.len() + 1);
        let mut rows = Vec::new();
        starts.push(0);
        for cell in cells {
            rows.extend_from_slice(cell);
            starts.push(rows.len());
        }
        POffsets { num_rgs, num_preds, starts, rows }
    }
}

pub fn data_offset(cells: u64) -> u64 {
    HEADER_LEN + 8 * (cells + 1)
}

/// The [`HEADER_LEN`] bytes before the index.
pub fn encode_header(num_rgs: u32, num_preds: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN as usize);
    out.extend_from_slice(&MAGIC);
    put_u32(&mut out, 1);
    put_u32(&mut out, num_rgs);
    put_u32(&mut out, num_preds);
    out
}

pub fn encode(p: &POffsets) -> Vec<u8> {
    let base = data_offset(p.cells());
    let mut out = Vec::with_capacity(base as usize + 4 * p.rows.len());
    out.extend_from_slice(&encode_header(p.num_rgs, p.num_preds));
    for &s in &p.starts {
        put_u64(&mut out, base + 4 * s as u64);
    }
    for &r in &p.rows {
        put_u32(&mut out, r);
    }
    out
}

pub fn decode(bytes: &[u8]) -> Decoded<POffsets> {
    super::cursor::decode_with(bytes, decode_inner)
}

/// The header's named spans, read from the header alone: the decoder view of
/// a multi-GB file shows these without decoding the rest.
pub fn header_spans(bytes: &[u8]) -> Vec<super::span::Span> {
    super::cursor::spans_of(bytes, header)
}

fn header(c: &mut Cursor<RawSource>) -> Result<(u32, u32)> {
    c.magic(MAGIC, &[])?;
    c.version()?;
    let num_rgs = c.u32("num_rgs", Role::Count)?;
    let num_preds = c.u32("num_preds", Role::Count)?;
    Ok((num_rgs, num_preds))
}

/// `(num_rgs, num_preds)`, once `index[]` fits in the file. Reads only the
/// first [`HEADER_LEN`] bytes of `bytes` (the whole file, for its length).
pub fn decode_header(bytes: &[u8]) -> Result<(u32, u32)> {
    super::cursor::read_unspanned(bytes, |c| {
        let (rgs, preds) = header(c)?;
        let cells = u64::from(rgs) * u64::from(preds);
        c.need(8 * (cells + 1), "index[]", Role::Offset)?;
        Ok((rgs, preds))
    })
}

fn decode_inner(c: &mut Cursor<RawSource>) -> Result<POffsets> {
    let (num_rgs, num_preds) = header(c)?;
    let cells = u64::from(num_rgs) * u64::from(num_preds);
    let index_at = c.here();
    let index = c.u64_array(cells + 1, "index[]", Role::Offset)?;
    let base = data_offset(cells);
    let starts = offsets_to_indices(c, "index[]", index_at, &index, base, 4)?;
    let total = *starts.last().unwrap_or(&0) as u64;
    let data_at = c.here();
    let rows = c.u32_array(total, "rows", Role::Payload)?;
    for cell in 0..cells as usize {
        let run = &rows[starts[cell]..starts[cell + 1]];
        if let Some(i) = run.windows(2).position(|w| w[0] >= w[1]) {
            let at = data_at + 4 * (starts[cell] + i + 1) as u64;
            let e = FormatError::structure(
                at,
                format!("rows of cell {cell}"),
                format!("row positions must ascend strictly: {} follows {}", run[i + 1], run[i]),
            );
            return Err(c.fail(e));
        }
    }
    c.expect_end()?;
    Ok(POffsets { num_rgs, num_preds, starts, rows })
}
