//! Compaction and version management on real stores: the folded version is
//! the view, byte for byte what a fresh import of the view gives; writes made
//! while it folds survive; versions, gc and rollback keep the live view safe.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use common::{bin, sample_store};
use cottas_tui::compact::{self, CompactOptions, CompactPhase};
use cottas_tui::format::deltalog;
use cottas_tui::import::{self, ImportOptions};
use cottas_tui::sparql::run::with_results;
use cottas_tui::sparql::update::Updater;
use cottas_tui::store::read::ColumnCache;
use cottas_tui::store::versions;
use cottas_tui::store::versions::open::Store;
use cottas_tui::view::overlay::Overlay;
use cottas_tui::view::View;
use spareval::QueryResults;
use spargebra::SparqlParser;

/// Every quad of the view as sorted N-Quads lines.
fn view(chunk: &Path) -> Vec<String> {
    let store = Store::open(chunk).unwrap();
    let cache = ColumnCache::new(16 << 20);
    let overlay = Overlay::load(&store, &cache).unwrap();
    let q = SparqlParser::new()
        .parse_query("SELECT ?s ?p ?o ?g { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } }")
        .unwrap();
    let mut lines = with_results(&[View::new(&store, &overlay, &cache)], &q, |r| {
        let Ok(QueryResults::Solutions(sols)) = r else { panic!("query failed") };
        sols.map(|s| {
            let s = s.unwrap();
            let g = s.get("g").map(|g| format!(" {g}")).unwrap_or_default();
            format!("{} {} {}{g} .", s.get("s").unwrap(), s.get("p").unwrap(), s.get("o").unwrap())
        })
        .collect::<Vec<_>>()
    });
    lines.sort();
    lines
}

/// Writes `n` quads to `path`: quad i is `<s{i/a}> <p{i%b}> "object(i)" <g{i%c}>`.
fn numbered_quads(path: &Path, n: usize, [a, b, c]: [usize; 3], object: impl Fn(usize) -> String) {
    let text: String = (0..n)
        .map(|i| {
            format!(
                "<https://example.org/s{}> <https://example.org/p{}> \"{}\" <https://example.org/g{}> .\n",
                i / a,
                i % b,
                object(i),
                i % c
            )
        })
        .collect();
    std::fs::write(path, text).unwrap();
}

fn apply(chunk: &Path, requests: &[&str]) {
    let mut u = Updater::open(chunk, None).unwrap();
    for r in requests {
        u.apply(r).unwrap();
    }
}

const CHANGES: &[&str] = &[
    "INSERT DATA { <https://example.org/new> <https://example.org/p> \"n\\u00e9\\nline\"@EN . GRAPH <https://example.org/graph/fresh> { <https://example.org/a> <https://example.org/p> 1 } }",
    "DELETE DATA { GRAPH <https://example.org/graph/people> { <https://example.org/alice> <https://example.org/knows> <https://example.org/bob> } }",
    "CLEAR GRAPH <https://example.org/graph/docs>",
    "INSERT DATA { GRAPH <https://example.org/graph/docs> { <https://example.org/doc2> <https://example.org/title> \"Second\" } }",
];

#[test]
fn the_folded_version_is_the_view_and_equals_a_fresh_import() {
    let dir = tempfile::tempdir().unwrap();
    let chunk = sample_store(dir.path());
    apply(&chunk, CHANGES);
    let before = view(&chunk);
    let plan = compact::plan(&chunk).unwrap();
    assert_eq!((plan.batches_folded, plan.adds, plan.removes, plan.graph_ops), (4, 3, 1, 1));
    let mut phases = Vec::new();
    let summary = compact::compact(&chunk, &CompactOptions::default(), |p| {
        if phases.last() != Some(&p.phase) {
            phases.push(p.phase);
        }
        assert_eq!(p.epochs, (Some(0), 1));
    })
    .unwrap();
    assert_eq!(
        phases,
        [
            CompactPhase::Planning,
            CompactPhase::Folding,
            CompactPhase::Indexing,
            CompactPhase::Publishing,
            CompactPhase::Swapping,
            CompactPhase::Done
        ]
    );
    assert_eq!(std::fs::read_link(chunk.join("current")).unwrap(), Path::new("v2"));
    assert_eq!(view(&chunk), before, "the view did not change");
    assert_eq!(
        std::fs::read(chunk.join("data.deltalog")).unwrap(),
        deltalog::encode_header(),
        "the log is empty"
    );
    assert_eq!(summary.folded().expect("folded").rows as usize, before.len());

    // A fresh import of the same quads writes the same bytes.
    let nq = dir.path().join("view.nq");
    std::fs::write(&nq, before.join("\n") + "\n").unwrap();
    let fresh = dir.path().join("fresh");
    import::import(&ImportOptions::new(vec![nq], fresh.clone()), |_| {}).unwrap();
    for e in std::fs::read_dir(fresh.join("v1")).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        if name.starts_with("data.cottas") {
            let a = std::fs::read(chunk.join("v2").join(&name)).unwrap();
            let b = std::fs::read(fresh.join("v1").join(&name)).unwrap();
            assert!(a == b, "{name} differs between compaction and import");
        }
    }
    let marker = std::fs::read(chunk.join("v2/data.compacted-epoch")).unwrap();
    assert_eq!(cottas_tui::format::epoch::decode(&marker).result.unwrap().epoch, 1);

    // The next write is stamped above the new marker and is visible.
    apply(&chunk, &["INSERT DATA { <https://example.org/after> <https://example.org/p> 1 }"]);
    let log = deltalog::decode(&std::fs::read(chunk.join("data.deltalog")).unwrap()).result.unwrap();
    assert_eq!(log.batches[0].batch.epoch, 2);
    assert_eq!(view(&chunk).len(), before.len() + 1);
}

#[test]
fn dry_run_and_nothing_to_fold_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let chunk = sample_store(dir.path());
    let o = bin().arg("compact").arg(&chunk).output().unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).contains("nothing to fold"));
    apply(&chunk, CHANGES);
    let o = bin().arg("compact").arg(&chunk).arg("--dry-run").output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("fold:      4 batches, epochs 1..=1: +3 \u{2212}1, 1 graph op ("), "{out}");
    assert!(out.contains("result:    v2 with marker 1"), "{out}");
    assert!(!chunk.join("v2").exists());
}

#[test]
fn a_write_made_while_folding_is_carried_above_the_new_marker() {
    let dir = tempfile::tempdir().unwrap();
    let chunk = sample_store(dir.path());
    apply(&chunk, CHANGES);
    let mut child = bin()
        .arg("compact")
        .arg(&chunk)
        .env("COTTAS_TUI_DEBUG_PAUSE", "compact-before-lock=1500")
        .stderr(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("debug pause at compact-before-lock") {
        line.clear();
        assert!(err.read_line(&mut line).unwrap() > 0, "compaction ended before its pause");
    }
    // The fold is done, the swap not yet: this write is not in v2's base.
    apply(&chunk, &["INSERT DATA { <https://example.org/during> <https://example.org/p> 1 }"]);
    let expected = view(&chunk);
    let status = child.wait().unwrap();
    assert!(status.success());
    assert_eq!(std::fs::read_link(chunk.join("current")).unwrap(), Path::new("v2"));
    assert_eq!(view(&chunk), expected, "the write made during the fold is visible after the swap");
    let log = deltalog::decode(&std::fs::read(chunk.join("data.deltalog")).unwrap()).result.unwrap();
    assert_eq!(log.batches.len(), 1, "only the carried batch remains");
    assert_eq!(log.batches[0].batch.epoch, 2, "raised above the new marker (1)");
    assert_eq!(log.leftover.reason, deltalog::StopReason::CleanEnd, "its checksums were recomputed");
}

#[test]
fn writers_keep_writing_through_a_compaction_and_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let chunk = sample_store(dir.path());
    apply(&chunk, CHANGES);
    let writer_chunk = chunk.clone();
    // Every 40 writes the writer waits for one more compaction to finish, so
    // writes and compactions interleave however fast either runs.
    let done = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = done.clone();
    let writer = std::thread::spawn(move || {
        let mut acked = 0;
        for i in 0..200 {
            if i > 0 && i % 40 == 0 {
                let want = i / 40;
                let t = std::time::Instant::now();
                while seen.load(std::sync::atomic::Ordering::SeqCst) < want
                    && t.elapsed() < Duration::from_secs(60)
                {
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
            // A fresh session each time: it reads `current` and the marker anew.
            let mut u = Updater::open(&writer_chunk, Some(Duration::from_secs(30))).unwrap();
            u.apply(&format!("INSERT DATA {{ <https://example.org/w{i}> <https://example.org/p> {i} }}"))
                .unwrap();
            acked += 1;
        }
        acked
    });
    let mut compactions = 0;
    while !writer.is_finished() {
        let plan = compact::plan(&chunk).unwrap();
        if !plan.nothing_to_fold() {
            compact::compact(&chunk, &CompactOptions::default(), |_| {}).unwrap();
            compactions += 1;
            done.store(compactions, std::sync::atomic::Ordering::SeqCst);
        }
    }
    assert_eq!(writer.join().unwrap(), 200);
    let v = view(&chunk);
    for i in 0..200 {
        let want = format!("<https://example.org/w{i}> <https://example.org/p> \"{i}\"^^<http://www.w3.org/2001/XMLSchema#integer> .");
        assert!(v.contains(&want), "write {i} was lost ({compactions} compactions ran)");
    }
    assert!(compactions >= 4, "compactions ran alongside the writer: {compactions}");
}

#[test]
fn versions_gc_and_rollback_protect_the_live_view() {
    let dir = tempfile::tempdir().unwrap();
    let chunk = sample_store(dir.path());
    for i in 0..3 {
        apply(&chunk, &[&format!("INSERT DATA {{ <https://example.org/r{i}> <https://example.org/p> 1 }}")]);
        compact::compact(&chunk, &CompactOptions::default(), |_| {}).unwrap();
    }
    std::fs::create_dir(chunk.join(".v9.compact-tmp.4000000")).unwrap();
    let listing = versions::list(&chunk).unwrap();
    assert_eq!(
        listing.versions.iter().map(|v| v.name.as_str()).collect::<Vec<_>>(),
        ["v1", "v2", "v3", "v4"]
    );
    assert!(listing.versions[3].is_current && listing.versions.iter().all(|v| v.complete));
    assert_eq!(
        listing.versions.iter().map(|v| v.marker).collect::<Vec<_>>(),
        [Some(0), Some(1), Some(2), Some(3)]
    );
    assert_eq!(listing.debris.len(), 1);
    let out = String::from_utf8(bin().arg("versions").arg(&chunk).output().unwrap().stdout).unwrap();
    assert!(out.contains("v4       *") && out.contains("interrupted compaction"), "{out}");
    assert!(out.contains("log: 0 batches, 8 B; nothing pending"), "compaction cut the folded batches: {out}");

    // Rollback needs an empty log; current then points at v2, and gc keeps v2, v3, v4.
    assert_eq!(versions::rollback(&chunk, "v2", false, None).unwrap(), "v4");
    let o = bin().args(["gc", "--keep", "1"]).arg(&chunk).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("would remove") && out.contains("v1") && out.contains("dry run"), "{out}");
    assert!(chunk.join("v1").exists(), "a dry run removes nothing");
    let o = bin().args(["gc", "--keep", "1", "--yes"]).arg(&chunk).output().unwrap();
    assert!(o.status.success());
    let names: Vec<String> = versions::list(&chunk).unwrap().versions.into_iter().map(|v| v.name).collect();
    assert_eq!(names, ["v2", "v3", "v4"], "current and everything newer are kept");
    assert!(!chunk.join(".v9.compact-tmp.4000000").exists(), "stale debris is removed");

    apply(&chunk, &["INSERT DATA { <https://example.org/x> <https://example.org/p> 1 }"]);
    let out = String::from_utf8(bin().arg("versions").arg(&chunk).output().unwrap().stdout).unwrap();
    assert!(
        out.contains("log: 1 batch, ") && out.contains("; 1 pending over v2: +1 \u{2212}0 quads"),
        "{out}"
    );
    let json = bin().args(["versions", "--json"]).arg(&chunk).output().unwrap().stdout;
    let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let log = &v["log"];
    assert_eq!((log["batches"].as_u64(), log["pending"]["added"].as_u64()), (Some(1), Some(1)), "{v}");
    let o = bin().args(["rollback", "--to", "v3"]).arg(&chunk).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("holds 1 batch ("));
    let o = bin().args(["rollback", "--to", "v3", "--force"]).arg(&chunk).output().unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).contains("the log holds 1 batch ("));
    assert_eq!(std::fs::read_link(chunk.join("current")).unwrap(), Path::new("v3"));
}

/// Import and compaction under a memory limit small enough that the sort
/// and the dictionary maps spill many runs write the same bytes as with
/// plenty of memory, and verify finds the result clean.
#[test]
fn a_tiny_memory_limit_spills_and_changes_no_byte() {
    let dir = tempfile::tempdir().unwrap();
    let nq = dir.path().join("many.nq");
    numbered_quads(&nq, 20_000, [7, 5, 3], |i| format!("object number {i} with some length to it"));
    let chunks: Vec<PathBuf> = [256 << 10, 1 << 30]
        .iter()
        .map(|&limit| {
            let out = dir.path().join(format!("limit-{limit}"));
            let mut opts = ImportOptions::new(vec![nq.clone()], out.clone());
            opts.memory_limit = limit;
            let summary = import::import(&opts, |_| {}).unwrap();
            if limit < 1 << 20 {
                assert!(summary.spilled_runs > 1, "the sort did not spill: {summary}");
            }
            apply(&out, &["DELETE DATA { GRAPH <https://example.org/g0> { <https://example.org/s0> <https://example.org/p0> \"object number 0 with some length to it\" } }",
                "INSERT DATA { <https://example.org/new> <https://example.org/p9> \"added\" }"]);
            let copts = CompactOptions { memory_limit: limit, ..CompactOptions::default() };
            compact::compact(&out, &copts, |_| {}).unwrap();
            out
        })
        .collect();
    for v in ["v1", "v2"] {
        for e in std::fs::read_dir(chunks[1].join(v)).unwrap() {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            if name.starts_with("data.cottas") {
                let a = std::fs::read(chunks[0].join(v).join(&name)).unwrap();
                let b = std::fs::read(chunks[1].join(v).join(&name)).unwrap();
                assert!(a == b, "{v}/{name} differs with a tiny memory limit");
            }
        }
    }
    let report = cottas_tui::triage::verify::verify(&chunks[0], Default::default()).unwrap();
    assert!(report.is_clean(), "{:?}", report.findings);
}

/// A log of every kind of operation, large enough that the fold's net
/// delta spills (thousands of entries under a 256 KiB limit): adds of new
/// and already-present quads, removes of base and of added quads, a
/// delete-then-reinsert, a CLEAR followed by inserts, a DROP. The folded
/// version is the view, with a tiny limit as with plenty, byte for byte.
#[test]
fn a_large_mixed_log_folds_into_the_view_under_a_tiny_memory_limit() {
    let dir = tempfile::tempdir().unwrap();
    let nq = dir.path().join("base.nq");
    numbered_quads(&nq, 3_000, [4, 3, 4], |i| format!("base {i}"));
    let base_quad = |i: usize| {
        format!(
            "GRAPH <https://example.org/g{}> {{ <https://example.org/s{}> <https://example.org/p{}> \"base {i}\" }}",
            i % 4,
            i / 4,
            i % 3
        )
    };
    let added = |range: std::ops::Range<usize>| -> String {
        range
            .map(|i| format!("GRAPH <https://example.org/g{}> {{ <https://example.org/n{i}> <https://example.org/p> \"new {i}\" }}", i % 5))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let requests = vec![
        format!("INSERT DATA {{ {} }}", added(0..2_500)),
        format!("INSERT DATA {{ {} {} }}", base_quad(5), base_quad(6)),
        format!("DELETE DATA {{ {} {} {} }}", base_quad(8), base_quad(9), added(10..400)),
        format!("INSERT DATA {{ {} {} }}", base_quad(9), added(20..30)),
        "CLEAR GRAPH <https://example.org/g1>".to_string(),
        format!("INSERT DATA {{ {} {} }}", base_quad(13), added(2_500..2_510)),
        "DROP GRAPH <https://example.org/g2>".to_string(),
        format!("DELETE DATA {{ {} }}", added(1_000..1_100)),
        format!("INSERT DATA {{ {} }}", added(1_050..1_060)),
    ];
    let requests: Vec<&str> = requests.iter().map(String::as_str).collect();
    let chunks: Vec<PathBuf> = [256usize << 10, 1 << 30]
        .iter()
        .map(|&limit| {
            let out = dir.path().join(format!("limit-{limit}"));
            import::import(&ImportOptions::new(vec![nq.clone()], out.clone()), |_| {}).unwrap();
            apply(&out, &requests);
            let before = view(&out);
            assert!(before.iter().any(|l| l.contains("\"new 2505\"") && l.contains("/g0>")));
            assert!(!before.iter().any(|l| l.contains("/g2>") && l.contains("\"base")), "g2 was dropped");
            let copts = CompactOptions { memory_limit: limit, ..CompactOptions::default() };
            compact::compact(&out, &copts, |_| {}).unwrap();
            assert_eq!(view(&out), before, "the folded version is the view (limit {limit})");
            out
        })
        .collect();
    for e in std::fs::read_dir(chunks[1].join("v2")).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        if name.starts_with("data.cottas") {
            let a = std::fs::read(chunks[0].join("v2").join(&name)).unwrap();
            let b = std::fs::read(chunks[1].join("v2").join(&name)).unwrap();
            assert!(a == b, "v2/{name} differs with a tiny memory limit");
        }
    }
    let report = cottas_tui::triage::verify::verify(&chunks[0], Default::default()).unwrap();
    assert!(report.is_clean(), "{:?}", report.findings);
}

/// Every file under `dir` (symlinks as their target) with its bytes: what
/// "exactly as it was" is compared on.
fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for e in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let e = e.unwrap();
        let rel = e.path().strip_prefix(dir).unwrap().to_path_buf();
        if e.path_is_symlink() {
            out.push((rel, std::fs::read_link(e.path()).unwrap().into_os_string().into_encoded_bytes()));
        } else if e.file_type().is_file() {
            out.push((rel, std::fs::read(e.path()).unwrap()));
        }
    }
    out
}

/// A cancel asked for at any phase before the new version is published
/// stops the compaction with `Cancelled` and leaves the chunk exactly as it
/// was (no temp dir, nothing flipped); asked for after, it is too late and
/// the compaction completes.
#[test]
fn a_cancelled_compaction_leaves_the_chunk_exactly_as_it_was() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    for at in
        [CompactPhase::Planning, CompactPhase::Folding, CompactPhase::Indexing, CompactPhase::Publishing]
    {
        let dir = tempfile::tempdir().unwrap();
        let chunk = sample_store(dir.path());
        apply(&chunk, CHANGES);
        let before = tree(&chunk);
        let cancel = Arc::new(AtomicBool::new(false));
        let opts = CompactOptions { cancel: Some(cancel.clone()), ..CompactOptions::default() };
        let r = compact::compact(&chunk, &opts, |p| {
            if p.phase == at {
                cancel.store(true, Ordering::Relaxed);
            }
        });
        let e = r.expect_err("cancelled");
        assert!(
            matches!(&e, cottas_tui::store::StoreError::Cancelled { path } if path == &chunk),
            "{at:?}: {e}"
        );
        assert!(e.to_string().contains("cancelled; nothing was changed"), "{e}");
        assert_eq!(tree(&chunk), before, "{at:?}: the chunk is exactly as it was");
    }
    let dir = tempfile::tempdir().unwrap();
    let chunk = sample_store(dir.path());
    apply(&chunk, CHANGES);
    let cancel = Arc::new(AtomicBool::new(false));
    let opts = CompactOptions { cancel: Some(cancel.clone()), ..CompactOptions::default() };
    compact::compact(&chunk, &opts, |p| {
        if p.phase == CompactPhase::Swapping {
            cancel.store(true, Ordering::Relaxed);
        }
    })
    .expect("too late to cancel: it completes");
    assert_eq!(std::fs::read_link(chunk.join("current")).unwrap(), Path::new("v2"));
}
