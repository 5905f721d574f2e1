//! docs/format.md cannot drift from the code: every `<!-- layout: … -->` table
//! is checked against the spans our decoder records for a golden fixture, and
//! the magic table against the constants.

mod common;

use cottas_tui::format::deltalog;
use cottas_tui::format::kind::FileKind;
use cottas_tui::inspect::inspect;

struct Row {
    offset: u64,
    size: u64,
    field: String,
    role: String,
}

struct Layout {
    name: String,
    fixture: String,
    base: u64,
    prefix: String,
    rows: Vec<Row>,
}

fn attr<'a>(marker: &'a str, key: &str) -> &'a str {
    marker
        .split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("layout marker {marker:?} lacks {key}="))
}

fn cells(line: &str) -> Vec<String> {
    line.trim().trim_matches('|').split('|').map(|c| c.trim().to_string()).collect()
}

/// Table rows after a marker line: skip the header and the `|---|` separator.
fn table_after<'a>(lines: &mut impl Iterator<Item = &'a str>) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for line in lines.by_ref() {
        if !line.trim_start().starts_with('|') {
            break;
        }
        rows.push(cells(line));
    }
    assert!(rows.len() >= 3, "a layout table needs a header, a separator and rows");
    rows.drain(..2);
    rows
}

fn layouts(doc: &str) -> (Vec<Layout>, Vec<Vec<String>>) {
    let mut out = Vec::new();
    let mut magics = Vec::new();
    let mut lines = doc.lines();
    while let Some(line) = lines.next() {
        let line = line.trim();
        if line == "<!-- magics -->" {
            magics = table_after(&mut lines);
        } else if let Some(rest) = line.strip_prefix("<!-- layout:") {
            let marker = rest.trim_end_matches("-->").trim();
            let name = marker.split_whitespace().next().unwrap().to_string();
            let rows = table_after(&mut lines)
                .into_iter()
                .map(|c| Row {
                    offset: c[0].parse().unwrap_or_else(|_| panic!("{name}: offset {:?}", c[0])),
                    size: c[1].parse().unwrap_or_else(|_| panic!("{name}: size {:?}", c[1])),
                    field: c[2].clone(),
                    role: c[3].clone(),
                })
                .collect();
            out.push(Layout {
                name,
                fixture: attr(marker, "fixture").to_string(),
                base: attr(marker, "base").parse().unwrap(),
                prefix: attr(marker, "prefix").to_string(),
                rows,
            });
        }
    }
    (out, magics)
}

fn doc() -> String {
    std::fs::read_to_string(common::repo().join("docs/format.md")).unwrap()
}

#[test]
fn every_layout_table_matches_the_decoder_spans() {
    let (layouts, _) = layouts(&doc());
    let names: Vec<&str> = layouts.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["cotd", "cotp", "coto", "copo", "cots", "dlog", "dlb1", "dle1", "cep1"]);
    for l in &layouts {
        let path = common::repo().join("fixtures").join(&l.fixture);
        let bytes = std::fs::read(&path).unwrap();
        let ins = inspect(&l.fixture, &bytes).expect("fixture kind");
        assert!(ins.is_clean(), "{}: {:?}", l.fixture, ins.problems);
        for r in &l.rows {
            let want = format!("{}{}", l.prefix, r.field);
            let span = ins
                .spans
                .iter()
                .find(|s| s.name == want)
                .unwrap_or_else(|| panic!("{}: no span named {want} in {}", l.name, l.fixture));
            assert_eq!(span.range.start, l.base + r.offset, "{}: offset of {want}", l.name);
            assert_eq!(span.len(), r.size, "{}: size of {want}", l.name);
            assert_eq!(span.role.as_str(), r.role, "{}: role of {want}", l.name);
        }
    }
}

#[test]
fn the_magic_table_matches_the_constants() {
    let (_, magics) = layouts(&doc());
    let table: Vec<(String, Vec<u8>)> = magics
        .iter()
        .map(|c| {
            (c[0].clone(), c[1].split_whitespace().map(|h| u8::from_str_radix(h, 16).unwrap()).collect())
        })
        .collect();
    let mut expected: Vec<[u8; 4]> = FileKind::ALL.iter().map(|k| k.magic()).collect();
    expected.push(deltalog::BATCH_MAGIC);
    expected.push(deltalog::ENTRY_MAGIC);
    assert_eq!(table.len(), expected.len(), "one row per magic");
    for m in expected {
        let ascii = String::from_utf8(m.to_vec()).unwrap();
        let row = table.iter().find(|(a, _)| *a == ascii).unwrap_or_else(|| panic!("{ascii} missing"));
        assert_eq!(row.1, m, "bytes of {ascii}");
    }
}
