//! `cottas-tui.footer` (CTFC): a copy of the end of `data.cottas`, from the
//! end of its last column chunk to its last byte (page indexes, if any, the
//! Thrift footer, its length and `PAR1`), covered by its own digests.
//!
//! Everything else of a version can be derived again: the sidecars from the
//! base's rows, the digests from the files. The footer cannot: it is the only
//! record of where each column chunk lies, and a single changed byte in it
//! makes the whole base unreadable. It is a few KiB (3,256 column chunks of a
//! 100M-quad base: 0.5 MiB), so this program keeps a copy beside it
//! (docs/format.md §12.1.2) and `repair restore-footer` puts it back.
//!
//! Layout, little-endian:
//!
//! ```text
//! 0   magic "CTFC"  u32 version = 1
//! 8   u64 base_len      the length of the data.cottas this copy belongs to
//! 16  u64 copy_offset   where in data.cottas the copied bytes begin
//! 24  u64 copy_xxh64    digest of the copied bytes
//! 32  u64 header_xxh64  digest of bytes 0..32
//! 40  the copied bytes: base_len − copy_offset of them, ending in "PAR1"
//! ```

use super::cursor::{Cursor, Decoded, RawSource};
use super::error::{FormatError, Result};
use super::span::Role;
use super::{put_u32, put_u64};

pub const MAGIC: [u8; 4] = *b"CTFC";
pub const HEADER_LEN: u64 = 40;

/// The copy of a base's tail.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FooterCopy {
    pub base_len: u64,
    /// Where the copied bytes begin in the base (the end of its last column
    /// chunk).
    pub offset: u64,
    pub bytes: Vec<u8>,
}

impl FooterCopy {
    /// The copy's byte that stands for file offset `at` of the base.
    pub fn byte_at(&self, at: u64) -> Option<u8> {
        at.checked_sub(self.offset).and_then(|i| self.bytes.get(i as usize)).copied()
    }
}

fn xxh64(bytes: &[u8]) -> u64 {
    twox_hash::XxHash64::oneshot(0, bytes)
}

pub fn encode(copy: &FooterCopy) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN as usize + copy.bytes.len());
    out.extend_from_slice(&MAGIC);
    put_u32(&mut out, 1);
    put_u64(&mut out, copy.base_len);
    put_u64(&mut out, copy.offset);
    put_u64(&mut out, xxh64(&copy.bytes));
    let header = xxh64(&out);
    put_u64(&mut out, header);
    out.extend_from_slice(&copy.bytes);
    out
}

pub fn decode(bytes: &[u8]) -> Decoded<FooterCopy> {
    let src = RawSource(bytes);
    let mut c = Cursor::new(&src, true);
    let result = decode_inner(&mut c, bytes);
    Decoded { result, spans: c.spans }
}

fn decode_inner(c: &mut Cursor<RawSource>, bytes: &[u8]) -> Result<FooterCopy> {
    c.magic(MAGIC, &[])?;
    c.version()?;
    let base_len = c.u64("base_len", Role::Length)?;
    let offset_at = c.here();
    let offset = c.u64("copy_offset", Role::Offset)?;
    let copy_xxh64 = c.u64("copy_xxh64", Role::Checksum)?;
    let header_at = c.here();
    let stored = c.u64("header_xxh64", Role::Checksum)?;
    let computed = xxh64(&bytes[..32]);
    if stored != computed {
        let detail = format!("stored {stored:016x}, computed {computed:016x}: the header is damaged");
        return Err(c.fail(FormatError::structure(header_at, "header_xxh64", detail)));
    }
    // A base is at least `PAR1`, a footer of one byte, its length and `PAR1`.
    if offset < 4 || offset.checked_add(9).is_none_or(|end| end > base_len) {
        let detail = format!(
            "expected an offset from 4 to {} (base_len − 9), found {offset}",
            base_len.saturating_sub(9)
        );
        return Err(c.fail(FormatError::structure(offset_at, "copy_offset", detail)));
    }
    let len = base_len - offset;
    c.need(len, "copy", Role::Payload)?;
    let (start, end) = c.skip(len as usize, "copy", Role::Payload)?;
    let copied = c.raw_bytes(start, end);
    if xxh64(copied) != copy_xxh64 {
        let detail =
            format!("the copied bytes do not match their digest {copy_xxh64:016x}: the copy is damaged");
        return Err(c.fail(FormatError::structure(HEADER_LEN, "copy", detail)));
    }
    c.expect_end()?;
    Ok(FooterCopy { base_len, offset, bytes: copied.to_vec() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> FooterCopy {
        let mut bytes = b"page index, then a footer".to_vec();
        bytes.extend_from_slice(&25u32.to_le_bytes());
        bytes.extend_from_slice(b"PAR1");
        FooterCopy { base_len: 1000 + bytes.len() as u64, offset: 1000, bytes }
    }

    #[test]
    fn round_trip_and_spans() {
        let copy = sample();
        let bytes = encode(&copy);
        let d = decode(&bytes);
        assert_eq!(d.result.as_ref().unwrap(), &copy);
        let names: Vec<&str> = d.spans.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            ["magic", "version", "base_len", "copy_offset", "copy_xxh64", "header_xxh64", "copy"]
        );
        assert_eq!(copy.byte_at(1000), Some(b'p'));
        assert_eq!(copy.byte_at(999), None);
    }

    #[test]
    fn every_single_byte_flip_and_every_truncation_is_refused() {
        let bytes = encode(&sample());
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x01;
            let e = decode(&bad).result.expect_err(&format!("flip at {i} accepted"));
            assert!(e.offset <= bytes.len() as u64, "flip at {i}: {e}");
        }
        for n in 0..bytes.len() {
            assert!(decode(&bytes[..n]).result.is_err(), "prefix {n} accepted");
        }
    }
}
