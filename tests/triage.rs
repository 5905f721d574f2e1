//! `verify`, `log` and `repair` through the real binary on real damaged
//! stores: each finding points at the byte and names the next command; each
//! repair changes nothing without --yes and keeps what it removes.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Output, Stdio};

use common::{bin, sample_store};
use cottas_tui::format::deltalog::{self, Batch, Entry, Object, Quad, Subject};
use cottas_tui::format::term;
use cottas_tui::format::transport::Transport;
use cottas_tui::store::log::writer::WriterLock;

fn run(args: &[&str], chunk: &Path) -> Output {
    bin().args(args).arg(chunk).output().unwrap()
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

fn update(chunk: &Path, r: &str) {
    let o = bin().arg("update").arg(chunk).args(["-e", r]).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
}

fn quad(s: &str) -> Quad {
    Quad {
        subject: Subject::Iri(format!("https://example.org/{s}")),
        predicate: "https://example.org/p".into(),
        object: Object::Literal { lexical: "1".into(), datatype: term::XSD_STRING.into(), language: None },
        graph: None,
    }
}

#[test]
fn a_clean_store_verifies_clean_and_the_json_is_versioned() {
    let dir = tempfile::tempdir().unwrap();
    let chunk = sample_store(dir.path());
    update(&chunk, "INSERT DATA { <https://example.org/a> <https://example.org/p> 1 }");
    let o = run(&["verify"], &chunk);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("verify: clean"));
    let o = run(&["verify", "--deep", "--json"], &chunk);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["schema"], "cottas-tui.verify/1");
    assert_eq!(v["findings"].as_array().unwrap().len(), 0);
    assert_eq!(run(&["verify"], &dir.path().join("missing")).status.code(), Some(2));
}

#[test]
fn log_findings_point_at_the_byte() {
    let dir = tempfile::tempdir().unwrap();
    let chunk = sample_store(dir.path());
    // Batches: seq 5 epoch 0 (shadowed by marker 0), seq 3 (seq goes back), then a torn tail.
    let batches = [
        Batch { seq: 5, epoch: 0, entries: vec![Entry::add(quad("shadowed"))] },
        Batch { seq: 3, epoch: 1, entries: vec![Entry::add(quad("x"))] },
    ];
    let mut bytes = deltalog::encode_batches(&batches, Transport::Raw);
    let torn_at = bytes.len();
    bytes.extend_from_slice(
        &deltalog::encode_batch(&Batch { seq: 6, epoch: 1, entries: vec![] }, Transport::Raw)[..10],
    );
    std::fs::write(chunk.join("data.deltalog"), &bytes).unwrap();
    let o = run(&["verify"], &chunk);
    assert_eq!(o.status.code(), Some(1));
    let out = text(&o);
    assert!(out.contains(&format!("error[log-tail] at byte {torn_at}")), "{out}");
    assert!(out.contains("next: cottas-tui repair truncate-torn-tail"), "{out}");
    assert!(out.contains("warning[log-shadowed] at byte 8"), "{out}");
    assert!(out.contains("warning[log-seq]"), "{out}");

    let o = run(&["log", "--entries"], &chunk);
    let out = text(&o);
    assert!(
        out.contains("seq 5")
            && out.contains("shadowed")
            && out.contains("ADD    <https://example.org/shadowed>"),
        "{out}"
    );
    assert!(out.contains(&format!("{torn_at:>10}  LEFTOVER 10 bytes, torn-frame")), "{out}");
    let o = run(&["log", "--from", "4"], &chunk);
    assert!(text(&o).contains("seq 5") && !text(&o).contains("seq 3"));
    let o = run(&["log", "--stats"], &chunk);
    assert!(text(&o).contains("batches:   2 (1 visible, 1 shadowed)"), "{}", text(&o));
    let o = run(&["log", "--json"], &chunk);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["schema"], "cottas-tui.log/1");
    assert_eq!(v["batches"][0]["visible"], false);
    assert_eq!(v["leftover"]["reason"], "torn-frame");
}

#[test]
fn damage_that_hides_batches_stops_queries_and_writers_until_repaired() {
    let dir = tempfile::tempdir().unwrap();
    let chunk = sample_store(dir.path());
    update(&chunk, "INSERT DATA { <https://example.org/a> <https://example.org/p> 1 }");
    update(&chunk, "INSERT DATA { <https://example.org/b> <https://example.org/p> 2 }");
    let log = chunk.join("data.deltalog");
    let mut bytes = std::fs::read(&log).unwrap();
    bytes[30] ^= 0x40; // inside the first batch: the second is hidden behind it
    std::fs::write(&log, &bytes).unwrap();
    let o = bin().arg("query").arg(&chunk).args(["-e", "ASK { ?s ?p ?o }"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("1 valid batch follows the damage (the first at offset"), "{}", text(&o));
    let o = bin()
        .arg("update")
        .arg(&chunk)
        .args(["-e", "INSERT DATA { <https://example.org/c> <https://example.org/p> 3 }"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "the writer does not append behind the damage");
    assert_eq!(std::fs::read(&log).unwrap(), bytes);
    let o = run(&["verify"], &chunk);
    assert!(text(&o).contains("error[log-damage] at byte 8"), "{}", text(&o));

    let o = bin().args(["repair", "truncate-torn-tail"]).arg(&chunk).output().unwrap();
    assert!(text(&o).contains("would cut") && text(&o).contains("dry run"));
    assert_eq!(std::fs::read(&log).unwrap(), bytes, "a dry run changes nothing");
    let lock = WriterLock::acquire(&chunk, None).unwrap();
    let o = bin().args(["repair", "truncate-torn-tail", "--yes"]).arg(&chunk).output().unwrap();
    assert_eq!(o.status.code(), Some(3), "repair takes the writer lock");
    drop(lock);
    let o = bin().args(["repair", "truncate-torn-tail", "--yes"]).arg(&chunk).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("verify: clean"), "repair ends with a clean verify: {}", text(&o));
    assert_eq!(std::fs::read(&log).unwrap(), deltalog::encode_header());
    let backups: Vec<_> = walk(&chunk.join("cottas-tui-backups"));
    assert!(backups.iter().any(|p| std::fs::read(p).unwrap() == bytes), "the cut log is kept: {backups:?}");
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn sidecar_damage_is_found_and_rebuilt_with_a_backup() {
    let dir = tempfile::tempdir().unwrap();
    let chunk = sample_store(dir.path());
    let presence = chunk.join("v1/data.cottas.s.presence");
    let mut bytes = std::fs::read(&presence).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x01; // a bit of the bitmap: still a well-formed file
    std::fs::write(&presence, &bytes).unwrap();
    let o = run(&["verify"], &chunk);
    let out = text(&o);
    assert!(out.contains("error[digest]") && out.contains("error[presence-bits]"), "{out}");
    assert!(out.contains("next: cottas-tui repair rebuild-sidecars"), "{out}");
    // Without the digest file the comparison with the rows still sees it
    // (streamed, as for every base); `--deep` is accepted and says the same.
    std::fs::remove_file(chunk.join("v1/cottas-tui.digests.json")).unwrap();
    for args in [&["verify"][..], &["verify", "--deep"]] {
        let out = text(&run(args, &chunk));
        assert!(out.contains("error[presence-bits] at byte 16"), "{out}");
        assert!(out.contains("next: cottas-tui repair rebuild-sidecars"), "{out}");
    }
    // Queries stay right: the sidecar is checked on open.
    let o = bin().args(["repair", "rebuild-sidecars", "--yes"]).arg(&chunk).arg("v1").output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("verify: clean"));
    assert!(walk(&chunk.join("cottas-tui-backups")).iter().any(|p| std::fs::read(p).unwrap() == bytes));
}

/// A sidecar whose digests were written after it went wrong (what a writer
/// bug would leave): only the comparison with the rows can see it, and it
/// names the file and the first wrong byte.
#[test]
fn a_sidecar_that_disagrees_with_the_rows_is_found_even_when_its_digests_agree() {
    let dir = tempfile::tempdir().unwrap();
    let chunk = sample_store(dir.path());
    let v1 = chunk.join("v1");
    let offsets = v1.join("data.cottas.s.offsets");
    let mut bytes = std::fs::read(&offsets).unwrap();
    bytes[16 + 8] ^= 0x01; // the end row of subject 0
    std::fs::write(&offsets, &bytes).unwrap();
    cottas_tui::store::base::digests::write(&v1).unwrap();
    let out = text(&run(&["verify"], &chunk));
    assert!(!out.contains("error[digest]") && !out.contains("error[blocks]"), "{out}");
    assert!(out.contains("error[s-offsets]") && out.contains("at byte 24"), "{out}");
    assert!(out.contains("next: cottas-tui repair rebuild-sidecars"), "{out}");
}

#[test]
fn markers_and_current_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let chunk = sample_store(dir.path());
    std::fs::write(chunk.join("v1/data.compacted-epoch"), b"CEP1garbage").unwrap();
    let out = text(&run(&["verify"], &chunk));
    assert!(out.contains("v1/data.compacted-epoch") && out.contains("error[marker]"), "{out}");
    std::fs::write(
        chunk.join("v1/data.compacted-epoch"),
        cottas_tui::format::epoch::encode(&cottas_tui::format::epoch::EpochMarker::new(0)),
    )
    .unwrap();

    std::fs::remove_file(chunk.join("current")).unwrap();
    std::os::unix::fs::symlink("v7", chunk.join("current")).unwrap();
    let out = text(&run(&["verify"], &chunk));
    assert!(out.contains("error[current]") && out.contains("repair reset-current"), "{out}");
    let o = bin().args(["repair", "reset-current", "--yes"]).arg(&chunk).output().unwrap();
    assert!(
        text(&o).contains("point `current` (v7) at v1") && text(&o).contains("verify: clean"),
        "{}",
        text(&o)
    );
    assert_eq!(std::fs::read_link(chunk.join("current")).unwrap(), Path::new("v1"));
}

#[test]
fn log_follow_prints_batches_as_they_are_appended() {
    let dir = tempfile::tempdir().unwrap();
    let chunk = sample_store(dir.path());
    update(&chunk, "INSERT DATA { <https://example.org/f> <https://example.org/p> 1 }");
    let mut child = bin().args(["log", "--follow"]).arg(&chunk).stdout(Stdio::piped()).spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // The existing batch first: once it is printed, the follower is running.
    assert!(lines.next().unwrap().unwrap().contains("seq 1"));
    update(&chunk, "INSERT DATA { <https://example.org/g> <https://example.org/p> 2 } ; INSERT DATA { <https://example.org/h> <https://example.org/p> 3 }");
    let line = lines.next().unwrap().unwrap();
    assert!(line.contains("seq 2") && line.contains("+2"), "{line}");
    child.kill().unwrap();
    child.wait().unwrap();
}

/// Leftovers of interrupted operations: `verify` warns and suggests
/// `gc --leftovers --yes`, which (run as printed) removes only them and
/// keeps every version; without `--yes` it only lists them.
#[test]
fn gc_leftovers_removes_only_what_interrupted_operations_left() {
    let dir = tempfile::tempdir().unwrap();
    let chunk = sample_store(dir.path());
    update(&chunk, "INSERT DATA { <http://e/x> <http://e/p> \"1\" }");
    assert!(run(&["compact"], &chunk).status.success());
    let leftover = chunk.join(".v3.compact-tmp.999999999");
    std::fs::create_dir(&leftover).unwrap();
    std::fs::write(leftover.join("data.cottas"), b"half a version").unwrap();
    let o = run(&["verify", "--json"], &chunk);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let debris =
        v["findings"].as_array().unwrap().iter().find(|f| f["check"] == "debris").expect("a debris finding");
    let next = debris["next"].as_str().unwrap();
    assert_eq!(next, format!("cottas-tui gc {} --leftovers --yes", chunk.display()));

    let dry = run(&["gc", "--leftovers"], &chunk);
    assert!(dry.status.success(), "{}", text(&dry));
    assert!(
        text(&dry).contains("would remove") && text(&dry).contains(".v3.compact-tmp.999999999"),
        "{}",
        text(&dry)
    );
    assert!(leftover.exists(), "a dry run removes nothing");
    let words: Vec<&str> = next.split(' ').skip(1).collect();
    let o = bin().args(&words).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(!leftover.exists());
    assert!(chunk.join("v1").is_dir() && chunk.join("v2").is_dir(), "every version is kept");
    assert!(run(&["verify"], &chunk).status.success());
    let both = bin().args(["gc"]).arg(&chunk).args(["--leftovers", "--keep", "1"]).output().unwrap();
    assert_eq!(both.status.code(), Some(2), "--leftovers and --keep are exclusive: {}", text(&both));
}
