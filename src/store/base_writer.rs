//! Writes `data.cottas` in the COTTAS profile (docs/format.md §4): four
//! OPTIONAL UTF-8 BYTE_ARRAY columns s p o g, DATA_PAGE v1 headers, values
//! RLE_DICTIONARY or DELTA_LENGTH_BYTE_ARRAY (never PLAIN data pages), ZSTD,
//! 122,880-row row groups, KV metadata `index=spog`. Rows arrive one row group
//! at a time, so memory is bounded by one row group whatever the base's size.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::sync::Arc;

use parquet::basic::{Compression, Encoding, LogicalType, Repetition, Type as PhysicalType, ZstdLevel};
use parquet::data_type::{ByteArray, ByteArrayType};
use parquet::errors::{ParquetError, Result};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::{ColumnPath, Type};

use super::sidecars::COLUMNS;

pub const ROW_GROUP_SIZE: usize = 122_880;

#[derive(Clone, Debug)]
pub struct BaseOptions {
    /// ZSTD level of the `s` column, the bulk of the raw bytes.
    pub zstd_level: i32,
    /// ZSTD level of `p`, `o` and `g`: a tenth of the raw bytes, so a high
    /// level there buys size for little time.
    pub zstd_level_small: i32,
    pub row_group_size: usize,
    /// Per column (s p o g): dictionary-encode, else DELTA_LENGTH_BYTE_ARRAY.
    pub dictionary: [bool; 4],
}

impl Default for BaseOptions {
    fn default() -> Self {
        // Measured on the LUBM-like benchmark (docs/benchmarks.md), matching
        // DuckDB's own choice there: sorted subjects as DELTA_LENGTH_BYTE_ARRAY
        // (long repeated runs that ZSTD folds away), p, o and g dictionary-encoded.
        BaseOptions {
            zstd_level: 9,
            zstd_level_small: 9,
            row_group_size: ROW_GROUP_SIZE,
            dictionary: [false, true, true, true],
        }
    }
}

fn schema() -> Result<Type> {
    let col = |name: &str| {
        Type::primitive_type_builder(name, PhysicalType::BYTE_ARRAY)
            .with_repetition(Repetition::OPTIONAL)
            .with_logical_type(Some(LogicalType::String))
            .build()
            .map(Arc::new)
    };
    Type::group_type_builder("schema")
        .with_fields(COLUMNS.iter().map(|c| col(c)).collect::<Result<_>>()?)
        .build()
}

fn properties(opts: &BaseOptions) -> Result<WriterProperties> {
    let mut b = WriterProperties::builder()
        .set_writer_version(WriterVersion::PARQUET_1_0)
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(opts.zstd_level)?))
        .set_max_row_group_size(opts.row_group_size)
        // One dictionary per column chunk however large: falling back mid-chunk
        // would mix encodings, and the fallback must never be PLAIN.
        .set_dictionary_page_size_limit(usize::MAX / 4)
        // One data page per column chunk, as DuckDB writes: ZSTD then sees the
        // whole chunk at once (parquet-rs would cut pages every 20,000 rows).
        .set_data_page_size_limit(usize::MAX / 4)
        .set_data_page_row_count_limit(usize::MAX)
        .set_write_batch_size(8192)
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .set_key_value_metadata(Some(vec![KeyValue::new("index".into(), "spog".to_string())]))
        .set_created_by(format!("cottas-tui {}", env!("CARGO_PKG_VERSION")));
    for (c, name) in COLUMNS.iter().enumerate() {
        let path = ColumnPath::from(*name);
        if c > 0 {
            let level = ZstdLevel::try_new(opts.zstd_level_small)?;
            b = b.set_column_compression(path.clone(), Compression::ZSTD(level));
        }
        b = b.set_column_encoding(path.clone(), Encoding::DELTA_LENGTH_BYTE_ARRAY);
        b = b.set_column_dictionary_enabled(path, opts.dictionary[c]);
    }
    Ok(b.build())
}

pub struct BaseWriter {
    inner: SerializedFileWriter<BufWriter<File>>,
    sizes: Vec<usize>,
}

impl BaseWriter {
    pub fn create(path: &Path, opts: &BaseOptions) -> Result<Self> {
        let file = BufWriter::with_capacity(1 << 20, File::create(path)?);
        let inner = SerializedFileWriter::new(file, Arc::new(schema()?), Arc::new(properties(opts)?))?;
        Ok(BaseWriter { inner, sizes: Vec::new() })
    }

    /// Writes one row group.
    pub fn write_row_group<T: AsRef<[u8]>>(&mut self, rows: &[[T; 4]]) -> Result<()> {
        let columns: [Vec<ByteArray>; 4] =
            std::array::from_fn(|c| rows.iter().map(|r| ByteArray::from(r[c].as_ref().to_vec())).collect());
        self.write_columns(columns)
    }

    /// Writes one row group given as its four columns (no copying).
    pub fn write_columns(&mut self, columns: [Vec<ByteArray>; 4]) -> Result<()> {
        let rows = columns[0].len();
        if rows == 0 {
            return Ok(());
        }
        let mut rg = self.inner.next_row_group()?;
        let defs = vec![1i16; rows];
        for values in &columns {
            let mut col = rg.next_column()?.ok_or_else(|| ParquetError::General("missing column".into()))?;
            col.typed::<ByteArrayType>().write_batch(values, Some(&defs), None)?;
            col.close()?;
        }
        rg.close()?;
        self.sizes.push(rows);
        Ok(())
    }

    /// Writes the footer and fsyncs. Returns the row-group sizes.
    pub fn finish(self) -> Result<Vec<usize>> {
        let file = self.inner.into_inner()?;
        let file = file.into_inner().map_err(|e| ParquetError::External(Box::new(e.into_error())))?;
        file.sync_all()?;
        Ok(self.sizes)
    }
}

/// Writes sorted, distinct rows to `path` (fsynced); returns the row-group sizes.
pub fn write_base<T: AsRef<[u8]>>(path: &Path, rows: &[[T; 4]], opts: &BaseOptions) -> Result<Vec<usize>> {
    let mut w = BaseWriter::create(path, opts)?;
    for chunk in rows.chunks(opts.row_group_size.max(1)) {
        w.write_row_group(chunk)?;
    }
    w.finish()
}
