//! A store driven by a script of writes, checked against a model after
//! every step: the set of quads the script says the store holds.
//!
//! The script comes from bytes ([`Script::decode`]), so the same code runs
//! as a property test (`tests/store_ops.rs`, bytes from proptest) and as a
//! fuzz target (`fuzz/fuzz_targets/store_ops.rs`, bytes from libFuzzer).
//! Each step is one SPARQL Update request through the library's `Updater`
//! (held open across steps as `update` does, or resumed per request as the
//! endpoint does), a compaction, `gc`, or closing and reopening the writer.
//! The store is real (a chunk directory in a temp dir, imported, with its
//! log, fsynced) and its row groups tiny, so a handful of quads spans
//! several of them and the sidecars prune. The model is a few lines of set
//! operations per kind of request, written from SPARQL 1.1 Update, not from
//! the store's code.
//!
//! Data to insert may hold the request's blank node, in subjects and
//! objects. The store picks its label, so the model names it its own way and
//! quads are compared up to the labels of blank nodes ([`canonical`]): a new
//! request's node must be a new node, and one written before must keep its
//! statements together through every step.
//!
//! After each step a fresh snapshot is opened from disk, and all of these
//! must equal the model: every quad of the view; the view's count; the
//! quads of each subject and of each graph, as patterns (pruned by the
//! sidecars) and as counts; SPARQL counts of all quads and per graph, with
//! the shortcuts and by full evaluation. So must the snapshot a long-lived
//! reader keeps (`view::kept`), which must notice the step. After a
//! compaction, `verify` must find the new version clean. The snapshot
//! opened after the step before must still read what it read then.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use cottas_tui::compact::{self, CompactOptions, CompactPhase};
use cottas_tui::import::{self, ImportOptions};
use cottas_tui::sparql::run::{run_query, OutputFormat, QueryOptions};
use cottas_tui::sparql::update::{Suspended, Updater};
use cottas_tui::store::base::writer::BaseOptions;
use cottas_tui::view::kept::{Budget, Kept, Snapshots};
use cottas_tui::view::terms::{from_token, Tok};
use cottas_tui::view::{Graphs, Snapshot, View, ViewQuad};

pub const SUBJECTS: [&str; 4] = ["<http://x/s0>", "<http://x/s1>", "<http://x/s2>", "<http://x/s3>"];
pub const PREDICATES: [&str; 3] = ["<http://x/p0>", "<http://x/p1>", "<http://x/p2>"];
/// Objects: the subjects again (so objects link), and literals of each kind.
const LITERALS: [&str; 4] =
    ["\"a\"", "\"b\"@en", "\"1\"^^<http://www.w3.org/2001/XMLSchema#integer>", "\"\u{e9}\\n\u{1f600}\""];
pub const GRAPHS: [&str; 3] = ["<http://x/g0>", "<http://x/g1>", "<http://x/g2>"];
/// A graph no step ever writes: clearing it without SILENT fails.
const NO_SUCH_GRAPH: &str = "<http://x/none>";
/// The blank node of one request's data (or of the initial file): new in
/// each request, whatever label the store gives it. The model names it
/// with the first of [`BLANKS`] no quad of the model holds.
pub const FRESH: &str = "_:x";
/// The model's names of blank nodes: never more are alive at once than
/// there are steps (each makes at most one) and the initial file.
const BLANKS: [&str; 32] = [
    "_:m0", "_:m1", "_:m2", "_:m3", "_:m4", "_:m5", "_:m6", "_:m7", "_:m8", "_:m9", "_:m10", "_:m11",
    "_:m12", "_:m13", "_:m14", "_:m15", "_:m16", "_:m17", "_:m18", "_:m19", "_:m20", "_:m21", "_:m22",
    "_:m23", "_:m24", "_:m25", "_:m26", "_:m27", "_:m28", "_:m29", "_:m30", "_:m31",
];

/// A graph of the dataset: the default one, or a named one (its IRI token).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum G {
    Default,
    Named(&'static str),
}

/// A quad as N-Triples tokens (oxrdf's rendering, which the checks use too).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Q {
    pub s: &'static str,
    pub p: &'static str,
    pub o: &'static str,
    pub g: G,
}

#[derive(Clone, Copy, Debug)]
pub enum Target {
    Graph(G),
    AllNamed,
    All,
}

#[derive(Clone, Copy, Debug)]
pub enum Transfer {
    Add,
    Copy,
    Move,
}

#[derive(Clone, Debug)]
pub enum Step {
    Insert(Vec<Q>),
    Delete(Vec<Q>),
    /// Two operations of one request: the delete sees the insert.
    InsertThenDelete(Vec<Q>, Vec<Q>),
    Clear {
        target: Target,
        drop: bool,
    },
    Transfer {
        kind: Transfer,
        from: G,
        to: G,
    },
    /// `DELETE WHERE` of every quad of one subject in one graph.
    DeleteSubject(&'static str, G),
    /// Each quad of predicate `p` in `from` becomes one of `to_p` in `to`.
    Rename {
        p: &'static str,
        from: G,
        to_p: &'static str,
        to: G,
    },
    /// `INSERT { GRAPH ?g { ?s p o } } WHERE { GRAPH ?g { ?s ?x ?y } }`.
    TagNamed {
        p: &'static str,
        o: &'static str,
    },
    /// Every quad in a named graph whose object is `o`, by a FILTER.
    DeleteObjectInNamed(&'static str),
    CreateSilent(&'static str),
    /// An insert and then an operation that fails: nothing is applied.
    Failing(Vec<Q>),
    /// A compaction; with `during`, a write step made from inside it, when
    /// its progress first reports that phase (the writer is not blocked
    /// while it folds, and the write must survive the swap).
    Compact {
        during: Option<(CompactPhase, Box<Step>)>,
    },
    Reopen,
    /// Removes every version but `current` (readers keep what they mapped).
    Gc,
    /// A write step made as the endpoint makes it: the writer resumed from
    /// what the last such step suspended (or over the kept snapshot), the
    /// lock held for the request only, and its own fold installed as the
    /// snapshot readers see next.
    ViaEndpoint(Box<Step>),
}

/// The initial store and the steps after it.
#[derive(Clone, Debug)]
pub struct Script {
    pub initial: Vec<Q>,
    pub row_group_size: usize,
    pub steps: Vec<Step>,
}

/// Reads choices from the bytes; past their end every choice is 0 and
/// [`Bytes::done`] says so.
struct Bytes<'a> {
    data: &'a [u8],
    at: usize,
}

impl Bytes<'_> {
    fn done(&self) -> bool {
        self.at >= self.data.len()
    }
    fn byte(&mut self) -> u8 {
        let b = self.data.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        b
    }
    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[usize::from(self.byte()) % from.len()]
    }
    fn graph(&mut self) -> G {
        match self.byte() % 4 {
            0 => G::Default,
            n => G::Named(GRAPHS[usize::from(n) - 1]),
        }
    }
    fn object(&mut self) -> &'static str {
        let b = usize::from(self.byte()) % (SUBJECTS.len() + LITERALS.len());
        SUBJECTS.get(b).copied().unwrap_or_else(|| LITERALS[b - SUBJECTS.len()])
    }
    fn quad(&mut self) -> Q {
        Q { s: self.pick(&SUBJECTS), p: self.pick(&PREDICATES), o: self.object(), g: self.graph() }
    }
    fn quads(&mut self, most: u8) -> Vec<Q> {
        let n = self.byte() % most + 1;
        (0..n).map(|_| self.quad()).collect()
    }
    /// A quad of data to insert: its subject or object may be the
    /// request's blank node (DELETE DATA may hold none).
    fn data_quad(&mut self) -> Q {
        let q = self.quad();
        match self.byte() % 8 {
            0 => Q { s: FRESH, ..q },
            1 => Q { o: FRESH, ..q },
            2 => Q { s: FRESH, o: FRESH, ..q },
            _ => q,
        }
    }
    fn data(&mut self, most: u8) -> Vec<Q> {
        let n = self.byte() % most + 1;
        (0..n).map(|_| self.data_quad()).collect()
    }
}

impl Script {
    /// A script from any bytes: a few initial quads, a row-group size, then
    /// steps until the bytes run out (at most 24).
    pub fn decode(data: &[u8]) -> Script {
        let mut b = Bytes { data, at: 0 };
        let n = b.byte() % 16;
        let initial = (0..n).map(|_| b.data_quad()).collect();
        let row_group_size = b.pick(&[1, 2, 3, 5, 122_880]);
        let mut steps = Vec::new();
        while !b.done() && steps.len() < 24 {
            steps.push(Self::step(&mut b));
        }
        Script { initial, row_group_size, steps }
    }

    fn step(b: &mut Bytes) -> Step {
        match b.byte() % 16 {
            12 => {
                let during = (b.byte() % 2 == 1).then(|| {
                    let phase = b.pick(&[
                        CompactPhase::Planning,
                        CompactPhase::Folding,
                        CompactPhase::Indexing,
                        CompactPhase::Publishing,
                        CompactPhase::Swapping,
                        CompactPhase::Done,
                    ]);
                    (phase, Box::new(Self::write_step(b)))
                });
                Step::Compact { during }
            }
            13 => Step::Reopen,
            14 => Step::Gc,
            15 => Step::ViaEndpoint(Box::new(Self::write_step(b))),
            _ => Self::write_step(b),
        }
    }

    /// A step that is one update request.
    fn write_step(b: &mut Bytes) -> Step {
        match b.byte() % 12 {
            0 | 1 => Step::Insert(b.data(4)),
            2 => Step::Delete(b.quads(4)),
            3 => Step::InsertThenDelete(b.data(3), b.quads(3)),
            4 => {
                let target = match b.byte() % 3 {
                    0 => Target::Graph(b.graph()),
                    1 => Target::AllNamed,
                    _ => Target::All,
                };
                Step::Clear { target, drop: b.byte() % 2 == 1 }
            }
            5 => Step::Transfer {
                kind: b.pick(&[Transfer::Add, Transfer::Copy, Transfer::Move]),
                from: b.graph(),
                to: b.graph(),
            },
            6 => Step::DeleteSubject(b.pick(&SUBJECTS), b.graph()),
            7 => Step::Rename {
                p: b.pick(&PREDICATES),
                from: b.graph(),
                to_p: b.pick(&PREDICATES),
                to: b.graph(),
            },
            8 => Step::TagNamed { p: b.pick(&PREDICATES), o: b.object() },
            9 => Step::DeleteObjectInNamed(b.object()),
            10 => Step::CreateSilent(b.pick(&GRAPHS)),
            _ => Step::Failing(b.data(2)),
        }
    }
}

fn triple(s: &str, p: &str, o: &str) -> String {
    format!("{s} {p} {o} .")
}

/// `triples` in graph `g`, as a quad pattern or quad data block.
fn in_graph(g: G, triples: &str) -> String {
    match g {
        G::Default => triples.to_string(),
        G::Named(iri) => format!("GRAPH {iri} {{ {triples} }}"),
    }
}

fn data(quads: &[Q]) -> String {
    quads.iter().map(|q| in_graph(q.g, &triple(q.s, q.p, q.o))).collect::<Vec<_>>().join(" ")
}

fn graph_ref(g: G) -> String {
    match g {
        G::Default => "DEFAULT".into(),
        G::Named(iri) => format!("GRAPH {iri}"),
    }
}

impl Step {
    /// The SPARQL Update request of a write step (`None`: not a request).
    pub fn request(&self) -> Option<String> {
        Some(match self {
            Step::Insert(qs) => format!("INSERT DATA {{ {} }}", data(qs)),
            Step::Delete(qs) => format!("DELETE DATA {{ {} }}", data(qs)),
            Step::InsertThenDelete(a, d) => format!("INSERT DATA {{ {} }} ; DELETE DATA {{ {} }}", data(a), data(d)),
            Step::Clear { target, drop } => {
                let verb = if *drop { "DROP" } else { "CLEAR" };
                let what = match target {
                    Target::Graph(g) => graph_ref(*g),
                    Target::AllNamed => "NAMED".into(),
                    Target::All => "ALL".into(),
                };
                format!("{verb} SILENT {what}")
            }
            Step::Transfer { kind, from, to } => {
                let verb = match kind {
                    Transfer::Add => "ADD",
                    Transfer::Copy => "COPY",
                    Transfer::Move => "MOVE",
                };
                let name = |g: &G| match g {
                    G::Default => "DEFAULT".to_string(),
                    G::Named(iri) => iri.to_string(),
                };
                format!("{verb} SILENT {} TO {}", name(from), name(to))
            }
            Step::DeleteSubject(s, g) => format!("DELETE WHERE {{ {} }}", in_graph(*g, &triple(s, "?p", "?o"))),
            Step::Rename { p, from, to_p, to } => format!(
                "DELETE {{ {} }} INSERT {{ {} }} WHERE {{ {} }}",
                in_graph(*from, &triple("?s", p, "?o")),
                in_graph(*to, &triple("?s", to_p, "?o")),
                in_graph(*from, &triple("?s", p, "?o")),
            ),
            Step::TagNamed { p, o } => {
                format!("INSERT {{ GRAPH ?g {{ ?s {p} {o} }} }} WHERE {{ GRAPH ?g {{ ?s ?x ?y }} }}")
            }
            Step::DeleteObjectInNamed(o) => format!(
                "DELETE {{ GRAPH ?g {{ ?s ?p ?o }} }} WHERE {{ GRAPH ?g {{ ?s ?p ?o FILTER(sameTerm(?o, {o})) }} }}"
            ),
            Step::CreateSilent(g) => format!("CREATE SILENT GRAPH {g}"),
            Step::Failing(qs) => format!("INSERT DATA {{ {} }} ; CLEAR GRAPH {NO_SUCH_GRAPH}", data(qs)),
            Step::ViaEndpoint(step) => return step.request(),
            Step::Compact { .. } | Step::Reopen | Step::Gc => return None,
        })
    }

    /// What the step does to the model's quads (SPARQL 1.1 Update §3).
    pub fn apply_to(&self, m: &mut BTreeSet<Q>) {
        match self {
            Step::Insert(qs) => insert_data(m, qs),
            Step::Delete(qs) => qs.iter().for_each(|q| {
                m.remove(q);
            }),
            Step::InsertThenDelete(a, d) => {
                Step::Insert(a.clone()).apply_to(m);
                Step::Delete(d.clone()).apply_to(m);
            }
            Step::Clear { target, .. } => m.retain(|q| match target {
                Target::Graph(g) => q.g != *g,
                Target::AllNamed => q.g == G::Default,
                Target::All => false,
            }),
            Step::Transfer { kind, from, to } if from != to => {
                let moved: Vec<Q> = m.iter().filter(|q| q.g == *from).map(|q| Q { g: *to, ..*q }).collect();
                if !matches!(kind, Transfer::Add) {
                    m.retain(|q| q.g != *to);
                }
                if matches!(kind, Transfer::Move) {
                    m.retain(|q| q.g != *from);
                }
                m.extend(moved);
            }
            Step::Transfer { .. } => {}
            Step::DeleteSubject(s, g) => m.retain(|q| !(q.s == *s && q.g == *g)),
            Step::Rename { p, from, to_p, to } => {
                let matched: Vec<Q> = m.iter().filter(|q| q.p == *p && q.g == *from).copied().collect();
                for q in &matched {
                    m.remove(q);
                }
                m.extend(matched.iter().map(|q| Q { p: to_p, g: *to, ..*q }));
            }
            Step::TagNamed { p, o } => {
                let tags: Vec<Q> = m.iter().filter(|q| q.g != G::Default).map(|q| Q { p, o, ..*q }).collect();
                m.extend(tags);
            }
            Step::DeleteObjectInNamed(o) => m.retain(|q| !(q.o == *o && q.g != G::Default)),
            Step::ViaEndpoint(step) => step.apply_to(m),
            Step::CreateSilent(_) | Step::Failing(_) | Step::Compact { .. } | Step::Reopen | Step::Gc => {}
        }
    }
}

/// INSERT DATA of `qs` into the model: the request's blank node is a new
/// one, named by the first of [`BLANKS`] the model does not hold.
fn insert_data(m: &mut BTreeSet<Q>, qs: &[Q]) {
    let held = |b: &&str| m.iter().any(|q| q.s == *b || q.o == *b);
    let name = *BLANKS.iter().find(|b| !held(b)).expect("fewer blank nodes alive than steps");
    let named = |t: &'static str| if t == FRESH { name } else { t };
    let new: Vec<Q> = qs.iter().map(|q| Q { s: named(q.s), o: named(q.o), ..*q }).collect();
    m.extend(new);
}

/// The model of the initial file: its blank node named like a request's.
pub fn initial_model(initial: &[Q]) -> BTreeSet<Q> {
    let mut m = BTreeSet::new();
    insert_data(&mut m, initial);
    m
}

/// A scratch directory removed when dropped (the fuzz crate has no tempfile).
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new() -> Scratch {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("cottas-store-ops-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn line(q: &Q) -> String {
    match q.g {
        G::Default => format!("{} {} {} .\n", q.s, q.p, q.o),
        G::Named(g) => format!("{} {} {} {g} .\n", q.s, q.p, q.o),
    }
}

/// A view quad in the model's terms (oxrdf's N-Triples rendering).
fn rendered(q: &ViewQuad) -> (String, String, String, Option<String>) {
    let t = |t: &Tok| from_token(t.bytes()).map_or_else(|| format!("?{}", t.as_str()), |t| t.to_string());
    (t(&q.s), t(&q.p), t(&q.o), q.g.as_ref().map(t))
}

fn key(q: &Q) -> (String, String, String, Option<String>) {
    let g = match q.g {
        G::Default => None,
        G::Named(g) => Some(g.to_string()),
    };
    (q.s.to_string(), q.p.to_string(), q.o.to_string(), g)
}

type Key = (String, String, String, Option<String>);
type Keys = BTreeSet<Key>;

/// Quads up to the labels of their blank nodes: the quads without one, and
/// for each blank node the quads that hold it, it written `_:SELF`, as a
/// sorted list of such lists. Two sets of quads in which no quad holds two
/// different blank nodes (no step links two) are the same up to a renaming
/// of blank nodes exactly when these are equal.
fn canonical(keys: &Keys) -> (Keys, Vec<Vec<Key>>) {
    let blank = |t: &String| t.starts_with("_:");
    let mut ground = Keys::new();
    let mut of_node: std::collections::BTreeMap<&String, Vec<Key>> = Default::default();
    for k in keys {
        let Some(node) = [&k.0, &k.2].into_iter().find(|t| blank(t)) else {
            ground.insert(k.clone());
            continue;
        };
        assert!(!(blank(&k.0) && blank(&k.2) && k.0 != k.2), "a quad links two blank nodes: {k:?}");
        let own = |t: &String| if t == node { "_:SELF".to_string() } else { t.clone() };
        of_node.entry(node).or_default().push((own(&k.0), k.1.clone(), own(&k.2), k.3.clone()));
    }
    let mut nodes: Vec<Vec<Key>> = of_node.into_values().collect();
    nodes.sort();
    (ground, nodes)
}

fn collect(quads: cottas_tui::view::Quads<'_>) -> Result<Keys, String> {
    quads.map(|q| q.map(|q| rendered(&q)).map_err(|e| e.to_string())).collect()
}

/// Every check of a fresh snapshot's view against the model; the snapshot
/// (to check again later) or the first difference.
fn check(chunk: &Path, model: &BTreeSet<Q>, after: &str) -> Result<Snapshot, String> {
    let snap = Snapshot::open(chunk, 1 << 20).map_err(|e| format!("after {after}: open: {e}"))?;
    check_snapshot(&snap, model, after)?;
    Ok(snap)
}

/// Every check of `snap`'s view against the model; the first difference.
fn check_snapshot(snap: &Snapshot, model: &BTreeSet<Q>, after: &str) -> Result<(), String> {
    let view = snap.view();
    let want: Keys = model.iter().map(key).collect();
    let all = || view.quads(None, None, None, Graphs::All).map(|(q, _)| q);
    let have = collect(all().map_err(|e| e.to_string())?)?;
    let (have_ground, have_nodes) = canonical(&have);
    let (want_ground, want_nodes) = canonical(&want);
    if (&have_ground, &have_nodes) != (&want_ground, &want_nodes) {
        let extra: Vec<_> = have_ground.difference(&want_ground).collect();
        let missing: Vec<_> = want_ground.difference(&have_ground).collect();
        return Err(format!(
            "after {after}: the view has {extra:?} beyond the model and lacks {missing:?}; \
             the view's blank nodes {have_nodes:?}, the model's {want_nodes:?}"
        ));
    }
    let n = all().and_then(|q| q.try_count()).map_err(|e| e.to_string())?;
    if n != want.len() {
        return Err(format!("after {after}: the view counts {n} quads, the model holds {}", want.len()));
    }
    for s in SUBJECTS {
        let tok = Tok::from_term(&from_token(s.as_bytes()).expect("a subject token"));
        let part = want.iter().filter(|k| k.0 == s).cloned().collect();
        check_pattern(&view, Some(&tok), Graphs::All, &part, &format!("subject {s}"), after)?;
    }
    for g in GRAPHS {
        let tok = Tok::from_term(&from_token(g.as_bytes()).expect("a graph token"));
        let part = want.iter().filter(|k| k.3.as_deref() == Some(g)).cloned().collect();
        check_pattern(&view, None, Graphs::Named(&tok), &part, &format!("graph {g}"), after)?;
    }
    check_sparql_counts(snap, &want, after)
}

/// Counts asked in SPARQL, answered with the shortcuts (`sparql::shortcut`,
/// from the sidecars and the overlay) and by full evaluation: each the
/// model's count of quads per graph.
fn check_sparql_counts(snap: &Snapshot, want: &Keys, after: &str) -> Result<(), String> {
    let mut counts: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    for k in want {
        *counts.entry(k.3.clone().unwrap_or_default()).or_default() += 1;
    }
    let want_rows: Vec<(String, usize)> = counts.into_iter().filter(|(g, _)| !g.is_empty()).collect();
    let want_all = want.len();
    for no_shortcuts in [false, true] {
        let per_graph = "SELECT ?g (COUNT(*) AS ?n) { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g ORDER BY ?g";
        let rows = tsv_rows(snap, per_graph, no_shortcuts, after)?;
        let have: Result<Vec<(String, usize)>, String> = rows
            .iter()
            .map(|r| Ok((r.first().cloned().unwrap_or_default(), count_cell(r, after)?)))
            .collect();
        if have? != want_rows {
            return Err(format!(
                "after {after}: `{per_graph}` (shortcuts {}) gave {rows:?}, the model {want_rows:?}",
                !no_shortcuts
            ));
        }
        let all = "SELECT (COUNT(*) AS ?n) { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } }";
        let rows = tsv_rows(snap, all, no_shortcuts, after)?;
        let have = rows.first().map(|r| count_cell(r, after)).transpose()?;
        if have != Some(want_all) {
            return Err(format!(
                "after {after}: `{all}` (shortcuts {}) gave {rows:?}, the model {want_all}",
                !no_shortcuts
            ));
        }
    }
    Ok(())
}

/// The rows of a query's TSV answer, split into cells.
fn tsv_rows(
    snap: &Snapshot,
    text: &str,
    no_shortcuts: bool,
    after: &str,
) -> Result<Vec<Vec<String>>, String> {
    let opts = QueryOptions { format: Some(OutputFormat::Tsv), no_shortcuts, ..QueryOptions::default() };
    let mut out = Vec::new();
    run_query(&[snap.view()], text, &opts, &mut out).map_err(|e| format!("after {after}: `{text}`: {e}"))?;
    let text = String::from_utf8(out).map_err(|e| format!("after {after}: {e}"))?;
    Ok(text.lines().skip(1).map(|l| l.split('\t').map(str::to_string).collect()).collect())
}

/// The count in a row's last cell, written `3` or `"3"^^xsd:integer`.
fn count_cell(row: &[String], after: &str) -> Result<usize, String> {
    let cell = row.last().map(String::as_str).unwrap_or("");
    let lexical = cell.strip_prefix('"').and_then(|c| c.split('"').next()).unwrap_or(cell);
    lexical.parse().map_err(|_| format!("after {after}: a count cell {cell:?}"))
}

/// The quads of one pattern (a subject, or a graph; these prune through the
/// sidecars) and their count must be the model's `want`.
fn check_pattern(
    view: &View<'_>,
    subject: Option<&Tok<'_>>,
    graphs: Graphs,
    want: &Keys,
    what: &str,
    after: &str,
) -> Result<(), String> {
    let quads = view.quads(subject, None, None, graphs).map_err(|e| e.to_string())?.0;
    let count = view.quads(subject, None, None, graphs).and_then(|q| q.0.try_count());
    let (have, count) = (collect(quads)?, count.map_err(|e| e.to_string())?);
    if canonical(&have) != canonical(want) || count != want.len() {
        return Err(format!(
            "after {after}: the quads of {what} are {have:?} (counted {count}), the model has {want:?}"
        ));
    }
    Ok(())
}

/// Applies a write step through `writer` (opened if `None`) and, when it
/// commits, to the model; a step that should fail must fail.
fn write(
    chunk: &Path,
    writer: &mut Option<Updater>,
    step: &Step,
    model: &mut BTreeSet<Q>,
    after: &str,
) -> Result<(), String> {
    let request = step.request().expect("a write step");
    let w = match writer {
        Some(w) => w,
        None => {
            writer.insert(Updater::open(chunk, None).map_err(|e| format!("{after}: open the writer: {e}"))?)
        }
    };
    let applied = w.apply(&request).map(drop).map_err(|e| e.to_string());
    settle(step, &request, applied, model, after)
}

/// Whether a write step ended as it should (a failing one failed, any
/// other committed); a committed one is applied to the model.
fn settle(
    step: &Step,
    request: &str,
    applied: Result<(), String>,
    model: &mut BTreeSet<Q>,
    after: &str,
) -> Result<(), String> {
    match (step, applied) {
        (Step::Failing(_), Ok(())) => Err(format!("{after}: `{request}` did not fail")),
        (Step::Failing(_), Err(_)) => Ok(()),
        (_, Err(e)) => Err(format!("{after}: `{request}`: {e}")),
        (_, Ok(())) => {
            step.apply_to(model);
            Ok(())
        }
    }
}

/// A write step as the endpoint commits one (`serve::routes::commit`, then
/// `publish`): resumed, applied, its fold installed in `kept`, suspended.
fn via_endpoint(
    chunk: &Path,
    suspended: &mut Option<Suspended>,
    kept: &Snapshots,
    step: &Step,
    model: &mut BTreeSet<Q>,
    after: &str,
) -> Result<(), String> {
    let request = step.request().expect("a write step");
    let reader = kept.held();
    let previous = suspended.take();
    let commit = || -> Result<Option<Kept>, String> {
        let mut updater =
            Updater::resume(chunk, None, previous, reader.as_deref()).map_err(|e| e.to_string())?;
        updater.apply(&request).map_err(|e| e.to_string())?;
        let next = Kept::after_update(chunk, updater.overlay(), Budget::Cache(1 << 20)).ok();
        *suspended = updater.suspend().ok();
        Ok(next)
    };
    // As `publish`: the writer's fold for the next readers, or none.
    let applied = commit().map(|next| match next {
        Some(next) => kept.install(next),
        None => kept.invalidate(),
    });
    if applied.is_err() {
        kept.invalidate();
    }
    settle(step, &request, applied, model, after)
}

/// Runs the script on a real store in `dir`; the first difference from
/// the model, or an unexpected error, as text.
pub fn run(script: &Script, dir: &Path) -> Result<(), String> {
    let input = dir.join("initial.nq");
    std::fs::write(&input, script.initial.iter().map(line).collect::<String>()).map_err(|e| e.to_string())?;
    let chunk = dir.join("chunk");
    let mut opts = ImportOptions::new(vec![input], chunk.clone());
    opts.base = BaseOptions { row_group_size: script.row_group_size, ..BaseOptions::default() };
    opts.memory_limit = 64 << 10;
    import::import(&opts, |_| {}).map_err(|e| format!("import: {e}"))?;
    let mut model = initial_model(&script.initial);
    // The last step's snapshot and model: a reader keeps seeing what it
    // opened, whatever is written or compacted after.
    let mut before = (check(&chunk, &model, "the import")?, model.clone());
    let mut writer = Some(Updater::open(&chunk, None).map_err(|e| format!("open the writer: {e}"))?);
    // What a long-lived reader (the endpoint, the TUI) keeps, and must
    // notice is stale after each step.
    let kept = Snapshots::new(&chunk, Budget::Cache(1 << 20));
    // What the endpoint's last write suspended.
    let mut endpoint: Option<Suspended> = None;
    for (i, step) in script.steps.iter().enumerate() {
        let after = format!("step {i} ({step:?})");
        match step {
            Step::Compact { during } => {
                writer = None;
                let copts = CompactOptions {
                    base: opts.base.clone(),
                    memory_limit: 64 << 10,
                    ..CompactOptions::default()
                };
                let mut pending = during.as_ref();
                let mut wrote = Ok(());
                compact::compact(&chunk, &copts, |p| {
                    if let Some((_, step)) = pending.filter(|(phase, _)| *phase == p.phase) {
                        pending = None;
                        wrote = write(&chunk, &mut None, step, &mut model, &after);
                    }
                })
                .map_err(|e| format!("{after}: {e}"))?;
                wrote?;
                // A compaction with nothing to fold reports no phase: the
                // write goes after it.
                if let Some((_, step)) = pending {
                    write(&chunk, &mut None, step, &mut model, &after)?;
                }
                let report = cottas_tui::triage::verify::verify(&chunk, Default::default())
                    .map_err(|e| format!("{after}: verify: {e}"))?;
                if !report.is_clean() {
                    return Err(format!("{after}: verify found {:?}", report.findings));
                }
            }
            Step::Reopen => writer = None,
            Step::ViaEndpoint(step) => {
                // The endpoint is another writer: this one lets go of the lock.
                writer = None;
                via_endpoint(&chunk, &mut endpoint, &kept, step, &mut model, &after)?;
            }
            Step::Gc => {
                writer = None;
                cottas_tui::store::versions::gc_apply(&chunk, Some(1), None)
                    .map_err(|e| format!("{after}: {e}"))?;
            }
            _ => write(&chunk, &mut writer, step, &mut model, &after)?,
        }
        check_snapshot(&before.0, &before.1, &format!("{after}, in the snapshot opened before it"))?;
        let latest = kept.current().map_err(|e| format!("{after}: the kept snapshot: {e}"))?;
        check_snapshot(&latest.view, &model, &format!("{after}, in the kept snapshot"))?;
        before = (check(&chunk, &model, &after)?, model.clone());
    }
    Ok(())
}
