//! Reading `data.cottas`: the file is mapped (memmap2) and row groups are
//! decoded one column at a time through the parquet crate, so every encoding
//! DuckDB and pycottas produce (RLE_DICTIONARY, DELTA_LENGTH_BYTE_ARRAY, PLAIN,
//! bloom filters, three-column triple files) reads the same way.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use parquet::basic::Type as PhysicalType;
use parquet::column::reader::ColumnReader;
use parquet::data_type::ByteArray;
use parquet::file::metadata::ParquetMetaData;
use parquet::file::properties::ReaderProperties;
use parquet::file::reader::{FileReader, RowGroupReader};
use parquet::file::serialized_reader::{ReadOptionsBuilder, SerializedFileReader};
use parquet::file::statistics::Statistics;

use super::error::StoreError;
use crate::format::term::DEFAULT_GRAPH;

/// A decoded column of one row group: the cells' token bytes.
pub type Column = Arc<Vec<ByteArray>>;

pub struct Base {
    path: PathBuf,
    reader: SerializedFileReader<Bytes>,
    /// 4 for quads, 3 for pycottas triple files (graph = default for every row).
    num_columns: usize,
    rg_starts: Vec<u64>,
    file_len: u64,
}

impl Base {
    pub fn open(path: &Path) -> Result<Base, StoreError> {
        let file = File::open(path).map_err(|e| StoreError::io(path, e))?;
        // SAFETY: version directories are immutable once published, and the
        // mapping is read-only; a concurrent truncation by another program
        // would be a violation of the store's contract.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| StoreError::io(path, e))?;
        let file_len = map.len() as u64;
        let bytes = Bytes::from_owner(map);
        let props = ReaderProperties::builder().set_read_bloom_filter(true).build();
        let options = ReadOptionsBuilder::new().with_reader_properties(props).build();
        let reader = SerializedFileReader::new_with_options(bytes, options)
            .map_err(|e| StoreError::parquet(path, "the Parquet footer does not decode", e))?;
        let meta = reader.metadata();
        let names: Vec<&str> =
            meta.file_metadata().schema_descr().columns().iter().map(|c| c.name()).collect();
        let num_columns = match names.as_slice() {
            ["s", "p", "o", "g"] => 4,
            ["s", "p", "o"] => 3,
            other => {
                return Err(StoreError::format(
                    path,
                    0,
                    format!("a COTTAS base has columns s p o g (or s p o), found {}", other.join(" ")),
                ))
            }
        };
        for c in meta.file_metadata().schema_descr().columns() {
            if c.physical_type() != PhysicalType::BYTE_ARRAY {
                return Err(StoreError::format(path, 0, format!("column {} is not BYTE_ARRAY", c.name())));
            }
        }
        let mut rg_starts = vec![0u64];
        for rg in meta.row_groups() {
            let last = *rg_starts.last().unwrap_or(&0);
            rg_starts.push(last + rg.num_rows().max(0) as u64);
        }
        Ok(Base { path: path.to_path_buf(), reader, num_columns, rg_starts, file_len })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
    pub fn metadata(&self) -> &ParquetMetaData {
        self.reader.metadata()
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
        self.reader
            .get_row_group(rg)
            .map_err(|e| StoreError::parquet(&self.path, format!("row group {rg} does not open"), e))
    }

    /// Decodes column `col` (0 s, 1 p, 2 o, 3 g) of row group `rg`.
    pub fn read_column(&self, rg: usize, col: usize) -> Result<Column, StoreError> {
        let rows = self.rg_rows(rg);
        if col == 3 && self.num_columns == 3 {
            return Ok(self.default_column(rows));
        }
        let group = self.row_group(rg)?;
        let reader = group
            .get_column_reader(col)
            .map_err(|e| StoreError::parquet(&self.path, format!("row group {rg} column {col}"), e))?;
        let ColumnReader::ByteArrayColumnReader(mut r) = reader else {
            return Err(StoreError::format(&self.path, 0, format!("column {col} is not BYTE_ARRAY")));
        };
        let mut values = Vec::with_capacity(rows);
        let mut defs = Vec::with_capacity(rows);
        let (records, _, _) = r
            .read_records(rows, Some(&mut defs), None, &mut values)
            .map_err(|e| StoreError::parquet(&self.path, format!("row group {rg} column {col} pages"), e))?;
        if records != rows || values.len() != rows {
            let at = group.metadata().column(col).byte_range().0;
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
    /// may contain it (`Some(true)`), or there is no filter (`None`).
    pub fn bloom_may_contain(&self, rg: usize, col: usize, token: &[u8]) -> Option<bool> {
        if col >= self.num_columns {
            return None;
        }
        let group = self.reader.get_row_group(rg).ok()?;
        let filter = group.get_column_bloom_filter(col)?;
        Some(filter.check(&ByteArray::from(token.to_vec())))
    }
}
