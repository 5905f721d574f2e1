//! The write path end to end: `cottas-tui update` and the library writer on
//! real stores, with real locks, torn tails and epoch markers.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use cottas_tui::format::deltalog::{self, Batch, Entry, Object, Quad, StopReason, Subject};
use cottas_tui::format::epoch;
use cottas_tui::format::term;
use cottas_tui::format::transport::Transport;
use cottas_tui::sparql::update::Updater;
use cottas_tui::store::log::writer::{LogWriter, WriterLock};
use cottas_tui::store::read::ColumnCache;
use cottas_tui::store::versions::open::Store;
use cottas_tui::view::overlay::Overlay;

const EX: &str = "https://example.org";

use common::{bin, sample_store as store};

fn update(chunk: &Path, requests: &[&str]) -> Output {
    let mut c = bin();
    c.arg("update").arg(chunk);
    for r in requests {
        c.args(["-e", r]);
    }
    c.output().unwrap()
}

fn ok(o: &Output) -> String {
    assert_eq!(o.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn log_of(chunk: &Path) -> deltalog::DeltaLog {
    deltalog::decode(&std::fs::read(chunk.join("data.deltalog")).unwrap()).result.unwrap()
}

fn count(chunk: &Path, query: &str) -> String {
    let o = bin().arg("query").arg(chunk).args(["-e", query, "--format", "csv"]).output().unwrap();
    ok(&o).lines().nth(1).unwrap_or_default().trim().to_string()
}

const ALL: &str = "SELECT (COUNT(*) AS ?n) { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } }";

fn lit(s: &str) -> Object {
    Object::Literal { lexical: s.into(), datatype: term::XSD_STRING.into(), language: None }
}

fn quad(s: &str, o: &str) -> Quad {
    Quad {
        subject: Subject::Iri(format!("{EX}/{s}")),
        predicate: format!("{EX}/p"),
        object: lit(o),
        graph: None,
    }
}

#[test]
fn one_batch_per_request_and_no_op_requests_append_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let chunk = store(dir.path());
    let out = ok(&update(
        &chunk,
        &[
            "INSERT DATA { <https://example.org/a> <https://example.org/p> 1, 2 }",
            "DELETE DATA { <https://example.org/a> <https://example.org/p> 1 }",
        ],
    ));
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("batch seq=1 epoch=1: +2 \u{2212}0, 0 graph ops"), "{out}");
    assert!(lines[1].starts_with("batch seq=2 epoch=1: +0 \u{2212}1, 0 graph ops"), "{out}");
    let log = log_of(&chunk);
    assert_eq!(log.batches.len(), 2);
    assert_eq!(log.leftover.reason, StopReason::CleanEnd);

    let len = std::fs::metadata(chunk.join("data.deltalog")).unwrap().len();
    // Already there, already gone, an empty graph cleared: nothing changes.
    let out = ok(&update(
        &chunk,
        &["INSERT DATA { <https://example.org/a> <https://example.org/p> 2 } ; DELETE DATA { <https://example.org/a> <https://example.org/p> 1 } ; CLEAR SILENT GRAPH <https://example.org/none>"],
    ));
    assert!(out.starts_with("no change: nothing appended (3 operations)"), "{out}");
    assert_eq!(std::fs::metadata(chunk.join("data.deltalog")).unwrap().len(), len);
    let out = ok(&update(&chunk, &["INSERT DATA { <https://example.org/a> <https://example.org/p> 2 }"]));
    assert!(out.starts_with("no change: nothing appended (1 operation)"), "{out}");
    assert_eq!(count(&chunk, ALL), "6");
}

#[test]
fn requests_as_arguments_run_before_the_e_ones() {
    let dir = tempfile::tempdir().unwrap();
    let chunk = store(dir.path());
    let quad = "<urn:a> <urn:p> \"1\"";
    let o = bin()
        .arg("update")
        .arg(&chunk)
        .args([format!("INSERT DATA {{ {quad} }}"), "-e".into(), format!("DELETE DATA {{ {quad} }}")])
        .output()
        .unwrap();
    let out = ok(&o);
    assert!(out.contains("batch seq=1 ") && out.contains("+1 −0"), "the insert first: {out}");
    assert!(out.contains("batch seq=2 ") && out.contains("+0 −1"), "then the delete: {out}");
    assert_eq!(count(&chunk, "SELECT (COUNT(*) AS ?n) { <urn:a> ?p ?o }"), "0");
}

#[test]
fn a_failing_operation_leaves_the_whole_request_unapplied() {
    let dir = tempfile::tempdir().unwrap();
    let chunk = store(dir.path());
    let before = std::fs::read(chunk.join("data.deltalog")).unwrap();
    let o = update(&chunk, &["INSERT DATA { <https://example.org/x> <https://example.org/p> 1 } ; CLEAR GRAPH <https://example.org/none>"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no such graph") && err.contains("nothing was appended"), "{err}");
    assert_eq!(std::fs::read(chunk.join("data.deltalog")).unwrap(), before);

    let o = update(&chunk, &["INSERT DATA { <a> <b> "]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("at 1:"), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read(chunk.join("data.deltalog")).unwrap(), before);
}

#[test]
fn graph_operations_expand_to_concrete_graphs() {
    let dir = tempfile::tempdir().unwrap();
    let chunk = store(dir.path());
    // The sample has the default graph and two named graphs.
    ok(&update(&chunk, &["CLEAR NAMED"]));
    let log = log_of(&chunk);
    let entries = &log.batches[0].batch.entries;
    assert_eq!(
        entries,
        &vec![
            Entry::clear(Some(format!("{EX}/graph/docs"))),
            Entry::clear(Some(format!("{EX}/graph/people"))),
        ]
    );
    assert_eq!(count(&chunk, ALL), "1");
    ok(&update(&chunk, &["DROP ALL"]));
    assert_eq!(log_of(&chunk).batches[1].batch.entries, vec![Entry::clear(None)]);
    assert_eq!(count(&chunk, ALL), "0");
    ok(&update(&chunk, &["CREATE GRAPH <https://example.org/new>"]));
    assert_eq!(log_of(&chunk).batches[2].batch.entries, vec![Entry::create(format!("{EX}/new"))]);
    let o = update(&chunk, &["CREATE GRAPH <https://example.org/new> ; INSERT DATA { GRAPH <https://example.org/new> { <https://example.org/s> <https://example.org/p> 1 } }"]);
    ok(&o);
    let o = update(&chunk, &["CREATE GRAPH <https://example.org/new>"]);
    assert_eq!(o.status.code(), Some(1), "creating a graph that has quads fails without SILENT");
    ok(&update(&chunk, &["CREATE SILENT GRAPH <https://example.org/new>"]));
}

#[test]
fn where_clauses_with_using_and_with_and_copy_move() {
    let dir = tempfile::tempdir().unwrap();
    let chunk = store(dir.path());
    ok(&update(
        &chunk,
        &["WITH <https://example.org/graph/people> DELETE { ?s <https://example.org/name> ?n } INSERT { ?s <https://example.org/label> ?n } WHERE { ?s <https://example.org/name> ?n }"],
    ));
    let labels = "SELECT (COUNT(*) AS ?n) { GRAPH <https://example.org/graph/people> { ?s <https://example.org/label> ?o } }";
    assert_eq!(count(&chunk, labels), "2");
    ok(&update(
        &chunk,
        &["INSERT { GRAPH <https://example.org/copy> { ?s ?p ?o } } USING <https://example.org/graph/docs> WHERE { ?s ?p ?o }"],
    ));
    assert_eq!(
        count(&chunk, "SELECT (COUNT(*) AS ?n) { GRAPH <https://example.org/copy> { ?s ?p ?o } }"),
        "1"
    );
    ok(&update(&chunk, &["MOVE <https://example.org/copy> TO <https://example.org/moved>"]));
    assert_eq!(
        count(&chunk, "SELECT (COUNT(*) AS ?n) { GRAPH <https://example.org/copy> { ?s ?p ?o } }"),
        "0"
    );
    assert_eq!(
        count(&chunk, "SELECT (COUNT(*) AS ?n) { GRAPH <https://example.org/moved> { ?s ?p ?o } }"),
        "1"
    );
    ok(&update(&chunk, &["DELETE WHERE { GRAPH <https://example.org/moved> { ?s ?p ?o } }"]));
    assert_eq!(
        count(&chunk, "SELECT (COUNT(*) AS ?n) { GRAPH <https://example.org/moved> { ?s ?p ?o } }"),
        "0"
    );
}

#[test]
fn load_reads_local_files_and_names_the_bad_line() {
    let dir = tempfile::tempdir().unwrap();
    let chunk = store(dir.path());
    std::fs::write(
        dir.path().join("more.nt"),
        "<https://example.org/l> <https://example.org/p> _:x .\n_:x <https://example.org/p> \"y\" .\n",
    )
    .unwrap();
    let o = bin()
        .current_dir(dir.path())
        .args(["update", "chunk", "-e", "LOAD <more.nt> INTO GRAPH <https://example.org/loaded>"])
        .output()
        .unwrap();
    assert!(ok(&o).contains("+2"));
    let file_iri = format!("file://{}", dir.path().join("more.nt").display());
    // Loading again gives fresh blank nodes: one quad without blank nodes is
    // already there, the other two are new.
    let o = update(&chunk, &[&format!("LOAD <{file_iri}> INTO GRAPH <https://example.org/loaded>")]);
    assert!(ok(&o).contains("+2"), "{}", String::from_utf8_lossy(&o.stdout));
    assert_eq!(
        count(&chunk, "SELECT (COUNT(*) AS ?n) { GRAPH <https://example.org/loaded> { ?s ?p ?o } }"),
        "4"
    );

    std::fs::write(
        dir.path().join("bad.nt"),
        "<https://example.org/l> <https://example.org/p> \"1\" .\n<broken\n",
    )
    .unwrap();
    let bad = format!("file://{}", dir.path().join("bad.nt").display());
    let o = update(&chunk, &[&format!("LOAD <{bad}>")]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("bad.nt") && err.contains("line 2"), "{err}");
    ok(&update(&chunk, &[&format!("LOAD SILENT <{bad}>")]));
    let o = update(&chunk, &["LOAD <http://example.org/remote.nt>"]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn a_second_writer_is_told_who_holds_the_lock_or_waits() {
    let dir = tempfile::tempdir().unwrap();
    let chunk = store(dir.path());
    let lock = WriterLock::acquire(&chunk, None).unwrap();
    let o = update(&chunk, &["INSERT DATA { <https://example.org/a> <https://example.org/p> 1 }"]);
    assert_eq!(o.status.code(), Some(3));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&format!("store is locked by pid {} (since 20", std::process::id())), "{err}");
    assert_eq!(log_of(&chunk).batches.len(), 0);

    let release = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(400));
        drop(lock);
    });
    let mut c = bin();
    c.arg("update").arg(&chunk).args([
        "--wait",
        "20",
        "-e",
        "INSERT DATA { <https://example.org/a> <https://example.org/p> 1 }",
    ]);
    let o = c.output().unwrap();
    release.join().unwrap();
    assert!(ok(&o).contains("seq=1"));
}

#[test]
fn a_torn_tail_is_cut_and_kept_before_appending() {
    let dir = tempfile::tempdir().unwrap();
    let chunk = store(dir.path());
    let good = Batch { seq: 41, epoch: 1, entries: vec![Entry::add(quad("t", "1"))] };
    let mut bytes = deltalog::encode_batches(std::slice::from_ref(&good), Transport::Raw);
    let committed = bytes.len() as u64;
    let torn = deltalog::encode_batch(
        &Batch { seq: 42, epoch: 1, entries: vec![Entry::add(quad("t", "2"))] },
        Transport::Raw,
    );
    let tail = &torn[..torn.len() - 5];
    bytes.extend_from_slice(tail);
    std::fs::write(chunk.join("data.deltalog"), &bytes).unwrap();

    let o = update(&chunk, &["INSERT DATA { <https://example.org/t> <https://example.org/p> \"3\" }"]);
    let out = ok(&o);
    assert!(out.contains("seq=42"), "the seq continues from the last committed batch: {out}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&format!("cut {} bytes at offset {committed}", tail.len())), "{err}");
    let saved: Vec<PathBuf> = std::fs::read_dir(&chunk)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(&format!("data.deltalog.cut-at-{committed}."))
        })
        .collect();
    assert_eq!(saved.len(), 1, "{saved:?}");
    assert_eq!(std::fs::read(&saved[0]).unwrap(), tail);
    let log = log_of(&chunk);
    assert_eq!(log.batches.len(), 2);
    assert_eq!(log.leftover.reason, StopReason::CleanEnd);
    assert_eq!(log.batches[1].offset, committed);
    assert_eq!(count(&chunk, "SELECT (COUNT(*) AS ?n) { <https://example.org/t> ?p ?o }"), "2");
}

#[test]
fn epochs_follow_the_marker_of_current_and_a_missing_log_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let chunk = store(dir.path());
    std::fs::write(chunk.join("v1/data.compacted-epoch"), epoch::encode(&epoch::EpochMarker::new(5)))
        .unwrap();
    std::fs::remove_file(chunk.join("data.deltalog")).unwrap();
    let o = update(&chunk, &["INSERT DATA { <https://example.org/e> <https://example.org/p> 1 }"]);
    assert!(ok(&o).contains("seq=1 epoch=6"));
    assert!(String::from_utf8_lossy(&o.stderr).contains("created"));
    std::fs::remove_file(chunk.join("v1/data.compacted-epoch")).unwrap();
    let o = update(&chunk, &["INSERT DATA { <https://example.org/e> <https://example.org/p> 2 }"]);
    assert!(ok(&o).contains("seq=2 epoch=1"), "no marker: epoch 1");
    // Both are visible: nothing was stamped at or below a marker.
    assert_eq!(count(&chunk, "SELECT (COUNT(*) AS ?n) { <https://example.org/e> ?p ?o }"), "2");
}

#[test]
fn updates_go_to_a_chunk_dir_only() {
    let dir = tempfile::tempdir().unwrap();
    let chunk = store(dir.path());
    let o = update(&chunk.join("v1"), &["INSERT DATA { <https://example.org/e> <https://example.org/p> 1 }"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("chunk dir"));
}

#[test]
fn a_query_keeps_its_snapshot_while_a_writer_appends() {
    let dir = tempfile::tempdir().unwrap();
    let chunk = store(dir.path());
    let store = Store::open(&chunk).unwrap();
    let cache = ColumnCache::new(16 << 20);
    let before = Overlay::load(&store, &cache).unwrap();
    Updater::open(&chunk, None)
        .unwrap()
        .apply("INSERT DATA { <https://example.org/n> <https://example.org/p> 1 }")
        .unwrap();
    assert!(before.graphs.is_empty(), "an overlay loaded earlier does not change");
    let after = Overlay::load(&store, &cache).unwrap();
    assert_eq!(after.batches_visible, 1);

    // Every batch adds two quads; a reader that ever saw half a batch would
    // count an odd number.
    let writer_chunk = chunk.clone();
    let writer = std::thread::spawn(move || {
        let mut u = Updater::open(&writer_chunk, None).unwrap();
        for i in 0..60 {
            std::thread::sleep(Duration::from_millis(2));
            u.apply(&format!("INSERT DATA {{ <https://example.org/pair{i}> <https://example.org/p> 1, 2 }}"))
                .unwrap();
        }
    });
    let mut seen = std::collections::BTreeSet::new();
    while !writer.is_finished() {
        let store = Store::open(&chunk).unwrap();
        let ov = Overlay::load(&store, &cache).unwrap();
        let added: usize = ov.graphs.values().map(|g| g.added.len()).sum();
        assert_eq!((added - 1) % 2, 0, "a reader saw part of a batch: {added}");
        seen.insert(added);
    }
    writer.join().unwrap();
    assert!(seen.len() > 1, "the reader ran alongside the writer: {seen:?}");
}

#[test]
fn the_library_writer_refuses_invalid_entries_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let chunk = store(dir.path());
    let mut w = LogWriter::open(&chunk, None).unwrap();
    let bad = Quad { predicate: "no-colon".into(), ..quad("a", "1") };
    assert!(w.append(vec![Entry::add(bad)]).is_err());
    assert!(w.append(vec![]).unwrap().is_none());
    drop(w);
    assert_eq!(std::fs::metadata(chunk.join("data.deltalog")).unwrap().len(), deltalog::HEADER_LEN);
}

/// A long-lived writer (the endpoint) keeps its view between requests and
/// skips reading the log only while nobody else has written: an append by
/// another writer, a cut of the log or a compaction makes it read again, and
/// every batch gets the next sequence number either way.
#[test]
fn a_suspended_writer_resumes_only_while_nothing_else_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let chunk = store(dir.path());
    let apply = |kept, text: &str| {
        let mut u = Updater::resume(&chunk, None, kept, None).unwrap();
        let resumed = u.writer().resumed;
        let seq = u.apply(text).unwrap().receipt.map(|r| r.seq);
        (u.suspend().unwrap(), resumed, seq)
    };
    let insert = |s: &str| format!("INSERT DATA {{ <{EX}/{s}> <{EX}/p> \"x\" }}");
    let (kept, resumed, seq) = apply(None, &insert("a"));
    assert_eq!((resumed, seq), (false, Some(1)));
    let (kept, resumed, seq) = apply(Some(kept), &insert("b"));
    assert_eq!((resumed, seq), (true, Some(2)), "nothing else wrote: the kept view is used");
    // The kept view saw its own insert: inserting it again changes nothing.
    let (kept, resumed, seq) = apply(Some(kept), &insert("b"));
    assert_eq!((resumed, seq), (true, None));

    ok(&update(&chunk, &[&insert("c")]));
    let (kept, resumed, seq) = apply(Some(kept), &insert("d"));
    assert_eq!((resumed, seq), (false, Some(4)), "another writer appended batch 3: the log is read again");
    // What the other writer added is in the view the next request plans on.
    let (kept, _, seq) = apply(Some(kept), &insert("c"));
    assert_eq!(seq, None);

    // A log cut back to an earlier length (as `repair` would) is noticed
    // by its length and time, even though no batch was added.
    let log = chunk.join("data.deltalog");
    let bytes = std::fs::read(&log).unwrap();
    let cut_at = log_of(&chunk).batches.len();
    std::fs::write(&log, &bytes[..bytes.len() - 1]).unwrap();
    let (kept, resumed, seq) = apply(Some(kept), &insert("e"));
    assert!(!resumed, "a log changed behind the writer's back was trusted");
    assert_eq!(seq, Some(cut_at as u64), "the torn last batch was cut and its number reused");

    ok(&bin().arg("compact").arg(&chunk).output().unwrap());
    let (kept, resumed, seq) = apply(Some(kept), &insert("f"));
    assert!(!resumed, "after a compaction `current` names another version");
    assert!(seq.is_some());
    // The five of the sample, and a, b, c, e, f: d was in the torn batch.
    assert_eq!(count(&chunk, ALL), (5 + 5).to_string());
    let verify = bin().arg("verify").arg(&chunk).output().unwrap();
    assert!(verify.status.success(), "{}", String::from_utf8_lossy(&verify.stdout));

    // A log removed behind the writer's back is created again, as `open` does.
    let pending = log_of(&chunk).batches.len() as u64;
    std::fs::remove_file(&log).unwrap();
    let (_, resumed, seq) = apply(Some(kept), &insert("g"));
    assert!(!resumed && pending > 0);
    assert_eq!(seq, Some(1));
}

/// A writer opened over a reader's snapshot (the TUI's first `:update`)
/// plans on that snapshot's fold only while the disk is as the snapshot
/// saw it: another writer's append, or a torn tail the writer must cut,
/// makes it fold the log itself, and either way it sees every committed
/// quad.
#[test]
fn a_writer_takes_a_readers_fold_only_while_the_disk_matches_it() {
    use cottas_tui::view::kept::{Budget, Snapshots};
    let dir = tempfile::tempdir().unwrap();
    let chunk = store(dir.path());
    let insert = |s: &str| format!("INSERT DATA {{ <{EX}/{s}> <{EX}/p> \"x\" }}");
    ok(&update(&chunk, &[&insert("a")]));
    let reads = Snapshots::new(&chunk, Budget::Cache(1 << 20));
    let apply = |reader: Option<&cottas_tui::view::kept::Kept>, text: &str| {
        let mut u = Updater::open_over(&chunk, None, reader).unwrap();
        let adopted = u.adopted();
        (adopted, u.apply(text).unwrap().receipt.map(|r| r.seq))
    };

    let snapshot = reads.current().unwrap();
    // The fold taken over holds `a`: inserting it again changes nothing.
    assert_eq!(apply(Some(&snapshot), &insert("a")), (true, None));
    assert_eq!(apply(Some(&snapshot), &insert("b")), (true, Some(2)));
    // The snapshot predates `b`: the log grew, so it is not taken, and the
    // writer's own fold sees `b`.
    assert_eq!(apply(Some(&snapshot), &insert("b")), (false, None));

    let snapshot = reads.current().unwrap();
    ok(&update(&chunk, &[&insert("c")]));
    assert_eq!(apply(Some(&snapshot), &insert("c")), (false, None), "another writer's quad is seen");

    let snapshot = reads.current().unwrap();
    let log = chunk.join("data.deltalog");
    let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    std::io::Write::write_all(&mut f, b"DLB1\x07").unwrap();
    drop(f);
    // A reader read past the torn tail; the writer cuts it, so the disk no
    // longer matches the reader's and the writer folds the log itself.
    let torn = reads.current().unwrap();
    assert!(!std::sync::Arc::ptr_eq(&snapshot, &torn));
    assert_eq!(apply(Some(&torn), &insert("d")), (false, Some(4)));
    assert_eq!(apply(None, &insert("d")), (false, None));
    assert_eq!(count(&chunk, ALL), (5 + 4).to_string());
}

/// A logged insert of a quad the base already holds (a writer that did not
/// check, or one that planned on an older view) is seen once, in the
/// default graph and in a named one; quads with a new subject, predicate or
/// graph are seen as added, and so are new quads made of known terms.
#[test]
fn logged_inserts_of_base_quads_are_seen_once() {
    let dir = tempfile::tempdir().unwrap();
    let chunk = store(dir.path());
    let q = |s: &str, p: &str, o: Object, g: Option<&str>| Quad {
        subject: Subject::Iri(format!("{EX}/{s}")),
        predicate: format!("{EX}/{p}"),
        object: o,
        graph: g.map(|g| format!("{EX}/graph/{g}")),
    };
    let entries = vec![
        Entry::add(q("alice", "name", lit("Alice"), Some("people"))),
        Entry::add(q("doc", "title", lit("Specimen"), Some("docs"))),
        Entry::add(q("default-subject", "status", lit("default"), None)),
        Entry::add(q("alice", "name", lit("Alice"), Some("new"))),
        Entry::add(q("alice", "age", lit("Alice"), Some("people"))),
        Entry::add(q("carol", "name", lit("Alice"), Some("people"))),
        // Every term is in the base's dictionaries, the quad is not.
        Entry::add(q("alice", "name", lit("Bob"), Some("people"))),
        Entry::add(q("alice", "knows", Object::Iri(format!("{EX}/bob")), Some("docs"))),
    ];
    let mut w = LogWriter::open(&chunk, None).unwrap();
    w.append(entries).unwrap();
    drop(w);
    assert_eq!(count(&chunk, ALL), (5 + 5).to_string());
    let named = "SELECT (COUNT(*) AS ?n) { GRAPH <https://example.org/graph/people> { ?s ?p ?o } }";
    assert_eq!(count(&chunk, named), (3 + 3).to_string());
}

/// Within one request, a quad the base holds that an operation inserts (or
/// deletes and inserts again) is seen once by the operations after it.
#[test]
fn within_a_request_a_reinserted_base_quad_is_seen_once() {
    let dir = tempfile::tempdir().unwrap();
    let chunk = store(dir.path());
    let alice = "GRAPH <https://example.org/graph/people> { <https://example.org/alice> <https://example.org/name> \"Alice\" }";
    let count_into = |name: &str| {
        format!(
            "INSERT {{ GRAPH <https://example.org/graph/counts> {{ <https://example.org/{name}> <https://example.org/n> ?n }} }} \
             WHERE {{ SELECT (COUNT(*) AS ?n) {{ GRAPH <https://example.org/graph/people> \
             {{ <https://example.org/alice> <https://example.org/name> ?o }} }} }}"
        )
    };
    let request = format!(
        "INSERT DATA {{ {alice} }} ; {} ; DELETE DATA {{ {alice} }} ; INSERT DATA {{ {alice} }} ; {}",
        count_into("inserted"),
        count_into("reinserted")
    );
    ok(&update(&chunk, &[&request]));
    let n = |name: &str| {
        count(
            &chunk,
            &format!(
                "SELECT ?n {{ GRAPH <https://example.org/graph/counts> {{ <https://example.org/{name}> <https://example.org/n> ?n }} }}"
            ),
        )
    };
    assert_eq!(n("inserted"), "1");
    assert_eq!(n("reinserted"), "1");
    assert_eq!(count(&chunk, ALL), (5 + 2).to_string());
}

/// A note printed after a request committed (here, a `DROP SILENT` of a
/// graph that does not exist) with stderr's reader gone: the process still
/// exits 0 and prints its receipt. `eprintln!` panicked there, so a
/// committed update ended with status 101, and a pipeline retried it.
#[test]
fn an_update_whose_stderr_is_closed_still_reports_its_commit() {
    let dir = tempfile::tempdir().unwrap();
    let chunk = store(dir.path());
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let request =
        format!("INSERT DATA {{ <{EX}/closed> <{EX}/p> 1 }} ; DROP SILENT GRAPH <{EX}/no-such-graph>");
    let out = bin().arg("update").arg(&chunk).args(["-e", &request]).stderr(writer).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("+1 −0"), "{stdout}");
    let listed = ok(&bin()
        .arg("query")
        .arg(&chunk)
        .args(["-e", &format!("ASK {{ <{EX}/closed> ?p ?o }}")])
        .output()
        .unwrap());
    assert!(listed.contains("true"), "{listed}");
}

/// A blank node written in a request is new, also after compactions: fresh
/// labels once counted from the batch's sequence number, which starts at 1
/// again in every epoch, so after a compaction `_:b` of a new request was
/// the node the first request of the last epoch had made, now in the base.
/// It then added nothing, or gave that node the new node's statements.
#[test]
fn fresh_blank_nodes_stay_new_across_compactions() {
    let dir = tempfile::tempdir().unwrap();
    let chunk = store(dir.path());
    let one_value_each = "SELECT (COUNT(*) AS ?n) { ?b <https://example.org/p> ?x, ?y FILTER(?x < ?y) }";
    for round in 1..=3 {
        let insert =
            format!("INSERT DATA {{ _:b <https://example.org/p> {round} . _:b <https://example.org/q> 0 }}");
        let appended = ok(&update(&chunk, &[&insert]));
        assert!(appended.contains("+2"), "round {round}: {appended}");
        let nodes = count(&chunk, "SELECT (COUNT(DISTINCT ?b) AS ?n) { ?b <https://example.org/q> 0 }");
        assert_eq!(nodes, round.to_string(), "round {round}: one new node per request");
        assert_eq!(count(&chunk, one_value_each), "0", "round {round}: no node took another's statement");
        let compacted = bin().arg("compact").arg(&chunk).output().unwrap();
        ok(&compacted);
    }
    // A LOAD relabels the file's blank nodes the same way.
    let file = dir.path().join("b.nt");
    let int = |n: u8| format!("\"{n}\"^^<http://www.w3.org/2001/XMLSchema#integer>");
    let lines =
        format!("_:b <https://example.org/p> {} .\n_:b <https://example.org/q> {} .\n", int(9), int(0));
    std::fs::write(&file, lines).unwrap();
    ok(&update(&chunk, &[&format!("LOAD <file://{}>", file.display())]));
    assert_eq!(count(&chunk, "SELECT (COUNT(DISTINCT ?b) AS ?n) { ?b <https://example.org/q> 0 }"), "4");
    assert_eq!(count(&chunk, one_value_each), "0");
}
