//! `sparql::analytic` and `sparql::subquery` against plain evaluation, over
//! base ⊕ delta: random grouped counts (any key, `COUNT(*)`/`COUNT(?v)`,
//! ordered and cut or not), `COUNT(DISTINCT ?v)` over patterns with bound
//! terms, anti- and semi-joins (`MINUS`, `FILTER NOT EXISTS`, `FILTER
//! EXISTS`, `OPTIONAL … FILTER(!BOUND)`) joined subject to subject, object
//! to subject and object to object, counted or projected, in the default
//! graph, under `GRAPH ?g` and a named graph, with and without the union
//! default graph; `COUNT(*)` of two patterns joined through one variable;
//! `ORDER BY … LIMIT` of one pattern or two joined (strings, integers and
//! IRIs as keys, ascending and descending, after an `OFFSET`); and
//! aggregates over a grouped sub-select. Each answer
//! equals spareval's over the same view, on a store without a log, one
//! whose log inserts, deletes, clears and drops graphs, a corpus of two
//! chunks shown disjoint, and one of three chunks that hold many of the
//! same quads (one `GRAPH ?g` around both sides of a join or anti-join
//! too). The shapes are also checked to be answered by
//! the shortcut, so a shape that silently stops matching fails here.

mod common;

use common::tsv_answer as answer;
use proptest::prelude::*;

use cottas_tui::import::{self, ImportOptions};
use cottas_tui::sparql::run::{run_query, OutputFormat, QueryError, QueryOptions};
use cottas_tui::view::Snapshot;

const P: &str = "PREFIX x: <http://x/> ";

/// Quads over 300 subjects and six predicates; objects are subjects (so
/// joins run through objects too) or literals; the default graph and three
/// named graphs; `seed` varies which quads a chunk holds.
fn store(dir: &std::path::Path, seed: usize, with_delta: bool) -> std::path::PathBuf {
    store_with_subjects(dir, seed, with_delta, "http://x/")
}

/// [`store`], its subjects' IRIs starting with `subjects` (objects keep
/// `http://x/`): chunks with other prefixes hold disjoint subject ranges.
fn store_with_subjects(
    dir: &std::path::Path,
    seed: usize,
    with_delta: bool,
    subjects: &str,
) -> std::path::PathBuf {
    let mut text = String::new();
    for i in (seed..2400 + seed).step_by(1 + seed) {
        let s = format!("<{subjects}s{}>", i / 8);
        let p = format!("<http://x/p{}>", (i * 7 / 3) % 6);
        // p5's objects are integers (negative ones too) for SUM and AVG; one
        // chunk has a string among them, so the shortcut must decline there.
        let o = if (i * 7 / 3) % 6 == 5 && !(seed == 1 && i % 97 == 0) {
            format!("\"{}\"^^<http://www.w3.org/2001/XMLSchema#integer>", (i % 40) as i64 - 7)
        } else if i % 3 == 0 {
            format!("<http://x/s{}>", (i * 13) % 320)
        } else {
            format!("\"v{}\"", i % 40)
        };
        let g = match i % 4 {
            0 => String::new(),
            k => format!(" <http://x/g{k}>"),
        };
        text.push_str(&format!("{s} {p} {o}{g} .\n"));
    }
    std::fs::create_dir_all(dir).unwrap();
    let nq = dir.join("in.nq");
    std::fs::write(&nq, text).unwrap();
    let out = dir.join("chunk");
    let mut o = ImportOptions::new(vec![nq], out.clone());
    o.base.row_group_size = 128;
    import::import(&o, |_| {}).unwrap();
    if with_delta {
        for update in [
            // New subjects, a quad the base holds again, a delete of one it
            // lacks, base quads deleted.
            "INSERT DATA { <http://x/s1> <http://x/p1> <http://x/new> . <http://x/new> <http://x/p2> \"v3\" . \
             GRAPH <http://x/g1> { <http://x/s2> <http://x/p0> <http://x/s3> . <http://x/new> <http://x/p4> <http://x/s1> } }",
            "DELETE DATA { <http://x/none> <http://x/p1> \"v1\" }",
            "DELETE WHERE { <http://x/s5> ?p ?o }",
            "DELETE WHERE { GRAPH <http://x/g1> { ?s <http://x/p3> ?o } }",
            // A graph cleared then given a quad again, one dropped.
            "CLEAR GRAPH <http://x/g2> ; INSERT DATA { GRAPH <http://x/g2> { <http://x/s7> <http://x/p1> <http://x/s8> } }",
            "DROP GRAPH <http://x/g3>",
            "INSERT DATA { <http://x/s9> <http://x/p5> \"gone\" } ; DELETE DATA { <http://x/s9> <http://x/p5> \"gone\" }",
        ] {
            common::update(&out, update);
        }
    }
    out
}

/// Asserts the shortcut's answer is evaluation's; returns whether the
/// shortcut gave it.
fn same(snaps: &[&Snapshot], q: &str, union: bool) -> bool {
    let (fast, by_shortcut) = answer(snaps, q, union, false);
    let (plain, _) = answer(snaps, q, union, true);
    assert_eq!(fast, plain, "{q} (union default graph: {union})");
    by_shortcut
}

/// A term in one position: a variable, or a bound IRI or literal drawn
/// from the data (some absent from it).
fn term(kind: u8, n: u16, var: &str) -> String {
    match kind % 4 {
        0 | 1 => format!("?{var}"),
        2 => format!("x:s{}", n % 330),
        _ => format!("\"v{}\"", n % 44),
    }
}

/// A graph clause around `body`: none, `GRAPH ?g`, or a named graph.
fn in_graph(kind: u8, body: &str) -> String {
    match kind % 4 {
        0 | 1 => body.to_string(),
        2 => format!("GRAPH ?g {{ {body} }}"),
        _ => format!("GRAPH x:g{} {{ {body} }}", 1 + kind % 3),
    }
}

type Draw = (u8, u16, u8, u8, u8);

fn draw() -> impl Strategy<Value = Draw> {
    (any::<u8>(), any::<u16>(), any::<u8>(), any::<u8>(), any::<u8>())
}

/// `SELECT ?k (COUNT(*) AS ?n) { s p o } GROUP BY ?k`, `?k` one of the
/// pattern's variables, sometimes ordered by the count and cut.
fn grouped((k, n, pk, gk, form): Draw) -> Option<String> {
    let (s, o) = (term(k, n, "s"), term(k / 4, n / 7, "o"));
    let p = if pk % 3 == 0 { "?p".to_string() } else { format!("x:p{}", pk % 7) };
    let body = in_graph(gk, &format!("{s} {p} {o}"));
    let vars: Vec<&str> =
        [&s, &p, &o].into_iter().filter(|t| t.starts_with('?')).map(String::as_str).collect();
    let vars: Vec<&str> = vars.into_iter().chain(body.contains("?g").then_some("?g")).collect();
    let key = vars.get(form as usize % vars.len().max(1))?;
    let agg = if form % 2 == 0 { "COUNT(*)".to_string() } else { format!("COUNT({})", vars[0]) };
    let tail = if form % 3 == 0 { format!(" ORDER BY DESC(?n) {key} LIMIT 4") } else { String::new() };
    Some(format!("{P}SELECT {key} ({agg} AS ?n) {{ {body} }} GROUP BY {key}{tail}"))
}

/// `SELECT (COUNT(DISTINCT ?v) AS ?n) { s p o }`.
fn distinct_count((k, n, pk, gk, form): Draw) -> Option<String> {
    let (s, o) = (term(k, n, "s"), term(k / 4, n / 7, "o"));
    let p = if pk % 3 == 0 { "?p".to_string() } else { format!("x:p{}", pk % 7) };
    let body = in_graph(gk, &format!("{s} {p} {o}"));
    let vars: Vec<&str> =
        [&s, &p, &o].into_iter().filter(|t| t.starts_with('?')).map(String::as_str).collect();
    let v = vars.get(form as usize % vars.len().max(1))?;
    Some(format!("{P}SELECT (COUNT(DISTINCT {v}) AS ?n) {{ {body} }}"))
}

/// A side sharing `?x`: at the subject or the object, the predicate bound,
/// the other end a variable of its own or bound.
fn side(k: u8, n: u16, own: &str) -> String {
    let p = format!("x:p{}", k % 7);
    let other = if k.is_multiple_of(5) { format!("\"v{}\"", n % 44) } else { format!("?{own}") };
    if (k / 7).is_multiple_of(2) {
        format!("?x {p} {other}")
    } else {
        format!("{other} {p} ?x")
    }
}

/// One pattern kept or dropped by another through `?x`, counted or listed.
fn filtered((lk, n, rk, gk, form): Draw) -> Option<String> {
    // One `GRAPH ?g` around both sides (rows meet within a graph), or a
    // graph clause on each side.
    let around = gk % 4 == 2 && n % 2 == 0;
    let (left, right) = if around {
        (side(lk, n, "y"), side(rk, n / 3, "z"))
    } else {
        (in_graph(gk, &side(lk, n, "y")), in_graph(gk / 4, &side(rk, n / 3, "z")))
    };
    // Each side under its own `GRAPH ?g` would share `?g` in a way `MINUS`
    // and `EXISTS` read differently: the right one is `?h`.
    let right = right.replace("GRAPH ?g", "GRAPH ?h");
    let body = match form % 4 {
        0 => format!("{left} MINUS {{ {right} }}"),
        1 => format!("{left} FILTER NOT EXISTS {{ {right} }}"),
        2 => format!("{left} FILTER EXISTS {{ {right} }}"),
        _ => {
            let bound = if right.contains("?z") {
                "?z"
            } else if right.contains("?h") {
                "?h"
            } else {
                return None;
            };
            format!("{left} OPTIONAL {{ {right} }} FILTER(!BOUND({bound}))")
        }
    };
    let body = if around { format!("GRAPH ?g {{ {body} }}") } else { body };
    let head =
        ["(COUNT(*) AS ?n)", "?x", "DISTINCT ?x", "DISTINCT (COUNT(*) AS ?n)"][(form / 4) as usize % 4];
    Some(format!("{P}SELECT {head} {{ {body} }}"))
}

/// `SELECT (COUNT(*) AS ?n) { A . B }` through `?x`, both sides in the
/// default graph, one named graph, or one `GRAPH ?g` (rows meet within a
/// graph).
fn join_count((lk, n, rk, gk, _): Draw) -> Option<String> {
    let body = format!("{} . {}", side(lk, n, "y"), side(rk, n / 3, "z"));
    let body = match gk % 3 {
        2 => format!("GRAPH x:g{} {{ {body} }}", 1 + (gk / 3) % 3),
        1 if (gk / 3) % 2 == 0 => format!("GRAPH ?g {{ {body} }}"),
        _ => body,
    };
    Some(format!("{P}SELECT (COUNT(*) AS ?n) {{ {body} }}"))
}

/// `SELECT DISTINCT … { A . B }` through `?x`: a semi-join when every
/// projected variable is one side's.
fn distinct_join((lk, n, rk, gk, form): Draw) -> Option<String> {
    let body = format!("{} . {}", side(lk, n, "y"), side(rk, n / 3, "z"));
    let body = if gk % 3 == 2 { format!("GRAPH x:g{} {{ {body} }}", 1 + (gk / 3) % 3) } else { body };
    let head = ["?y", "?x", "?x ?y", "?z", "?y ?z"][form as usize % 5];
    Some(format!("{P}SELECT DISTINCT {head} {{ {body} }}"))
}

/// `SUM`, `AVG` and `COUNT` of p5's integers per key, the key in the same
/// pattern or in another joined through `?x`.
fn grouped_sums((k, n, pk, gk, form): Draw) -> Option<String> {
    let aggs = ["(SUM(?v) AS ?s)", "(AVG(?v) AS ?a) (SUM(?v) AS ?s)", "(COUNT(*) AS ?n) (AVG(?v) AS ?a)"]
        [form as usize % 3];
    let (body, key) = match k % 4 {
        0 => ("?k x:p5 ?v".to_string(), "?k"),
        1 => (format!("?x x:p{} ?k . ?x x:p5 ?v", pk % 5), "?k"),
        2 => (format!("?k x:p{} ?x . ?x x:p5 ?v", pk % 5), "?k"),
        _ => (format!("?x x:p5 ?v . ?x x:p{} {}", pk % 5, term(k / 4, n, "k")), "?k"),
    };
    let body = if gk % 3 == 2 { format!("GRAPH x:g{} {{ {body} }}", 1 + (gk / 3) % 3) } else { body };
    Some(format!("{P}SELECT {key} {aggs} {{ {body} }} GROUP BY {key}"))
}

/// `SELECT … { A } ORDER BY … LIMIT n` or over `A . B` through `?x`: every
/// projected variable is a key (so rows that tie are the same row and the
/// order compared is total), each ascending or descending, sometimes after
/// an `OFFSET`, and one draw in seven without a `LIMIT` (every row sorted).
/// p5's integers, strings, and IRIs meet in the keys.
fn top_k((lk, n, rk, gk, form): Draw) -> Option<String> {
    let body = if form % 3 == 0 {
        in_graph(gk, &side(lk, n, "y"))
    } else {
        let body = format!("{} . {}", side(lk, n, "y"), side(rk, n / 3, "z"));
        if gk % 3 == 2 {
            format!("GRAPH x:g{} {{ {body} }}", 1 + (gk / 3) % 3)
        } else {
            body
        }
    };
    let present: Vec<&str> = ["?x", "?y", "?z", "?g"].into_iter().filter(|v| body.contains(v)).collect();
    let k = 1 + (form as usize / 3) % present.len();
    let mut vars: Vec<&str> =
        present.iter().copied().cycle().skip(lk as usize % present.len()).take(k).collect();
    let keys: Vec<String> = vars
        .iter()
        .enumerate()
        .map(|(i, v)| if (rk >> i) & 1 == 1 { format!("DESC({v})") } else { v.to_string() })
        .collect();
    if form % 5 == 0 {
        vars.reverse();
    }
    // Every row, sorted (no LIMIT), one draw in seven.
    let cut = if form % 7 == 6 {
        String::new()
    } else {
        let offset = if form % 4 == 0 { format!(" OFFSET {}", n % 13) } else { String::new() };
        format!(" LIMIT {}{offset}", 1 + n % 9)
    };
    Some(format!("{P}SELECT {} {{ {body} }} ORDER BY {}{cut}", vars.join(" "), keys.join(" ")))
}

/// `SELECT (COUNT(*) AS ?n) { ?x (p|^q|…)+ ?y }` in the default graph, one
/// `GRAPH ?g` or a named graph: predicates, inverses and alternatives.
fn path_count((k, _, pk, gk, form): Draw) -> Option<String> {
    let step = |k: u8| {
        let p = format!("x:p{}", k % 5);
        if k % 7 == 3 {
            format!("^{p}")
        } else {
            p
        }
    };
    let path = match form % 3 {
        0 => step(k),
        1 => format!("{}|{}", step(k), step(pk)),
        _ => format!("{}|{}|{}", step(k), step(pk), step(k / 5 + 1)),
    };
    let body = in_graph(gk, &format!("?x ({path})+ ?y"));
    Some(format!("{P}SELECT (COUNT(*) AS ?n) {{ {body} }}"))
}

/// Aggregates over a grouped sub-select.
fn over_groups((k, _, pk, _, form): Draw) -> Option<String> {
    let p = format!("x:p{}", pk % 7);
    let inner = if k % 2 == 0 { format!("?s {p} ?o") } else { format!("?o {p} ?s") };
    let outer = match form % 3 {
        0 => "SELECT (MAX(?n) AS ?most) (MIN(?n) AS ?least) (SUM(?n) AS ?all)".to_string(),
        1 => "SELECT ?s ?n".to_string(),
        _ => "SELECT (COUNT(*) AS ?groups)".to_string(),
    };
    let filter = if form % 3 == 1 { " FILTER(?n > 2)" } else { "" };
    Some(format!("{P}{outer} {{ {{ SELECT ?s (COUNT(*) AS ?n) {{ {inner} }} GROUP BY ?s }}{filter} }}"))
}

fn check_all(snaps: &[&Snapshot], cases: u32) -> [usize; 8] {
    let mut answered = [0usize; 8];
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(cases));
    let counts = std::cell::RefCell::new(&mut answered);
    runner
        .run(&(draw(), any::<bool>()), |(d, union)| {
            let mut c = counts.borrow_mut();
            let shapes = [
                grouped(d),
                distinct_count(d),
                filtered(d),
                join_count(d),
                distinct_join(d),
                grouped_sums(d),
                top_k(d),
                path_count(d),
            ];
            for (i, q) in shapes.into_iter().enumerate() {
                if let Some(q) = q {
                    if same(snaps, &q, union) {
                        c[i] += 1;
                    }
                }
            }
            if let Some(q) = over_groups(d) {
                same(snaps, &q, union);
            }
            Ok(())
        })
        .unwrap();
    answered
}

#[test]
fn analytic_shapes_equal_plain_evaluation_with_and_without_a_delta() {
    let dir = tempfile::tempdir().unwrap();
    for with_delta in [false, true] {
        let snap = Snapshot::open(&store(&dir.path().join(format!("d{with_delta}")), 0, with_delta), 1 << 20)
            .unwrap();
        assert!(snap.store.base.num_row_groups() > 10);
        let [grouped, distinct, filtered, joined, semi, sums, top, paths] = check_all(&[&snap], 200);
        // Most draws are shapes the shortcut answers; a few are not (a
        // literal key ordered by value, a shared graph variable, a
        // projection over both sides of a join).
        assert!(
            grouped > 100 && distinct > 100 && filtered > 100 && joined > 100 && semi > 80,
            "{grouped} {distinct} {filtered} {joined} {semi}"
        );
        // The log adds p5 quads nowhere, so only a bound key absent from
        // the data declines.
        assert!(sums > 100, "{sums}");
        // Keys that mix p5's integers with strings decline.
        assert!(top > 100, "{top}");
        // Every path drawn is one the traversal takes.
        assert_eq!(paths, 200);
    }
}

/// Over a corpus whose chunks are shown disjoint (subject ranges apart),
/// the analytic operators sum over chunks; joins still meet across chunks
/// through objects.
#[test]
fn analytic_shapes_over_a_corpus_equal_plain_evaluation() {
    let dir = tempfile::tempdir().unwrap();
    let a = Snapshot::open(&store(&dir.path().join("a"), 0, true), 1 << 20).unwrap();
    let b =
        Snapshot::open(&store_with_subjects(&dir.path().join("b"), 1, false, "http://y/"), 1 << 20).unwrap();
    // b's p5 holds a string, so SUM and AVG over it are left to evaluation
    // (and still compared).
    let [grouped, distinct, filtered, joined, semi, _sums, top, paths] = check_all(&[&a, &b], 120);
    assert!(
        grouped > 50
            && distinct > 50
            && filtered > 50
            && joined > 50
            && semi > 40
            && top > 50
            && paths == 120,
        "{grouped} {distinct} {filtered} {joined} {semi} {top} {paths}"
    );
}

/// The benchmark's shapes, written as users write them, are answered by the
/// shortcut (a rewrite that stops matching them would pass the property
/// tests above by evaluating).
/// Over chunks that hold many of the same quads (a corpus is a set: each
/// answers once), the operators still answer, each chunk's copies of an
/// earlier chunk's quads dropped as its rows are read (`IdQuads::drop_copies`).
#[test]
fn analytic_shapes_over_chunks_that_share_quads_equal_plain_evaluation() {
    let dir = tempfile::tempdir().unwrap();
    let a = Snapshot::open(&store(&dir.path().join("a"), 0, true), 1 << 20).unwrap();
    let b = Snapshot::open(&store(&dir.path().join("b"), 1, false), 1 << 20).unwrap();
    let c = Snapshot::open(&store(&dir.path().join("c"), 2, true), 1 << 20).unwrap();
    let [grouped, distinct, filtered, joined, semi, _sums, top, paths] = check_all(&[&a, &b, &c], 100);
    assert!(
        grouped > 40
            && distinct > 40
            && filtered > 40
            && joined > 40
            && semi > 30
            && top > 40
            && paths == 100,
        "{grouped} {distinct} {filtered} {joined} {semi} {top} {paths}"
    );
}

#[test]
fn the_benchmark_shapes_take_the_shortcut() {
    let dir = tempfile::tempdir().unwrap();
    let snap = Snapshot::open(&store(dir.path(), 0, true), 1 << 20).unwrap();
    for q in [
        "SELECT ?c (COUNT(*) AS ?n) { ?s x:p1 ?c } GROUP BY ?c",
        "SELECT (COUNT(DISTINCT ?c) AS ?n) { ?x x:p2 ?c }",
        "SELECT (COUNT(*) AS ?n) { ?x x:p0 ?y MINUS { ?x x:p1 ?a } }",
        "SELECT (COUNT(*) AS ?n) { ?x x:p0 ?y FILTER NOT EXISTS { ?x x:p1 ?a } }",
        "SELECT (COUNT(*) AS ?n) { ?x x:p0 ?y FILTER EXISTS { ?x x:p1 ?a } }",
        "SELECT (COUNT(*) AS ?n) { ?x x:p0 ?y OPTIONAL { ?x x:p1 ?a } FILTER(!BOUND(?a)) }",
        "SELECT ?x { ?x x:p0 ?y MINUS { ?z x:p1 ?x } }",
        "SELECT (COUNT(*) AS ?n) { ?x x:p0 ?y . ?x x:p1 ?z }",
        "SELECT (COUNT(*) AS ?n) { ?x x:p0 ?c . ?t x:p3 ?c }",
        "SELECT DISTINCT ?d { ?x x:p0 ?p . ?p x:p1 ?d }",
        "SELECT ?d (SUM(?a) AS ?sum) (AVG(?a) AS ?avg) { ?x x:p1 ?d ; x:p5 ?a } GROUP BY ?d",
        "SELECT ?x ?n { ?x x:p0 x:s12 ; x:p1 ?n } ORDER BY DESC(?n) ?x LIMIT 10",
        "SELECT ?x ?a { ?x x:p5 ?a } ORDER BY DESC(?a) ?x LIMIT 5",
        "SELECT ?x { ?x x:p0 x:s12 } ORDER BY ?x",
        "SELECT (COUNT(*) AS ?n) { GRAPH ?g { ?x x:p0 ?y FILTER NOT EXISTS { ?x x:p1 ?a } } }",
        "SELECT (COUNT(*) AS ?n) { GRAPH ?g { ?x x:p0 ?y MINUS { ?x x:p1 ?a } } }",
        "SELECT (COUNT(*) AS ?n) { GRAPH ?g { ?x x:p0 ?a . ?a x:p1 ?name } }",
        "SELECT (COUNT(*) AS ?n) { GRAPH ?g { ?x (x:p0|x:p3)+ ?u } }",
        "SELECT (COUNT(*) AS ?n) { ?x x:p3+ ?u }",
    ] {
        assert!(same(&[&snap], &format!("{P}{q}"), true), "{q} was evaluated, not answered by the shortcut");
    }
}

/// A query whose deadline has passed stops in the shortcut as it does in
/// evaluation: a timeout, not an answer (the endpoint's deadlines and
/// `--timeout` cancel the same token).
#[test]
fn a_cancelled_query_stops_in_the_shortcut() {
    let dir = tempfile::tempdir().unwrap();
    let snap = Snapshot::open(&store(dir.path(), 0, false), 1 << 20).unwrap();
    let token = spareval::CancellationToken::new();
    token.cancel();
    for q in [
        "SELECT ?c (COUNT(*) AS ?n) { ?s x:p1 ?c } GROUP BY ?c",
        "SELECT (COUNT(*) AS ?n) { ?x x:p0 ?y MINUS { ?x x:p1 ?a } }",
        "SELECT (COUNT(*) AS ?n) { ?x x:p0 ?c . ?t x:p3 ?c }",
        "SELECT ?x ?n { ?x x:p0 ?y ; x:p1 ?n } ORDER BY DESC(?n) ?x LIMIT 10",
        "SELECT ?x { ?x x:p0 ?y } ORDER BY ?x",
    ] {
        let opts = QueryOptions {
            format: Some(OutputFormat::Tsv),
            cancel: Some(token.clone()),
            timeout: Some(std::time::Duration::from_secs(1)),
            ..QueryOptions::default()
        };
        let err = run_query(&[snap.view()], &format!("{P}{q}"), &opts, &mut Vec::new()).unwrap_err();
        assert!(matches!(err, QueryError::Timeout(_)), "{q}: {err}");
    }
}
