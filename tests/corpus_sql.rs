//! `corpus sql`: a differential suite. Every query runs three ways over
//! the same corpus: our evaluator (`cottas-tui query ROOT`), DuckDB and
//! Spark (local mode) running the translated statement over the exported
//! views. The answers must be equal: as multisets, or as lists when the
//! query orders its results (every ORDER BY here is total).
//!
//! The corpus: LUBM-like data split in three chunks, one of ours with
//! pending updates (deletes, a delete-then-reinsert, inserted literals with
//! languages, escapes, explicit xsd:string and numbers, a quad the pycottas
//! chunk also holds), one made by pycottas from triples (3 columns, all in
//! the default graph) and one compacted twice with a pending delete.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{bin, run_ok, update};

const UB: &str = "http://swat.cse.lehigh.edu/onto/univ-bench.owl#";

/// (name, query, ordered): `ordered` compares the rows as lists.
const QUERIES: &[(&str, &str, bool)] = &[
    ("class in the default graph", "SELECT ?s { ?s a ub:FullProfessor }", false),
    ("class in any named graph", "SELECT ?s ?g { GRAPH ?g { ?s a ub:FullProfessor } }", false),
    ("count of the default graph", "SELECT (COUNT(*) AS ?n) { ?s ?p ?o }", false),
    ("count per graph", "SELECT ?g (COUNT(*) AS ?n) { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g", false),
    ("a bound subject", "SELECT ?p ?o { <http://www.Department0.University0.edu/FullProfessor0> ?p ?o }", false),
    ("a bound subject in a graph", "SELECT ?p ?o { GRAPH ?g { <http://www.Department0.University0.edu/FullProfessor0> ?p ?o } }", false),
    ("join in a graph", "SELECT ?x ?n { GRAPH ?g { ?x ub:advisor ?a . ?a ub:name ?n } }", false),
    ("join in the default graph", "SELECT ?x ?n { ?x ub:advisor ?a . ?a ub:name ?n }", false),
    ("optional", "SELECT ?x ?e { GRAPH ?g { ?x a ub:GraduateStudent OPTIONAL { ?x ub:emailAddress ?e } } }", false),
    ("optional with a filter inside", "SELECT ?x ?a { ?x a ub:FullProfessor OPTIONAL { ?x ub:age ?a FILTER(?a > 60) } }", false),
    ("nested optional", "SELECT ?x ?d ?h { ?x a ub:Lecturer OPTIONAL { ?x ub:worksFor ?d OPTIONAL { ?h ub:headOf ?d } } }", false),
    ("not bound after optional", "SELECT ?x { ?x a ub:GraduateStudent OPTIONAL { ?x ub:emailAddress ?e } FILTER(!BOUND(?e)) }", false),
    ("union", "SELECT ?x { { ?x a ub:Lecturer } UNION { ?x a ub:FullProfessor } }", false),
    ("union of different variables", "SELECT ?x ?y { { ?x a ub:Lecturer } UNION { ?y a ub:Department } }", false),
    ("union of default and named", "SELECT (COUNT(*) AS ?n) { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } }", false),
    ("numeric filter", "SELECT ?x ?a { ?x ub:age ?a FILTER(?a > 50) }", false),
    ("numeric range", "SELECT ?x { GRAPH ?g { ?x ub:age ?a FILTER(?a >= 30 && ?a < 40) } }", false),
    ("arithmetic", "SELECT ?x { ?x ub:age ?a FILTER(?a + 10 > 70) }", false),
    ("in a list", "SELECT ?x ?a { ?x ub:age ?a FILTER(?a IN (30, 40, 50)) }", false),
    ("number in a pattern", "SELECT ?x { ?x ub:age 45 }", false),
    ("string in a pattern", "SELECT ?x { GRAPH ?g { ?x ub:name \"FullProfessor0\" } }", false),
    ("string equality", "SELECT ?x { ?x ub:name ?n FILTER(?n = \"Lecturer1\") }", false),
    ("string inequality counted", "SELECT (COUNT(*) AS ?c) { ?x ub:name ?n FILTER(?n != \"Lecturer1\") }", false),
    ("strstarts", "SELECT ?n { ?x ub:name ?n FILTER(STRSTARTS(?n, \"Full\")) }", false),
    ("contains", "SELECT ?e { GRAPH ?g { ?x ub:emailAddress ?e FILTER(CONTAINS(?e, \"Department1.\")) } }", false),
    ("strends", "SELECT ?n { ?x ub:name ?n FILTER(STRENDS(?n, \"7\")) }", false),
    ("regex", "SELECT ?n { ?x ub:name ?n FILTER(REGEX(?n, \"^Assoc.*[13]$\")) }", false),
    ("regex ignoring case", "SELECT ?n { ?x ub:name ?n FILTER(REGEX(?n, \"^lecturer\", \"i\")) }", false),
    ("strlen and ucase", "SELECT ?n { ?x ub:name ?n FILTER(STRLEN(?n) > 19 || UCASE(?n) = \"LECTURER0\") }", false),
    ("lcase of str of an iri", "SELECT ?x { ?x a ub:Lecturer FILTER(CONTAINS(LCASE(STR(?x)), \"department0.\")) }", false),
    ("escapes are unescaped", "SELECT ?v { ?s <http://ex.org/note> ?v FILTER(STRLEN(?v) = 11) }", false),
    ("language", "SELECT ?v { ?s <http://ex.org/label> ?v FILTER(LANG(?v) = \"en\") }", false),
    ("langmatches", "SELECT ?v { ?s <http://ex.org/label> ?v FILTER(LANGMATCHES(LANG(?v), \"fr\")) }", false),
    ("explicit xsd:string matches a plain string", "SELECT ?s { ?s <http://ex.org/label> \"plain\" }", false),
    ("datatype", "SELECT (COUNT(*) AS ?n) { ?s ?p ?o FILTER(DATATYPE(?o) = xsd:integer) }", false),
    ("term tests", "SELECT (COUNT(*) AS ?i) { ?s ?p ?o FILTER(isIRI(?o) && !isLiteral(?o) && !isBlank(?o)) }", false),
    ("isNumeric", "SELECT ?o { ?s ?p ?o FILTER(isNumeric(?o) && ?o < 32) }", false),
    ("sameTerm", "SELECT ?x { ?x ?p ?o FILTER(sameTerm(?o, ub:Lecturer)) }", false),
    ("distinct predicates", "SELECT DISTINCT ?p { GRAPH ?g { ?s ?p ?o } }", false),
    ("distinct classes", "SELECT DISTINCT ?c { { ?x a ?c } UNION { GRAPH ?g { ?x a ?c } } }", false),
    ("count distinct", "SELECT (COUNT(DISTINCT ?x) AS ?n) { GRAPH ?g { ?x ub:takesCourse ?c } }", false),
    ("count of a variable", "SELECT (COUNT(?e) AS ?n) (COUNT(*) AS ?all) { ?x a ub:GraduateStudent OPTIONAL { ?x ub:emailAddress ?e } }", false),
    ("group with having", "SELECT ?c (COUNT(*) AS ?n) { GRAPH ?g { ?x a ?c } } GROUP BY ?c HAVING (COUNT(*) > 20)", false),
    ("order by a number, then the subject", "SELECT ?x ?a { ?x ub:age ?a } ORDER BY ?a ?x LIMIT 7", true),
    ("order descending with offset", "SELECT ?x { GRAPH ?g { ?x a ub:AssociateProfessor } } ORDER BY DESC(?x) LIMIT 5 OFFSET 3", true),
    ("order by a count", "SELECT ?x (COUNT(*) AS ?n) { GRAPH ?g { ?x ub:takesCourse ?c } } GROUP BY ?x ORDER BY DESC(?n) ?x LIMIT 6", true),
    ("distinct ordered", "SELECT DISTINCT ?c { GRAPH ?g { ?x a ?c } } ORDER BY ?c", true),
    ("sub-select", "SELECT ?x ?n { { SELECT ?x (COUNT(*) AS ?n) { ?x ub:takesCourse ?c } GROUP BY ?x } FILTER(?n > 2) }", false),
    ("sub-select with limit", "SELECT ?x { { SELECT ?x { GRAPH ?g { ?x a ub:Course } } ORDER BY ?x LIMIT 3 } }", false),
    ("bind a variable and a constant", "SELECT ?y ?k { ?x a ub:Department BIND(?x AS ?y) BIND(\"k\" AS ?k) }", false),
    ("a named graph", "SELECT (COUNT(*) AS ?n) { GRAPH <http://www.University0.edu/graph> { ?s ?p ?o } }", false),
    ("graph variable across patterns", "SELECT ?g ?x { GRAPH ?g { ?x ub:headOf ?d . ?d ub:subOrganizationOf ?u } }", false),
    ("graph variable filtered", "SELECT (COUNT(*) AS ?n) { GRAPH ?g { ?s ?p ?o } FILTER(?g != <http://www.University0.edu/graph>) }", false),
    ("a quad two chunks hold is seen twice", "SELECT ?s ?o { ?s <http://ex.org/shared> ?o }", false),
    ("ask true", "ASK { ?x ub:age 45 }", false),
    ("ask false", "ASK { ?x ub:age 4500 }", false),
];

/// Constructs outside the subset, and the words the refusal must name.
const REFUSED: &[(&str, &str)] = &[
    ("SELECT * { ?s ?p ?o MINUS { ?s a ?c } }", "MINUS"),
    ("SELECT * { ?s ub:advisor+ ?o }", "property path"),
    ("SELECT * { VALUES ?x { 1 2 } }", "VALUES"),
    ("SELECT * { SERVICE <http://example.org/sparql> { ?s ?p ?o } }", "SERVICE"),
    ("CONSTRUCT { ?s ?p ?o } { ?s ?p ?o }", "CONSTRUCT"),
    ("SELECT ?y { ?x ub:age ?a BIND(?a + 1 AS ?y) }", "BIND of a computed expression"),
    ("SELECT * { ?s ?p ?o FILTER EXISTS { ?s a ?c } }", "EXISTS"),
    ("SELECT (SUM(?a) AS ?t) { ?x ub:age ?a }", "aggregate"),
    ("SELECT * FROM <http://example.org/g> { ?s ?p ?o }", "FROM"),
    ("SELECT * { ?s ?p ?o FILTER(?o) }", "effective boolean value"),
];

fn prefixed(q: &str) -> String {
    format!("PREFIX ub: <{UB}> PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>\n{q}")
}

const TRIPLES_OF: &str = r#"
import pycottas, sys
lines = [l.split(" ") for l in open(sys.argv[1]) if l.strip()]
with open(sys.argv[2], "w") as out:
    for t in lines:
        out.write(" ".join(t[:3]) + " .\n")
pycottas.rdf2cottas(sys.argv[2], sys.argv[3], index="spo")
"#;

/// Builds the corpus and its export under `dir`; the venv's Python.
fn corpus(dir: &Path) -> Option<PathBuf> {
    let python = common::venv_python("pycottas, duckdb, pyoxigraph")?;
    let all = dir.join("lubm.nq");
    run_ok(Command::new(&python).arg(common::repo().join("benches/gen_lubm.py")).arg("6000").arg(&all));
    let text = std::fs::read_to_string(&all).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let parts: Vec<String> = lines.chunks(2000).map(|c| c.join("\n") + "\n").collect();
    let corpus = dir.join("corpus");
    for (i, name) in ["alpha", "twice"].iter().enumerate() {
        let nq = dir.join(format!("{name}.nq"));
        std::fs::write(&nq, &parts[if i == 0 { 0 } else { 2 }]).unwrap();
        run_ok(bin().arg("import").arg(&nq).arg("--out").arg(corpus.join(name)));
    }
    let py_nq = dir.join("py.nq");
    // Plus a quad the alpha chunk also holds (after its updates).
    let shared = "<http://ex.org/s> <http://ex.org/shared> \"both\" <http://ex.org/g> .\n";
    std::fs::write(&py_nq, format!("{}{shared}", parts[1])).unwrap();
    std::fs::create_dir_all(corpus.join("py/v1")).unwrap();
    run_ok(
        Command::new(&python)
            .args(["-c", TRIPLES_OF])
            .arg(&py_nq)
            .arg(dir.join("py.nt"))
            .arg(corpus.join("py/v1/data.cottas")),
    );

    let alpha = corpus.join("alpha");
    let prof0 = "<http://www.Department0.University0.edu/FullProfessor0>";
    let g0 = "<http://www.University0.edu/graph>";
    update(&alpha, &format!("DELETE WHERE {{ GRAPH {g0} {{ {prof0} <{UB}age> ?a }} }}"));
    update(&alpha, &format!("DELETE WHERE {{ GRAPH {g0} {{ {prof0} <{UB}telephone> ?t }} }}"));
    let name = format!("GRAPH {g0} {{ {prof0} <{UB}name> \"FullProfessor0\" }}");
    update(&alpha, &format!("DELETE DATA {{ {name} }}"));
    update(&alpha, &format!("INSERT DATA {{ {name} }}"));
    update(
        &alpha,
        "INSERT DATA { <http://ex.org/a> <http://ex.org/note> \"line1\\nline2\" . \
         <http://ex.org/b> <http://ex.org/note> \"tab\\there\\\\x\" . \
         <http://ex.org/a> <http://ex.org/label> \"colour\"@en , \"couleur\"@fr , \"colour\"@en-GB , \
           \"plain\"^^<http://www.w3.org/2001/XMLSchema#string> . \
         <http://ex.org/c> <http://swat.cse.lehigh.edu/onto/univ-bench.owl#age> 31 , \"29.5\"^^<http://www.w3.org/2001/XMLSchema#decimal> . \
         <http://ex.org/s> <http://ex.org/shared> \"both\" }",
    );

    let twice = corpus.join("twice");
    for i in 0..2 {
        update(
            &twice,
            &format!(
                "INSERT DATA {{ GRAPH <http://ex.org/g{i}> {{ <http://ex.org/c{i}> a <{UB}Lecturer> }} }}"
            ),
        );
        run_ok(bin().arg("compact").arg(&twice).arg("-q"));
    }
    update(&twice, &format!("DELETE WHERE {{ GRAPH ?g {{ ?x <{UB}emailAddress> ?e }} }}"));
    Some(python)
}

/// One case for the engines' script.
fn case(corpus: &Path, name: &str, query: &str, ordered: bool) -> serde_json::Value {
    let query = prefixed(query);
    let ours = run_ok(bin().arg("query").arg(corpus).args(["--format", "json", "-e", &query])).stdout;
    let sql = |dialect: &str| {
        let out =
            run_ok(bin().args(["corpus", "sql"]).arg(corpus).args(["--dialect", dialect, "-e", &query]));
        String::from_utf8(out.stdout).unwrap()
    };
    serde_json::json!({
        "name": name,
        "ordered": ordered,
        "ours": serde_json::from_slice::<serde_json::Value>(&ours).unwrap(),
        "duckdb": sql("duckdb"),
        "spark": sql("spark"),
    })
}

/// Runs every case on one engine; prints `ok N` or the differences.
const ENGINE: &str = r#"
import io, json, sys
import pyoxigraph as ox
engine, views, cases_path = sys.argv[1:4]
cases = json.load(open(cases_path))
def statements(text):
    for part in text.split(";\n"):
        t = "\n".join(l for l in part.splitlines() if not l.startswith("--")).strip()
        if t:
            yield t
if engine == "duckdb":
    import duckdb
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    for s in statements(open(views).read()):
        con.execute(s)
    def run_ok(sql):
        cur = con.execute(sql)
        return [d[0] for d in cur.description], cur.fetchall()
else:
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[1]").appName("cottas-sql-test")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "1")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    for s in statements(open(views).read()):
        spark.sql(s)
    def run_ok(sql):
        df = spark.sql(sql)
        return df.columns, [tuple(r) for r in df.collect()]
cache = {}
def parse(token):
    if token is None:
        return None
    if token not in cache:
        doc = f"<urn:s> <urn:p> {token} .\n".encode()
        cache[token] = str(next(iter(ox.parse(io.BytesIO(doc), "application/n-triples"))).object)
    return cache[token]
def term(b):
    if b["type"] == "uri":
        return str(ox.NamedNode(b["value"]))
    if b["type"] == "bnode":
        return str(ox.BlankNode(b["value"]))
    if "xml:lang" in b:
        return str(ox.Literal(b["value"], language=b["xml:lang"]))
    return str(ox.Literal(b["value"], datatype=ox.NamedNode(b.get("datatype", "http://www.w3.org/2001/XMLSchema#string"))))
failures = []
for c in cases:
    ours = c["ours"]
    try:
        cols, rows = run_ok(c[engine])
    except Exception as e:
        failures.append(f"{c['name']}: {engine} failed: {e}")
        continue
    if "boolean" in ours:
        theirs = bool(rows[0][0])
        if theirs != ours["boolean"]:
            failures.append(f"{c['name']}: ours {ours['boolean']}, {engine} {theirs}")
        continue
    vars = ours["head"]["vars"]
    mine = [tuple(term(b[v]) if v in b else None for v in vars) for b in ours["results"]["bindings"]]
    index = {name: i for i, name in enumerate(cols)}
    got = [tuple(parse(r[index[v]]) for v in vars) for r in rows]
    if not c["ordered"]:
        mine, got = sorted(mine, key=repr), sorted(got, key=repr)
    if mine != got:
        failures.append(f"{c['name']}: {len(mine)} rows ours, {len(got)} {engine}; "
                        f"only ours {[r for r in mine if r not in got][:3]}, only {engine} {[r for r in got if r not in mine][:3]}")
if failures:
    print("\n".join(failures))
    sys.exit(1)
print("ok", len(cases))
"#;

fn engine(python: &Path, engine: &str, export: &Path, cases: &Path) {
    let views = export.join(if engine == "duckdb" { "duckdb.sql" } else { "spark.sql" });
    let out = Command::new(python).args(["-c", ENGINE, engine]).arg(views).arg(cases).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{engine}:\n{said}\n{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(said.trim(), format!("ok {}", QUERIES.len()));
}

#[test]
fn every_query_answers_the_same_on_our_evaluator_duckdb_and_spark() {
    assert!(QUERIES.len() >= 40);
    let dir = tempfile::tempdir().unwrap();
    let Some(python) = corpus(dir.path()) else { return };
    let corpus = dir.path().join("corpus");
    let export = dir.path().join("export");
    run_ok(bin().args(["corpus", "export"]).arg(&corpus).arg("--out").arg(&export));
    let cases: Vec<serde_json::Value> = QUERIES.iter().map(|(n, q, o)| case(&corpus, n, q, *o)).collect();
    // A suite whose answers are all empty could agree by accident.
    let empty =
        cases.iter().filter(|c| c["ours"]["results"]["bindings"].as_array().is_some_and(|b| b.is_empty()));
    assert!(empty.count() <= 2, "too many queries answer nothing");
    let path = dir.path().join("cases.json");
    std::fs::write(&path, serde_json::to_vec(&cases).unwrap()).unwrap();
    engine(&python, "duckdb", &export, &path);
    if common::venv_python("pyspark").is_none() {
        return;
    }
    if !Command::new("java").arg("-version").output().is_ok_and(|o| o.status.success()) {
        return common::missing("java (openjdk-17-jre-headless) is not installed; Spark needs it");
    }
    engine(&python, "spark", &export, &path);
}

#[test]
fn constructs_outside_the_subset_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    std::fs::create_dir_all(&corpus).unwrap();
    common::sample_store(&corpus);
    for (query, named) in REFUSED {
        let out = bin().args(["corpus", "sql"]).arg(&corpus).args(["-e", &prefixed(query)]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{query}: {err}");
        assert!(err.contains(named), "{query}: {err}");
        assert!(out.stdout.is_empty(), "{query}: no SQL for a refused query");
    }
    let bad = bin().args(["corpus", "sql"]).arg(&corpus).args(["-e", "SELECT * {"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("1:"), "a syntax error says where");
}
