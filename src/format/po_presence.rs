//! `.po.presence` (COPO): per row group, the sorted distinct (predicate, object)
//! id pairs, so a bound p+o pattern skips row groups lacking the pair even when
//! both terms occur there separately (reference §8).

use super::cursor::{offsets_to_indices, Cursor, Decoded, RawSource};
use super::error::{FormatError, Result};
use super::span::Role;
use super::{put_u32, put_u64};

pub const MAGIC: [u8; 4] = *b"COPO";
pub const HEADER_LEN: u64 = 20;

#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct PoPresence {
    pub num_rgs: u32,
    pub pred_dict_size: u32,
    pub obj_dict_size: u32,
    /// `starts[rg]..starts[rg+1]` indexes `pairs` (R+1 entries).
    pub starts: Vec<usize>,
    /// `p_id << 32 | o_id`, strictly ascending within a row group.
    pub pairs: Vec<u64>,
}

pub fn pair(p: u32, o: u32) -> u64 {
    (u64::from(p) << 32) | u64::from(o)
}

impl PoPresence {
    /// Whether row group `rg` has a row with predicate `p` and object `o`.
    pub fn contains(&self, rg: u32, p: u32, o: u32) -> bool {
        if rg >= self.num_rgs || p >= self.pred_dict_size || o >= self.obj_dict_size {
            return false;
        }
        let r = rg as usize;
        self.pairs[self.starts[r]..self.starts[r + 1]].binary_search(&pair(p, o)).is_ok()
    }
    /// Builds from per-row-group sorted distinct pair lists.
    pub fn from_groups(pred_dict_size: u32, obj_dict_size: u32, groups: &[Vec<u64>]) -> Self {
        let mut starts = vec![0];
        let mut pairs = Vec::new();
        for g in groups {
            pairs.extend_from_slice(g);
            starts.push(pairs.len());
        }
        PoPresence { num_rgs: groups.len() as u32, pred_dict_size, obj_dict_size, starts, pairs }
    }
}

pub fn data_offset(num_rgs: u64) -> u64 {
    HEADER_LEN + 8 * (num_rgs + 1)
}

/// The [`HEADER_LEN`] bytes before `rg_offsets`.
pub fn encode_header(num_rgs: u32, pred_dict_size: u32, obj_dict_size: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN as usize);
    out.extend_from_slice(&MAGIC);
    put_u32(&mut out, 1);
    put_u32(&mut out, num_rgs);
    put_u32(&mut out, pred_dict_size);
    put_u32(&mut out, obj_dict_size);
    out
}

pub fn encode(p: &PoPresence) -> Vec<u8> {
    let base = data_offset(u64::from(p.num_rgs));
    let mut out = Vec::with_capacity(base as usize + 8 * p.pairs.len());
    out.extend_from_slice(&encode_header(p.num_rgs, p.pred_dict_size, p.obj_dict_size));
    for &s in &p.starts {
        put_u64(&mut out, base + 8 * s as u64);
    }
    for &pr in &p.pairs {
        put_u64(&mut out, pr);
    }
    out
}

pub fn decode(bytes: &[u8]) -> Decoded<PoPresence> {
    super::cursor::decode_with(bytes, decode_inner)
}

/// The header's named spans, read from the header alone: the decoder view of
/// a multi-GB file shows these without decoding the rest.
pub fn header_spans(bytes: &[u8]) -> Vec<super::span::Span> {
    super::cursor::spans_of(bytes, header)
}

fn header(c: &mut Cursor<RawSource>) -> Result<(u32, u32, u32)> {
    c.magic(MAGIC, &[])?;
    c.version()?;
    let num_rgs = c.u32("num_rgs", Role::Count)?;
    let pred_dict_size = c.u32("pred_dict_size", Role::Count)?;
    let obj_dict_size = c.u32("obj_dict_size", Role::Count)?;
    Ok((num_rgs, pred_dict_size, obj_dict_size))
}

/// `(num_rgs, pred_dict_size, obj_dict_size)`, once `rg_offsets[]` fits in
/// the file. Reads only the first [`HEADER_LEN`] bytes of `bytes`.
pub fn decode_header(bytes: &[u8]) -> Result<(u32, u32, u32)> {
    super::cursor::read_unspanned(bytes, |c| {
        let h = header(c)?;
        c.need(8 * (u64::from(h.0) + 1), "rg_offsets[]", Role::Offset)?;
        Ok(h)
    })
}

fn decode_inner(c: &mut Cursor<RawSource>) -> Result<PoPresence> {
    let (num_rgs, pred_dict_size, obj_dict_size) = header(c)?;
    let at = c.here();
    let offs = c.u64_array(u64::from(num_rgs) + 1, "rg_offsets[]", Role::Offset)?;
    let base = data_offset(u64::from(num_rgs));
    let starts = offsets_to_indices(c, "rg_offsets[]", at, &offs, base, 8)?;
    let total = *starts.last().unwrap_or(&0) as u64;
    let data_at = c.here();
    let pairs = c.u64_array(total, "pairs", Role::Payload)?;
    for rg in 0..num_rgs as usize {
        for i in starts[rg]..starts[rg + 1] {
            let (p, o) = ((pairs[i] >> 32) as u32, pairs[i] as u32);
            let detail = if i > starts[rg] && pairs[i - 1] >= pairs[i] {
                Some(format!("pairs must ascend strictly within row group {rg}"))
            } else if p >= pred_dict_size || o >= obj_dict_size {
                Some(format!(
                    "pair (p={p}, o={o}) is outside the dictionaries ({pred_dict_size} predicates, {obj_dict_size} objects)"
                ))
            } else {
                None
            };
            if let Some(detail) = detail {
                let e = FormatError::structure(data_at + 8 * i as u64, format!("pairs[{i}]"), detail);
                return Err(c.fail(e));
            }
        }
    }
    c.expect_end()?;
    Ok(PoPresence { num_rgs, pred_dict_size, obj_dict_size, starts, pairs })
}
