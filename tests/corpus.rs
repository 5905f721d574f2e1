//! `corpus list` and `corpus verify` over a real corpus: a pycottas-made
//! chunk (3 columns, no sidecars), one of ours with pending updates, one
//! compacted twice, one with a torn log tail, nested a level down, beside a
//! hidden temp dir and a deeper chunk past `--depth`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::bin;

fn run(args: &[&str], root: &Path) -> Output {
    let (verb, rest) = args.split_first().unwrap();
    bin().args(["corpus", verb]).arg(root).args(rest).output().unwrap()
}

fn cli(args: &[&str], chunk: &Path) -> String {
    let (verb, rest) = args.split_first().unwrap();
    let out = bin().arg(verb).arg(chunk).args(rest).output().unwrap();
    assert!(out.status.success(), "{verb}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn update(chunk: &Path, text: &str) {
    cli(&["update", "-e", text], chunk);
}

/// The corpus, and the byte the torn chunk's log was cut at.
fn corpus(root: &Path) -> u64 {
    let ours = common::sample_store(root);
    std::fs::rename(&ours, root.join("pending")).unwrap();
    let pending = root.join("pending");
    update(&pending, "INSERT DATA { <http://ex.org/n1> <http://ex.org/p> 1 }");
    update(
        &pending,
        "DELETE DATA { <https://example.org/default-subject> <https://example.org/status> \"default\" }",
    );

    let twice = root.join("team/twice");
    std::fs::create_dir_all(twice.parent().unwrap()).unwrap();
    std::fs::rename(common::sample_store(&root.join("team")), &twice).unwrap();
    for i in 0..2 {
        update(&twice, &format!("INSERT DATA {{ <http://ex.org/c{i}> <http://ex.org/p> {i} }}"));
        cli(&["compact", "-q"], &twice);
    }

    let py = root.join("py/v1");
    std::fs::create_dir_all(&py).unwrap();
    std::fs::copy(common::pycottas_small("cottas"), py.join("data.cottas")).unwrap();

    let torn = root.join("torn");
    std::fs::rename(common::sample_store(&root.join("t")), &torn).unwrap();
    update(&torn, "INSERT DATA { <http://ex.org/t> <http://ex.org/p> 1 }");
    let log = torn.join("data.deltalog");
    let len = std::fs::metadata(&log).unwrap().len();
    let mut bytes = std::fs::read(&log).unwrap();
    bytes.extend_from_slice(b"DLB1\x01\x02\x03");
    std::fs::write(&log, bytes).unwrap();

    // Not chunks to list: a hidden temp dir, and a chunk deeper than --depth 2.
    std::fs::create_dir_all(root.join(".v9.compact-tmp.1/v1")).unwrap();
    let deep = root.join("a/b/c");
    std::fs::create_dir_all(deep.parent().unwrap()).unwrap();
    std::fs::rename(common::sample_store(&root.join("a/b")), &deep).unwrap();
    len
}

/// One chunk's entry in a `--json` listing.
fn entry(json: &serde_json::Value, name: &str) -> serde_json::Value {
    json["chunks"].as_array().unwrap().iter().find(|c| c["name"] == name).unwrap().clone()
}

fn chunk_names(json: &serde_json::Value) -> Vec<String> {
    json["chunks"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn list_finds_every_chunk_within_the_depth_and_says_what_is_pending() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    corpus(root);
    let out = run(&["list", "--json", "--depth", "2"], root);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["schema"], "cottas-tui.corpus-list/1");
    assert_eq!(chunk_names(&json), ["pending", "py", "team/twice", "torn"], "a/b/c is 3 levels down");
    let chunk = |name: &str| entry(&json, name);
    assert_eq!(chunk("pending")["pending_batches"], 2);
    assert_eq!(chunk("pending")["base_quads"], 5);
    assert_eq!(chunk("team/twice")["current"], "v3");
    assert_eq!(chunk("team/twice")["versions"], 3);
    assert_eq!(chunk("team/twice")["base_quads"], 7);
    assert_eq!(chunk("team/twice")["pending_batches"], 0);
    assert_eq!(chunk("py")["current"], serde_json::Value::Null);
    assert_eq!(chunk("py")["base_quads"], 22);
    assert!(chunk("torn")["status"].as_str().unwrap().contains("torn log tail"), "{}", chunk("torn"));
    assert_eq!(out.status.code(), Some(1), "a chunk that does not read whole is a problem");
    let deeper = run(&["list", "--json"], root);
    let json: serde_json::Value = serde_json::from_slice(&deeper.stdout).unwrap();
    assert!(chunk_names(&json).contains(&"a/b/c".to_owned()));
    let text = String::from_utf8(run(&["list"], root).stdout).unwrap();
    assert!(text.lines().next().unwrap().starts_with("chunk"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("team/twice") && l.contains(" v3 ")), "{text}");
}

#[test]
fn verify_runs_every_chunk_and_exits_with_the_worst() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let torn_at = corpus(root);
    let out = run(&["verify", "--jobs", "2", "--depth", "2"], root);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("pending: clean"), "{text}");
    assert!(text.contains("team/twice: clean"), "{text}");
    assert!(text.contains("torn/data.deltalog"), "findings are named under their chunk: {text}");
    assert!(text.contains(&format!("error[log-tail] at byte {torn_at}")), "{text}");
    assert!(text.contains("py/v1/data.cottas.s.dict"), "{text}");
    assert!(
        text.contains("corpus verify: 4 chunks, 2 clean, 2 with findings, 0 could not be verified"),
        "{text}"
    );
    // The same as each chunk's own verify, as JSON.
    let json: serde_json::Value =
        serde_json::from_slice(&run(&["verify", "--json", "--depth", "2"], root).stdout).unwrap();
    assert_eq!(json["schema"], "cottas-tui.corpus-verify/1");
    for c in json["chunks"].as_array().unwrap() {
        let name = c["name"].as_str().unwrap();
        let own = bin().args(["verify", "--json"]).arg(root.join(name)).output().unwrap();
        let own: serde_json::Value = serde_json::from_slice(&own.stdout).unwrap();
        assert_eq!(c["report"]["findings"], own["findings"], "{name}");
    }
}

#[test]
fn a_root_without_chunks_or_a_missing_root_is_an_error_that_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    for root in [empty.clone(), dir.path().join("missing")] {
        let out = run(&["list"], &root);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(&root.display().to_string()), "{err}");
    }
    // One chunk dir is a corpus of one, named `.`.
    let one: PathBuf = common::sample_store(dir.path());
    let json: serde_json::Value = serde_json::from_slice(&run(&["list", "--json"], &one).stdout).unwrap();
    assert_eq!(chunk_names(&json), ["."]);
}

#[test]
fn compact_folds_the_chunks_over_the_threshold_and_a_dry_run_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    corpus(root);
    let count = |chunk: &str| {
        cli(
            &["query", "-e", "SELECT (COUNT(*) AS ?n) { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } }"],
            &root.join(chunk),
        )
    };
    let before = (count("pending"), count("torn"));
    let listing = || run(&["list", "--json", "--depth", "2"], root).stdout;
    let listed = listing();
    let dry = run(&["compact", "--dry-run", "--depth", "2"], root);
    let text = String::from_utf8_lossy(&dry.stdout);
    assert!(text.contains("pending: would compact") && text.contains("fold:      2 batches"), "{text}");
    assert!(text.contains("team/twice: skipped, nothing to fold"), "{text}");
    assert_eq!(listing(), listed, "a dry run changes nothing");
    // py has no log at all: under the 1-byte threshold.
    let out = run(&["compact", "--min-log-bytes", "1", "--jobs", "2", "--depth", "2"], root);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("py: skipped, log 0 B < 1 B"), "{text}");
    assert!(text.contains("corpus compact: 2 compacted, 0 failed, 2 skipped"), "{text}");
    assert_eq!((count("pending"), count("torn")), before, "compaction changes no answer");
    let json: serde_json::Value = serde_json::from_slice(&listing()).unwrap();
    let chunk = |name: &str| entry(&json, name);
    assert_eq!(
        (chunk("pending")["current"].clone(), chunk("pending")["pending_batches"].clone()),
        ("v2".into(), 0.into())
    );
    assert_eq!(chunk("team/twice")["current"], "v3", "nothing to fold: untouched");
    for name in ["pending", "torn", "team/twice"] {
        let out = bin().arg("verify").arg(root.join(name)).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{name} verifies clean: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

/// A cell that is not an N-Triples term (an IRI with a space), in the
/// second of three chunks: a query over the corpus names that chunk's base,
/// not the first chunk's.
#[test]
fn a_bad_cell_in_a_corpus_is_blamed_on_the_chunk_that_holds_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for name in ["a", "c"] {
        std::fs::rename(common::sample_store(&root.join(format!("{name}-tmp"))), root.join(name)).unwrap();
    }
    let row = |o: &str| ["<http://ex.org/s>", "<http://ex.org/p>", o, "DEFAULT"].map(str::to_owned);
    let bad = root.join("b/v1");
    common::foreign_base(&bad, &[row("\"fine\""), row("<http://ex.org/a b>")], 10);
    assert!(bin().arg("index").arg(&bad).output().unwrap().status.success());
    let out = bin()
        .arg("query")
        .arg(root)
        .args(["-e", "SELECT ?o { <http://ex.org/s> <http://ex.org/p> ?o }"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    let named = bad.join("data.cottas").display().to_string();
    assert!(stderr.contains(&named), "names {named}: {stderr}");
    assert!(stderr.contains("not a valid N-Triples term"), "{stderr}");
}

/// A corpus query that cannot open two of its five chunks names the first
/// of them in the corpus's order, and the other is not blamed.
#[test]
fn a_chunk_that_does_not_open_is_named_in_the_corpus_order() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("corpus");
    std::fs::create_dir(&root).unwrap();
    for name in ["a", "b", "c", "d", "e"] {
        let made = common::sample_store(&dir.path().join(format!("{name}-tmp")));
        std::fs::rename(made, root.join(name)).unwrap();
    }
    for broken in ["b", "d"] {
        let base = root.join(broken).join("v1/data.cottas");
        std::fs::OpenOptions::new().write(true).open(&base).unwrap().set_len(100).unwrap();
    }
    let out = bin().arg("query").arg(&root).args(["-e", "ASK {}"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains(&root.join("b/v1/data.cottas").display().to_string()), "{stderr}");
    assert!(!stderr.contains("/d/v1"), "{stderr}");
}
