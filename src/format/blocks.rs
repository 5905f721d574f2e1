//! `cottas-tui.blocks` (CTBK): an XXH64 digest of every 4 KiB block of every
//! sidecar of a version, so a read checks only the blocks it touches.
//!
//! The whole-file digests in `cottas-tui.digests.json` make a reader hash a
//! sidecar whole before trusting any byte of it, which is O(store size) on
//! the first lookup of every process. With this table a lookup hashes the
//! few blocks its binary searches land in (docs/format.md §12.1.1). The
//! JSON file is unchanged, so releases that do not know this file keep
//! reading the version as before.
//!
//! Layout, little-endian:
//!
//! ```text
//! 0   magic "CTBK"  u32 version=1  u32 block_size  u32 num_entries
//! 16  entries[num_entries], 48 bytes each:
//!       u32 sidecar (index into the 11 suffixes)  u32 pad=0
//!       u64 file_len  u64 file_xxh64  u64 table_offset  u64 num_blocks
//!       u64 table_xxh64
//!     u64 header_xxh64   (of bytes 0 .. 16 + 48·num_entries)
//!     tables: num_blocks u64 digests per entry, at table_offset
//! ```

use super::cursor::{Cursor, Decoded, RawSource};
use super::error::{FormatError, Result};
use super::span::Role;
use super::{put_u32, put_u64};

pub const MAGIC: [u8; 4] = *b"CTBK";
pub const HEADER_LEN: u64 = 16;
pub const ENTRY_LEN: u64 = 48;
/// The block size every writer uses: small enough that a binary search over
/// a dictionary hashes a few hundred KiB at most, large enough that the table
/// is 1/512 of the sidecars.
pub const BLOCK_SIZE: u32 = 4096;
/// How many sidecars a version can have (reference §4).
pub const MAX_ENTRIES: u32 = 11;

/// One sidecar's table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Index into the sidecar suffixes (`.s.dict` = 0 … `.s.offsets` = 10).
    pub sidecar: u32,
    pub file_len: u64,
    /// The whole-file digest, as `cottas-tui.digests.json` records it: the
    /// table belongs to the file with this digest and no other.
    pub file_xxh64: u64,
    pub table_offset: u64,
    pub num_blocks: u64,
    pub table_xxh64: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blocks {
    pub block_size: u32,
    pub entries: Vec<Entry>,
}

pub fn xxh64(bytes: &[u8]) -> u64 {
    twox_hash::XxHash64::oneshot(0, bytes)
}

/// How many blocks of `block_size` cover `len` bytes.
pub fn num_blocks(len: u64, block_size: u32) -> u64 {
    len.div_ceil(u64::from(block_size.max(1)))
}

/// The digest table of one file's bytes.
pub fn table_of(bytes: &[u8], block_size: u32) -> Vec<u64> {
    bytes.chunks(block_size as usize).map(xxh64).collect()
}

/// One sidecar's table, made from its bytes (see [`encode`]).
pub struct Table {
    pub sidecar: u32,
    pub file_len: u64,
    pub file_xxh64: u64,
    pub digests: Vec<u64>,
}

impl Table {
    pub fn of(sidecar: u32, bytes: &[u8]) -> Self {
        Table {
            sidecar,
            file_len: bytes.len() as u64,
            file_xxh64: xxh64(bytes),
            digests: table_of(bytes, BLOCK_SIZE),
        }
    }
}

/// A [`Table`] made from a file's bytes given in order, so a large sidecar is
/// hashed without being held (or mapped) whole.
pub struct TableBuilder {
    sidecar: u32,
    len: u64,
    whole: twox_hash::XxHash64,
    digests: Vec<u64>,
}

impl TableBuilder {
    pub fn new(sidecar: u32) -> Self {
        TableBuilder { sidecar, len: 0, whole: twox_hash::XxHash64::with_seed(0), digests: Vec::new() }
    }

    /// The next bytes of the file. Every piece but the last must be a
    /// multiple of [`BLOCK_SIZE`] long, so pieces end on block boundaries.
    pub fn feed(&mut self, piece: &[u8]) {
        debug_assert_eq!(self.len % u64::from(BLOCK_SIZE), 0, "pieces end on block boundaries");
        std::hash::Hasher::write(&mut self.whole, piece);
        self.digests.extend(table_of(piece, BLOCK_SIZE));
        self.len += piece.len() as u64;
    }

    pub fn finish(self) -> Table {
        Table {
            sidecar: self.sidecar,
            file_len: self.len,
            file_xxh64: std::hash::Hasher::finish(&self.whole),
            digests: self.digests,
        }
    }
}

/// The file holding `tables`, in the order given.
pub fn encode(tables: &[Table]) -> Vec<u8> {
    let header_end = HEADER_LEN + ENTRY_LEN * tables.len() as u64;
    let mut out = Vec::new();
    out.extend_from_slice(&MAGIC);
    put_u32(&mut out, 1);
    put_u32(&mut out, BLOCK_SIZE);
    put_u32(&mut out, tables.len() as u32);
    let mut table_offset = header_end + 8;
    let mut table_bytes = Vec::new();
    for t in tables {
        let start = table_bytes.len();
        for d in &t.digests {
            put_u64(&mut table_bytes, *d);
        }
        put_u32(&mut out, t.sidecar);
        put_u32(&mut out, 0);
        put_u64(&mut out, t.file_len);
        put_u64(&mut out, t.file_xxh64);
        put_u64(&mut out, table_offset);
        put_u64(&mut out, t.digests.len() as u64);
        put_u64(&mut out, xxh64(&table_bytes[start..]));
        table_offset += 8 * t.digests.len() as u64;
    }
    let header = xxh64(&out);
    put_u64(&mut out, header);
    out.extend_from_slice(&table_bytes);
    out
}

pub fn decode(bytes: &[u8]) -> Decoded<Blocks> {
    let src = RawSource(bytes);
    let mut c = Cursor::new(&src, true);
    let result = decode_inner(&mut c, bytes);
    Decoded { result, spans: c.spans }
}

/// Decodes only the header and entries (what a reader needs on open); the
/// tables stay where they are and are checked per entry on first use.
pub fn decode_header(bytes: &[u8]) -> Result<Blocks> {
    let src = RawSource(bytes);
    let mut c = Cursor::new(&src, false);
    header(&mut c, bytes)
}

fn decode_inner(c: &mut Cursor<RawSource>, bytes: &[u8]) -> Result<Blocks> {
    let b = header(c, bytes)?;
    for (i, e) in b.entries.iter().enumerate() {
        c.set_pos(e.table_offset as usize);
        c.skip(8 * e.num_blocks as usize, &format!("table[{i}]"), Role::Payload)?;
        let table = c.raw_bytes(e.table_offset as usize, (e.table_offset + 8 * e.num_blocks) as usize);
        if xxh64(table) != e.table_xxh64 {
            let detail = format!("table {i} does not match its recorded digest {:016x}", e.table_xxh64);
            return Err(c.fail(FormatError::structure(e.table_offset, format!("table[{i}]"), detail)));
        }
    }
    c.expect_end()?;
    Ok(b)
}

fn header(c: &mut Cursor<RawSource>, bytes: &[u8]) -> Result<Blocks> {
    c.magic(MAGIC, &[])?;
    c.version()?;
    let at = c.here();
    let block_size = c.u32("block_size", Role::Value)?;
    if block_size == 0 || !block_size.is_power_of_two() {
        let detail = format!("expected a power of two, found {block_size}");
        return Err(c.fail(FormatError::structure(at, "block_size", detail)));
    }
    let at = c.here();
    let n = c.u32("num_entries", Role::Count)?;
    if n > MAX_ENTRIES {
        let detail = format!("a version has at most {MAX_ENTRIES} sidecars, found {n}");
        return Err(c.fail(FormatError::structure(at, "num_entries", detail)));
    }
    c.need(ENTRY_LEN * u64::from(n) + 8, "entries[] and header_xxh64", Role::Payload)?;
    let mut entries = Vec::with_capacity(n as usize);
    let mut next_table = HEADER_LEN + ENTRY_LEN * u64::from(n) + 8;
    for i in 0..n {
        let e = entry(c, i, block_size, next_table)?;
        next_table = e.table_offset + 8 * e.num_blocks;
        entries.push(e);
    }
    let header_end = c.pos();
    let at = c.here();
    let stored = c.u64("header_xxh64", Role::Checksum)?;
    let computed = xxh64(&bytes[..header_end]);
    if stored != computed {
        let detail = format!("stored {stored:016x}, computed {computed:016x}: the header is damaged");
        return Err(c.fail(FormatError::structure(at, "header_xxh64", detail)));
    }
    if next_table != c.file_len() {
        let detail = format!("the tables end at {next_table}, the file at {}", c.file_len());
        return Err(c.fail(FormatError::structure(at, "tables", detail)));
    }
    Ok(Blocks { block_size, entries })
}

fn entry(c: &mut Cursor<RawSource>, i: u32, block_size: u32, expected_table: u64) -> Result<Entry> {
    let prefix = c.set_prefix(format!("entries[{i}]."));
    let at = c.here();
    let sidecar = c.u32("sidecar", Role::Value)?;
    c.u32("pad", Role::Padding)?;
    let file_len = c.u64("file_len", Role::Length)?;
    let file_xxh64 = c.u64("file_xxh64", Role::Checksum)?;
    let table_at = c.here();
    let table_offset = c.u64("table_offset", Role::Offset)?;
    let blocks_at = c.here();
    let num_blocks = c.u64("num_blocks", Role::Count)?;
    let table_xxh64 = c.u64("table_xxh64", Role::Checksum)?;
    c.set_prefix(prefix);
    let problem = if sidecar >= MAX_ENTRIES {
        Some((at, "sidecar", format!("expected a sidecar index below {MAX_ENTRIES}, found {sidecar}")))
    } else if table_offset != expected_table {
        let detail = format!("expected {expected_table} (tables follow each other), found {table_offset}");
        Some((table_at, "table_offset", detail))
    } else if num_blocks != self::num_blocks(file_len, block_size) {
        let want = self::num_blocks(file_len, block_size);
        Some((blocks_at, "num_blocks", format!("{file_len} bytes make {want} blocks, found {num_blocks}")))
    } else if num_blocks
        .checked_mul(8)
        .and_then(|t| t.checked_add(table_offset))
        .is_none_or(|end| end > c.file_len())
    {
        Some((blocks_at, "num_blocks", format!("{num_blocks} digests do not fit in the file")))
    } else {
        None
    };
    if let Some((at, field, detail)) = problem {
        return Err(c.fail(FormatError::structure(at, format!("entries[{i}].{field}"), detail)));
    }
    Ok(Entry { sidecar, file_len, file_xxh64, table_offset, num_blocks, table_xxh64 })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        let a = vec![7u8; 10_000];
        let b = b"short".to_vec();
        encode(&[Table::of(0, &a), Table::of(10, &b), Table::of(3, &[])])
    }

    #[test]
    fn a_table_fed_in_pieces_equals_one_made_whole() {
        let bytes: Vec<u8> = (0..3 * BLOCK_SIZE as usize + 123).map(|i| (i * 7 % 251) as u8).collect();
        for piece in [BLOCK_SIZE as usize, 2 * BLOCK_SIZE as usize, bytes.len()] {
            let mut b = TableBuilder::new(4);
            bytes.chunks(piece).for_each(|p| b.feed(p));
            let (fed, whole) = (b.finish(), Table::of(4, &bytes));
            assert_eq!(
                (fed.file_len, fed.file_xxh64, fed.digests),
                (whole.file_len, whole.file_xxh64, whole.digests)
            );
        }
    }

    #[test]
    fn round_trip_and_tables() {
        let bytes = sample();
        let b = decode(&bytes).result.unwrap();
        assert_eq!(b.block_size, BLOCK_SIZE);
        assert_eq!(b.entries.len(), 3);
        assert_eq!(b.entries[0].num_blocks, 3);
        assert_eq!(b.entries[1].num_blocks, 1);
        assert_eq!(b.entries[2].num_blocks, 0);
        let e = &b.entries[0];
        let first = u64::from_le_bytes(bytes[e.table_offset as usize..][..8].try_into().unwrap());
        assert_eq!(first, xxh64(&[7u8; 4096]));
        assert_eq!(decode_header(&bytes).unwrap(), b);
    }

    #[test]
    fn every_single_byte_flip_is_refused() {
        let bytes = sample();
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x10;
            assert!(decode(&bad).result.is_err(), "flip at {i} accepted");
        }
    }

    #[test]
    fn truncation_is_refused_never_a_panic() {
        let bytes = sample();
        for n in 0..bytes.len() {
            assert!(decode(&bytes[..n]).result.is_err(), "prefix {n} accepted");
            let _ = decode_header(&bytes[..n]);
        }
    }
}
