//! Pure byte codecs, one module per on-disk file kind of a COTTAS store.
//!
//! Nothing here does I/O: encoders return bytes, decoders take a byte slice and
//! return the value plus the named byte spans they read ([`span::Span`]), so
//! `dump`, `verify`, the read path and the TUI all agree on what every byte is.
//! Decoders never panic and never allocate more than the input can justify.
//! The normative description of every layout is `docs/format.md`.

#[cfg(feature = "full")]
pub mod blocks;
pub mod checksum;
pub mod cursor;
pub mod deltalog;
pub mod dict;
pub mod epoch;
pub mod error;
#[cfg(feature = "full")]
pub mod footer_copy;
pub mod kind;
pub mod p_offsets;
pub mod page_header;
#[cfg(feature = "full")]
pub mod parquet;
pub mod po_presence;
pub mod presence;
pub mod s_offsets;
pub mod span;
pub mod term;
pub mod thrift;
pub mod transport;

pub use cursor::Decoded;
pub use error::{ErrorKind, FormatError, SUPPORTED_VERSION};
pub use span::{Role, Span};

/// Little-endian writers shared by the encoders.
pub(crate) fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}
pub(crate) fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Reference §0.1: one OCaml reader keeps offsets in 63-bit ints, so any u64
/// offset with the top bit set is treated as corrupt everywhere.
pub(crate) const MAX_OFFSET: u64 = (1 << 63) - 1;
