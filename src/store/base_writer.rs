//! Writes `data.cottas`: the Parquet base in the COTTAS profile (reference §3):
//! four OPTIONAL UTF-8 BYTE_ARRAY columns s p o g, DATA_PAGE v1 headers,
//! RLE_DICTIONARY with DELTA_LENGTH_BYTE_ARRAY as the fallback (never PLAIN
//! data pages), ZSTD, 122,880-row row groups, KV metadata `index=spog`.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use parquet::basic::{Compression, Encoding, LogicalType, Repetition, Type as PhysicalType, ZstdLevel};
use parquet::data_type::{ByteArray, ByteArrayType};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;

pub const ROW_GROUP_SIZE: usize = 122_880;

#[derive(Clone, Debug)]
pub struct BaseOptions {
    pub zstd_level: i32,
    pub row_group_size: usize,
}

impl Default for BaseOptions {
    fn default() -> Self {
        BaseOptions { zstd_level: 9, row_group_size: ROW_GROUP_SIZE }
    }
}

fn schema() -> parquet::errors::Result<Type> {
    let col = |name: &str| {
        Type::primitive_type_builder(name, PhysicalType::BYTE_ARRAY)
            .with_repetition(Repetition::OPTIONAL)
            .with_logical_type(Some(LogicalType::String))
            .build()
            .map(Arc::new)
    };
    Type::group_type_builder("schema").with_fields(vec![col("s")?, col("p")?, col("o")?, col("g")?]).build()
}

/// Writes sorted, distinct rows of term tokens to `path` and fsyncs it.
/// Returns the row counts of the row groups written, in order.
pub fn write_base<T: AsRef<[u8]>>(
    path: &Path,
    rows: &[[T; 4]],
    opts: &BaseOptions,
) -> parquet::errors::Result<Vec<usize>> {
    let props = WriterProperties::builder()
        .set_writer_version(WriterVersion::PARQUET_1_0)
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(opts.zstd_level)?))
        .set_dictionary_enabled(true)
        .set_encoding(Encoding::DELTA_LENGTH_BYTE_ARRAY)
        .set_max_row_group_size(opts.row_group_size)
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .set_key_value_metadata(Some(vec![KeyValue::new("index".into(), "spog".to_string())]))
        .set_created_by(format!("cottas-tui {}", env!("CARGO_PKG_VERSION")))
        .build();
    let file = File::create(path)?;
    let mut w = SerializedFileWriter::new(file, Arc::new(schema()?), Arc::new(props))?;
    let mut sizes = Vec::new();
    for chunk in rows.chunks(opts.row_group_size.max(1)) {
        let mut rg = w.next_row_group()?;
        let defs = vec![1i16; chunk.len()];
        for c in 0..4 {
            let values: Vec<ByteArray> =
                chunk.iter().map(|r| ByteArray::from(r[c].as_ref().to_vec())).collect();
            let mut col = rg
                .next_column()?
                .ok_or_else(|| parquet::errors::ParquetError::General("missing column".into()))?;
            col.typed::<ByteArrayType>().write_batch(&values, Some(&defs), None)?;
            col.close()?;
        }
        rg.close()?;
        sizes.push(chunk.len());
    }
    let file = w.into_inner()?;
    file.sync_all()?;
    Ok(sizes)
}
