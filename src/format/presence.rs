//! `.s.presence` `.p.presence` `.o.presence` `.g.presence` (COTP): one bit per
//! (row group, token id), so a bound term skips row groups that lack it.
//!
//! Bit k = rg·n + tok, byte k/8, least significant bit first (reference §6).

use super::cursor::{Cursor, Decoded, RawSource};
use super::error::{FormatError, Result};
use super::put_u32;
use super::span::Role;

pub const MAGIC: [u8; 4] = *b"COTP";
pub const HEADER_LEN: u64 = 16;

#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Presence {
    pub num_rgs: u32,
    pub num_tokens: u32,
    pub bits: Vec<u8>,
}

/// Bytes needed for `bits` bits.
pub fn bitmap_len(num_rgs: u32, num_tokens: u32) -> u64 {
    (u64::from(num_rgs) * u64::from(num_tokens)).div_ceil(8)
}

impl Presence {
    pub fn new(num_rgs: u32, num_tokens: u32) -> Self {
        Presence { num_rgs, num_tokens, bits: vec![0; bitmap_len(num_rgs, num_tokens) as usize] }
    }
    fn index(&self, rg: u32, tok: u32) -> Option<usize> {
        (rg < self.num_rgs && tok < self.num_tokens)
            .then(|| (u64::from(rg) * u64::from(self.num_tokens) + u64::from(tok)) as usize)
    }
    /// Whether row group `rg` holds token `tok`; out of range reads as absent.
    pub fn get(&self, rg: u32, tok: u32) -> bool {
        self.index(rg, tok).is_some_and(|k| self.bits[k / 8] & (1 << (k % 8)) != 0)
    }
    pub fn set(&mut self, rg: u32, tok: u32) {
        if let Some(k) = self.index(rg, tok) {
            self.bits[k / 8] |= 1 << (k % 8);
        }
    }
}

/// The [`HEADER_LEN`] bytes before the bitmap.
pub fn encode_header(num_rgs: u32, num_tokens: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN as usize);
    out.extend_from_slice(&MAGIC);
    put_u32(&mut out, 1);
    put_u32(&mut out, num_rgs);
    put_u32(&mut out, num_tokens);
    out
}

pub fn encode(p: &Presence) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN as usize + p.bits.len());
    out.extend_from_slice(&encode_header(p.num_rgs, p.num_tokens));
    out.extend_from_slice(&p.bits);
    out
}

pub fn decode(bytes: &[u8]) -> Decoded<Presence> {
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
    let num_tokens = c.u32("num_tokens", Role::Count)?;
    c.need(bitmap_len(num_rgs, num_tokens), "bitmap", Role::Payload)?;
    Ok((num_rgs, num_tokens))
}

/// `(num_rgs, num_tokens)`, once the file is exactly as long as they say.
/// Reads only the first [`HEADER_LEN`] bytes of `bytes` (the whole file).
pub fn decode_header(bytes: &[u8]) -> Result<(u32, u32)> {
    super::cursor::read_unspanned(bytes, |c| {
        let (rgs, tokens) = header(c)?;
        c.skip(bitmap_len(rgs, tokens) as usize, "bitmap", Role::Payload)?;
        c.expect_end()?;
        Ok((rgs, tokens))
    })
}

fn decode_inner(c: &mut Cursor<RawSource>) -> Result<Presence> {
    let (num_rgs, num_tokens) = header(c)?;
    let len = bitmap_len(num_rgs, num_tokens);
    let (start, end) = c.skip(len as usize, "bitmap", Role::Payload)?;
    let bits = c.raw_bytes(start, end).to_vec();
    let used = u64::from(num_rgs) * u64::from(num_tokens);
    if used % 8 != 0 {
        let last = bits[bits.len() - 1];
        if last >> (used % 8) != 0 {
            let e = FormatError::structure(
                c.byte_offset(end - 1),
                "bitmap",
                format!("padding bits after bit {used} must be zero, last byte is {last:#04x}"),
            );
            return Err(c.fail(e));
        }
    }
    c.expect_end()?;
    Ok(Presence { num_rgs, num_tokens, bits })
}
