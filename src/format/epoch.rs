//! `data.compacted-epoch` (CEP1): "every delta batch with db_epoch ≤ this value
//! is already folded into this version's base" (reference §12, §13.4).
//!
//! A marker that exists but does not decode is an error, never "absent": treating
//! it as absent would re-apply batches the base already contains.

use super::cursor::{CodePointSource, Cursor, Decoded, RawSource, Source};
use super::error::{FormatError, Result};
use super::span::Role;
use super::transport::{Sink, Transport};

pub const MAGIC: [u8; 4] = *b"CEP1";
/// Raw file length: magic, version, length, epoch, checksum.
pub const FILE_LEN: u64 = 24;
pub const BODY_LEN: u32 = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EpochMarker {
    pub epoch: u64,
    pub transport: Transport,
}

impl EpochMarker {
    pub fn new(epoch: u64) -> Self {
        EpochMarker { epoch, transport: Transport::Raw }
    }
}

pub fn encode(m: &EpochMarker) -> Vec<u8> {
    let mut s = Sink::new(m.transport);
    s.bytes(&MAGIC);
    s.u32(1);
    s.u32(BODY_LEN);
    let body = s.len();
    s.u64(m.epoch);
    let sum = s.checksum(body, s.len());
    s.u32(sum);
    s.finish()
}

/// Decodes a marker, detecting the legacy transport when the raw reading fails.
pub fn decode(bytes: &[u8]) -> Decoded<EpochMarker> {
    let raw = decode_with(&RawSource(bytes), Transport::Raw);
    if raw.ok() || bytes.iter().all(|&b| b < 0x80) {
        return raw;
    }
    let (src, valid) = CodePointSource::new(bytes);
    if valid == bytes.len() {
        let legacy = decode_with(&src, Transport::LegacyCodePoints);
        if legacy.ok() {
            return legacy;
        }
    }
    raw
}

fn decode_with<S: Source>(src: &S, transport: Transport) -> Decoded<EpochMarker> {
    let mut c = Cursor::new(src, true);
    let result = decode_inner(&mut c, transport);
    Decoded { result, spans: c.spans }
}

fn decode_inner<S: Source>(c: &mut Cursor<S>, transport: Transport) -> Result<EpochMarker> {
    c.magic(MAGIC, &[])?;
    c.version()?;
    let at = c.here();
    let len = c.u32("length", Role::Length)?;
    if len != BODY_LEN {
        let e = FormatError::structure(
            at,
            "length",
            format!("the body is one u64, so the length must be 8, found {len}"),
        );
        return Err(c.fail(e));
    }
    let body = c.pos();
    let epoch = c.u64("epoch", Role::Value)?;
    let computed = c.source().checksum(body, c.pos());
    let at = c.here();
    let stored = c.u32("checksum", Role::Checksum)?;
    if stored != computed {
        let e = FormatError::new(
            at,
            super::error::ErrorKind::Checksum { field: "checksum".into(), stored, computed },
        );
        return Err(c.fail(e));
    }
    c.expect_end()?;
    Ok(EpochMarker { epoch, transport })
}
