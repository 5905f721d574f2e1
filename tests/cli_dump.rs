//! `cottas-tui dump` end to end: the real binary on real files.

mod common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use cottas_tui::format::deltalog::{self, Batch, Entry};
use cottas_tui::format::transport::Transport;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_cottas-tui"))
}

fn dump(args: &[&str], file: &Path) -> Output {
    bin().arg("dump").args(args).arg(file).output().unwrap()
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn golden_files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in ["fixtures/golden", "fixtures/golden/sample"] {
        for e in std::fs::read_dir(common::repo().join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.is_file() {
                out.push(p);
            }
        }
    }
    out.sort();
    assert_eq!(out.len(), 18, "7 log/epoch goldens + 11 sidecars");
    out
}

#[test]
fn every_golden_file_dumps_clean() {
    for f in golden_files() {
        let o = dump(&[], &f);
        assert_eq!(o.status.code(), Some(0), "{}: {}", f.display(), text(&o));
        let out = text(&o);
        assert!(out.contains("status    ok"), "{}: {out}", f.display());
        assert!(out.contains("kind "), "{out}");
    }
    let legacy = dump(&[], &common::repo().join("fixtures/golden/one-add.legacy.deltalog"));
    assert!(text(&legacy).contains("legacy-code-points"));
}

/// Offsets that certainly lie in a field the decoder must check alone (no
/// sidecar checksum covers token bytes or bitmap bits, so flips there are
/// found by `verify --deep`, not by a standalone decode).
fn checked_offsets(f: &Path, len: usize) -> Vec<usize> {
    let name = f.file_name().unwrap().to_string_lossy();
    if name.ends_with("deltalog") || name.ends_with("compacted-epoch") {
        (0..len).collect() // every byte is covered by a magic, version, length or checksum
    } else {
        (0..12).collect() // magic, version and the first count
    }
}

#[test]
fn truncated_and_bit_flipped_copies_exit_1_with_the_offset() {
    let dir = tempfile::tempdir().unwrap();
    let mut cases = 0;
    for f in golden_files() {
        let bytes = std::fs::read(&f).unwrap();
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        if name == "empty.deltalog" {
            continue; // 8 bytes: truncation below 8 is covered by the other logs
        }
        for cut in [1, bytes.len() / 2, bytes.len() - 1] {
            let p = dir.path().join(format!("cut{cut}-{name}"));
            std::fs::write(&p, &bytes[..cut]).unwrap();
            let o = dump(&[], &p);
            assert_eq!(o.status.code(), Some(1), "{name} cut at {cut}: {}", text(&o));
            assert!(text(&o).contains("at byte "), "{name} cut at {cut}: {}", text(&o));
            cases += 1;
        }
        for off in checked_offsets(&f, bytes.len()) {
            let mut b = bytes.clone();
            b[off] ^= 0x10;
            let p = dir.path().join(format!("flip{off}-{name}"));
            std::fs::write(&p, &b).unwrap();
            let o = dump(&["--json"], &p);
            assert_eq!(o.status.code(), Some(1), "{name} flip at {off}: {}", text(&o));
            let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            assert_eq!(v["status"], "problems");
            let at = v["problems"][0]["offset"].as_u64().unwrap();
            assert!(at <= bytes.len() as u64, "{name}: offset {at} inside the file");
            cases += 1;
        }
    }
    assert!(cases > 500, "{cases} cases");
}

#[test]
fn a_torn_log_tail_is_reported_at_its_offset_and_shown_red() {
    let good = std::fs::read(common::repo().join("fixtures/golden/one-add.deltalog")).unwrap();
    let mut torn = good.clone();
    torn.extend_from_slice(&good[8..100]);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("data.deltalog");
    std::fs::write(&p, &torn).unwrap();

    let o = dump(&["--json", "--spans"], &p);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["schema"], "cottas-tui.dump/1");
    assert_eq!(v["problems"][0]["class"], "torn-frame");
    assert_eq!(v["problems"][0]["offset"], 174);
    assert_eq!(v["value"]["leftover"]["offset"], 174);
    assert_eq!(v["value"]["leftover"]["len"], 92);
    assert_eq!(v["value"]["batches"].as_array().unwrap().len(), 1);
    let tail = v["spans"].as_array().unwrap().iter().find(|s| s["name"] == "leftover").unwrap();
    assert_eq!(tail["role"], "tail");
    assert_eq!(tail["status"], "bad");

    let colored = text(&dump(&["--hex", "--color", "always"], &p));
    assert!(colored.contains("\x1b[97;41m44"), "the torn tail's first byte is white on red");
    assert!(colored.contains("\x1b[32m44"), "the good DLOG magic is green");
    let plain = text(&dump(&["--hex", "--no-color"], &p));
    assert!(!plain.contains('\x1b'));
    assert!(plain.contains("│000000a0│") && plain.contains("!44!4c"), "{plain}");
    assert!(plain.contains("✗leftover"));
}

#[test]
fn a_bad_checksum_is_red_in_the_hex_view() {
    let mut b = std::fs::read(common::repo().join("fixtures/golden/epoch-1.compacted-epoch")).unwrap();
    b[20] = 0x07; // stored checksum 7, computed 1
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("data.compacted-epoch");
    std::fs::write(&p, &b).unwrap();
    let o = dump(&["--hex", "--color", "always"], &p);
    assert_eq!(o.status.code(), Some(1));
    let out = text(&o);
    assert!(out.contains("at byte 20 (0x14): checksum mismatch"), "{out}");
    assert!(out.contains("\x1b[1;31m07"), "bad checksum byte is red: {out}");
    assert!(out.contains("\x1b[32m43"), "good magic is green");
}

#[test]
fn parquet_footer_summary() {
    let o = dump(&["--json"], &common::pycottas_small("cottas"));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["kind"], "cottas-parquet");
    assert_eq!(v["value"]["num_rows"], 22);
    assert_eq!(v["value"]["columns"], serde_json::json!(["s", "p", "o", "g"]));
    assert_eq!(v["value"]["key_value_metadata"][0]["key"], "index");
    let cols = v["value"]["row_groups"][0]["columns"].as_array().unwrap();
    assert!(cols.iter().all(|c| c["codec"] == "ZSTD"));

    // A truncated copy loses its footer magic.
    let bytes = std::fs::read(common::pycottas_small("cottas")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("data.cottas");
    std::fs::write(&p, &bytes[..bytes.len() - 3]).unwrap();
    let o = dump(&[], &p);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains(&format!("at byte {}", bytes.len() - 7)), "{}", text(&o));
}

#[test]
fn unreadable_or_unknown_input_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let o = dump(&[], &dir.path().join("missing.s.dict"));
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("missing.s.dict"));
    let p = dir.path().join("notes.txt");
    std::fs::write(&p, b"hello").unwrap();
    let o = dump(&[], &p);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a COTTAS store file"));
    let o = bin().args(["dump", "--bogus"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn a_closed_pipe_is_not_an_error() {
    let batches: Vec<Batch> = (0..2000)
        .map(|i| Batch { seq: i, epoch: 1, entries: vec![Entry::create(format!("urn:g:{i}"))] })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("data.deltalog");
    std::fs::write(&p, deltalog::encode_batches(&batches, Transport::Raw)).unwrap();
    let mut child = bin()
        .args(["dump", "--hex", "--no-color"])
        .arg(&p)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 64];
    child.stdout.as_mut().unwrap().read_exact(&mut first).unwrap();
    drop(child.stdout.take());
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "stderr: {err}");
    assert!(err.is_empty(), "no error message on a closed pipe: {err}");
}

#[test]
fn the_demo_store_builds_and_lists_clean_then_flags_damage() {
    let dir = tempfile::tempdir().unwrap();
    let demo = dir.path().join("demo");
    let o = bin().args(["demo", "--dir"]).arg(&demo).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = text(&o);
    assert!(out.contains("current -> v2"), "{out}");
    assert!(out.contains("✓ v2/data.cottas.po.presence"), "{out}");
    assert_eq!(out.matches('✓').count(), 1 + 2 * 13, "log + 2 versions × 13 files: {out}");
    assert!(!out.contains('✗'));

    // Damage one file: the listing now names it and exits 1.
    let log = demo.join("data.deltalog");
    let mut b = std::fs::read(&log).unwrap();
    let n = b.len();
    b[n - 1] ^= 0xff;
    std::fs::write(&log, &b).unwrap();
    let o = bin().arg(&demo).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("✗ data.deltalog"), "{}", text(&o));

    // A second `demo` reuses the store rather than rebuilding it.
    let o = bin().args(["demo", "--dir"]).arg(&demo).output().unwrap();
    assert!(text(&o).starts_with("demo store found"));
}

/// The footer's field spans (our Thrift walker) agree with what the
/// parquet crate decodes from the same bytes, for pycottas's file and ours:
/// every row group's row count and every chunk's data page offset and size.
#[test]
fn footer_field_spans_agree_with_the_parquet_crate() {
    use cottas_tui::format::parquet::{footer_fields, read_footer};
    let dir = tempfile::tempdir().unwrap();
    let ours = common::sample_store(dir.path()).join("v1/data.cottas");
    let files = vec![std::fs::read(ours).unwrap(), std::fs::read(common::pycottas_small("cottas")).unwrap()];
    for bytes in files {
        let (spans, err) = footer_fields(&bytes);
        assert!(err.is_none(), "{err:?}");
        let value = |name: &str| {
            let s = spans.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("no span {name}"));
            assert!(s.range.end <= bytes.len() as u64);
            s.value.clone().unwrap().parse::<i64>().unwrap()
        };
        let meta = read_footer(&bytes).unwrap().meta;
        assert_eq!(value("footer.num_rows"), meta.file_metadata().num_rows());
        for (i, rg) in meta.row_groups().iter().enumerate() {
            assert_eq!(value(&format!("footer.row_groups[{i}].num_rows")), rg.num_rows());
            for (j, c) in rg.columns().iter().enumerate() {
                let at = format!("footer.row_groups[{i}].columns[{j}].meta_data");
                assert_eq!(value(&format!("{at}.data_page_offset")), c.data_page_offset());
                assert_eq!(value(&format!("{at}.total_compressed_size")), c.compressed_size());
            }
        }
    }
}
