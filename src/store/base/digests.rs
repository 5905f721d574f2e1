//! Content digests of a version's files (`cottas-tui.digests.json`), so a
//! damaged byte is refused when read instead of answered from.
//!
//! The COTTAS sidecars carry no checksum, and a Parquet page without a CRC
//! can decompress into wrong cells. Whenever this program writes a version
//! (import, compaction, `index`, repair) it records XXH64 digests of every
//! sidecar, of the Parquet footer and of every column chunk. On open, a
//! sidecar whose bytes do not match is not used (the read path then prunes
//! less and stays correct); a footer that does not match makes the base
//! unopenable; a column chunk is checked the first time it is decoded, and a
//! mismatch is an error naming the chunk's byte range. Versions written by
//! other producers have no digest file and are read as before.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::format::blocks::{Table, TableBuilder, BLOCK_SIZE};
use crate::store::fsutil::write_whole;
use crate::store::sidecars::checked::map_file;
use crate::store::sidecars::SUFFIXES;
use crate::store::versions::layout::BASE;
use crate::store::StoreError;

pub const DIGESTS: &str = "cottas-tui.digests.json";
/// Per-block digests of the sidecars (`format::blocks`, docs/format.md §12.1.1).
pub const BLOCKS: &str = "cottas-tui.blocks";
pub const SCHEMA: &str = "cottas-tui.digests/1";

pub fn xxh64(bytes: &[u8]) -> String {
    format!("{:016x}", twox_hash::XxHash64::oneshot(0, bytes))
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Span {
    pub offset: u64,
    pub len: u64,
    pub xxh64: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(from = "ChunkRecord", into = "ChunkRecord")]
pub struct Chunk {
    pub rg: usize,
    pub col: usize,
    pub span: Span,
}

/// A chunk's JSON object, its span's fields inline. Spelled out rather than
/// `#[serde(flatten)]`, which buffers every object of the list before
/// reading it: a 100M-quad base lists 3,256 chunks, and that buffering was
/// most of the 1.6 ms this file took to read on every open.
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ChunkRecord {
    rg: usize,
    col: usize,
    offset: u64,
    len: u64,
    xxh64: String,
}

impl From<ChunkRecord> for Chunk {
    fn from(r: ChunkRecord) -> Chunk {
        Chunk { rg: r.rg, col: r.col, span: Span { offset: r.offset, len: r.len, xxh64: r.xxh64 } }
    }
}

impl From<Chunk> for ChunkRecord {
    fn from(c: Chunk) -> ChunkRecord {
        ChunkRecord { rg: c.rg, col: c.col, offset: c.span.offset, len: c.span.len, xxh64: c.span.xxh64 }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct BaseDigests {
    pub len: u64,
    /// The leading `PAR1`.
    pub head: Span,
    /// The footer region (metadata, its length, the trailing `PAR1`).
    pub footer: Span,
    /// Between the last column chunk and the footer (page indexes), if any.
    pub between: Option<Span>,
    pub chunks: Vec<Chunk>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Digests {
    pub schema: String,
    pub algorithm: String,
    pub base: BaseDigests,
    /// By sidecar suffix (`.s.dict`, …): length and digest of the whole file.
    pub sidecars: BTreeMap<String, Span>,
}

/// The footer region of a Parquet file: the metadata, its length and `PAR1`,
/// as `format::parquet::framing` finds it.
pub fn footer_span(bytes: &[u8]) -> Option<(u64, u64)> {
    let (start, len) = crate::format::parquet::framing(bytes).1.ok()?;
    Some((start, len + 8))
}

fn span_of(bytes: &[u8], offset: u64, len: u64) -> Option<Span> {
    let end = offset.checked_add(len)? as usize;
    let slice = bytes.get(offset as usize..end)?;
    Some(Span { offset, len, xxh64: xxh64(slice) })
}

/// Digests of the base in `dir` as it is now, and of its sidecars as
/// `tables` found them (each sidecar is read once for both files).
fn compute(dir: &Path, tables: &[Table]) -> Result<Digests, StoreError> {
    let base_path = dir.join(BASE);
    // Mapped: the base can be larger than the memory limit.
    let mapped = map_file(&base_path).map_err(|e| StoreError::io(&base_path, e))?;
    let bytes: &[u8] = (*mapped).as_ref();
    let (fo, fl) = footer_span(bytes)
        .ok_or_else(|| StoreError::format_anywhere(&base_path, "no Parquet footer (`PAR1`) at the end"))?;
    let footer = span_of(bytes, fo, fl).expect("footer_span is inside the file");
    let base = crate::store::base::Base::open(&base_path)?;
    let head = span_of(bytes, 0, 4).expect("a footer means at least 12 bytes");
    // Column chunks are read, not hashed through the mapping: only the
    // footer's pages of a multi-GB base then count as this process's memory.
    let file = std::fs::File::open(&base_path).map_err(|e| StoreError::io(&base_path, e))?;
    let mut buf = Vec::new();
    let mut read_span = |offset: u64, len: u64| -> Result<Option<Span>, StoreError> {
        if offset.checked_add(len).is_none_or(|end| end > bytes.len() as u64) {
            return Ok(None);
        }
        buf.resize(len as usize, 0);
        std::os::unix::fs::FileExt::read_exact_at(&file, &mut buf, offset)
            .map_err(|e| StoreError::io(&base_path, e))?;
        Ok(Some(Span { offset, len, xxh64: xxh64(&buf) }))
    };
    let mut chunks = Vec::new();
    for (rg, meta) in base.metadata().row_groups().iter().enumerate() {
        for (col, c) in meta.columns().iter().enumerate() {
            let (offset, len) = c.byte_range();
            let span = read_span(offset, len)?.ok_or_else(|| {
                StoreError::format(
                    &base_path,
                    offset,
                    format!("row group {rg} column {col} lies outside the file"),
                )
            })?;
            chunks.push(Chunk { rg, col, span });
        }
    }
    let last_chunk_end = chunks.iter().map(|c| c.span.offset + c.span.len).max().unwrap_or(4);
    let between = if last_chunk_end < fo { read_span(last_chunk_end, fo - last_chunk_end)? } else { None };
    let sidecars = tables
        .iter()
        .map(|t| {
            let span = Span { offset: 0, len: t.file_len, xxh64: format!("{:016x}", t.file_xxh64) };
            (SUFFIXES[t.sidecar as usize].to_string(), span)
        })
        .collect();
    Ok(Digests {
        schema: SCHEMA.into(),
        algorithm: "xxh64".into(),
        base: BaseDigests { len: bytes.len() as u64, head, footer, between, chunks },
        sidecars,
    })
}

/// Computes and writes `dir/cottas-tui.blocks`, the footer copy
/// (`cottas-tui.footer`), then `dir/cottas-tui.digests.json`, each whole or
/// not at all (a kill leaves
/// the old file or the new one, never a part). The block table goes first:
/// a reader uses it only when the JSON's whole-file digest of the same
/// sidecar agrees with the one the table was made for.
pub fn write(dir: &Path) -> Result<Digests, StoreError> {
    let tables = sidecar_tables(dir)?;
    let path = dir.join(BLOCKS);
    write_whole(&path, &crate::format::blocks::encode(&tables)).map_err(|e| StoreError::write(&path, e))?;
    let d = compute(dir, &tables)?;
    write_footer_copy(dir, &d.base)?;
    let path = dir.join(DIGESTS);
    let mut text = serde_json::to_string_pretty(&d).unwrap_or_default();
    text.push('\n');
    write_whole(&path, text.as_bytes()).map_err(|e| StoreError::write(&path, e))?;
    Ok(d)
}

/// Writes the base's footer copy (`store::base::footer_copy`): its bytes
/// from the end of the last column chunk, which `d` records.
fn write_footer_copy(dir: &Path, d: &BaseDigests) -> Result<(), StoreError> {
    let base_path = dir.join(BASE);
    let mapped = map_file(&base_path).map_err(|e| StoreError::io(&base_path, e))?;
    let from = d.between.as_ref().unwrap_or(&d.footer).offset;
    crate::store::base::footer_copy::write(dir, (*mapped).as_ref(), from)
}

/// The whole-file digest and block table of each sidecar in `dir`, as
/// they are now: one pass over each file, read in pieces (a 100M-quad
/// store's `.s.presence` alone is 2 GB; mapped, it would all count as this
/// process's memory).
fn sidecar_tables(dir: &Path) -> Result<Vec<Table>, StoreError> {
    let mut tables = Vec::new();
    for (i, suffix) in SUFFIXES.iter().enumerate() {
        let path = dir.join(format!("{BASE}{suffix}"));
        if let Some(table) = file_table(&path, i as u32).map_err(|e| StoreError::io(&path, e))? {
            tables.push(table);
        }
    }
    Ok(tables)
}

/// The whole-file digest and block table of the file at `path`, read in
/// pieces; `None` when there is no such file.
pub fn file_table(path: &Path, sidecar: u32) -> std::io::Result<Option<Table>> {
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut piece = vec![0u8; 256 * BLOCK_SIZE as usize];
    let mut table = TableBuilder::new(sidecar);
    loop {
        let n = read_full(&mut file, &mut piece)?;
        table.feed(&piece[..n]);
        if n < piece.len() {
            break;
        }
    }
    Ok(Some(table.finish()))
}

/// Whether the file at `path` is the one `span` records (length and
/// digest), read in pieces; `None` when there is no such file.
pub fn file_matches(span: &Span, path: &Path) -> std::io::Result<Option<bool>> {
    Ok(file_table(path, 0)?
        .map(|t| t.file_len == span.len && u64::from_str_radix(&span.xxh64, 16).ok() == Some(t.file_xxh64)))
}

/// Fills `buf` from `r` unless the file ends first; returns the bytes read.
pub fn read_full(r: &mut impl std::io::Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// The digest file of `dir`, if any. One that exists but does not parse is
/// an error: it is never taken as "no digests".
pub fn read(dir: &Path) -> Result<Option<Digests>, StoreError> {
    let path = dir.join(DIGESTS);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(StoreError::io(&path, e)),
    };
    let d: Digests = serde_json::from_slice(&bytes).map_err(|e| {
        StoreError::format(
            &path,
            e.column() as u64,
            format!("does not parse as {SCHEMA} (line {}): {e}", e.line()),
        )
    })?;
    if d.schema != SCHEMA || d.algorithm != "xxh64" {
        return Err(StoreError::format_anywhere(
            &path,
            format!("schema {:?} / algorithm {:?}: expected {SCHEMA} / xxh64", d.schema, d.algorithm),
        ));
    }
    Ok(Some(d))
}

/// Checks `bytes` against a recorded span digest.
pub fn matches(span: &Span, bytes: &[u8]) -> bool {
    span.len == bytes.len() as u64 && span.xxh64 == xxh64(bytes)
}
