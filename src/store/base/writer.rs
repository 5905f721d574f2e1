//! Writes `data.cottas` in the COTTAS profile (docs/format.md §4): four
//! OPTIONAL UTF-8 BYTE_ARRAY columns s p o g, one DATA_PAGE v1 per column
//! chunk, values RLE_DICTIONARY or DELTA_LENGTH_BYTE_ARRAY (never PLAIN data
//! pages), ZSTD, 122,880-row row groups, KV metadata `index=spog`, chunk
//! min/max statistics. Rows arrive one row group at a time, so memory is
//! bounded by one row group whatever the base's size.
//!
//! The pages are encoded here rather than through the parquet crate's writer:
//! that writer makes one reference-counted value per cell, hashes every cell
//! into its own dictionary in first-appearance order, and starts a fresh ZSTD
//! context (tens of megabytes of tables, zeroed) for every page. Here a column
//! chunk is one arena of bytes; its dictionary is sorted, which makes the
//! dictionary page compress better (neighbours share prefixes) and gives the
//! chunk statistics for free; and one ZSTD context per level is reused for the
//! whole file. The footer is the parquet crate's own Thrift structures, so
//! every Parquet reader (DuckDB, pycottas, the parquet crate) reads the result.

#![allow(deprecated)] // parquet::format is the stable home of the Thrift structures for now

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use parquet::errors::{ParquetError, Result};
use parquet::format as pf;
use parquet::thrift::TSerializable;
use rustc_hash::FxHashMap;

use crate::store::sidecars::COLUMNS;

pub const ROW_GROUP_SIZE: usize = 122_880;

#[derive(Clone, Debug)]
pub struct BaseOptions {
    /// ZSTD level of the `s` column, the bulk of the raw bytes.
    pub zstd_level: i32,
    /// ZSTD level of `p`, `o` and `g` pages, usually a tenth of the raw bytes,
    /// so a higher level than the subject's buys size for little time. Past
    /// 9 it buys little: 12 made a 1M-quad import's base 0.5–0.9% smaller for
    /// 10% more import CPU.
    pub zstd_level_small: i32,
    /// ZSTD level of a `p`, `o` or `g` page larger than a quarter of its row
    /// group's subject chunk (long literals: real vocabularies). Text without
    /// repeats costs ZSTD far more per byte than sorted subjects: at level 12
    /// those pages cost more than the whole parse, and level 4 compresses
    /// them 2.5 times as fast as level 6 for about 7% more bytes.
    pub zstd_level_large: i32,
    pub row_group_size: usize,
    /// Per column (s p o g): dictionary-encode, else DELTA_LENGTH_BYTE_ARRAY.
    pub dictionary: [bool; 4],
}

impl Default for BaseOptions {
    fn default() -> Self {
        // Measured on the LUBM-like benchmark (docs/benchmarks-history.md), matching
        // DuckDB's own choice there: sorted subjects as DELTA_LENGTH_BYTE_ARRAY
        // (long repeated runs that ZSTD folds away; a dictionary made the base
        // 24% larger), p, o and g dictionary-encoded. ZSTD 6 for subjects and
        // 9 for the rest (2.39 B/quad; 6/12: 2.37, 5/9: 2.67, 3/9: 3.02).
        BaseOptions {
            zstd_level: 6,
            zstd_level_small: 9,
            zstd_level_large: 4,
            row_group_size: ROW_GROUP_SIZE,
            dictionary: [false, true, true, true],
        }
    }
}

/// One column of one row group: the cells back to back, and where each starts.
#[derive(Default, Debug, Clone)]
pub struct Cells {
    pub data: Vec<u8>,
    pub starts: Vec<usize>,
}

impl Cells {
    pub fn len(&self) -> usize {
        self.starts.len()
    }
    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }
    pub fn get(&self, i: usize) -> &[u8] {
        let end = self.starts.get(i + 1).copied().unwrap_or(self.data.len());
        &self.data[self.starts[i]..end]
    }
    pub fn push(&mut self, cell: &[u8]) {
        self.starts.push(self.data.len());
        self.data.extend_from_slice(cell);
    }
    /// As [`Cells::push`] into a row group that will hold `rows` cells: when
    /// the arena is full, it grows to what the cells so far say the whole
    /// row group needs, not by doubling. The first row groups of an import
    /// start empty, and growing them by doubling copied and faulted in about
    /// twice their bytes on the importing thread while the other core idled
    /// (the largest cost of the first row group's fill, `perf`).
    pub fn push_toward(&mut self, cell: &[u8], rows: usize) {
        if self.starts.capacity() == 0 {
            self.starts.reserve_exact(rows);
        }
        if self.data.capacity() - self.data.len() < cell.len() {
            self.data.reserve(self.extrapolated(rows).max(cell.len()));
        }
        self.push(cell);
    }
    /// Bytes to add so that `rows` cells of the average size so far fit,
    /// with an eighth to spare; the usual doubling until enough cells are in
    /// to go by, and never more than eight times what is held.
    fn extrapolated(&self, rows: usize) -> usize {
        const ENOUGH: usize = 1024;
        let (held, n) = (self.data.len(), self.len());
        if n < ENOUGH {
            return held;
        }
        let want = (held / n + 1) * rows.max(n) / 8 * 9;
        want.min(held * 8).saturating_sub(held)
    }
    /// Empty, keeping the capacity.
    pub fn clear(&mut self) {
        self.data.clear();
        self.starts.clear();
    }
    /// Makes this empty arena ready for a row group like `full`: room for
    /// as many cells and at least as many bytes. Row groups differ in bytes,
    /// and one that outgrew an arena sized exactly to the last was copied
    /// whole into a fresh, larger one, on the importing thread (half of that
    /// thread's page faults while it fed the writers, `perf`); so an arena
    /// too small is replaced, not grown (nothing in it is worth copying), by
    /// one with a quarter more room.
    pub fn make_room_like(&mut self, full: &Cells) {
        debug_assert!(self.is_empty());
        let bytes = full.data.len();
        if self.data.capacity() < bytes {
            self.data = Vec::with_capacity(bytes + bytes / 4);
        }
        if self.starts.capacity() < full.len() {
            self.starts = Vec::with_capacity(full.len());
        }
    }
}

pub struct BaseWriter {
    out: BufWriter<File>,
    at: u64,
    opts: BaseOptions,
    /// Reused ZSTD contexts: the subject's; the object's at the small level
    /// and at the large-page level; the same two for p and g.
    zstd: [zstd::bulk::Compressor<'static>; 5],
    row_groups: Vec<pf::RowGroup>,
    sizes: Vec<usize>,
}

fn err(e: impl std::fmt::Display) -> ParquetError {
    ParquetError::General(e.to_string())
}

impl BaseWriter {
    pub fn create(path: &Path, opts: &BaseOptions) -> Result<Self> {
        let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
        out.write_all(b"PAR1")?;
        let ctx = |level| zstd::bulk::Compressor::new(level).map_err(err);
        Ok(BaseWriter {
            out,
            at: 4,
            opts: opts.clone(),
            zstd: [
                ctx(opts.zstd_level)?,
                ctx(opts.zstd_level_small)?,
                ctx(opts.zstd_level_large)?,
                ctx(opts.zstd_level_small)?,
                ctx(opts.zstd_level_large)?,
            ],
            row_groups: Vec::new(),
            sizes: Vec::new(),
        })
    }

    /// Writes one row group given as rows.
    pub fn write_row_group<T: AsRef<[u8]>>(&mut self, rows: &[[T; 4]]) -> Result<()> {
        let mut columns: [Cells; 4] = Default::default();
        for r in rows {
            for (c, col) in columns.iter_mut().enumerate() {
                col.push(r[c].as_ref());
            }
        }
        self.write_columns(&columns)
    }

    /// Writes one row group given as its four columns.
    pub fn write_columns(&mut self, columns: &[Cells; 4]) -> Result<()> {
        let rows = columns[0].len();
        if rows == 0 {
            return Ok(());
        }
        if columns.iter().any(|c| c.len() != rows) {
            return Err(err("the four columns of a row group differ in length"));
        }
        let rg_start = self.at;
        // The subject chunk (the most raw bytes) and the object chunk (the
        // most compressed bytes: literals) are each encoded on a thread of
        // their own while this one encodes p and g; then all four are
        // appended in column order.
        let opts = &self.opts;
        let [big, o_small, o_bulk, pg_small, pg_bulk] = &mut self.zstd;
        let large = columns[0].data.len() / 4;
        let mut subject = Pages { own: big, bulk: None, large: usize::MAX };
        let mut objects = Pages { own: o_small, bulk: Some(o_bulk), large };
        let mut others = Pages { own: pg_small, bulk: Some(pg_bulk), large };
        let encoded = std::thread::scope(|scope| {
            let s = scope.spawn(|| encode_chunk(0, &columns[0], &mut subject, opts));
            let o = scope.spawn(|| encode_chunk(2, &columns[2], &mut objects, opts));
            let p = encode_chunk(1, &columns[1], &mut others, opts);
            let g = encode_chunk(3, &columns[3], &mut others, opts);
            let joined = |h: std::thread::ScopedJoinHandle<'_, Result<_>>| {
                h.join().unwrap_or_else(|_| Err(err("the chunk encoder panicked")))
            };
            [joined(s), p, joined(o), g]
        });
        let mut chunks = Vec::with_capacity(4);
        let (mut raw_total, mut packed_total) = (0i64, 0i64);
        for encoded_chunk in encoded {
            let (bytes, mut chunk) = encoded_chunk?;
            let at = self.at as i64;
            chunk.file_offset += at;
            let meta = chunk.meta_data.as_mut().expect("set by encode_chunk");
            meta.data_page_offset += at;
            if let Some(d) = &mut meta.dictionary_page_offset {
                *d += at;
            }
            raw_total += meta.total_uncompressed_size;
            packed_total += meta.total_compressed_size;
            self.out.write_all(&bytes)?;
            self.at += bytes.len() as u64;
            chunks.push(chunk);
        }
        self.row_groups.push(pf::RowGroup {
            columns: chunks,
            total_byte_size: raw_total,
            num_rows: rows as i64,
            sorting_columns: None,
            file_offset: Some(rg_start as i64),
            total_compressed_size: Some(packed_total),
            ordinal: Some(self.row_groups.len() as i16),
        });
        self.sizes.push(rows);
        Ok(())
    }

    /// Writes the footer and fsyncs. Returns the row-group sizes.
    pub fn finish(mut self) -> Result<Vec<usize>> {
        let string = || pf::SchemaElement {
            type_: Some(pf::Type::BYTE_ARRAY),
            type_length: None,
            repetition_type: Some(pf::FieldRepetitionType::OPTIONAL),
            name: String::new(),
            num_children: None,
            converted_type: Some(pf::ConvertedType::UTF8),
            scale: None,
            precision: None,
            field_id: None,
            logical_type: Some(pf::LogicalType::STRING(pf::StringType {})),
        };
        let mut schema = vec![pf::SchemaElement {
            type_: None,
            repetition_type: None,
            name: "schema".into(),
            num_children: Some(COLUMNS.len() as i32),
            converted_type: None,
            logical_type: None,
            ..string()
        }];
        schema.extend(COLUMNS.iter().map(|c| pf::SchemaElement { name: c.to_string(), ..string() }));
        let meta = pf::FileMetaData {
            version: 1,
            schema,
            num_rows: self.sizes.iter().sum::<usize>() as i64,
            row_groups: std::mem::take(&mut self.row_groups),
            key_value_metadata: Some(vec![pf::KeyValue { key: "index".into(), value: Some("spog".into()) }]),
            created_by: Some(format!("cottas-tui {}", env!("CARGO_PKG_VERSION"))),
            column_orders: Some(vec![pf::ColumnOrder::TYPEORDER(pf::TypeDefinedOrder {}); COLUMNS.len()]),
            encryption_algorithm: None,
            footer_signing_key_metadata: None,
        };
        let footer = thrift_bytes(&meta)?;
        self.out.write_all(&footer)?;
        self.out.write_all(&(footer.len() as u32).to_le_bytes())?;
        self.out.write_all(b"PAR1")?;
        let file = self.out.into_inner().map_err(|e| ParquetError::External(Box::new(e.into_error())))?;
        file.sync_all()?;
        Ok(self.sizes)
    }
}

/// The compressors a column's pages go through: its own level, or, for a
/// page over `large` bytes, the bulk level (see `BaseOptions::zstd_level_large`).
struct Pages<'z> {
    own: &'z mut zstd::bulk::Compressor<'static>,
    bulk: Option<&'z mut zstd::bulk::Compressor<'static>>,
    large: usize,
}

impl Pages<'_> {
    fn compress(&mut self, page: &[u8]) -> Result<Vec<u8>> {
        let zstd = match &mut self.bulk {
            Some(bulk) if page.len() > self.large => &mut **bulk,
            _ => &mut *self.own,
        };
        zstd.compress(page).map_err(err)
    }
}

/// One column chunk's pages, and its metadata with offsets relative to the
/// chunk's first byte (the caller adds where the chunk lands in the file).
fn encode_chunk(
    c: usize,
    cells: &Cells,
    zstd: &mut Pages,
    opts: &BaseOptions,
) -> Result<(Vec<u8>, pf::ColumnChunk)> {
    let rows = cells.len();
    let mut out = Vec::new();
    let mut sizes = (0i64, 0i64);
    let mut dictionary_page_offset = None;
    let mut values = if opts.dictionary[c] {
        dictionary_page_offset = Some(out.len() as i64);
        dictionary_values(cells, zstd, &mut out, &mut sizes)?
    } else {
        plain_values(cells, c == 0)
    };
    let data_page_offset = out.len() as i64;
    let page = std::mem::take(&mut values.page);
    let (r, p) = write_page(&mut out, zstd, &page, |raw, packed| {
        data_page_header(rows, values.encoding, raw, packed)
    })?;
    drop(page);
    let sizes = (sizes.0 + r, sizes.1 + p);
    let meta = ChunkMeta { column: c, rows, sizes, data_page_offset, dictionary_page_offset };
    Ok((out, column_chunk(meta, values)))
}

/// A data page (its definition levels, then its values), the values'
/// encoding and the chunk's min and max.
struct Values {
    page: Vec<u8>,
    encoding: pf::Encoding,
    min: Option<Vec<u8>>,
    max: Option<Vec<u8>>,
}

/// Writes the sorted dictionary page; returns the RLE/bit-packed keys.
fn dictionary_values(
    cells: &Cells,
    zstd: &mut Pages,
    out: &mut Vec<u8>,
    sizes: &mut (i64, i64),
) -> Result<Values> {
    let dict = SortedDictionary::build(cells);
    let mut page = Vec::with_capacity(dict.values.iter().map(|v| v.len() + 4).sum());
    for v in &dict.values {
        page.extend_from_slice(&(v.len() as u32).to_le_bytes());
        page.extend_from_slice(v);
    }
    let header = |raw: usize, packed: usize| pf::PageHeader {
        type_: pf::PageType::DICTIONARY_PAGE,
        uncompressed_page_size: raw as i32,
        compressed_page_size: packed as i32,
        crc: None,
        data_page_header: None,
        index_page_header: None,
        dictionary_page_header: Some(pf::DictionaryPageHeader {
            num_values: dict.values.len() as i32,
            encoding: pf::Encoding::PLAIN,
            is_sorted: Some(true),
        }),
        data_page_header_v2: None,
    };
    let (r, p) = write_page(out, zstd, &page, header)?;
    *sizes = (sizes.0 + r, sizes.1 + p);
    let width = bits_for(dict.values.len().saturating_sub(1) as u64).max(1);
    // Room for the width and the indices bit-packed (runs take less).
    let mut page = page_with_levels(cells.len(), 1 + cells.len() * usize::from(width) / 8 + 16);
    page.push(width);
    hybrid_encode(&dict.keys, width, &mut page);
    let (min, max) = (dict.values.first().map(|v| v.to_vec()), dict.values.last().map(|v| v.to_vec()));
    Ok(Values { page, encoding: pf::Encoding::RLE_DICTIONARY, min, max })
}

/// DELTA_LENGTH_BYTE_ARRAY: the lengths delta-packed, then the bytes, written
/// once, straight into the page: a subject chunk is megabytes, and copying it
/// into a buffer of values and then into the page faulted in fresh memory
/// twice. `sorted`: the cells never decrease, as the subjects of rows in SPOG
/// order (every writer's contract, docs/format.md §4), so the first and last
/// are the min and max; a scan compared each repeated subject in full twice.
fn plain_values(cells: &Cells, sorted: bool) -> Values {
    let rows = cells.len();
    let lengths: Vec<i64> = (0..rows).map(|i| cells.get(i).len() as i64).collect();
    let mut page = page_with_levels(rows, cells.data.len() + rows + 64);
    delta_binary_packed(&lengths, &mut page);
    page.extend_from_slice(&cells.data);
    let (min, max) = if sorted {
        debug_assert!((1..rows).all(|i| cells.get(i - 1) <= cells.get(i)), "subjects out of order");
        (cells.get(0), cells.get(rows - 1))
    } else {
        (1..rows)
            .map(|i| cells.get(i))
            .fold((cells.get(0), cells.get(0)), |(lo, hi), v| (lo.min(v), hi.max(v)))
    };
    Values {
        page,
        encoding: pf::Encoding::DELTA_LENGTH_BYTE_ARRAY,
        min: Some(min.to_vec()),
        max: Some(max.to_vec()),
    }
}

/// A v1 data page's start: the definition levels (every cell present: one
/// RLE run of 1s, width 1), with room for `values` bytes of values after them.
fn page_with_levels(rows: usize, values: usize) -> Vec<u8> {
    let mut levels = Vec::with_capacity(8);
    put_uleb(&mut levels, (rows as u64) << 1);
    levels.push(1);
    let mut page = Vec::with_capacity(4 + levels.len() + values);
    page.extend_from_slice(&(levels.len() as u32).to_le_bytes());
    page.extend_from_slice(&levels);
    page
}

fn data_page_header(rows: usize, encoding: pf::Encoding, raw: usize, packed: usize) -> pf::PageHeader {
    pf::PageHeader {
        type_: pf::PageType::DATA_PAGE,
        uncompressed_page_size: raw as i32,
        compressed_page_size: packed as i32,
        crc: None,
        data_page_header: Some(pf::DataPageHeader {
            num_values: rows as i32,
            encoding,
            definition_level_encoding: pf::Encoding::RLE,
            repetition_level_encoding: pf::Encoding::RLE,
            statistics: None,
        }),
        index_page_header: None,
        dictionary_page_header: None,
        data_page_header_v2: None,
    }
}

/// What the column metadata records about a written chunk.
struct ChunkMeta {
    column: usize,
    rows: usize,
    /// Header + page bytes, uncompressed and compressed.
    sizes: (i64, i64),
    data_page_offset: i64,
    dictionary_page_offset: Option<i64>,
}

fn column_chunk(m: ChunkMeta, values: Values) -> pf::ColumnChunk {
    let encoding = values.encoding;
    let mut encodings = vec![pf::Encoding::RLE, encoding];
    let mut encoding_stats =
        vec![pf::PageEncodingStats { page_type: pf::PageType::DATA_PAGE, encoding, count: 1 }];
    if m.dictionary_page_offset.is_some() {
        encodings.insert(0, pf::Encoding::PLAIN);
        let dict = pf::PageEncodingStats {
            page_type: pf::PageType::DICTIONARY_PAGE,
            encoding: pf::Encoding::PLAIN,
            count: 1,
        };
        encoding_stats.insert(0, dict);
    }
    let statistics = pf::Statistics {
        max: None,
        min: None,
        null_count: Some(0),
        distinct_count: None,
        max_value: values.max,
        min_value: values.min,
        is_max_value_exact: Some(true),
        is_min_value_exact: Some(true),
    };
    pf::ColumnChunk {
        file_path: None,
        file_offset: 0,
        meta_data: Some(pf::ColumnMetaData {
            type_: pf::Type::BYTE_ARRAY,
            encodings,
            path_in_schema: vec![COLUMNS[m.column].to_string()],
            codec: pf::CompressionCodec::ZSTD,
            num_values: m.rows as i64,
            total_uncompressed_size: m.sizes.0,
            total_compressed_size: m.sizes.1,
            key_value_metadata: None,
            data_page_offset: m.data_page_offset,
            index_page_offset: None,
            dictionary_page_offset: m.dictionary_page_offset,
            statistics: Some(statistics),
            encoding_stats: Some(encoding_stats),
            bloom_filter_offset: None,
            bloom_filter_length: None,
            size_statistics: None,
            geospatial_statistics: None,
        }),
        offset_index_offset: None,
        offset_index_length: None,
        column_index_offset: None,
        column_index_length: None,
        crypto_metadata: None,
        encrypted_column_metadata: None,
    }
}

/// Compresses and appends one page with its header; returns the header +
/// page sizes uncompressed and compressed, as the column metadata counts them.
fn write_page(
    out: &mut Vec<u8>,
    zstd: &mut Pages,
    page: &[u8],
    header: impl Fn(usize, usize) -> pf::PageHeader,
) -> Result<(i64, i64)> {
    let packed = zstd.compress(page)?;
    if page.len() > i32::MAX as usize || packed.len() > i32::MAX as usize {
        return Err(err("a column chunk larger than 2 GiB; use smaller row groups"));
    }
    let header = thrift_bytes(&header(page.len(), packed.len()))?;
    out.extend_from_slice(&header);
    out.extend_from_slice(&packed);
    Ok(((header.len() + page.len()) as i64, (header.len() + packed.len()) as i64))
}

fn thrift_bytes(value: &impl TSerializable) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    let mut prot = thrift::protocol::TCompactOutputProtocol::new(&mut buf);
    value.write_to_out_protocol(&mut prot).map_err(err)?;
    thrift::protocol::TOutputProtocol::flush(&mut prot).map_err(err)?;
    drop(prot);
    Ok(buf)
}

/// A chunk's distinct values in byte order, and each cell's index among them.
struct SortedDictionary<'a> {
    values: Vec<&'a [u8]>,
    keys: Vec<u32>,
}

impl<'a> SortedDictionary<'a> {
    fn build(cells: &'a Cells) -> Self {
        let mut first: FxHashMap<&'a [u8], u32> = FxHashMap::default();
        let mut values: Vec<&'a [u8]> = Vec::new();
        let mut keys = Vec::with_capacity(cells.len());
        let mut last: Option<(&[u8], u32)> = None;
        for i in 0..cells.len() {
            let v = cells.get(i);
            let k = match last {
                Some((prev, k)) if prev == v => k,
                _ => *first.entry(v).or_insert_with(|| {
                    values.push(v);
                    values.len() as u32 - 1
                }),
            };
            last = Some((v, k));
            keys.push(k);
        }
        let mut order: Vec<u32> = (0..values.len() as u32).collect();
        order.sort_unstable_by(|&a, &b| values[a as usize].cmp(values[b as usize]));
        let mut rank = vec![0u32; values.len()];
        for (r, &k) in order.iter().enumerate() {
            rank[k as usize] = r as u32;
        }
        for k in &mut keys {
            *k = rank[*k as usize];
        }
        let values = order.iter().map(|&k| values[k as usize]).collect();
        SortedDictionary { values, keys }
    }
}

fn bits_for(max: u64) -> u8 {
    (64 - max.leading_zeros()) as u8
}

fn put_uleb(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Packs `values` little-endian at `width` bits each (LSB first).
fn bit_pack(values: &[u32], width: u8, out: &mut Vec<u8>) {
    let (mut acc, mut bits) = (0u64, 0u32);
    for &v in values {
        acc |= u64::from(v) << bits;
        bits += u32::from(width);
        while bits >= 8 {
            out.push(acc as u8);
            acc >>= 8;
            bits -= 8;
        }
    }
    if bits > 0 {
        out.push(acc as u8);
    }
}

/// The RLE / bit-packed hybrid: runs of at least 8 equal values (aligned to
/// the groups of 8 the bit-packed runs use) become RLE runs, the rest is
/// bit-packed; only the very last group is padded.
fn hybrid_encode(values: &[u32], width: u8, out: &mut Vec<u8>) {
    let value_bytes = usize::from(width).div_ceil(8);
    let mut packed: Vec<u32> = Vec::new();
    let flush = |packed: &mut Vec<u32>, out: &mut Vec<u8>| {
        if packed.is_empty() {
            return;
        }
        let groups = packed.len().div_ceil(8);
        packed.resize(groups * 8, 0);
        put_uleb(out, ((groups as u64) << 1) | 1);
        bit_pack(packed, width, out);
        packed.clear();
    };
    let mut i = 0;
    while i < values.len() {
        let v = values[i];
        let group = &values[i..(i + 8).min(values.len())];
        if group.len() == 8 && group.iter().all(|&x| x == v) {
            let mut end = i + 8;
            while end < values.len() && values[end] == v {
                end += 1;
            }
            flush(&mut packed, out);
            put_uleb(out, ((end - i) as u64) << 1);
            out.extend_from_slice(&v.to_le_bytes()[..value_bytes]);
            i = end;
        } else {
            packed.extend_from_slice(group);
            i += group.len();
        }
    }
    flush(&mut packed, out);
}

/// DELTA_BINARY_PACKED: blocks of 128 deltas in 4 miniblocks of 32.
fn delta_binary_packed(values: &[i64], out: &mut Vec<u8>) {
    const BLOCK: usize = 128;
    const MINIS: usize = 4;
    const PER_MINI: usize = BLOCK / MINIS;
    let zigzag = |v: i64| ((v << 1) ^ (v >> 63)) as u64;
    put_uleb(out, BLOCK as u64);
    put_uleb(out, MINIS as u64);
    put_uleb(out, values.len() as u64);
    put_uleb(out, zigzag(values.first().copied().unwrap_or(0)));
    let deltas: Vec<i64> = values.windows(2).map(|w| w[1].wrapping_sub(w[0])).collect();
    for block in deltas.chunks(BLOCK) {
        let min = block.iter().copied().min().unwrap_or(0);
        put_uleb(out, zigzag(min));
        let rel: Vec<u64> = block.iter().map(|&d| d.wrapping_sub(min) as u64).collect();
        let minis: Vec<&[u64]> = rel.chunks(PER_MINI).collect();
        let widths: Vec<u8> = (0..MINIS)
            .map(|m| minis.get(m).map_or(0, |mb| bits_for(mb.iter().copied().max().unwrap_or(0))))
            .collect();
        out.extend_from_slice(&widths);
        for (m, mb) in minis.iter().enumerate() {
            let mut padded: Vec<u32> = mb.iter().map(|&v| v as u32).collect();
            padded.resize(PER_MINI, 0);
            bit_pack(&padded, widths[m], out);
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_grown_toward_a_row_group_hold_what_pushing_holds_with_few_moves() {
        let rows = 10_000;
        let cell = |i: usize| format!("<http://ex.org/{}>", "x".repeat(i % 40));
        let (mut plain, mut toward) = (Cells::default(), Cells::default());
        let mut grew = 0;
        for i in 0..rows {
            plain.push(cell(i).as_bytes());
            let before = toward.data.capacity();
            toward.push_toward(cell(i).as_bytes(), rows);
            grew += usize::from(toward.data.capacity() != before);
            assert!(toward.data.capacity() <= 8 * toward.data.len().max(64), "row {i}");
        }
        assert_eq!((&plain.data, &plain.starts), (&toward.data, &toward.starts));
        assert!(grew <= 14, "{grew} reallocations");
        assert!(
            toward.data.capacity() < 2 * toward.data.len(),
            "{} for {}",
            toward.data.capacity(),
            toward.data.len()
        );
        // One enormous cell among small ones grows the arena to fit, no more
        // than eight times over.
        let mut odd = Cells::default();
        for i in 0..2000 {
            let big = vec![b'a'; if i == 1500 { 1 << 20 } else { 10 }];
            odd.push_toward(&big, 1 << 20);
            assert!(odd.data.capacity() <= 8 * odd.data.len().max(64), "row {i}");
        }
    }

    /// An arena made ready like a full row group takes a row group a fifth
    /// larger in bytes without moving; one already large enough is kept.
    #[test]
    fn an_arena_made_ready_like_a_full_one_takes_a_larger_row_group_in_place() {
        let rows = 5_000;
        let mut full = Cells::default();
        for i in 0..rows {
            full.push_toward(format!("<http://ex.org/{i:06}>").as_bytes(), rows);
        }
        let mut next = Cells::default();
        next.make_room_like(&full);
        let (at, cells_at) = (next.data.as_ptr(), next.starts.as_ptr());
        for i in 0..rows {
            next.push_toward(format!("<http://ex.org/{i:06}/more>").as_bytes(), rows);
        }
        assert!(next.data.len() > full.data.len() / 5 * 6, "{} vs {}", next.data.len(), full.data.len());
        assert_eq!((next.data.as_ptr(), next.starts.as_ptr()), (at, cells_at), "the arena moved");
        let capacity = next.data.capacity();
        next.clear();
        next.make_room_like(&full);
        assert_eq!(
            (next.data.as_ptr(), next.data.capacity()),
            (at, capacity),
            "a large enough arena is kept"
        );
    }

    #[test]
    fn hybrid_encoding_round_trips_through_the_reader() {
        let mut v: Vec<u32> = vec![5; 20];
        v.extend((0..37).map(|i| i % 7));
        v.extend(std::iter::repeat_n(3, 9));
        v.push(6);
        let mut out = Vec::new();
        hybrid_encode(&v, 3, &mut out);
        let got = crate::store::base::column_ids::tests_support::hybrid_decode(&out, 3, v.len()).unwrap();
        assert_eq!(got, v);
    }

    #[test]
    fn delta_binary_packed_round_trips_through_the_reader() {
        let v: Vec<i64> =
            (0..300).map(|i| (i * 37 % 101) as i64 + if i == 150 { 100_000 } else { 0 }).collect();
        let mut out = Vec::new();
        delta_binary_packed(&v, &mut out);
        let got = crate::store::base::column_ids::tests_support::delta_decode(&out, v.len()).unwrap();
        assert_eq!(got, v);
    }

    /// Every chunk's min and max statistics are its cells' least and greatest,
    /// read back by the parquet crate: the subjects' from the chunk's ends
    /// (rows in SPOG order), the others' from their sorted dictionaries, and
    /// with dictionaries off, the unsorted objects' from a scan.
    #[test]
    fn chunk_statistics_are_each_columns_least_and_greatest_cell() {
        use parquet::file::reader::{FileReader, SerializedFileReader};
        let mut rows: Vec<[String; 4]> = (0..1000)
            .map(|i| {
                [
                    format!("<http://ex.org/s{:03}>", i / 3),
                    format!("<http://ex.org/p{}>", (i * 7) % 5),
                    format!("\"{}\"", (i * 7919) % 997),
                    if i % 2 == 0 { "DEFAULT".to_string() } else { format!("<http://ex.org/g{}>", i % 3) },
                ]
            })
            .collect();
        rows.sort();
        rows.dedup();
        assert_eq!(rows.len(), 1000);
        let dir = tempfile::tempdir().unwrap();
        for dictionary in [[false, true, true, true], [false; 4]] {
            let path = dir.path().join("base.cottas");
            let opts = BaseOptions { row_group_size: 300, dictionary, ..BaseOptions::default() };
            write_base(&path, &rows, &opts).unwrap();
            let reader = SerializedFileReader::new(std::fs::File::open(&path).unwrap()).unwrap();
            let groups = reader.metadata().row_groups();
            assert_eq!(groups.len(), 4);
            for (g, group) in groups.iter().enumerate() {
                let held = &rows[g * 300..((g + 1) * 300).min(rows.len())];
                for c in 0..4 {
                    let stats = group.column(c).statistics().expect("statistics written");
                    let least = held.iter().map(|r| r[c].as_bytes()).min().unwrap();
                    let greatest = held.iter().map(|r| r[c].as_bytes()).max().unwrap();
                    let what = format!("row group {g}, column {c}, dictionary {dictionary:?}");
                    assert_eq!(stats.min_bytes_opt(), Some(least), "{what}");
                    assert_eq!(stats.max_bytes_opt(), Some(greatest), "{what}");
                }
            }
        }
    }

    /// The base's bytes with `zstd_level_large` at 1 and at 19.
    fn bytes_at_both_large_levels(rows: &[[String; 4]]) -> (Vec<u8>, Vec<u8>) {
        let dir = tempfile::tempdir().unwrap();
        let write = |large: i32| {
            let path = dir.path().join(format!("{large}.cottas"));
            let opts = BaseOptions { row_group_size: 500, zstd_level_large: large, ..BaseOptions::default() };
            write_base(&path, rows, &opts).unwrap();
            std::fs::read(&path).unwrap()
        };
        (write(1), write(19))
    }

    /// Only pages over a quarter of their row group's subject chunk take the
    /// large-page level: long distinct literals do, short ones do not.
    #[test]
    fn the_large_page_level_applies_to_pages_over_a_quarter_of_the_subjects() {
        let rows = |literal: &dyn Fn(usize) -> String| -> Vec<[String; 4]> {
            (0..1000)
                .map(|i| {
                    [
                        format!("<http://ex.org/s{:04}>", i / 4),
                        "<http://ex.org/p>".into(),
                        literal(i),
                        "DEFAULT".into(),
                    ]
                })
                .collect()
        };
        let long = |i: usize| {
            format!(
                "\"{} words in a sentence, number {i}, {}\"",
                i * 7919 % 1000,
                "and more text ".repeat(i % 5 + 4)
            )
        };
        let (fast, small) = bytes_at_both_large_levels(&rows(&long));
        assert_ne!(fast, small, "long literals: the object pages are large and take the level");
        assert!(small.len() < fast.len());
        let short = |i: usize| format!("\"{}\"", i % 10);
        let (fast, small) = bytes_at_both_large_levels(&rows(&short));
        assert_eq!(fast, small, "short literals: the pages stay at the small level");
    }
}
