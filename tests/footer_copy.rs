//! Footer damage leads to a fix: every version this program writes keeps a
//! copy of its base's footer (`cottas-tui.footer`); `verify`, `dump` and
//! the store's open name the changed byte and its field alike, and
//! `repair restore-footer` (copy first) puts the footer back. All through
//! the binary, on real stores in temp dirs.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{bin, store_of};

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

fn nquads() -> String {
    (0..200)
        .map(|i| {
            format!(
                "<https://e.org/s{}> <https://e.org/p{}> \"v{i}\" <https://e.org/g{}> .\n",
                i % 17,
                i % 5,
                i % 3
            )
        })
        .collect()
}

/// The file offset and value of the first footer span named `field`
/// (`dump --json --spans`).
fn span_of(base: &Path, field: &str) -> (u64, u64, String) {
    let o = bin().args(["dump", "--json", "--spans"]).arg(base).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let s = v["spans"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == field)
        .unwrap_or_else(|| panic!("no {field}"));
    (
        s["start"].as_u64().unwrap(),
        s["end"].as_u64().unwrap(),
        s["value"].as_str().unwrap_or_default().to_string(),
    )
}

fn verify_json(chunk: &Path) -> serde_json::Value {
    let o = bin().args(["verify", "--json"]).arg(chunk).output().unwrap();
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn findings(report: &serde_json::Value) -> &Vec<serde_json::Value> {
    report["findings"].as_array().unwrap()
}

fn poke(path: &Path, at: u64, f: impl Fn(u8) -> u8) {
    let mut b = std::fs::read(path).unwrap();
    b[at as usize] = f(b[at as usize]);
    std::fs::write(path, b).unwrap();
}

fn setup() -> (tempfile::TempDir, PathBuf, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let chunk = store_of(dir.path(), &nquads());
    let pristine = std::fs::read(chunk.join("v1/data.cottas")).unwrap();
    assert!(chunk.join("v1/cottas-tui.footer").is_file(), "import writes the footer copy");
    (dir, chunk, pristine)
}

/// A footer field changed to another valid number: the base still parses,
/// and only the digest and the copy tell.
#[test]
fn a_changed_footer_field_is_named_everywhere_and_restored() {
    let (_dir, chunk, pristine) = setup();
    let base = chunk.join("v1/data.cottas");
    let field = "footer.row_groups[0].columns[1].meta_data.data_page_offset";
    let (at, _, written) = span_of(&base, field);
    // The low bits of a varint's first byte: still a valid varint.
    poke(&base, at, |b| b ^ 0x04);

    let report = verify_json(&chunk);
    let f = &findings(&report)[0];
    assert_eq!(findings(&report).len(), 1, "{report}");
    assert_eq!((f["check"].as_str(), f["offset"].as_u64()), (Some("footer"), Some(at)), "{f}");
    let message = f["message"].as_str().unwrap();
    assert!(message.contains(field) && message.contains(&format!("the copy has {written}")), "{message}");
    assert_eq!(
        f["next"],
        "cottas-tui repair restore-footer ".to_string() + chunk.to_str().unwrap() + " v1 --yes"
    );

    // dump and a query say the same thing, and fail.
    let dump = bin().arg("dump").arg(&base).output().unwrap();
    assert_eq!(dump.status.code(), Some(1), "{}", text(&dump));
    assert!(text(&dump).contains(message), "{}", text(&dump));
    let spans = bin().args(["dump", "--json", "--spans"]).arg(&base).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&spans.stdout).unwrap();
    let bad: Vec<_> = v["spans"].as_array().unwrap().iter().filter(|s| s["status"] == "bad").collect();
    assert!(bad.iter().any(|s| s["name"] == field), "the field is marked bad: {bad:?}");
    let q = bin().arg("query").arg(&chunk).args(["-e", "ASK { ?s ?p ?o }"]).output().unwrap();
    assert_ne!(q.status.code(), Some(0));
    assert!(text(&q).contains(field), "{}", text(&q));

    // Without --yes nothing changes.
    let dry = bin().args(["repair", "restore-footer"]).arg(&chunk).arg("v1").output().unwrap();
    assert_eq!(dry.status.code(), Some(0), "{}", text(&dry));
    assert!(text(&dry).contains("dry run"));
    assert_ne!(std::fs::read(&base).unwrap(), pristine);

    let done = bin().args(["repair", "restore-footer"]).arg(&chunk).args(["v1", "--yes"]).output().unwrap();
    assert_eq!(done.status.code(), Some(0), "{}", text(&done));
    assert_eq!(std::fs::read(&base).unwrap(), pristine, "the base is byte for byte what import wrote");
    assert!(findings(&verify_json(&chunk)).is_empty());
    let kept = backups(&chunk);
    assert_eq!(kept.len(), 1);
    let damaged = std::fs::read(kept[0].join("v1/data.cottas")).unwrap();
    assert_eq!(damaged.len(), pristine.len());
    assert_ne!(damaged, pristine, "the damaged file is kept");
    let q = bin()
        .arg("query")
        .arg(&chunk)
        .args(["-e", "SELECT (COUNT(*) AS ?n) { GRAPH ?g { ?s ?p ?o } }", "--format", "tsv"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&q.stdout).contains("200"), "{}", text(&q));
}

fn backups(chunk: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(chunk.join("cottas-tui-backups"))
        .map_or(Vec::new(), |d| d.map(|e| e.unwrap().path()).collect())
}

/// The footer's length field, a tail cut off and a tail with bytes after
/// it: each is found at its byte and restored.
#[test]
fn a_changed_length_and_a_cut_or_grown_tail_are_restored() {
    type Damage = fn(&Path, u64);
    let cases: [(&str, Damage); 3] = [
        ("footer.length", |p, len| poke(p, len - 7, |b| b ^ 0x01)),
        ("footer.magic", |p, len| {
            let f = std::fs::OpenOptions::new().write(true).open(p).unwrap();
            f.set_len(len - 3).unwrap();
        }),
        ("after", |p, _| {
            let mut b = std::fs::read(p).unwrap();
            b.extend_from_slice(b"trailing junk");
            std::fs::write(p, b).unwrap();
        }),
    ];
    for (what, damage) in cases {
        let (_dir, chunk, pristine) = setup();
        let base = chunk.join("v1/data.cottas");
        damage(&base, pristine.len() as u64);
        let report = verify_json(&chunk);
        let f = &findings(&report)[0];
        assert_eq!(f["check"], "footer", "{what}: {report}");
        if what == "footer.length" {
            assert_eq!(f["offset"].as_u64(), Some(pristine.len() as u64 - 7), "{what}: {f}");
            assert!(f["message"].as_str().unwrap().contains("footer.length"), "{f}");
        }
        let done =
            bin().args(["repair", "restore-footer"]).arg(&chunk).args(["v1", "--yes"]).output().unwrap();
        assert_eq!(done.status.code(), Some(0), "{what}: {}", text(&done));
        assert_eq!(std::fs::read(&base).unwrap(), pristine, "{what}");
    }
}

/// Damage beyond the footer is not papered over: a base cut into its
/// column chunks is refused with the reason, and a damaged column chunk
/// makes the restore stop before it replaces anything.
#[test]
fn a_restore_refuses_what_the_copy_cannot_mend() {
    let (_dir, chunk, pristine) = setup();
    let base = chunk.join("v1/data.cottas");
    let copy = std::fs::read(chunk.join("v1/cottas-tui.footer")).unwrap();
    let copy_offset = u64::from_le_bytes(copy[16..24].try_into().unwrap());
    std::fs::OpenOptions::new().write(true).open(&base).unwrap().set_len(copy_offset - 10).unwrap();
    let report = verify_json(&chunk);
    assert_eq!(findings(&report)[0]["check"], "parquet", "{report}");
    assert!(
        findings(&report)[0]["message"].as_str().unwrap().contains("which the copy cannot restore"),
        "{report}"
    );
    let o = bin().args(["repair", "restore-footer"]).arg(&chunk).args(["v1", "--yes"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("chunks are lost too"), "{}", text(&o));

    // A chunk byte and a footer byte both changed: the rebuilt file fails
    // its chunk digest and the damaged base stays where it was.
    std::fs::write(&base, &pristine).unwrap();
    let (at, _, _) = span_of(&base, "footer.row_groups[0].columns[1].meta_data.data_page_offset");
    poke(&base, at, |b| b ^ 0x04);
    poke(&base, 40, |b| b ^ 0xff);
    let before = std::fs::read(&base).unwrap();
    let o = bin().args(["repair", "restore-footer"]).arg(&chunk).args(["v1", "--yes"]).output().unwrap();
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("not only in the footer"), "{}", text(&o));
    assert_eq!(std::fs::read(&base).unwrap(), before, "nothing was replaced");
}

/// A damaged copy is a finding of its own, fixed by rebuilding the
/// version's derived files (which rewrites the copy from the base, whose
/// footer matches its digest), keeping the damaged copy.
#[test]
fn a_damaged_copy_is_found_and_rewritten_from_the_base() {
    let (_dir, chunk, _) = setup();
    let copy_path = chunk.join("v1/cottas-tui.footer");
    let copy = std::fs::read(&copy_path).unwrap();
    poke(&copy_path, copy.len() as u64 - 20, |b| b ^ 0x10);
    let report = verify_json(&chunk);
    let f = &findings(&report)[0];
    assert_eq!(
        (f["check"].as_str(), f["file"].as_str()),
        (Some("footer-copy"), Some("v1/cottas-tui.footer")),
        "{report}"
    );
    let next = f["next"].as_str().unwrap();
    assert!(next.starts_with("cottas-tui repair rebuild-sidecars"), "{next}");
    let words: Vec<&str> = next.split(' ').skip(1).collect();
    let o = bin().args(&words).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(std::fs::read(&copy_path).unwrap(), copy, "rewritten as import wrote it");
    assert!(
        backups(&chunk).iter().any(|b| b.join("v1/cottas-tui.footer").is_file()),
        "the damaged copy is kept"
    );
}

/// Compaction writes a copy for the version it makes; `index` writes one
/// for a version that has none (one written before copies were kept).
#[test]
fn compaction_and_index_write_the_copy() {
    let (_dir, chunk, _) = setup();
    common::update(&chunk, "INSERT DATA { <https://e.org/n> <https://e.org/p> \"new\" }");
    let o = bin().arg("compact").arg(&chunk).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let copy = std::fs::read(chunk.join("v2/cottas-tui.footer")).unwrap();
    let base = std::fs::read(chunk.join("v2/data.cottas")).unwrap();
    assert!(base.ends_with(&copy[40..]), "the copy is the base's tail");

    std::fs::remove_file(chunk.join("v2/cottas-tui.footer")).unwrap();
    let plan = bin().args(["repair", "rebuild-sidecars"]).arg(&chunk).arg("v2").output().unwrap();
    assert!(
        text(&plan).contains("cottas-tui.footer: missing: written from the base's footer"),
        "{}",
        text(&plan)
    );
    let o = bin().args(["repair", "rebuild-sidecars"]).arg(&chunk).args(["v2", "--yes"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(std::fs::read(chunk.join("v2/cottas-tui.footer")).unwrap(), copy);
}
