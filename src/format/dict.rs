//! `.s.dict` `.p.dict` `.o.dict` `.g.dict` (COTD): a column's distinct tokens in
//! byte order, so a bound term becomes a dense id by binary search.
//!
//! Layout (reference §5, `docs/format.md`): 32-byte header, `ids[n]` (u32),
//! `bounds[n+1]` (absolute u64 file offsets), then the token bytes in id order.
//! We accept only the canonical layout every known writer produces (header
//! offsets at their computed values, bounds ending at the file's end), so
//! decode→encode is the identity on every file we accept.

use super::cursor::{Cursor, Decoded, RawSource};
use super::error::{ErrorKind, FormatError, Result};
use super::span::Role;
use super::{put_u32, put_u64, MAX_OFFSET};

pub const MAGIC: [u8; 4] = *b"COTD";
/// Written by factoidal's F* dict writer between 2026-05-09 and 2026-07-05.
pub const LEGACY_MAGIC: [u8; 4] = *b"COKD";
pub const HEADER_LEN: u64 = 32;

#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Dict {
    /// The header's pad word; writers put 0 there, readers ignore it.
    pub pad: u32,
    /// `ids[i]` = id of the token at sorted position i (identity for our writer).
    pub ids: Vec<u32>,
    /// Token bytes concatenated in id order.
    pub data: Vec<u8>,
    /// `ends[k]` = end of token k inside `data` (start is `ends[k-1]` or 0).
    pub ends: Vec<usize>,
}

impl Dict {
    /// Builds the canonical dictionary (id = rank) from tokens already sorted
    /// ascending and distinct.
    pub fn from_sorted<'a>(tokens: impl IntoIterator<Item = &'a [u8]>) -> Self {
        let mut d = Dict::default();
        let mut data = Vec::new();
        for t in tokens {
            data.extend_from_slice(t);
            d.ends.push(data.len());
        }
        d.data = data;
        d.ids = (0..d.ends.len() as u32).collect();
        d
    }
    pub fn len(&self) -> usize {
        self.ends.len()
    }
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }
    /// Token bytes of id `k`.
    pub fn token(&self, k: usize) -> &[u8] {
        let start = if k == 0 { 0 } else { self.ends[k - 1] };
        &self.data[start..self.ends[k]]
    }
    /// Token at sorted position `i`.
    pub fn sorted(&self, i: usize) -> &[u8] {
        self.token(self.ids[i] as usize)
    }
    /// The id of `token`, by binary search over the sorted positions.
    pub fn find(&self, token: &[u8]) -> Option<u32> {
        let (mut lo, mut hi) = (0usize, self.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.sorted(mid).cmp(token) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(self.ids[mid]),
            }
        }
        None
    }
    /// Tokens in id order.
    pub fn tokens(&self) -> impl Iterator<Item = &[u8]> + '_ {
        (0..self.len()).map(move |k| self.token(k))
    }
}

pub fn ids_offset() -> u64 {
    HEADER_LEN
}
pub fn bounds_offset(n: u64) -> u64 {
    HEADER_LEN + 4 * n
}
pub fn data_offset(n: u64) -> u64 {
    bounds_offset(n) + 8 * (n + 1)
}

/// The [`HEADER_LEN`] bytes before `ids[]` of a dictionary of `n` tokens laid
/// out as the writer lays it out (ids, then bounds, then token bytes).
pub fn encode_header(n: u32, pad: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN as usize);
    out.extend_from_slice(&MAGIC);
    put_u32(&mut out, 1);
    put_u32(&mut out, n);
    put_u32(&mut out, pad);
    put_u64(&mut out, ids_offset());
    put_u64(&mut out, bounds_offset(u64::from(n)));
    out
}

pub fn encode(d: &Dict) -> Vec<u8> {
    let n = d.len() as u64;
    let mut out = Vec::with_capacity((data_offset(n) as usize) + d.data.len());
    out.extend_from_slice(&encode_header(n as u32, d.pad));
    for &id in &d.ids {
        put_u32(&mut out, id);
    }
    let base = data_offset(n);
    put_u64(&mut out, base);
    for &e in &d.ends {
        put_u64(&mut out, base + e as u64);
    }
    out.extend_from_slice(&d.data);
    out
}

pub fn decode(bytes: &[u8]) -> Decoded<Dict> {
    super::cursor::decode_with(bytes, decode_inner)
}

const COKD_ADVICE: &str = "this .dict was written by a factoidal dict writer with the COKD bug (2026-05-09..07-05); rebuild it with `cottas-tui index`";

fn expect_offset(c: &mut Cursor<RawSource>, field: &str, at: u64, got: u64, want: u64) -> Result<()> {
    if got != want {
        let e = FormatError::structure(
            at,
            field,
            format!("expected {want} (the canonical layout for this token count), found {got}"),
        );
        return Err(c.fail(e));
    }
    Ok(())
}

/// The header of a dictionary: its token count and pad word, once the header
/// is canonical and the fixed-size arrays fit in the file.
/// The header's named spans, read from the header alone: the decoder view of
/// a multi-GB file shows these without decoding the rest.
pub fn header_spans(bytes: &[u8]) -> Vec<super::span::Span> {
    super::cursor::spans_of(bytes, header)
}

fn header(c: &mut Cursor<RawSource>) -> Result<(u64, u32)> {
    c.magic(MAGIC, &[(LEGACY_MAGIC, COKD_ADVICE)])?;
    c.version()?;
    let n = u64::from(c.u32("num_tokens", Role::Count)?);
    let pad = c.u32("pad", Role::Padding)?;
    let at = c.here();
    let ids_off = c.u64("ids_offset", Role::Offset)?;
    expect_offset(c, "ids_offset", at, ids_off, ids_offset())?;
    let at = c.here();
    let tok_off = c.u64("tokens_offset", Role::Offset)?;
    expect_offset(c, "tokens_offset", at, tok_off, bounds_offset(n))?;
    // Check the fixed-size arrays fit before reading either of them.
    let arrays = data_offset(n) - HEADER_LEN;
    c.need(arrays, "ids[] and bounds[]", Role::Payload)?;
    Ok((n, pad))
}

/// The token count from the header, for a reader that leaves the arrays in
/// place (a mapped sidecar). Reads only the first [`HEADER_LEN`] bytes of
/// `bytes` (the whole file, for its length).
pub fn decode_header(bytes: &[u8]) -> Result<u64> {
    super::cursor::read_unspanned(bytes, |c| Ok(header(c)?.0))
}

fn decode_inner(c: &mut Cursor<RawSource>) -> Result<Dict> {
    let (n, pad) = header(c)?;

    let ids_at = c.here();
    let ids = c.u32_array(n, "ids[]", Role::Value)?;
    let mut seen = vec![false; n as usize];
    for (i, &id) in ids.iter().enumerate() {
        if u64::from(id) >= n || std::mem::replace(&mut seen[id as usize], true) {
            let e = FormatError::structure(
                ids_at + 4 * i as u64,
                format!("ids[{i}]"),
                format!("{id} is out of range or repeated; ids[] must be a permutation of 0..{n}"),
            );
            return Err(c.fail(e));
        }
    }

    let bounds_at = c.here();
    let bounds = c.u64_array(n + 1, "bounds[]", Role::Offset)?;
    let file_len = c.file_len();
    let base = data_offset(n);
    if bounds[0] != base {
        let e = FormatError::structure(
            bounds_at,
            "bounds[0]",
            format!("expected {base} (end of bounds[]), found {}", bounds[0]),
        );
        return Err(c.fail(e));
    }
    for k in 0..n as usize {
        if bounds[k + 1] < bounds[k] || bounds[k + 1] > MAX_OFFSET {
            let e = FormatError::structure(
                bounds_at + 8 * (k as u64 + 1),
                format!("bounds[{}]", k + 1),
                format!("bounds must be non-decreasing: {} follows {}", bounds[k + 1], bounds[k]),
            );
            return Err(c.fail(e));
        }
    }
    let last = bounds[n as usize];
    if last > file_len {
        let e = FormatError::new(
            bounds_at + 8 * n,
            ErrorKind::Truncated { field: "tokens".into(), needed: last - base, file_len },
        );
        c.bad_span("tokens", base as usize, file_len as usize, Role::Payload, e.to_string());
        return Err(c.fail(e));
    }
    let (dstart, dend) = c.skip((last - base) as usize, "tokens", Role::Payload)?;
    let data = c.raw_bytes(dstart, dend).to_vec();
    let ends: Vec<usize> = bounds[1..].iter().map(|&b| (b - base) as usize).collect();
    let d = Dict { pad, ids, data, ends };
    if let Some(k) = (0..d.len()).find(|&k| std::str::from_utf8(d.token(k)).is_err()) {
        return Err(c.fail(FormatError::structure(bounds[k], format!("token[{k}]"), "not valid UTF-8")));
    }
    for i in 1..d.len() {
        if d.sorted(i - 1) >= d.sorted(i) {
            let k = d.ids[i] as usize;
            let e = FormatError::structure(
                bounds[k],
                format!("token[{k}]"),
                format!(
                    "tokens must be sorted and unique: sorted position {i} ({:?}) does not sort after position {} ({:?})",
                    String::from_utf8_lossy(d.sorted(i)),
                    i - 1,
                    String::from_utf8_lossy(d.sorted(i - 1)),
                ),
            );
            return Err(c.fail(e));
        }
    }
    c.expect_end()?;
    Ok(d)
}
