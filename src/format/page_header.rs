//! Parquet page headers (`PageHeader` of parquet.thrift, Thrift compact
//! protocol), decoded here rather than by the parquet crate: every field
//! read records its byte span for the hex view, unknown fields are skipped
//! to a bounded depth, nothing is allocated for skipped bytes, and a header
//! that does not decode names its byte and what was expected. The chunk
//! decoder, `dump`/inspect and the TUI decoder all read page headers through
//! [`decode`] (by way of `format::parquet::pages`).
//! The compact protocol itself is read by [`super::thrift`].

use super::error::FormatError;
use super::span::{Role, Span};
use super::thrift::{Reader, T_FALSE, T_I32, T_STRUCT, T_TRUE};

/// Page types of parquet.thrift.
pub const DATA_PAGE: i32 = 0;
pub const INDEX_PAGE: i32 = 1;
pub const DICTIONARY_PAGE: i32 = 2;
pub const DATA_PAGE_V2: i32 = 3;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageHeader {
    pub page_type: i32,
    pub uncompressed_page_size: i32,
    pub compressed_page_size: i32,
    pub crc: Option<i32>,
    pub data_page: Option<DataPageHeader>,
    pub dictionary_page: Option<DictionaryPageHeader>,
    pub data_page_v2: Option<DataPageHeaderV2>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DataPageHeader {
    pub num_values: i32,
    pub encoding: i32,
    pub definition_level_encoding: i32,
    pub repetition_level_encoding: i32,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DictionaryPageHeader {
    pub num_values: i32,
    pub encoding: i32,
    pub is_sorted: Option<bool>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DataPageHeaderV2 {
    pub num_values: i32,
    pub num_nulls: i32,
    pub num_rows: i32,
    pub encoding: i32,
    pub definition_levels_byte_length: i32,
    pub repetition_levels_byte_length: i32,
    pub is_compressed: Option<bool>,
}

impl PageHeader {
    /// The number of values the page says it holds.
    pub fn num_values(&self) -> i32 {
        let dict = self.dictionary_page.as_ref().map(|d| d.num_values);
        let v1 = self.data_page.as_ref().map(|d| d.num_values);
        let v2 = self.data_page_v2.as_ref().map(|d| d.num_values);
        dict.or(v1).or(v2).unwrap_or(0)
    }

    /// The values' encoding, for pages that have one.
    pub fn encoding(&self) -> Option<i32> {
        let dict = self.dictionary_page.as_ref().map(|d| d.encoding);
        let v1 = self.data_page.as_ref().map(|d| d.encoding);
        let v2 = self.data_page_v2.as_ref().map(|d| d.encoding);
        dict.or(v1).or(v2)
    }

    pub fn kind(&self) -> &'static str {
        match self.page_type {
            DATA_PAGE => "data page v1",
            INDEX_PAGE => "index page",
            DICTIONARY_PAGE => "dictionary page",
            DATA_PAGE_V2 => "data page v2",
            _ => "page",
        }
    }
}

/// Decodes the page header at the start of `bytes`, which lie at file offset
/// `at`. Returns the header, its length in bytes, and the spans of its
/// fields, named under `name` (`row_group[0].p.page[1].header`).
pub fn decode(bytes: &[u8], at: u64, name: &str) -> Result<(PageHeader, u64, Vec<Span>), FormatError> {
    let mut r = Reader::new(bytes, at, name);
    let mut h = PageHeader::default();
    let mut seen = [false; 3];
    r.fields(0, |r, id, ty| {
        match (id, ty) {
            (1, T_I32) => (h.page_type, seen[0]) = (r.i32_field("type", Role::Value)?, true),
            (2, T_I32) => {
                (h.uncompressed_page_size, seen[1]) =
                    (r.i32_field("uncompressed_page_size", Role::Length)?, true)
            }
            (3, T_I32) => {
                (h.compressed_page_size, seen[2]) = (r.i32_field("compressed_page_size", Role::Length)?, true)
            }
            (4, T_I32) => h.crc = Some(r.i32_field("crc", Role::Checksum)?),
            (5, T_STRUCT) => h.data_page = Some(r.data_page_header()?),
            (7, T_STRUCT) => h.dictionary_page = Some(r.dictionary_page_header()?),
            (8, T_STRUCT) => h.data_page_v2 = Some(r.data_page_header_v2()?),
            _ => r.skip(ty, 1)?,
        }
        Ok(())
    })?;
    if let Some(i) = seen.iter().position(|s| !s) {
        let field = ["type", "uncompressed_page_size", "compressed_page_size"][i];
        return Err(r.error(0, format!("the page header has no {field} (a required field)")));
    }
    Ok((h, r.pos as u64, r.spans))
}

/// The typed parts of a page header, read field by field.
impl Reader<'_> {
    fn data_page_header(&mut self) -> Result<DataPageHeader, FormatError> {
        let mut h = DataPageHeader::default();
        self.fields(1, |r, id, ty| {
            match (id, ty) {
                (1, T_I32) => h.num_values = r.i32_field("num_values", Role::Count)?,
                (2, T_I32) => h.encoding = r.i32_field("encoding", Role::Value)?,
                (3, T_I32) => {
                    h.definition_level_encoding = r.i32_field("definition_level_encoding", Role::Value)?
                }
                (4, T_I32) => {
                    h.repetition_level_encoding = r.i32_field("repetition_level_encoding", Role::Value)?
                }
                _ => r.skip(ty, 2)?,
            }
            Ok(())
        })?;
        Ok(h)
    }

    fn dictionary_page_header(&mut self) -> Result<DictionaryPageHeader, FormatError> {
        let mut h = DictionaryPageHeader::default();
        self.fields(1, |r, id, ty| {
            match (id, ty) {
                (1, T_I32) => h.num_values = r.i32_field("num_values", Role::Count)?,
                (2, T_I32) => h.encoding = r.i32_field("encoding", Role::Value)?,
                (3, T_TRUE | T_FALSE) => h.is_sorted = Some(r.bool_field("is_sorted", ty)),
                _ => r.skip(ty, 2)?,
            }
            Ok(())
        })?;
        Ok(h)
    }

    fn data_page_header_v2(&mut self) -> Result<DataPageHeaderV2, FormatError> {
        let mut h = DataPageHeaderV2::default();
        self.fields(1, |r, id, ty| {
            match (id, ty) {
                (1, T_I32) => h.num_values = r.i32_field("num_values", Role::Count)?,
                (2, T_I32) => h.num_nulls = r.i32_field("num_nulls", Role::Count)?,
                (3, T_I32) => h.num_rows = r.i32_field("num_rows", Role::Count)?,
                (4, T_I32) => h.encoding = r.i32_field("encoding", Role::Value)?,
                (5, T_I32) => {
                    h.definition_levels_byte_length =
                        r.i32_field("definition_levels_byte_length", Role::Length)?
                }
                (6, T_I32) => {
                    h.repetition_levels_byte_length =
                        r.i32_field("repetition_levels_byte_length", Role::Length)?
                }
                (7, T_TRUE | T_FALSE) => h.is_compressed = Some(r.bool_field("is_compressed", ty)),
                _ => r.skip(ty, 2)?,
            }
            Ok(())
        })?;
        Ok(h)
    }
}

#[cfg(all(test, feature = "full"))]
#[allow(deprecated)] // parquet::format is used here only as an independent encoder
mod tests {
    use super::*;
    use parquet::format as pf;
    use parquet::thrift::TSerializable;

    fn encode(h: &pf::PageHeader) -> Vec<u8> {
        let mut buf = Vec::new();
        let mut prot = thrift::protocol::TCompactOutputProtocol::new(&mut buf);
        h.write_to_out_protocol(&mut prot).unwrap();
        thrift::protocol::TOutputProtocol::flush(&mut prot).unwrap();
        buf
    }

    fn stats() -> pf::Statistics {
        pf::Statistics {
            max: Some(b"zz".to_vec()),
            min: Some(b"aa".to_vec()),
            null_count: Some(0),
            distinct_count: None,
            max_value: Some(vec![7; 300]),
            min_value: Some(b"a".to_vec()),
            is_max_value_exact: Some(true),
            is_min_value_exact: Some(false),
        }
    }

    fn v2_header() -> pf::PageHeader {
        pf::PageHeader {
            type_: pf::PageType::DATA_PAGE_V2,
            uncompressed_page_size: 1000,
            compressed_page_size: 400,
            crc: Some(-5),
            data_page_header: None,
            index_page_header: None,
            dictionary_page_header: None,
            data_page_header_v2: Some(pf::DataPageHeaderV2 {
                num_values: 122_880,
                num_nulls: 0,
                num_rows: 122_880,
                encoding: pf::Encoding::RLE_DICTIONARY,
                definition_levels_byte_length: 12,
                repetition_levels_byte_length: 0,
                is_compressed: Some(false),
                statistics: Some(stats()),
            }),
        }
    }

    /// What the parquet crate's encoder writes, we read, skipping the
    /// statistics (a nested struct with binaries) without losing our place.
    #[test]
    fn reads_what_the_parquet_crate_writes() {
        let mut bytes = encode(&v2_header());
        let len = bytes.len() as u64;
        bytes.extend_from_slice(b"page bytes follow");
        let (h, n, spans) = decode(&bytes, 100, "rg.p.page[0].header").unwrap();
        assert_eq!(n, len);
        assert_eq!(
            (h.page_type, h.uncompressed_page_size, h.compressed_page_size, h.crc),
            (3, 1000, 400, Some(-5))
        );
        let v2 = h.data_page_v2.unwrap();
        assert_eq!((v2.num_values, v2.encoding, v2.definition_levels_byte_length), (122_880, 8, 12));
        assert_eq!(v2.is_compressed, Some(false));
        let size = spans.iter().find(|s| s.name == "rg.p.page[0].header.compressed_page_size").unwrap();
        assert_eq!(size.value.as_deref(), Some("400"));
        assert!(spans.iter().all(|s| s.range.start >= 100 && s.range.end <= 100 + len));

        let dict = pf::PageHeader {
            type_: pf::PageType::DICTIONARY_PAGE,
            uncompressed_page_size: 10,
            compressed_page_size: 9,
            crc: None,
            data_page_header: None,
            index_page_header: None,
            dictionary_page_header: Some(pf::DictionaryPageHeader {
                num_values: 3,
                encoding: pf::Encoding::PLAIN,
                is_sorted: Some(true),
            }),
            data_page_header_v2: None,
        };
        let (h, _, _) = decode(&encode(&dict), 0, "d").unwrap();
        assert_eq!(
            h.dictionary_page,
            Some(DictionaryPageHeader { num_values: 3, encoding: 0, is_sorted: Some(true) })
        );
    }

    /// Every cut of a header is an error naming a byte inside it; every
    /// one-byte change decodes or fails, and never panics.
    #[test]
    fn cuts_and_flips_are_errors_not_panics() {
        let bytes = encode(&v2_header());
        for cut in 0..bytes.len() {
            let e = decode(&bytes[..cut], 0, "h").unwrap_err();
            assert!(e.offset <= cut as u64, "cut {cut}: {e}");
        }
        for i in 0..bytes.len() {
            for v in [0x00, 0xff, 0x0f, 0xf9, 0x80, bytes[i] ^ 0x10] {
                let mut b = bytes.clone();
                b[i] = v;
                let _ = decode(&b, 0, "h");
            }
        }
    }

    #[test]
    fn nesting_and_counts_are_bounded() {
        // Field 9 (unknown) as a struct holding a struct … 40 deep.
        let mut deep = vec![0x15, 0x00, 0x15, 0x00, 0x15, 0x00];
        deep.extend(std::iter::repeat_n(0x1c, 40));
        let e = decode(&deep, 0, "h").unwrap_err();
        assert!(e.to_string().contains("nested deeper"), "{e}");
        // A list claiming 2^40 elements in a few bytes.
        let list = [0x15, 0x00, 0x15, 0x00, 0x15, 0x00, 0x69, 0xf5, 0x80, 0x80, 0x80, 0x80, 0x20];
        let e = decode(&list, 0, "h").unwrap_err();
        assert!(e.to_string().contains("elements"), "{e}");
    }
}
