//! Inspection of `data.cottas`: the framing and the validated footer from
//! [`crate::format::parquet`], the page headers, and the COTTAS profile
//! checked against them (reference §3).

use parquet::basic::{Repetition, Type as PhysicalType};
use parquet::file::metadata::ParquetMetaData;
use serde_json::json;

use super::{Inspection, Problem};
use crate::format::parquet::{footer_fields, pages, read_footer};
use crate::format::{FormatError, Role, Span};

fn span(name: &str, start: u64, end: u64, role: Role, value: Option<String>) -> Span {
    Span { name: name.into(), range: start..end, role, value, reason: None }
}

fn bad(ins: &mut Inspection, e: FormatError) {
    if let Some(s) = ins.spans.iter_mut().rev().find(|s| s.contains(e.offset) || s.range.start == e.offset) {
        s.reason = Some(e.to_string());
    }
    ins.problem(&e);
}

pub(super) fn inspect(ins: &mut Inspection, bytes: &[u8]) {
    // Every field of the footer, even of one that fails the checks below:
    // the hex view then shows which field holds the bad number.
    let (fields, _) = footer_fields(bytes);
    match read_footer(bytes) {
        Ok(footer) => {
            ins.spans.extend(footer.spans.iter().cloned());
            ins.spans.extend(fields);
            describe(ins, bytes, &footer.meta, footer.metadata_start);
        }
        Err((spans, e)) => {
            ins.spans.extend(spans);
            ins.spans.extend(fields);
            bad(ins, e);
        }
    }
}

fn describe(ins: &mut Inspection, bytes: &[u8], meta: &ParquetMetaData, meta_start: u64) {
    let fm = meta.file_metadata();
    let schema = fm.schema_descr();
    let names: Vec<String> = schema.columns().iter().map(|c| c.name().to_string()).collect();
    ins.field("format version", fm.version());
    ins.field("created_by", fm.created_by().unwrap_or("-"));
    ins.field("rows", fm.num_rows());
    ins.field("row groups", meta.num_row_groups());
    ins.field("columns", names.join(" "));
    let kv: Vec<(String, String)> = fm
        .key_value_metadata()
        .map(|v| v.iter().map(|k| (k.key.clone(), k.value.clone().unwrap_or_default())).collect())
        .unwrap_or_default();
    ins.field(
        "kv metadata",
        if kv.is_empty() {
            "-".into()
        } else {
            kv.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
        },
    );
    ins.field("footer bytes", ins.size - 8 - meta_start);

    // The COTTAS profile: s p o [g], BYTE_ARRAY, OPTIONAL with max def level 1.
    let want: &[&str] = if names.len() == 3 { &["s", "p", "o"] } else { &["s", "p", "o", "g"] };
    if names != want {
        let detail = format!("a COTTAS base has columns s p o g (or s p o), found {}", names.join(" "));
        ins.problems.push(Problem {
            offset: meta_start,
            class: "structure".into(),
            message: FormatError::structure(meta_start, "schema", detail).to_string(),
        });
    }
    for c in schema.columns() {
        let optional = c.self_type().get_basic_info().repetition() == Repetition::OPTIONAL;
        if c.physical_type() != PhysicalType::BYTE_ARRAY || !optional || c.max_def_level() != 1 {
            let detail = format!(
                "column {} must be an OPTIONAL BYTE_ARRAY with max definition level 1, found {:?} {:?} (max def level {})",
                c.name(),
                c.self_type().get_basic_info().repetition(),
                c.physical_type(),
                c.max_def_level()
            );
            ins.problems.push(Problem::from_error(&FormatError::structure(meta_start, "schema", detail)));
        }
    }

    let mut groups = Vec::new();
    for (i, rg) in meta.row_groups().iter().enumerate() {
        let mut cols = Vec::new();
        let mut parts = Vec::new();
        for (j, col) in rg.columns().iter().enumerate() {
            let (start, clen) = col.byte_range();
            let name = names.get(j).cloned().unwrap_or_else(|| j.to_string());
            let encs: Vec<String> = col.encodings().map(|e| format!("{e:?}")).collect();
            ins.spans.push(chunk_span(i, &name, col));
            if start >= 4 && start + clen <= meta_start {
                let (spans, error) =
                    page_spans(bytes, &format!("row_group[{i}].{name}"), start, start + clen);
                ins.spans.extend(spans);
                if let Some(e) = error {
                    ins.problems.push(Problem::from_error(&e));
                }
            }
            if start < 4 || start + clen > meta_start {
                let detail = format!(
                    "column chunk bytes [{start}, {}) are outside the data region [4, {meta_start})",
                    start + clen
                );
                ins.problems.push(Problem::from_error(&FormatError::structure(
                    meta_start,
                    format!("row_group[{i}].{name}"),
                    detail,
                )));
            }
            if col.num_values() != rg.num_rows() {
                let detail = format!("{} values in a row group of {} rows", col.num_values(), rg.num_rows());
                ins.problems.push(Problem::from_error(&FormatError::structure(
                    start,
                    format!("row_group[{i}].{name}"),
                    detail,
                )));
            }
            parts.push(format!(
                "{name}: {} {} {}B",
                encs.join("+"),
                codec_name(col.compression()),
                col.compressed_size()
            ));
            cols.push(json!({
                "column": name, "offset": start, "compressed_size": col.compressed_size(),
                "uncompressed_size": col.uncompressed_size(), "num_values": col.num_values(),
                "codec": codec_name(col.compression()), "encodings": encs,
                "dictionary_page_offset": col.dictionary_page_offset(),
                "data_page_offset": col.data_page_offset(),
                "bloom_filter_offset": col.bloom_filter_offset(),
            }));
        }
        ins.items.push(format!(
            "row group {i}: {} rows, {} B  {}",
            rg.num_rows(),
            rg.compressed_size(),
            parts.join(" | ")
        ));
        groups.push(json!({"rows": rg.num_rows(), "compressed_size": rg.compressed_size(), "columns": cols}));
    }
    ins.value = json!({
        "version": fm.version(), "created_by": fm.created_by(), "num_rows": fm.num_rows(),
        "columns": names, "key_value_metadata": kv.iter().map(|(k, v)| json!({"key": k, "value": v})).collect::<Vec<_>>(),
        "footer_offset": meta_start, "row_groups": groups,
    });
}

/// The codec without parquet-rs's writer-side level (Parquet does not store it).
fn codec_name(c: parquet::basic::Compression) -> String {
    let s = c.to_string();
    s.split('(').next().unwrap_or(&s).to_string()
}

/// The span of column `name` of row group `rg`: its bytes and a summary.
pub(crate) fn chunk_span(rg: usize, name: &str, col: &parquet::file::metadata::ColumnChunkMetaData) -> Span {
    let (start, len) = col.byte_range();
    let encs: Vec<String> = col.encodings().map(|e| format!("{e:?}")).collect();
    let value = format!("{} values, {}", col.num_values(), encs.join("+"));
    span(&format!("row_group[{rg}].{name}"), start, start + len, Role::Payload, Some(value))
}

/// The pages of one column chunk, through the one page walker of
/// `format::parquet`: each header's span and summary, each page's bytes;
/// and the error that stopped the walk, if one did.
pub(crate) fn page_spans(
    bytes: &[u8],
    chunk: &str,
    start: u64,
    end: u64,
) -> (Vec<Span>, Option<FormatError>) {
    let mut spans = Vec::new();
    for (k, page) in pages(bytes, start, end).named(chunk).enumerate() {
        match page {
            Ok(p) => {
                let (header, data) = (p.header_span(chunk, k), p.data_span(chunk, k));
                spans.push(header);
                spans.extend(p.fields);
                spans.push(data);
            }
            Err(e) => return (spans, Some(e)),
        }
    }
    (spans, None)
}
