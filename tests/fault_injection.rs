//! The fault-injection corpus: a fixture store (a multi-row-group base with
//! its 11 sidecars and digests, an epoch marker, a multi-batch log) damaged
//! one way at a time — single flipped bits and truncations at many offsets,
//! from a fixed seed, in every file — and after each:
//! * `verify` and `verify --deep` return (no panic, no hang);
//! * plain verify finds 100% of the damage to data.deltalog and
//!   data.compacted-epoch; deep verify 100% of the damage to sidecars;
//! * queries fail with an error, report the damaged log tail they skipped,
//!   or return exactly the undamaged rows — never other rows silently.
//!
//! The detection table is printed (docs/fault-injection.md has the figures).
//! One kind of damage is undetectable by design and is counted apart: a log
//! cut exactly at a batch boundary is a valid, shorter log (no field records
//! the committed length).

mod common;

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::Rng;
use cottas_tui::compact::{self, CompactOptions};
use cottas_tui::format::deltalog;
use cottas_tui::import::{self, ImportOptions};
use cottas_tui::sparql::run::with_results;
use cottas_tui::sparql::update::Updater;
use cottas_tui::store::base::writer::BaseOptions;
use cottas_tui::store::read::ColumnCache;
use cottas_tui::store::versions::open::Store;
use cottas_tui::triage::verify::{self, Severity, VerifyOptions};
use cottas_tui::view::overlay::Overlay;
use cottas_tui::view::View;
use spareval::QueryResults;
use spargebra::SparqlParser;

const EX: &str = "https://example.org";

fn small_rgs() -> BaseOptions {
    BaseOptions { row_group_size: 6, ..BaseOptions::default() }
}

fn fixture(dir: &Path) -> PathBuf {
    let nq = dir.join("data.nq");
    let mut text = String::new();
    for i in 0..30 {
        let g = ["", " <https://example.org/g1>", " <https://example.org/g2>"][i % 3];
        text.push_str(&format!("<{EX}/s{}> <{EX}/p{}> \"v{i}\"@en{g} .\n", i % 7, i % 4));
        text.push_str(&format!("<{EX}/s{}> <{EX}/link> <{EX}/s{}>{g} .\n", i % 7, (i * 3) % 11));
    }
    std::fs::write(&nq, text).unwrap();
    let chunk = dir.join("chunk");
    let mut opts = ImportOptions::new(vec![nq], chunk.clone());
    opts.base = small_rgs();
    import::import(&opts, |_| {}).unwrap();
    let mut u = Updater::open(&chunk, None).unwrap();
    u.apply(&format!("INSERT DATA {{ <{EX}/new> <{EX}/p0> \"folded\" }}")).unwrap();
    u.apply(&format!("DELETE DATA {{ <{EX}/s1> <{EX}/link> <{EX}/s3> }}")).unwrap();
    drop(u);
    compact::compact(&chunk, &CompactOptions { base: small_rgs(), ..CompactOptions::default() }, |_| {})
        .unwrap();
    // Only v2 is damaged; v1 would be verified again on every case.
    cottas_tui::store::versions::gc_apply(&chunk, Some(1), None).unwrap();
    let mut u = Updater::open(&chunk, None).unwrap();
    u.apply(&format!("INSERT DATA {{ GRAPH <{EX}/g1> {{ <{EX}/s2> <{EX}/p1> \"logged\"@de }} }}")).unwrap();
    u.apply(&format!("CLEAR GRAPH <{EX}/g2>")).unwrap();
    u.apply(&format!("DELETE DATA {{ <{EX}/s0> <{EX}/p0> \"v0\"@en }}")).unwrap();
    chunk
}

const QUERIES: [&str; 4] = [
    "SELECT ?s ?p ?o ?g { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } }",
    "SELECT ?p ?o { <https://example.org/s3> ?p ?o }",
    "SELECT ?s ?g { GRAPH ?g { ?s ?p \"v4\"@en } }",
    "SELECT ?s ?o { ?s <https://example.org/link> ?o }",
];

enum Answer {
    Rows(Vec<Vec<String>>),
    /// The log had a damaged tail that was reported and skipped.
    Announced,
    Failed,
}

fn answers(chunk: &Path) -> Vec<Answer> {
    let Ok(store) = Store::open(chunk) else { return vec![Answer::Failed] };
    let cache = ColumnCache::new(1 << 20);
    let overlay = match Overlay::load(&store, &cache) {
        Ok(o) => o,
        Err(_) => return vec![Answer::Failed],
    };
    if overlay.leftover.is_some() {
        return vec![Answer::Announced];
    }
    QUERIES
        .iter()
        .map(|q| {
            let q = SparqlParser::new().parse_query(q).unwrap();
            with_results(&[View::new(&store, &overlay, &cache)], &q, |r| match r {
                Ok(QueryResults::Solutions(sols)) => {
                    let rows: Result<Vec<Vec<String>>, _> =
                        sols.map(|s| s.map(|s| s.iter().map(|(_, t)| t.to_string()).collect())).collect();
                    match rows {
                        Ok(mut rows) => {
                            rows.sort();
                            Answer::Rows(rows)
                        }
                        Err(_) => Answer::Failed,
                    }
                }
                _ => Answer::Failed,
            })
        })
        .collect()
}

#[derive(Default)]
struct Tally {
    cases: usize,
    plain: usize,
    deep: usize,
    deep_runs: usize,
    structural: usize,
    undetectable: usize,
    query_failed: usize,
    query_announced: usize,
    query_correct: usize,
}

fn has_error(chunk: &Path, deep: bool) -> bool {
    let r = verify::verify(chunk, VerifyOptions { deep, ..VerifyOptions::default() })
        .expect("verify runs on a damaged store");
    r.findings.iter().any(|f| f.severity == Severity::Error)
}

#[test]
fn every_damage_is_found_and_no_query_answers_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let chunk = fixture(dir.path());
    let pristine_report =
        verify::verify(&chunk, VerifyOptions { deep: true, ..VerifyOptions::default() }).unwrap();
    assert!(pristine_report.is_clean(), "the fixture is clean: {:?}", pristine_report.findings);
    let expected: Vec<Vec<Vec<String>>> = answers(&chunk)
        .into_iter()
        .map(|a| match a {
            Answer::Rows(r) => r,
            _ => panic!("the fixture answers"),
        })
        .collect();
    let log_bytes = std::fs::read(chunk.join("data.deltalog")).unwrap();
    let log = deltalog::decode(&log_bytes).result.unwrap();
    assert!(log.batches.len() >= 3);
    let boundaries: Vec<usize> = std::iter::once(deltalog::HEADER_LEN as usize)
        .chain(log.batches.iter().map(|b| (b.offset + b.len) as usize))
        .collect();

    let mut files: Vec<PathBuf> = vec![chunk.join("data.deltalog")];
    for e in std::fs::read_dir(chunk.join("v2")).unwrap() {
        let p = e.unwrap().path();
        if p.file_name().unwrap() != "summary.json" {
            files.push(p);
        }
    }
    files.sort();
    let mut rng = Rng(0xfa17_5eed);
    let mut table: BTreeMap<String, Tally> = BTreeMap::new();
    let mut silent_wrong = Vec::new();
    let digests = chunk.join("v2").join(cottas_tui::store::base::digests::DIGESTS);
    for file in &files {
        let name = file.strip_prefix(&chunk).unwrap().display().to_string();
        let kind = if name.contains(".dict") || name.contains(".presence") || name.contains(".offsets") {
            "sidecar"
        } else {
            "other"
        };
        let original = std::fs::read(file).unwrap();
        let n = original.len();
        let flips: Vec<usize> =
            if n <= 400 { (0..n).collect() } else { (0..400).map(|_| rng.next() as usize % n).collect() };
        let cuts: Vec<usize> =
            if n <= 200 { (0..n).collect() } else { (0..200).map(|_| rng.next() as usize % n).collect() };
        let mut cases: Vec<(String, Vec<u8>)> = Vec::new();
        for at in flips {
            let mut b = original.clone();
            b[at] ^= 1 << (rng.next() % 8);
            cases.push((format!("bit flip at {at}"), b));
        }
        for at in cuts {
            cases.push((format!("truncated to {at}"), original[..at].to_vec()));
        }
        let t = table.entry(name.clone()).or_default();
        for (what, bytes) in cases {
            t.cases += 1;
            let is_log = name == "data.deltalog";
            if is_log && what.starts_with("truncated") && boundaries.contains(&bytes.len()) {
                t.undetectable += 1;
                continue;
            }
            std::fs::write(file, &bytes).unwrap();
            let started = Instant::now();
            let plain = catch_unwind(AssertUnwindSafe(|| has_error(&chunk, false)))
                .unwrap_or_else(|_| panic!("verify panicked: {name} {what}"));
            // Deep verify on every sidecar case (it must find all of them)
            // and on every fourth of the others (it must not panic there).
            let run_deep = kind == "sidecar" || t.cases.is_multiple_of(4);
            t.deep_runs += usize::from(run_deep);
            let deep = run_deep
                && catch_unwind(AssertUnwindSafe(|| has_error(&chunk, true)))
                    .unwrap_or_else(|_| panic!("verify --deep panicked: {name} {what}"));
            assert!(started.elapsed() < Duration::from_secs(30), "verify hung on {name} {what}");
            t.plain += usize::from(plain);
            t.deep += usize::from(deep);
            if kind == "sidecar" {
                // What the structure alone reveals, without the digest file.
                std::fs::rename(&digests, dir.path().join("digests.aside")).unwrap();
                t.structural += usize::from(has_error(&chunk, false));
                std::fs::rename(dir.path().join("digests.aside"), &digests).unwrap();
            }
            let got = catch_unwind(AssertUnwindSafe(|| answers(&chunk)))
                .unwrap_or_else(|_| panic!("a query panicked: {name} {what}"));
            match got.as_slice() {
                [Answer::Failed] => t.query_failed += 1,
                [Answer::Announced] => t.query_announced += 1,
                rows => {
                    let ok = rows.iter().zip(&expected).all(|(a, e)| matches!(a, Answer::Rows(r) if r == e))
                        && rows.len() == expected.len();
                    let any_failed = rows.iter().any(|a| matches!(a, Answer::Failed));
                    if ok {
                        t.query_correct += 1;
                    } else if any_failed
                        && rows.iter().zip(&expected).all(|(a, e)| match a {
                            Answer::Rows(r) => r == e,
                            _ => true,
                        })
                    {
                        t.query_failed += 1;
                    } else {
                        silent_wrong.push(format!("{name}: {what}"));
                    }
                }
            }
            if matches!(name.as_str(), "data.deltalog" | "v2/data.compacted-epoch") {
                assert!(plain, "plain verify missed {what} in {name}");
            }
            if kind == "sidecar" {
                assert!(deep, "deep verify missed {what} in {name}");
            }
        }
        std::fs::write(file, &original).unwrap();
    }
    assert!(
        verify::verify(&chunk, VerifyOptions { deep: true, ..VerifyOptions::default() }).unwrap().is_clean(),
        "restored"
    );

    let pct = |a: usize, b: usize| {
        if b == 0 {
            "-".to_string()
        } else {
            format!("{:.1}%", 100.0 * a as f64 / b as f64)
        }
    };
    eprintln!("| file | cases | plain verify | deep verify (of the cases it ran on) | structure alone (no digests) | query: error | query: tail skipped, announced | query: correct rows |");
    eprintln!("|---|---|---|---|---|---|---|---|");
    let mut total = 0;
    for (name, t) in &table {
        let judged = t.cases - t.undetectable;
        total += t.cases;
        let structural = if name.contains(".dict") || name.contains(".presence") || name.contains(".offsets")
        {
            pct(t.structural, judged)
        } else {
            "-".into()
        };
        let undetectable = if t.undetectable > 0 {
            format!(" (+{} cut at a batch boundary)", t.undetectable)
        } else {
            String::new()
        };
        eprintln!(
            "| {name} | {judged}{undetectable} | {} | {} | {structural} | {} | {} | {} |",
            pct(t.plain, judged),
            pct(t.deep, t.deep_runs),
            t.query_failed,
            t.query_announced,
            t.query_correct
        );
    }
    eprintln!("{total} cases; {} answered wrong rows silently", silent_wrong.len());
    assert!(total >= 5000, "{total} cases");
    assert!(
        silent_wrong.is_empty(),
        "queries answered wrong rows without an error:\n{}",
        silent_wrong.join("\n")
    );
}
