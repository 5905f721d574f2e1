//! Reading `data.cottas`: the file is mapped (memmap2) and row groups are
//! decoded one column at a time: straight to dictionary ids by
//! [`crate::store::base::column_ids`] where it applies, otherwise through the parquet crate, so
//! every encoding and codec DuckDB and pycottas produce (RLE_DICTIONARY,
//! DELTA_LENGTH_BYTE_ARRAY, PLAIN, snappy, bloom filters, three-column triple
//! files) reads the same way.

pub mod column_ids;
pub mod digests;
pub mod footer_copy;
pub mod writer;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use parquet::basic::Type as PhysicalType;
use parquet::column::reader::ColumnReader;
use parquet::data_type::ByteArray;
use parquet::file::metadata::ParquetMetaData;
use parquet::file::properties::ReaderProperties;
use parquet::file::reader::RowGroupReader;
use parquet::file::serialized_reader::SerializedRowGroupReader;
use parquet::file::statistics::Statistics;

use crate::format::parquet::{contained, pages, read_footer, read_recorded_footer, Footer};
use crate::format::term::DEFAULT_GRAPH;
use crate::store::error::StoreError;

/// A decoded column of one row group: the cells' token bytes.
pub type Column = Arc<Vec<ByteArray>>;

pub struct Base {
    path: PathBuf,
    /// The mapped file, as the parquet crate's row-group reader takes it.
    chunk_reader: Arc<Bytes>,
    props: Arc<ReaderProperties>,
    /// 4 for quads, 3 for pycottas triple files (graph = default for every row).
    num_columns: usize,
    rg_starts: Vec<u64>,
    file_len: u64,
    /// The mapped file, for digest checks.
    raw: Bytes,
    /// The validated footer: chunk ranges come from here.
    footer: Footer,
    /// Recorded digests of the column chunks in footer order (row group by
    /// row group; empty without a digest file), and whether each has been
    /// checked already (each is hashed once per process).
    chunk_digests: Vec<crate::store::base::digests::Span>,
    checked: Vec<std::sync::atomic::AtomicBool>,
}

impl Base {
    pub fn open(path: &Path) -> Result<Base, StoreError> {
        Base::open_checked(path, None)
    }

    /// Opens the base; with recorded digests, the file length, magic and
    /// footer are checked against them before the footer is parsed, and
    /// column chunks are checked when first decoded.
    pub fn open_checked(
        path: &Path,
        digests: Option<&crate::store::base::digests::BaseDigests>,
    ) -> Result<Base, StoreError> {
        let file = File::open(path).map_err(|e| StoreError::io(path, e))?;
        // SAFETY: version directories are immutable once published, and the
        // mapping is read-only; a concurrent truncation by another program
        // would be a violation of the store's contract.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| StoreError::io(path, e))?;
        let file_len = map.len() as u64;
        let bytes = Bytes::from_owner(map);
        let raw = bytes.clone();
        if let Some(d) = digests {
            footer_copy::check_recorded(path, &raw, d).map_err(|e| e.into_store_error(path))?;
        }
        // Every offset and length the parquet crate will follow, checked
        // first: its own decoder and accessors panic on some damaged footers.
        // The footer is decoded once, here; row groups are read from it.
        let footer = match digests {
            Some(d) if d.footer.offset + d.footer.len == file_len => {
                read_recorded_footer(&raw, d.footer.offset)
            }
            _ => read_footer(&raw),
        }
        .map_err(|(_, e)| StoreError::from_format(path, &e))?;
        let meta = footer.meta.clone();
        let names: Vec<&str> =
            meta.file_metadata().schema_descr().columns().iter().map(|c| c.name()).collect();
        let num_columns = match names.as_slice() {
            ["s", "p", "o", "g"] => 4,
            ["s", "p", "o"] => 3,
            other => {
                return Err(StoreError::format_anywhere(
                    path,
                    format!("a COTTAS base has columns s p o g (or s p o), found {}", other.join(" ")),
                ))
            }
        };
        for c in meta.file_metadata().schema_descr().columns() {
            if c.physical_type() != PhysicalType::BYTE_ARRAY {
                return Err(StoreError::format_anywhere(
                    path,
                    format!("column {} is not BYTE_ARRAY", c.name()),
                ));
            }
        }
        let mut rg_starts = vec![0u64];
        for rg in meta.row_groups() {
            let last = *rg_starts.last().unwrap_or(&0);
            rg_starts.push(last + rg.num_rows().max(0) as u64);
        }
        let chunk_digests = match digests {
            Some(d) => check_coverage(path, &meta, d)?,
            None => Vec::new(),
        };
        Ok(Base {
            path: path.to_path_buf(),
            chunk_reader: Arc::new(bytes),
            props: Arc::new(ReaderProperties::builder().set_read_bloom_filter(true).build()),
            num_columns,
            rg_starts,
            file_len,
            raw,
            footer,
            checked: chunk_digests.iter().map(|_| Default::default()).collect(),
            chunk_digests,
        })
    }

    /// The whole file's bytes, as mapped.
    pub fn raw_bytes(&self) -> &[u8] {
        &self.raw
    }

    /// A column chunk's bytes against its digest (once per chunk).
    fn check_chunk(&self, rg: usize, col: usize) -> Result<(), StoreError> {
        use std::sync::atomic::Ordering;
        let place = rg * self.num_columns + col;
        let Some(span) = self.chunk_digests.get(place) else { return Ok(()) };
        if self.checked[place].load(Ordering::Acquire) {
            return Ok(());
        }
        let bytes = self.raw.get(span.offset as usize..(span.offset + span.len) as usize).unwrap_or_default();
        if !crate::store::base::digests::matches(span, bytes) {
            return Err(StoreError::format(
                &self.path,
                span.offset,
                format!(
                    "row group {rg} column {col} (bytes {}..{}) does not match its recorded digest: the file is damaged",
                    span.offset,
                    span.offset + span.len
                ),
            ));
        }
        self.checked[place].store(true, Ordering::Release);
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The whole mapped file (for `Store::keep_mapped_pages_within_budget`).
    pub fn mapped_bytes(&self) -> &[u8] {
        &self.raw
    }
    /// `(start, len)` of a column chunk, validated against the file.
    pub fn chunk_range(&self, rg: usize, col: usize) -> (u64, u64) {
        self.footer.chunk(rg, col)
    }
    pub fn metadata(&self) -> &ParquetMetaData {
        &self.footer.meta
    }
    pub fn file_len(&self) -> u64 {
        self.file_len
    }
    pub fn num_columns(&self) -> usize {
        self.num_columns
    }
    pub fn num_row_groups(&self) -> usize {
        self.rg_starts.len() - 1
    }
    pub fn num_rows(&self) -> u64 {
        *self.rg_starts.last().unwrap_or(&0)
    }
    /// Global row number of row group `rg`'s first row.
    pub fn rg_start(&self, rg: usize) -> u64 {
        self.rg_starts[rg]
    }
    /// The row group holding row `row` (the last one for a row past the end).
    pub fn row_group_of(&self, row: u64) -> usize {
        self.rg_starts
            .partition_point(|&start| start <= row)
            .saturating_sub(1)
            .min(self.num_row_groups().saturating_sub(1))
    }
    pub fn rg_rows(&self, rg: usize) -> usize {
        (self.rg_starts[rg + 1] - self.rg_starts[rg]) as usize
    }
    /// The largest row group's row count.
    pub fn rg_rows_max(&self) -> usize {
        (0..self.num_row_groups()).map(|i| self.rg_rows(i)).max().unwrap_or(0)
    }
    /// Row-group sizes in footer order.
    pub fn rg_sizes(&self) -> Vec<usize> {
        (0..self.num_row_groups()).map(|i| self.rg_rows(i)).collect()
    }

    fn row_group(&self, rg: usize) -> Result<Box<dyn RowGroupReader + '_>, StoreError> {
        let at = self.footer.chunk(rg, 0).0;
        let refused = || {
            StoreError::format(&self.path, at, format!("row group {rg}: the parquet library gave up on it"))
        };
        contained(|| self.open_row_group(rg))
            .map_err(|_| refused())?
            .map_err(|e| StoreError::parquet(&self.path, format!("row group {rg} does not open"), e))
    }

    /// The parquet crate's reader of row group `rg` (reading its bloom filters).
    fn open_row_group(&self, rg: usize) -> parquet::errors::Result<Box<dyn RowGroupReader + '_>> {
        let meta = self.footer.meta.row_group(rg);
        let reader =
            SerializedRowGroupReader::new(self.chunk_reader.clone(), meta, None, self.props.clone())?;
        Ok(Box::new(reader))
    }

    /// Decodes column `col` (0 s, 1 p, 2 o, 3 g) of row group `rg`.
    pub fn read_column(&self, rg: usize, col: usize) -> Result<Column, StoreError> {
        let rows = self.rg_rows(rg);
        if col == 3 && self.num_columns == 3 {
            return Ok(self.default_column(rows));
        }
        self.check_chunk(rg, col)?;
        self.check_pages(rg, col)?;
        let group = self.row_group(rg)?;
        let reader = group
            .get_column_reader(col)
            .map_err(|e| StoreError::parquet(&self.path, format!("row group {rg} column {col}"), e))?;
        let ColumnReader::ByteArrayColumnReader(mut r) = reader else {
            return Err(StoreError::format_anywhere(&self.path, format!("column {col} is not BYTE_ARRAY")));
        };
        let mut values = Vec::with_capacity(rows);
        let mut defs = Vec::with_capacity(rows);
        let read = contained(|| r.read_records(rows, Some(&mut defs), None, &mut values));
        let (records, _, _) = match read {
            Ok(r) => r.map_err(|e| {
                StoreError::parquet(&self.path, format!("row group {rg} column {col} pages"), e)
            })?,
            Err(_) => {
                let at = self.footer.chunk(rg, col).0;
                return Err(StoreError::format(
                    &self.path,
                    at,
                    format!("row group {rg} column {col}: the pages do not decode (the parquet library gave up on them)"),
                ));
            }
        };
        if records != rows || values.len() != rows {
            let at = self.footer.chunk(rg, col).0;
            return Err(StoreError::format(
                &self.path,
                at,
                format!(
                    "row group {rg} column {col}: {} non-null values in {records} records, the footer says {rows} rows (null cells are not allowed)",
                    values.len()
                ),
            ));
        }
        Ok(Arc::new(values))
    }

    /// Walks the page headers of a chunk with our own decoder before the
    /// parquet crate reads them, so a damaged header is reported with its
    /// byte offset and what was expected.
    fn check_pages(&self, rg: usize, col: usize) -> Result<(), StoreError> {
        let (start, len) = self.footer.chunk(rg, col);
        let name =
            format!("row_group[{rg}].{}", crate::store::sidecars::COLUMNS.get(col).copied().unwrap_or("?"));
        for page in pages(&self.raw, start, start + len).named(&name) {
            page.map_err(|e| StoreError::from_format(&self.path, &e))?;
        }
        Ok(())
    }

    /// Column `col` of row group `rg` as ids through `lookup`, by the fast
    /// chunk decoder ([`crate::store::base::column_ids`]). `Ok(None)`: the fast path does not
    /// apply; decode with [`Base::read_column`], which also reports damage.
    pub fn read_ids(
        &self,
        rg: usize,
        col: usize,
        lookup: &mut dyn FnMut(&[u8]) -> Option<u32>,
    ) -> Result<Option<Vec<u32>>, StoreError> {
        self.read_ids_where(rg, col, None, lookup)
    }

    /// [`Base::read_ids`] for the cells at `rows` only (ascending local row
    /// numbers), in that order.
    pub fn read_ids_at(
        &self,
        rg: usize,
        col: usize,
        rows: &[u32],
        lookup: &mut dyn FnMut(&[u8]) -> Option<u32>,
    ) -> Result<Option<Vec<u32>>, StoreError> {
        self.read_ids_where(rg, col, Some(rows), lookup)
    }

    fn read_ids_where(
        &self,
        rg: usize,
        col: usize,
        want: Option<&[u32]>,
        lookup: &mut dyn FnMut(&[u8]) -> Option<u32>,
    ) -> Result<Option<Vec<u32>>, StoreError> {
        let rows = want.map_or(self.rg_rows(rg), <[u32]>::len);
        if col == 3 && self.num_columns == 3 {
            return Ok(lookup(DEFAULT_GRAPH.as_bytes()).map(|id| vec![id; rows]));
        }
        self.check_chunk(rg, col)?;
        let meta = self.metadata().row_group(rg).column(col);
        let (start, len) = self.footer.chunk(rg, col);
        let Some(bytes) = self.raw.get(start as usize..(start + len) as usize) else { return Ok(None) };
        let descr = meta.column_descr();
        let info = crate::store::base::column_ids::ChunkInfo {
            bytes,
            codec: meta.compression(),
            rows: self.rg_rows(rg),
            max_def_level: descr.max_def_level(),
            max_rep_level: descr.max_rep_level(),
        };
        Ok(match want {
            None => crate::store::base::column_ids::decode_ids(&info, lookup),
            Some(at) => crate::store::base::column_ids::decode_ids_at(&info, at, lookup),
        })
    }

    fn default_column(&self, rows: usize) -> Column {
        Arc::new(vec![ByteArray::from(DEFAULT_GRAPH.as_bytes().to_vec()); rows])
    }

    /// Chunk min/max statistics of a column, when the writer stored them.
    pub fn min_max(&self, rg: usize, col: usize) -> Option<(Vec<u8>, Vec<u8>)> {
        if col >= self.num_columns {
            return None;
        }
        match self.metadata().row_group(rg).column(col).statistics()? {
            Statistics::ByteArray(s) => Some((s.min_bytes_opt()?.to_vec(), s.max_bytes_opt()?.to_vec())),
            _ => None,
        }
    }

    /// Whether a column chunk's bloom filter rules `token` out (`Some(false)`),
    /// may contain it (`Some(true)`), or there is no usable filter (`None`).
    pub fn bloom_may_contain(&self, rg: usize, col: usize, token: &[u8]) -> Option<bool> {
        if col >= self.num_columns {
            return None;
        }
        let group = contained(|| self.open_row_group(rg)).ok()?.ok()?;
        let filter = group.get_column_bloom_filter(col)?;
        // A damaged filter (one with no blocks) panics inside the crate; it
        // then prunes nothing, which costs speed and never a row.
        contained(|| filter.check(&ByteArray::from(token.to_vec()))).ok()
    }
}

/// Every column chunk of the footer has a digest, and the page-index region
/// has one when the file has such a region: a digest file that lost an entry
/// must not leave bytes unchecked. Returns the chunks' digests in footer
/// order.
fn check_coverage(
    path: &Path,
    meta: &ParquetMetaData,
    d: &crate::store::base::digests::BaseDigests,
) -> Result<Vec<crate::store::base::digests::Span>, StoreError> {
    let mut in_order = Vec::with_capacity(d.chunks.len());
    let mut last_end = 4u64;
    // Writers list chunks in footer order: the entry at the same position is
    // checked first, so a 100M-quad base (3,256 chunks) is not a quadratic
    // search on every open.
    let mut by_place: Option<std::collections::HashMap<(usize, usize), &crate::store::base::digests::Chunk>> =
        None;
    let mut position = 0;
    for (rg, g) in meta.row_groups().iter().enumerate() {
        for (col, c) in g.columns().iter().enumerate() {
            let (offset, len) = c.byte_range();
            last_end = last_end.max(offset + len);
            let in_place = d.chunks.get(position).filter(|x| x.rg == rg && x.col == col);
            position += 1;
            let recorded = in_place.or_else(|| {
                let map =
                    by_place.get_or_insert_with(|| d.chunks.iter().map(|c| ((c.rg, c.col), c)).collect());
                map.get(&(rg, col)).copied()
            });
            match recorded {
                Some(x) if x.span.offset == offset && x.span.len == len => in_order.push(x.span.clone()),
                _ => {
                    return Err(StoreError::format(
                        path,
                        offset,
                        format!("row group {rg} column {col} (bytes {offset}..{}) has no matching entry in the digest file", offset + len),
                    ))
                }
            }
        }
    }
    if d.chunks.len() != meta.row_groups().iter().map(|g| g.columns().len()).sum::<usize>() {
        return Err(StoreError::format_anywhere(
            path,
            "the digest file lists column chunks the footer does not have",
        ));
    }
    if last_end < d.footer.offset
        && d.between.as_ref().is_none_or(|b| b.offset != last_end || b.offset + b.len != d.footer.offset)
    {
        return Err(StoreError::format(
            path,
            last_end,
            "the bytes between the column chunks and the footer have no digest",
        ));
    }
    Ok(in_order)
}
