//! The Parquet framing of `data.cottas` and its footer, read once and
//! validated before anything trusts it.
//!
//! Layout (reference §3): `PAR1`, column chunks, optional page indexes, the
//! Thrift-compact `FileMetaData`, its length (u32 LE), `PAR1`. The framing is
//! decoded here with spans; the Thrift structure by the parquet crate's
//! decoder, which is not written for hostile input: some damaged footers make
//! it panic, a list count it trusts can make it reserve tens of gigabytes, and
//! it hands back chunk offsets and sizes that the crate's own accessors then
//! panic on ("column start and length should not be negative"). So
//! [`read_footer`] first skims the footer with our own compact-protocol
//! reader (`format::thrift`: every count and length within the footer,
//! nesting bounded), runs the crate's decoder contained, then checks
//! every number a reader will use — row counts, every chunk's start and length,
//! its page offsets — against the file, and names the first bad one with the
//! byte offset of the footer and what was expected. Every reader of a base
//! (the store, `dump`, the digests, the TUI) comes through here, so a footer
//! either passes these checks once or is refused everywhere with the same text.

use std::sync::Arc;

use parquet::file::metadata::{ParquetMetaData, ParquetMetaDataReader};

use super::error::ErrorKind;
use super::page_header::{self, PageHeader};
use super::{FormatError, Role, Span};

pub const PAR1: [u8; 4] = *b"PAR1";

/// The validated footer of a base.
#[derive(Debug, Clone)]
pub struct Footer {
    pub meta: Arc<ParquetMetaData>,
    /// Where the Thrift metadata starts.
    pub metadata_start: u64,
    /// Byte range of every column chunk, by row group then column: checked to
    /// lie between the leading magic and the metadata.
    pub chunks: Vec<Vec<(u64, u64)>>,
    /// Spans of the framing (magic, metadata, length, trailing magic).
    pub spans: Vec<Span>,
}

impl Footer {
    /// `(start, len)` of column `col` of row group `rg`.
    pub fn chunk(&self, rg: usize, col: usize) -> (u64, u64) {
        self.chunks[rg][col]
    }
}

fn span(name: &str, start: u64, end: u64, role: Role, value: Option<String>) -> Span {
    Span { name: name.into(), range: start..end, role, value, reason: None }
}

/// The framing's spans and where the metadata lies, or the first error. The
/// spans read so far are returned with the error, for the hex view.
pub fn framing(bytes: &[u8]) -> (Vec<Span>, Result<(u64, u64), FormatError>) {
    let len = bytes.len() as u64;
    let head = &bytes[..bytes.len().min(4)];
    let mut spans = vec![span(
        "magic",
        0,
        head.len() as u64,
        Role::Magic,
        Some(format!("{:?}", String::from_utf8_lossy(head))),
    )];
    if head != PAR1 {
        return (
            spans,
            Err(FormatError::new(0, ErrorKind::UnknownMagic { expected: PAR1, found: head.to_vec() })),
        );
    }
    if len < 12 {
        let kind = ErrorKind::Truncated { field: "footer".into(), needed: 12, file_len: len };
        return (spans, Err(FormatError::new(len, kind)));
    }
    let tail = &bytes[bytes.len() - 4..];
    let footer_len =
        u32::from_le_bytes(bytes[bytes.len() - 8..bytes.len() - 4].try_into().unwrap_or([0; 4])) as u64;
    let meta_start = (len - 8).saturating_sub(footer_len);
    spans.push(span("footer.metadata", meta_start.max(4), len - 8, Role::Payload, None));
    spans.push(span("footer.length", len - 8, len - 4, Role::Length, Some(footer_len.to_string())));
    spans.push(span(
        "footer.magic",
        len - 4,
        len,
        Role::Magic,
        Some(format!("{:?}", String::from_utf8_lossy(tail))),
    ));
    if tail != PAR1 {
        let detail = format!(
            "expected PAR1 at the end of the file, found {tail:02x?}: the file is truncated or was not finished"
        );
        return (spans, Err(FormatError::structure(len - 4, "footer.magic", detail)));
    }
    if footer_len + 12 > len {
        let kind =
            ErrorKind::Truncated { field: "footer.metadata".into(), needed: footer_len, file_len: len };
        return (spans, Err(FormatError::new(len - 8, kind)));
    }
    (spans, Ok((meta_start, footer_len)))
}

/// Reads and validates the footer of the Parquet file `bytes`.
pub fn read_footer(bytes: &[u8]) -> Result<Footer, (Vec<Span>, FormatError)> {
    read_footer_with(bytes, None)
}

/// Reads and validates a footer whose bytes matched the digest this program
/// recorded when it wrote them: the footer is then one of ours, byte for
/// byte, and the skim that keeps the parquet crate's decoder away from
/// hostile list counts has nothing to find (it was 0.6 ms of every open at
/// 100M quads). `recorded_from` is where the digested bytes start (they run
/// to the end of the file); a metadata that starts before it is skimmed as
/// usual. Every number a reader uses is still checked.
pub fn read_recorded_footer(bytes: &[u8], recorded_from: u64) -> Result<Footer, (Vec<Span>, FormatError)> {
    read_footer_with(bytes, Some(recorded_from))
}

fn read_footer_with(bytes: &[u8], recorded_from: Option<u64>) -> Result<Footer, (Vec<Span>, FormatError)> {
    let (spans, framed) = framing(bytes);
    let (start, len) = match framed {
        Ok(x) => x,
        Err(e) => return Err((spans, e)),
    };
    let metadata = &bytes[start as usize..(start + len) as usize];
    // Our own pass first: every list count and string length within the
    // footer, nesting bounded. The crate's decoder reserves what a list
    // claims before reading it, so an unchecked count could ask for more
    // memory than the machine has and abort the process.
    if recorded_from.is_none_or(|from| from > start) {
        if let Err(e) =
            super::thrift::check_struct(metadata, start, "footer.metadata", fields::FILE_META_DATA)
        {
            return Err((spans, e));
        }
    }
    let decoded = contained(|| ParquetMetaDataReader::decode_metadata(metadata));
    let meta = match decoded {
        Ok(Ok(m)) => m,
        Ok(Err(e)) => {
            let detail = format!("the Thrift footer does not decode: {e}");
            return Err((spans, FormatError::structure(start, "footer.metadata", detail)));
        }
        Err(_) => {
            let detail =
                "the Thrift footer does not decode (a field holds a value no Parquet writer produces)";
            return Err((spans, FormatError::structure(start, "footer.metadata", detail)));
        }
    };
    match check_numbers(&meta, start) {
        Ok(chunks) => Ok(Footer { meta: Arc::new(meta), metadata_start: start, chunks, spans }),
        Err(e) => Err((spans, e)),
    }
}

thread_local! {
    static CONTAINING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// A panic inside the parquet crate, contained by [`contained`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Contained;

/// Runs `f`, a call into the parquet crate on bytes that may be hostile; a
/// panic there becomes `Err(Contained)`, and prints nothing (the caller reports the
/// damage with its offset). Panics anywhere else still print as usual.
pub fn contained<T>(f: impl FnOnce() -> T) -> Result<T, Contained> {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !CONTAINING.with(|c| c.get()) {
                previous(info)
            }
        }));
    });
    let was = CONTAINING.with(|c| c.replace(true));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|_| Contained);
    CONTAINING.with(|c| c.set(was));
    r
}

/// Every number a reader takes from the footer, against the file: row
/// counts not negative and adding up, each chunk within `4..metadata_start`
/// and its pages inside it, the schema's column count matched by every row
/// group. Returns the chunks' byte ranges.
fn check_numbers(meta: &ParquetMetaData, metadata_start: u64) -> Result<Vec<Vec<(u64, u64)>>, FormatError> {
    let bad = |detail: String| FormatError::structure(metadata_start, "footer.metadata", detail);
    let columns = meta.file_metadata().schema_descr().num_columns();
    let mut rows = 0i64;
    let mut chunks = Vec::with_capacity(meta.num_row_groups());
    for (rg, g) in meta.row_groups().iter().enumerate() {
        if g.num_rows() < 0 {
            return Err(bad(format!(
                "row group {rg} has {} rows; expected a count of 0 or more",
                g.num_rows()
            )));
        }
        rows = rows.saturating_add(g.num_rows());
        if g.num_columns() != columns {
            return Err(bad(format!(
                "row group {rg} has {} column chunks; the schema has {columns} columns",
                g.num_columns()
            )));
        }
        let mut ranges = Vec::with_capacity(columns);
        for (col, c) in g.columns().iter().enumerate() {
            // The chunk starts at its dictionary page if it has one (as the
            // parquet crate's page reader assumes), else at its first data page.
            let first_page = c.dictionary_page_offset().unwrap_or(c.data_page_offset());
            let (start, size) = (first_page, c.compressed_size());
            let end = start.checked_add(size);
            let inside = start >= 4 && size >= 0 && end.is_some_and(|e| e as u64 <= metadata_start);
            if !inside {
                return Err(bad(format!(
                    "row group {rg} column {col}: its chunk is {size} bytes at offset {start}; expected a chunk \
                     inside the column data (bytes 4..{metadata_start})"
                )));
            }
            let data = c.data_page_offset();
            if data < start || data >= start + size.max(1) {
                return Err(bad(format!(
                    "row group {rg} column {col}: data pages at offset {data}, outside its chunk {start}..{}",
                    start + size
                )));
            }
            // Optional structures the crate may read (bloom filters, page
            // indexes): inside the file before the metadata, or absent.
            let optional = [
                ("bloom filter", c.bloom_filter_offset(), c.bloom_filter_length().map(i64::from)),
                ("column index", c.column_index_offset(), c.column_index_length().map(i64::from)),
                ("offset index", c.offset_index_offset(), c.offset_index_length().map(i64::from)),
            ];
            for (what, at, len) in optional {
                let Some(at) = at else { continue };
                let end = at.checked_add(len.unwrap_or(0));
                if at < 4 || len.is_some_and(|l| l < 0) || end.is_none_or(|e| e as u64 > metadata_start) {
                    return Err(bad(format!(
                        "row group {rg} column {col}: its {what} is at offset {at} ({} bytes); expected it \
                         inside the file before the metadata (bytes 4..{metadata_start})",
                        len.map_or("unknown".into(), |l| l.to_string())
                    )));
                }
            }
            if c.num_values() < 0 {
                return Err(bad(format!("row group {rg} column {col} has {} values", c.num_values())));
            }
            ranges.push((start as u64, size as u64));
        }
        chunks.push(ranges);
    }
    if meta.file_metadata().num_rows() != rows {
        return Err(bad(format!(
            "the file claims {} rows; its row groups hold {rows}",
            meta.file_metadata().num_rows()
        )));
    }
    Ok(chunks)
}

/// One page of a column chunk: its decoded header and where it lies.
pub struct Page<'a> {
    pub header: PageHeader,
    /// File offset of the header.
    pub at: u64,
    pub header_len: u64,
    /// Spans of the header's fields.
    pub fields: Vec<Span>,
    /// The page's (compressed) bytes after the header.
    pub data: &'a [u8],
}

impl Page<'_> {
    /// The header's span, named `{chunk}.page[{k}].header`, with a summary.
    pub fn header_span(&self, chunk: &str, k: usize) -> Span {
        let h = &self.header;
        let summary = format!(
            "{}: {} values, {}, {} bytes ({} uncompressed)",
            h.kind(),
            h.num_values(),
            h.encoding().map_or(String::new(), encoding_name),
            self.data.len(),
            h.uncompressed_page_size
        );
        span(&format!("{chunk}.page[{k}].header"), self.at, self.data_start(), Role::Length, Some(summary))
    }

    /// The span of the page's bytes.
    pub fn data_span(&self, chunk: &str, k: usize) -> Span {
        let end = self.data_start() + self.data.len() as u64;
        span(&format!("{chunk}.page[{k}].data"), self.data_start(), end, Role::Payload, None)
    }

    fn data_start(&self) -> u64 {
        self.at + self.header_len
    }
}

/// The pages of the column chunk `bytes[start..end]`, in order: the one walk
/// over page headers that the chunk decoder, `dump` and the TUI decoder
/// share (headers decoded by [`super::page_header`]). It stops after the
/// first error (a header that does not decode, or one that claims more bytes
/// than the chunk has left), which names the byte and what was expected.
pub fn pages(bytes: &[u8], start: u64, end: u64) -> Pages<'_> {
    let end = end.min(bytes.len() as u64);
    Pages { bytes, at: start.min(end), end, k: 0, chunk: String::new(), failed: false }
}

pub struct Pages<'a> {
    bytes: &'a [u8],
    at: u64,
    end: u64,
    k: usize,
    chunk: String,
    failed: bool,
}

impl<'a> Pages<'a> {
    /// Names the chunk in spans and errors (`row_group[0].p`).
    pub fn named(mut self, chunk: &str) -> Self {
        self.chunk = chunk.to_string();
        self
    }

    fn next_page(&mut self) -> Result<Page<'a>, FormatError> {
        let name = format!("{}.page[{}].header", self.chunk, self.k);
        let rest = &self.bytes[self.at as usize..self.end as usize];
        let (header, header_len, fields) = page_header::decode(rest, self.at, &name)?;
        let left = rest.len() as u64 - header_len;
        let claimed = u64::try_from(header.compressed_page_size).map_err(|_| {
            let detail = format!("a page size of {} bytes; expected 0 or more", header.compressed_page_size);
            FormatError::structure(self.at, name.clone(), detail)
        })?;
        if claimed > left {
            let detail = format!(
                "the page claims {claimed} bytes; the column chunk ends {left} bytes after its header"
            );
            return Err(FormatError::structure(self.at, name, detail));
        }
        let data_start = (header_len) as usize;
        let data = &rest[data_start..data_start + claimed as usize];
        Ok(Page { header, at: self.at, header_len, fields, data })
    }
}

impl<'a> Iterator for Pages<'a> {
    type Item = Result<Page<'a>, FormatError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.at >= self.end {
            return None;
        }
        let page = self.next_page();
        match &page {
            Ok(p) => {
                self.at = p.data_start() + p.data.len() as u64;
                self.k += 1;
            }
            Err(_) => self.failed = true,
        }
        Some(page)
    }
}

/// Parquet's encoding numbers (parquet.thrift), as their names.
pub fn encoding_name(n: i32) -> String {
    match n {
        0 => "PLAIN".into(),
        2 => "PLAIN_DICTIONARY".into(),
        3 => "RLE".into(),
        4 => "BIT_PACKED".into(),
        5 => "DELTA_BINARY_PACKED".into(),
        6 => "DELTA_LENGTH_BYTE_ARRAY".into(),
        7 => "DELTA_BYTE_ARRAY".into(),
        8 => "RLE_DICTIONARY".into(),
        9 => "BYTE_STREAM_SPLIT".into(),
        other => format!("encoding {other}"),
    }
}

/// parquet.thrift's footer structures, as the parquet crate (57) decodes
/// them: each field's name (the footer's spans, [`footer_fields`]) and what
/// it holds (the check every footer passes before the crate reads it,
/// [`super::thrift::check_struct`]). Fields the crate does not decode are
/// skipped by both as their bytes declare.
mod fields {
    use super::super::thrift::{Fields, Wire::*};

    pub const FILE_META_DATA: Fields = &[
        (1, "version", Int),
        (2, "schema", List(&Struct(SCHEMA_ELEMENT))),
        (3, "num_rows", Int),
        (4, "row_groups", List(&Struct(ROW_GROUP))),
        (5, "key_value_metadata", List(&Struct(KEY_VALUE))),
        (6, "created_by", Binary),
        (7, "column_orders", List(&Struct(COLUMN_ORDER))),
        (8, "encryption_algorithm", Struct(&[])),
        (9, "footer_signing_key_metadata", Binary),
    ];
    const SCHEMA_ELEMENT: Fields = &[
        (1, "type", Int),
        (2, "type_length", Int),
        (3, "repetition_type", Int),
        (4, "name", Binary),
        (5, "num_children", Int),
        (6, "converted_type", Int),
        (7, "scale", Int),
        (8, "precision", Int),
        (9, "field_id", Int),
        (10, "logical_type", Struct(LOGICAL_TYPE)),
    ];
    const COLUMN_ORDER: Fields = &[(1, "TYPE_ORDER", Struct(&[]))];
    const LOGICAL_TYPE: Fields = &[
        (1, "STRING", Struct(&[])),
        (2, "MAP", Struct(&[])),
        (3, "LIST", Struct(&[])),
        (4, "ENUM", Struct(&[])),
        (5, "DECIMAL", Struct(&[(1, "scale", Int), (2, "precision", Int)])),
        (6, "DATE", Struct(&[])),
        (7, "TIME", Struct(TIME)),
        (8, "TIMESTAMP", Struct(TIME)),
        (10, "INTEGER", Struct(&[(1, "bitWidth", Byte), (2, "isSigned", Bool)])),
        (11, "UNKNOWN", Struct(&[])),
        (12, "JSON", Struct(&[])),
        (13, "BSON", Struct(&[])),
        (14, "UUID", Struct(&[])),
        (15, "FLOAT16", Struct(&[])),
        (16, "VARIANT", Struct(&[(1, "specification_version", Byte)])),
        (17, "GEOMETRY", Struct(&[(1, "crs", Binary)])),
        (18, "GEOGRAPHY", Struct(&[(1, "crs", Binary), (2, "algorithm", Int)])),
    ];
    /// `TimeType` and `TimestampType`.
    const TIME: Fields = &[(1, "isAdjustedToUTC", Bool), (2, "unit", Struct(TIME_UNIT))];
    const TIME_UNIT: Fields =
        &[(1, "MILLIS", Struct(&[])), (2, "MICROS", Struct(&[])), (3, "NANOS", Struct(&[]))];
    const KEY_VALUE: Fields = &[(1, "key", Binary), (2, "value", Binary)];
    const ROW_GROUP: Fields = &[
        (1, "columns", List(&Struct(COLUMN_CHUNK))),
        (2, "total_byte_size", Int),
        (3, "num_rows", Int),
        (4, "sorting_columns", List(&Struct(SORTING_COLUMN))),
        (5, "file_offset", Int),
        (6, "total_compressed_size", Int),
        (7, "ordinal", Int),
    ];
    const SORTING_COLUMN: Fields =
        &[(1, "column_idx", Int), (2, "descending", Bool), (3, "nulls_first", Bool)];
    const COLUMN_CHUNK: Fields = &[
        (1, "file_path", Binary),
        (2, "file_offset", Int),
        (3, "meta_data", Struct(COLUMN_META_DATA)),
        (4, "offset_index_offset", Int),
        (5, "offset_index_length", Int),
        (6, "column_index_offset", Int),
        (7, "column_index_length", Int),
        (8, "crypto_metadata", Struct(&[])),
        (9, "encrypted_column_metadata", Binary),
    ];
    const COLUMN_META_DATA: Fields = &[
        (1, "type", Int),
        (2, "encodings", List(&Int)),
        (3, "path_in_schema", List(&Binary)),
        (4, "codec", Int),
        (5, "num_values", Int),
        (6, "total_uncompressed_size", Int),
        (7, "total_compressed_size", Int),
        (8, "key_value_metadata", List(&Struct(KEY_VALUE))),
        (9, "data_page_offset", Int),
        (10, "index_page_offset", Int),
        (11, "dictionary_page_offset", Int),
        (12, "statistics", Struct(STATISTICS)),
        (13, "encoding_stats", List(&Struct(PAGE_ENCODING_STATS))),
        (14, "bloom_filter_offset", Int),
        (15, "bloom_filter_length", Int),
        (16, "size_statistics", Struct(SIZE_STATISTICS)),
        (17, "geospatial_statistics", Struct(GEOSPATIAL_STATISTICS)),
    ];
    const STATISTICS: Fields = &[
        (1, "max", Binary),
        (2, "min", Binary),
        (3, "null_count", Int),
        (4, "distinct_count", Int),
        (5, "max_value", Binary),
        (6, "min_value", Binary),
        (7, "is_max_value_exact", Bool),
        (8, "is_min_value_exact", Bool),
    ];
    const PAGE_ENCODING_STATS: Fields = &[(1, "page_type", Int), (2, "encoding", Int), (3, "count", Int)];
    const SIZE_STATISTICS: Fields = &[
        (1, "unencoded_byte_array_data_bytes", Int),
        (2, "repetition_level_histogram", List(&Int)),
        (3, "definition_level_histogram", List(&Int)),
    ];
    const GEOSPATIAL_STATISTICS: Fields =
        &[(1, "bbox", Struct(BOUNDING_BOX)), (2, "geospatial_types", List(&Int))];
    const BOUNDING_BOX: Fields = &[
        (1, "xmin", Double),
        (2, "xmax", Double),
        (3, "ymin", Double),
        (4, "ymax", Double),
        (5, "zmin", Double),
        (6, "zmax", Double),
        (7, "mmin", Double),
        (8, "mmax", Double),
    ];
}

/// A span for every named field of the footer (`footer.row_groups[0]
/// .columns[2].meta_data.data_page_offset`, …), for `dump` and the hex view;
/// on a footer that does not decode, the fields before the fault and the
/// error naming its byte.
pub fn footer_fields(bytes: &[u8]) -> (Vec<Span>, Option<FormatError>) {
    footer_fields_within(bytes, 0..u64::MAX)
}

/// [`footer_fields`] overlapping the file offsets `keep`.
pub fn footer_fields_within(bytes: &[u8], keep: std::ops::Range<u64>) -> (Vec<Span>, Option<FormatError>) {
    let Ok((start, len)) = framing(bytes).1 else { return (Vec::new(), None) };
    let metadata = &bytes[start as usize..(start + len) as usize];
    let (spans, result) =
        super::thrift::walk_struct_within(metadata, start, "footer", fields::FILE_META_DATA, keep);
    (spans, result.err())
}

/// The named spans of a base's tail (its bytes from file offset `at`, the
/// end of the last column chunk, to the end of the file) at the offsets the
/// whole file gives them: the page indexes, every field of the footer, its
/// length and magic. For a footer copy (`format::footer_copy`), which holds
/// the tail alone, and for naming the field a changed byte belongs to.
pub fn tail_spans(tail: &[u8], at: u64) -> Vec<Span> {
    let n = tail.len() as u64;
    if n < 8 {
        return Vec::new();
    }
    let end = at + n;
    let footer_len = u32::from_le_bytes(tail[tail.len() - 8..tail.len() - 4].try_into().unwrap_or([0; 4]));
    let magic = String::from_utf8_lossy(&tail[tail.len() - 4..]).into_owned();
    let mut spans = vec![
        span("footer.length", end - 8, end - 4, Role::Length, Some(footer_len.to_string())),
        span("footer.magic", end - 4, end, Role::Magic, Some(format!("{magic:?}"))),
    ];
    let Some(meta_rel) = (n - 8).checked_sub(u64::from(footer_len)) else { return spans };
    if meta_rel > 0 {
        spans.push(span("page_indexes", at, at + meta_rel, Role::Payload, None));
    }
    spans.push(span("footer.metadata", at + meta_rel, end - 8, Role::Payload, None));
    let metadata = &tail[meta_rel as usize..tail.len() - 8];
    let (fields, _) = super::thrift::walk_struct_within(
        metadata,
        at + meta_rel,
        "footer",
        fields::FILE_META_DATA,
        0..u64::MAX,
    );
    spans.extend(fields);
    spans
}
