//! The W3C SPARQL 1.1 query-evaluation tests, through our store.
//!
//! Each test runs three ways: spareval over an in-memory `oxrdf::Dataset`
//! (the baseline), our store with the data in the base, and our store with
//! the data arriving through the delta log over an empty base. The target:
//! every test the baseline passes passes in both of our variants. Tests the
//! baseline fails, and tests whose data is RDF/XML (no parser in our tree),
//! are listed with that reason. The suite is read from
//! fixtures/w3c-rdf-tests.

mod common;
mod w3c_skips;

use common::manifest::*;

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use oxrdf::{Dataset, GraphName, NamedNode, NamedOrBlankNode, Quad, Term};
use oxttl::NQuadsSerializer;
use sparesults::{QueryResultsFormat, QueryResultsParser, ReaderQueryResultsParserOutput};
use spareval::{QueryEvaluator, QueryResults};
use spargebra::{Query, SparqlParser};

use cottas_tui::format::deltalog::{self, Batch, Entry};
use cottas_tui::format::transport::Transport;
use cottas_tui::import::{self, ImportOptions};
use cottas_tui::sparql::run::with_results;
use cottas_tui::store::read::ColumnCache;
use cottas_tui::store::versions::open::Store;
use cottas_tui::view::overlay::Overlay;
use cottas_tui::view::View;

const QT: &str = "http://www.w3.org/2001/sw/DataAccess/tests/test-query#";

struct EvalTest {
    name: String,
    query: PathBuf,
    data: Vec<PathBuf>,
    graph_data: Vec<PathBuf>,
    result: Option<PathBuf>,
}

fn eval_tests(manifest: &Path) -> Vec<EvalTest> {
    let (m, entries) = entries_of(manifest, "QueryEvaluationTest");
    let mut out = Vec::new();
    for (e, node) in entries {
        let Some(action) = m.object(&node, &format!("{MF}action")).and_then(as_subject) else { continue };
        let file = |t: &Term| match t {
            Term::NamedNode(n) => Some(path_of(n.as_str())),
            _ => None,
        };
        let Some(query) = m.object(&action, &format!("{QT}query")).and_then(file) else { continue };
        out.push(EvalTest {
            name: e.to_string(),
            query,
            data: m.objects(&action, &format!("{QT}data")).into_iter().filter_map(file).collect(),
            graph_data: m.objects(&action, &format!("{QT}graphData")).into_iter().filter_map(file).collect(),
            result: m.object(&node, &format!("{MF}result")).and_then(file),
        });
    }
    out
}

/// All quads of a test's dataset: default-graph files and named-graph files
/// (the query's FROM / FROM NAMED files included, named by their IRI).
fn dataset_quads(t: &EvalTest, query: &Query) -> Result<Vec<Quad>, String> {
    let mut quads = Vec::new();
    let mut named: Vec<PathBuf> = t.graph_data.clone();
    if let Some(ds) = query.dataset() {
        for g in ds.default.iter().chain(ds.named.iter().flatten()) {
            named.push(path_of(g.as_str()));
        }
    }
    for (i, f) in t.data.iter().map(|f| (None, f)).chain(named.iter().map(|f| (Some(f), f))).enumerate() {
        let (graph, file) = f;
        if file.extension().is_some_and(|e| e == "rdf") {
            return Err("RDF/XML data: no RDF/XML parser in our dependency tree".into());
        }
        let g = match graph {
            Some(p) => GraphName::NamedNode(NamedNode::new_unchecked(url(p))),
            None => GraphName::DefaultGraph,
        };
        quads.extend(file_quads(file, &g, i)?);
    }
    Ok(quads)
}

/// The triples of one data file in graph `g`; blank nodes are scoped to
/// their file (file number `i`).
fn file_quads(file: &Path, g: &GraphName, i: usize) -> Result<Vec<Quad>, String> {
    let relabel = |b: &oxrdf::BlankNode| oxrdf::BlankNode::new_unchecked(format!("f{i}x{}", b.as_str()));
    let mut quads = Vec::new();
    for tr in parse_turtle(file)? {
        let s = match tr.subject {
            NamedOrBlankNode::BlankNode(b) => relabel(&b).into(),
            other => other,
        };
        let o = match tr.object {
            Term::BlankNode(b) => relabel(&b).into(),
            other => other,
        };
        quads.push(Quad::new(s, tr.predicate, o, g.clone()));
    }
    Ok(quads)
}

/// A result in comparable form: sorted rows of (variable, term) with blank
/// nodes collapsed to one placeholder, or a boolean, or sorted triples.
#[derive(Debug, PartialEq, Eq)]
enum Comparable {
    Boolean(bool),
    Rows(Vec<BTreeMap<String, String>>),
    Graph(Vec<String>),
}

fn show(t: &Term) -> String {
    match t {
        Term::BlankNode(_) => "_:B".into(),
        other => other.to_string(),
    }
}

/// Sorted rows of (variable, term), from our results or a parsed file alike.
fn solution_rows<E: ToString>(
    sols: impl Iterator<Item = Result<sparesults::QuerySolution, E>>,
) -> Result<Comparable, String> {
    let mut rows = Vec::new();
    for s in sols {
        let s = s.map_err(|e| e.to_string())?;
        rows.push(s.iter().map(|(v, t)| (v.as_str().to_string(), show(t))).collect());
    }
    rows.sort();
    Ok(Comparable::Rows(rows))
}

fn comparable(r: Result<QueryResults<'_>, spareval::QueryEvaluationError>) -> Result<Comparable, String> {
    match r.map_err(|e| e.to_string())? {
        QueryResults::Boolean(b) => Ok(Comparable::Boolean(b)),
        QueryResults::Solutions(sols) => solution_rows(sols),
        QueryResults::Graph(ts) => {
            let mut v = Vec::new();
            for t in ts {
                let t = t.map_err(|e| e.to_string())?;
                v.push(format!("{} {} {}", show(&t.subject.clone().into()), t.predicate, show(&t.object)));
            }
            v.sort();
            Ok(Comparable::Graph(v))
        }
    }
}

fn expected(path: &Path) -> Result<Comparable, String> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    if ext == "ttl" || ext == "nt" {
        let ts = parse_turtle(path)?;
        if ts.iter().any(|t| {
            t.predicate.as_str().starts_with("http://www.w3.org/2001/sw/DataAccess/tests/result-set#")
        }) {
            return Err("result set written in the RDF result-set vocabulary".into());
        }
        let mut v: Vec<String> = ts
            .iter()
            .map(|t| format!("{} {} {}", show(&t.subject.clone().into()), t.predicate, show(&t.object)))
            .collect();
        v.sort();
        return Ok(Comparable::Graph(v));
    }
    let format = QueryResultsFormat::from_extension(ext).ok_or_else(|| format!("result format .{ext}"))?;
    let f = File::open(path).map_err(|e| e.to_string())?;
    match QueryResultsParser::from_format(format).for_reader(f).map_err(|e| e.to_string())? {
        ReaderQueryResultsParserOutput::Boolean(b) => Ok(Comparable::Boolean(b)),
        ReaderQueryResultsParserOutput::Solutions(sols) => solution_rows(sols),
    }
}

fn to_log_entry(q: &Quad) -> Option<Entry> {
    use cottas_tui::format::deltalog::{Object, Quad as LQ, Subject};
    let subject = match &q.subject {
        NamedOrBlankNode::NamedNode(n) => Subject::Iri(n.as_str().into()),
        NamedOrBlankNode::BlankNode(b) => Subject::Blank(b.as_str().into()),
    };
    let object = match &q.object {
        Term::NamedNode(n) => Object::Iri(n.as_str().into()),
        Term::BlankNode(b) => Object::Blank(b.as_str().into()),
        Term::Literal(l) => Object::Literal {
            lexical: l.value().into(),
            datatype: l.datatype().as_str().into(),
            language: l.language().map(str::to_owned),
        },
        #[allow(unreachable_patterns)]
        _ => return None,
    };
    let graph = match &q.graph_name {
        GraphName::NamedNode(n) => Some(n.as_str().into()),
        _ => None,
    };
    Some(Entry::add(LQ { subject, predicate: q.predicate.as_str().into(), object, graph }))
}

/// Builds the test's store: its quads in the base, or (`via_log`) in one
/// visible log batch over an empty base.
fn build_store(dir: &Path, quads: &[Quad], via_log: bool) -> PathBuf {
    let nq = dir.join(if via_log { "empty.nq" } else { "data.nq" });
    let mut w = NQuadsSerializer::new().for_writer(File::create(&nq).unwrap());
    if !via_log {
        for q in quads {
            w.serialize_quad(q).unwrap();
        }
    }
    w.finish();
    let out = dir.join(if via_log { "log-store" } else { "base-store" });
    import::import(&ImportOptions::new(vec![nq], out.clone()), |_| {}).unwrap();
    if via_log {
        let entries: Vec<Entry> = quads.iter().filter_map(to_log_entry).collect();
        let batch = Batch { seq: 1, epoch: 1, entries };
        std::fs::write(out.join("data.deltalog"), deltalog::encode_batches(&[batch], Transport::Raw))
            .unwrap();
    }
    out
}

fn ours(store_dir: &Path, query: &Query) -> Result<Comparable, String> {
    let store = Store::open(store_dir).map_err(|e| e.to_string())?;
    let cache = ColumnCache::new(64 << 20);
    let overlay = Overlay::load(&store, &cache).map_err(|e| e.to_string())?;
    with_results(&[View::new(&store, &overlay, &cache)], query, comparable)
}

/// One line per W3C test in the test output, as `test w3c-query <name> ... ok`.
fn report(suite: &str, name: &str, outcome: &str) {
    let name = name.trim_start_matches('<').trim_end_matches('>');
    let short = ["/data-sparql11/", "/sparql11/"]
        .iter()
        .find_map(|dir| name.rsplit_once(dir).map(|(_, rest)| rest))
        .unwrap_or(name);
    common::announce(&format!("test w3c-{suite} {short} ... {outcome}"));
}

/// Compares the tests skipped in this run with the static list: an unlisted
/// skip and a listed test that passes are both failures.
fn check_skips(skipped: &[(String, String)], listed: &[(&str, &str)], failures: &mut Vec<String>) {
    let ran: std::collections::BTreeMap<&str, &str> = skipped
        .iter()
        .map(|(n, why)| (n.trim_start_matches('<').trim_end_matches('>'), why.as_str()))
        .collect();
    let list: std::collections::BTreeMap<&str, &str> = listed.iter().copied().collect();
    for (name, why) in &ran {
        if !list.contains_key(name) {
            failures.push(format!("{name} does not pass ({why}) and is not in tests/w3c_skips"));
        }
    }
    for (name, why) in &list {
        if !ran.contains_key(name) {
            failures.push(format!("{name} passes now: take it off tests/w3c_skips (it said: {why})"));
        }
    }
}

#[test]
fn w3c_sparql11_query_evaluation() {
    let root = common::w3c_suites().join("sparql/sparql11");
    let top = Manifest { triples: parse_turtle(&root.join("manifest-sparql11-query.ttl")).unwrap() };
    let me: NamedOrBlankNode =
        NamedNode::new_unchecked(url(&root.join("manifest-sparql11-query.ttl"))).into();
    let includes = top.list(top.object(&me, &format!("{MF}include")).unwrap());
    let (mut total, mut baseline_pass, mut both_pass) = (0, 0, 0);
    let mut skipped: Vec<(String, String)> = Vec::new();
    let mut failures: Vec<String> = Vec::new();
    for inc in includes {
        let Term::NamedNode(m) = inc else { continue };
        for t in eval_tests(&path_of(m.as_str())) {
            total += 1;
            let text = std::fs::read_to_string(&t.query).unwrap();
            let Ok(query) = SparqlParser::new().with_base_iri(url(&t.query)).unwrap().parse_query(&text)
            else {
                skipped.push((t.name, "the query does not parse".into()));
                continue;
            };
            let want = match t.result.as_deref().map(expected) {
                Some(Ok(w)) => w,
                Some(Err(why)) => {
                    skipped.push((t.name, why));
                    continue;
                }
                None => {
                    skipped.push((t.name, "no expected result".into()));
                    continue;
                }
            };
            let quads = match dataset_quads(&t, &query) {
                Ok(q) => q,
                Err(why) => {
                    skipped.push((t.name, why));
                    continue;
                }
            };
            let mem: Dataset = quads.iter().cloned().collect();
            let base_line = comparable(QueryEvaluator::new().prepare(&query).execute(&mem));
            if base_line.as_ref() != Ok(&want) {
                skipped.push((t.name, "spareval itself does not pass it over an in-memory dataset".into()));
                continue;
            }
            baseline_pass += 1;
            let dir = tempfile::tempdir().unwrap();
            let mut ok = true;
            for via_log in [false, true] {
                let got = ours(&build_store(dir.path(), &quads, via_log), &query);
                if got.as_ref() != Ok(&want) {
                    ok = false;
                    failures.push(format!(
                        "{} ({}): expected {want:?}, got {got:?}",
                        t.name,
                        if via_log { "data in the delta log" } else { "data in the base" }
                    ));
                }
            }
            both_pass += usize::from(ok);
            report("query", &t.name, if ok { "ok" } else { "FAILED" });
        }
    }
    for (name, why) in &skipped {
        report("query", name, &format!("skipped: {why}"));
    }
    eprintln!("W3C SPARQL 1.1 query evaluation: {total} tests, {baseline_pass} pass on spareval's in-memory dataset, {both_pass} pass through our store in both variants");
    for (name, why) in &skipped {
        eprintln!("  skipped {name}: {why}");
    }
    assert!(total > 200, "the manifests were read ({total} tests)");
    assert!(baseline_pass > 150, "{baseline_pass}");
    check_skips(&skipped, w3c_skips::QUERY_SKIPS, &mut failures);
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

// ---------------------------------------------------------------------------
// SPARQL 1.1 Update evaluation tests, through `Updater` (one batch per request).

struct UpdateTest {
    name: String,
    request: PathBuf,
    before: Vec<(Option<String>, PathBuf)>,
    after: Vec<(Option<String>, PathBuf)>,
}

fn update_tests(manifest: &Path) -> Vec<UpdateTest> {
    let (m, entries) = entries_of(manifest, "UpdateEvaluationTest");
    let mut out = Vec::new();
    for (e, node) in entries {
        let action = m.object(&node, &format!("{MF}action")).and_then(as_subject);
        let result = m.object(&node, &format!("{MF}result")).and_then(as_subject);
        let (Some(action), Some(result)) = (action, result) else { continue };
        let Some(Term::NamedNode(req)) = m.object(&action, &format!("{UT}request")) else { continue };
        out.push(UpdateTest {
            name: e.to_string(),
            request: path_of(req.as_str()),
            before: graph_files(&m, &action),
            after: graph_files(&m, &result),
        });
    }
    out
}

fn load_graphs(files: &[(Option<String>, PathBuf)]) -> Result<Vec<Quad>, String> {
    let mut quads = Vec::new();
    for (i, (graph, file)) in files.iter().enumerate() {
        let g = match graph {
            Some(iri) => GraphName::NamedNode(NamedNode::new(iri.clone()).map_err(|e| e.to_string())?),
            None => GraphName::DefaultGraph,
        };
        quads.extend(file_quads(file, &g, i)?);
    }
    Ok(quads)
}

/// Every quad of the store's view, canonicalised for comparison.
fn store_dataset(dir: &Path) -> Result<Dataset, String> {
    let store = Store::open(dir).map_err(|e| e.to_string())?;
    let cache = ColumnCache::new(64 << 20);
    let overlay = Overlay::load(&store, &cache).map_err(|e| e.to_string())?;
    let q = SparqlParser::new()
        .parse_query("SELECT ?s ?p ?o ?g { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } }")
        .unwrap();
    with_results(&[View::new(&store, &overlay, &cache)], &q, |r| {
        let QueryResults::Solutions(sols) = r.map_err(|e| e.to_string())? else { unreachable!() };
        let mut ds = Dataset::new();
        for s in sols {
            let s = s.map_err(|e| e.to_string())?;
            let subject = as_subject(s.get("s").unwrap()).unwrap();
            let Term::NamedNode(p) = s.get("p").unwrap().clone() else { unreachable!() };
            let g = match s.get("g") {
                Some(Term::NamedNode(n)) => GraphName::NamedNode(n.clone()),
                _ => GraphName::DefaultGraph,
            };
            ds.insert(&Quad::new(subject, p, s.get("o").unwrap().clone(), g));
        }
        ds.canonicalize(oxrdf::graph::CanonicalizationAlgorithm::Unstable);
        Ok(ds)
    })
}

/// Tests our update path cannot pass by design, with the reason.
fn update_skip_reason(t: &UpdateTest, text: &str) -> Option<&'static str> {
    if text.contains("LOAD") && text.contains("http") {
        return Some("LOAD of a remote IRI: updates load local files only");
    }
    if t.before.iter().chain(&t.after).any(|(_, f)| f.extension().is_some_and(|e| e == "rdf")) {
        return Some("RDF/XML data: no RDF/XML parser in our dependency tree");
    }
    None
}

#[test]
fn w3c_sparql11_update_evaluation() {
    use cottas_tui::sparql::update::Updater;
    let root = common::w3c_suites().join("sparql/sparql11");
    let top_path = root.join("manifest-sparql11-update.ttl");
    let top = Manifest { triples: parse_turtle(&top_path).unwrap() };
    let me: NamedOrBlankNode = NamedNode::new_unchecked(url(&top_path)).into();
    let includes = top.list(top.object(&me, &format!("{MF}include")).unwrap());
    let (mut total, mut passed) = (0, 0);
    let mut skipped: Vec<(String, String)> = Vec::new();
    let mut failures: Vec<String> = Vec::new();
    for inc in includes {
        let Term::NamedNode(m) = inc else { continue };
        for t in update_tests(&path_of(m.as_str())) {
            total += 1;
            let text = std::fs::read_to_string(&t.request).unwrap();
            if let Some(why) = update_skip_reason(&t, &text) {
                skipped.push((t.name, why.into()));
                continue;
            }
            let (before, mut want) = match (load_graphs(&t.before), load_graphs(&t.after)) {
                (Ok(b), Ok(a)) => (b, a.into_iter().collect::<Dataset>()),
                (Err(e), _) | (_, Err(e)) => {
                    skipped.push((t.name, e));
                    continue;
                }
            };
            want.canonicalize(oxrdf::graph::CanonicalizationAlgorithm::Unstable);
            let mut ok = true;
            for via_log in [false, true] {
                let dir = tempfile::tempdir().unwrap();
                let store = build_store(dir.path(), &before, via_log);
                let got = Updater::open(&store, None)
                    .map(|u| u.with_base_iri(url(&t.request)))
                    .map_err(|e| e.to_string())
                    .and_then(|mut u| u.apply(&text).map_err(|e| e.to_string()))
                    .and_then(|_| store_dataset(&store));
                if got.as_ref() != Ok(&want) {
                    ok = false;
                    let variant = if via_log { "data in the delta log" } else { "data in the base" };
                    failures.push(format!("{} ({variant}):\n  want {want}\n  got  {got:?}", t.name));
                }
            }
            passed += usize::from(ok);
            report("update", &t.name, if ok { "ok" } else { "FAILED" });
        }
    }
    for (name, why) in &skipped {
        report("update", name, &format!("skipped: {why}"));
    }
    eprintln!("W3C SPARQL 1.1 update evaluation: {total} tests, {passed} pass in both variants");
    for (name, why) in &skipped {
        eprintln!("  skipped {name}: {why}");
    }
    assert!(total > 80, "the manifests were read ({total} tests)");
    check_skips(&skipped, w3c_skips::UPDATE_SKIPS, &mut failures);
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}
