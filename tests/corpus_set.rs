//! A corpus is a set of quads: a quad several chunks hold answers once
//! (`view::union`). Chunks drawn from one small universe of quads, so they
//! overlap, each with a log that inserts, deletes, clears a graph and drops
//! one; every query over the corpus must answer what it answers over one
//! store holding the union of what each chunk shows, with the shortcuts
//! and without. Chunks shown disjoint (split by graph, or by subject range)
//! keep the sidecar shortcuts; chunks that may overlap do not need them to
//! be right.

mod common;

use std::collections::BTreeSet;

use common::{tsv_answer as answer, Rng};
use cottas_tui::import::{self, ImportOptions};
use cottas_tui::sparql::run::{run_query, OutputFormat, QueryOptions};
use cottas_tui::store::read::ColumnCache;
use cottas_tui::view::lazy::LazyChunk;
use cottas_tui::view::Snapshot;

type Quad = (usize, usize, usize, Option<usize>);

fn nquad(&(s, p, o, g): &Quad) -> String {
    let o = if o % 3 == 0 { format!("<http://x/s{:02}>", o % 12) } else { format!("\"v{o}\"") };
    let g = g.map(|g| format!(" <http://x/g{g}>")).unwrap_or_default();
    format!("<http://x/s{s:02}> <http://x/p{p}> {o}{g} .\n")
}

fn sparql_quad(q: &Quad) -> String {
    let line = nquad(q);
    let line = line.trim_end().trim_end_matches('.').trim_end();
    match q.3 {
        None => format!("{line} ."),
        Some(g) => {
            let triple = line.rsplit_once(' ').unwrap().0;
            format!("GRAPH <http://x/g{g}> {{ {triple} }}")
        }
    }
}

/// A chunk at `dir/name` of `quads`, 16 rows per row group.
fn chunk(dir: &std::path::Path, name: &str, quads: &BTreeSet<Quad>) -> std::path::PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let nq = dir.join(format!("{name}.nq"));
    std::fs::write(&nq, quads.iter().map(nquad).collect::<String>()).unwrap();
    let out = dir.join(name);
    let mut o = ImportOptions::new(vec![nq], out.clone());
    o.base.row_group_size = 16;
    import::import(&o, |_| {}).unwrap();
    out
}

/// A random quad of the universe: 12 subjects, 3 predicates, 12 objects,
/// the default graph and graphs g0–g2.
fn draw(rng: &mut Rng, subjects: std::ops::Range<usize>, graphs: &[Option<usize>]) -> Quad {
    let mut pick = |n: usize| (rng.next() % n as u64) as usize;
    let s = subjects.start + pick(subjects.len());
    (s, pick(3), pick(12), graphs[pick(graphs.len())])
}

/// Chunks with logs; returns each chunk's path and what it shows.
fn overlapping_chunks(dir: &std::path::Path, seed: u64) -> (Vec<std::path::PathBuf>, BTreeSet<Quad>) {
    let mut rng = Rng(seed);
    let graphs = [None, Some(0), Some(1), Some(2)];
    let mut paths = Vec::new();
    let mut all = BTreeSet::new();
    for c in 0..3 {
        let mut shown: BTreeSet<Quad> = (0..60).map(|_| draw(&mut rng, 0..12, &graphs)).collect();
        let path = chunk(dir, &format!("c{c}"), &shown);
        let inserts: BTreeSet<Quad> = (0..6).map(|_| draw(&mut rng, 0..12, &graphs)).collect();
        let text: Vec<String> = inserts.iter().map(sparql_quad).collect();
        common::update(&path, &format!("INSERT DATA {{ {} }}", text.join(" ")));
        shown.extend(inserts);
        let deletes: Vec<Quad> = shown.iter().filter(|_| rng.next().is_multiple_of(5)).copied().collect();
        let text: Vec<String> = deletes.iter().map(sparql_quad).collect();
        common::update(&path, &format!("DELETE DATA {{ {} }}", text.join(" ")));
        shown.retain(|q| !deletes.contains(q));
        if c == 1 {
            common::update(&path, "CLEAR GRAPH <http://x/g1>");
            shown.retain(|q| q.3 != Some(1));
            common::update(
                &path,
                "INSERT DATA { GRAPH <http://x/g1> { <http://x/s03> <http://x/p0> \"v1\" } }",
            );
            shown.insert((3, 0, 1, Some(1)));
        }
        if c == 2 {
            common::update(&path, "DROP GRAPH <http://x/g2>");
            shown.retain(|q| q.3 != Some(2));
        }
        all.extend(shown);
        paths.push(path);
    }
    (paths, all)
}

const QUERIES: &[&str] = &[
    "SELECT * { ?s ?p ?o }",
    "SELECT * { GRAPH ?g { ?s ?p ?o } }",
    "SELECT (COUNT(*) AS ?n) { ?s ?p ?o }",
    "SELECT (COUNT(*) AS ?n) { GRAPH ?g { ?s ?p ?o } }",
    "SELECT (COUNT(*) AS ?n) { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } }",
    "SELECT (COUNT(*) AS ?n) { ?s <http://x/p1> ?o }",
    "SELECT (COUNT(*) AS ?n) { GRAPH <http://x/g0> { ?s ?p ?o } }",
    "SELECT ?p (COUNT(*) AS ?n) { ?s ?p ?o } GROUP BY ?p",
    "SELECT ?g (COUNT(*) AS ?n) { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g",
    "SELECT ?s (COUNT(?o) AS ?n) { GRAPH ?g { ?s <http://x/p0> ?o } } GROUP BY ?s",
    "SELECT (COUNT(DISTINCT ?s) AS ?n) { ?s ?p ?o }",
    "SELECT DISTINCT ?p { GRAPH ?g { ?s ?p ?o } }",
    "SELECT (COUNT(*) AS ?n) { ?a <http://x/p0> ?b . ?b <http://x/p1> ?c }",
    "SELECT ?a ?c { GRAPH ?g { ?a <http://x/p0> ?b . ?b ?q ?c } }",
    "SELECT (COUNT(*) AS ?n) { ?s <http://x/p2> ?o MINUS { ?s <http://x/p0> ?x } }",
    "SELECT ?s { ?s <http://x/p1> ?o FILTER NOT EXISTS { ?s <http://x/p2> ?x } }",
    "SELECT ?p ?o { <http://x/s03> ?p ?o }",
    "SELECT ?p ?o ?g { GRAPH ?g { <http://x/s07> ?p ?o } }",
    "ASK { <http://x/s03> <http://x/p0> \"v1\" }",
];

/// Asserts every query answers over `chunks` what it answers over one store
/// of `expected`; returns how many answers a shortcut gave.
fn agrees_with_one_store(
    dir: &std::path::Path,
    chunks: &[std::path::PathBuf],
    expected: &BTreeSet<Quad>,
) -> usize {
    let one = chunk(&dir.join("one"), "store", expected);
    let one = Snapshot::open(&one, 1 << 20).unwrap();
    let snaps: Vec<Snapshot> = chunks.iter().map(|c| Snapshot::open(c, 1 << 20).unwrap()).collect();
    let snaps: Vec<&Snapshot> = snaps.iter().collect();
    let mut by_shortcut = 0;
    for q in QUERIES {
        for union in [false, true] {
            let (want, _) = answer(&[&one], q, union, true);
            let (fast, how) = answer(&snaps, q, union, false);
            let (plain, _) = answer(&snaps, q, union, true);
            assert_eq!(fast, want, "{q}, with shortcuts (union default graph: {union})");
            assert_eq!(plain, want, "{q}, evaluated (union default graph: {union})");
            let (lazily, _) = lazy_answer(chunks, q, union).0;
            assert_eq!(lazily, want, "{q}, chunks folded on need (union default graph: {union})");
            by_shortcut += usize::from(how);
        }
    }
    by_shortcut
}

/// What `q` answers over `chunks` opened lazily, fresh for this query, as
/// `query` opens a corpus; and which chunks it folded.
fn lazy_answer(chunks: &[std::path::PathBuf], q: &str, union: bool) -> ((Vec<String>, bool), Vec<bool>) {
    let lazy: Vec<LazyChunk> =
        chunks.iter().map(|c| LazyChunk::open(c, |_| ColumnCache::new(1 << 20)).unwrap()).collect();
    let opts = QueryOptions {
        format: Some(OutputFormat::Tsv),
        union_default_graph: union,
        ..QueryOptions::default()
    };
    let mut out = Vec::new();
    let summary = run_query(&lazy.iter().collect::<Vec<_>>(), q, &opts, &mut out)
        .unwrap_or_else(|e| panic!("{q}: {e}"));
    let mut lines: Vec<String> = String::from_utf8(out).unwrap().lines().map(str::to_string).collect();
    if lines.len() > 1 {
        lines[1..].sort();
    }
    ((lines, summary.shortcut), lazy.iter().map(|c| c.folded().is_some()).collect())
}

/// A bound term folds only the chunks that may hold it: in a base's
/// dictionary, or in a log's bytes (an insert of a subject no base has, one
/// with a non-ASCII IRI, one in a graph only the log names). A chunk whose
/// log only deletes or clears is not needed for a term its base lacks.
#[test]
fn a_bound_term_folds_only_the_chunks_that_may_hold_it() {
    let dir = tempfile::tempdir().unwrap();
    let quads = |r: std::ops::Range<usize>| r.map(|s| (s, 0, 1, Some(0))).collect::<BTreeSet<Quad>>();
    let chunks = [
        chunk(dir.path(), "a", &quads(0..4)),
        chunk(dir.path(), "b", &quads(4..8)),
        chunk(dir.path(), "c", &quads(8..12)),
    ];
    common::update(&chunks[1], "INSERT DATA { GRAPH <http://x/new> { <http://x/only-in-b-log> <http://x/p0> \"é\" . <http://x/ü> <http://x/p1> <http://x/s01> } }");
    common::update(&chunks[2], "DELETE DATA { GRAPH <http://x/g0> { <http://x/s09> <http://x/p0> \"v1\" } }");
    common::update(&chunks[2], "CLEAR GRAPH <http://x/g0>");
    let cases: &[(&str, &[bool], usize)] = &[
        ("SELECT ?p ?o { GRAPH ?g { <http://x/s05> ?p ?o } }", &[false, true, false], 1),
        ("SELECT ?p ?o { GRAPH ?g { <http://x/only-in-b-log> ?p ?o } }", &[false, true, false], 1),
        ("SELECT ?s { GRAPH ?g { ?s ?p \"é\" } }", &[false, true, false], 1),
        ("SELECT ?p { GRAPH ?g { <http://x/ü> ?p ?o } }", &[false, true, false], 1),
        ("SELECT ?s { GRAPH <http://x/new> { ?s ?p ?o } }", &[false, true, false], 2),
        // s01 is a subject in a and an object in b's log.
        ("SELECT ?s ?p { GRAPH ?g { ?s ?p <http://x/s01> } }", &[false, true, false], 1),
        // b's log names it (as an object): a and b are folded, and compared.
        ("SELECT ?p ?o { GRAPH ?g { <http://x/s01> ?p ?o } }", &[true, true, false], 1),
        // Cleared in c's log: c is folded (its base holds s09) and answers nothing.
        ("SELECT ?p ?o { GRAPH ?g { <http://x/s09> ?p ?o } }", &[false, false, true], 0),
        ("SELECT ?p ?o { GRAPH ?g { <http://x/nowhere> ?p ?o } }", &[false, false, false], 0),
    ];
    for &(q, folded, rows) in cases {
        let ((lines, _), was_folded) = lazy_answer(&chunks, q, false);
        assert_eq!(was_folded, folded, "{q}: which chunks were folded");
        assert_eq!(lines.len() - 1, rows, "{q}: {lines:?}");
        let snaps: Vec<Snapshot> = chunks.iter().map(|c| Snapshot::open(c, 1 << 20).unwrap()).collect();
        assert_eq!(lines, answer(&snaps.iter().collect::<Vec<_>>(), q, false, true).0, "{q}");
    }
}

#[test]
fn overlapping_chunks_answer_each_quad_once() {
    for seed in [1, 2, 3] {
        let dir = tempfile::tempdir().unwrap();
        let (chunks, expected) = overlapping_chunks(dir.path(), seed);
        agrees_with_one_store(dir.path(), &chunks, &expected);
    }
}

/// The same chunk twice: every quad is a copy, and the corpus is the chunk.
#[test]
fn a_chunk_copied_is_the_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let (chunks, _) = overlapping_chunks(dir.path(), 7);
    let copy = dir.path().join("copy");
    let status = std::process::Command::new("cp").arg("-r").arg(&chunks[1]).arg(&copy).status().unwrap();
    assert!(status.success());
    let one = Snapshot::open(&chunks[1], 1 << 20).unwrap();
    let again = Snapshot::open(&copy, 1 << 20).unwrap();
    for q in QUERIES {
        let (want, _) = answer(&[&one], q, false, true);
        assert_eq!(answer(&[&one, &again], q, false, false).0, want, "{q}");
    }
}

/// Chunks split by graph, or by subject range, are shown disjoint: the same
/// answers, and the counts still come from the sidecars.
#[test]
fn disjoint_chunks_keep_their_shortcuts() {
    type InFirst = fn(&Quad) -> bool;
    let splits: [(&str, InFirst); 3] = [
        ("by graph", |q| matches!(q.3, None | Some(0))),
        ("by subject range", |q| q.0 < 6),
        // Named graphs split, the default graph's quads in both (one copy
        // of each odd one): only default-graph patterns look for copies.
        ("by named graph, the default graph in both", |q| q.3 == Some(0) || (q.3.is_none() && q.0 % 2 == 1)),
    ];
    for (how, first) in splits {
        let dir = tempfile::tempdir().unwrap();
        let mut rng = Rng(11);
        let graphs = [None, Some(0), Some(1), Some(2)];
        let all: BTreeSet<Quad> = (0..150).map(|_| draw(&mut rng, 0..12, &graphs)).collect();
        let (a, mut b): (BTreeSet<Quad>, BTreeSet<Quad>) = all.iter().partition(|q| first(q));
        if how.contains("in both") {
            b.extend(a.iter().filter(|q| q.3.is_none()));
        }
        let chunks = [chunk(dir.path(), "a", &a), chunk(dir.path(), "b", &b)];
        let by_shortcut = agrees_with_one_store(dir.path(), &chunks, &all);
        assert!(by_shortcut >= 10, "{how}: {by_shortcut} answers from shortcuts");
    }
}
