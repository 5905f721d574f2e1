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
    ("a bound subject", "SELECT ?p ?o { <http://www.Department1.University0.edu/FullProfessor4> ?p ?o }", false),
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
    ("lcase of str of an iri", "SELECT ?x { ?x a ub:Lecturer FILTER(CONTAINS(LCASE(STR(?x)), \"department1.\")) }", false),
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
    ("a quad two chunks hold is seen once", "SELECT ?s ?o { ?s <http://ex.org/shared> ?o }", false),
    // MINUS
    ("minus by subject", "SELECT ?x { ?x a ub:GraduateStudent MINUS { ?x ub:emailAddress ?e } }", false),
    ("minus in graphs", "SELECT ?x ?g { GRAPH ?g { ?x a ub:GraduateStudent MINUS { ?x ub:emailAddress ?a } } }", false),
    ("minus without a shared variable removes nothing", "SELECT (COUNT(*) AS ?n) { GRAPH ?g { ?x a ub:Lecturer MINUS { ?y a ub:Course } } }", false),
    ("minus of a filtered side", "SELECT ?x { GRAPH ?g { ?x a ub:FullProfessor MINUS { ?x ub:age ?a FILTER(?a > 50) } } }", false),
    ("minus counted per graph", "SELECT ?g (COUNT(*) AS ?n) { GRAPH ?g { ?x a ub:GraduateStudent MINUS { ?x ub:emailAddress ?e } } } GROUP BY ?g", false),
    ("minus through two variables", "SELECT ?x ?c { GRAPH ?g { ?x ub:takesCourse ?c MINUS { ?t ub:teacherOf ?c . ?x ub:advisor ?t } } }", false),
    ("minus with an optional variable", "SELECT ?x ?e { GRAPH ?g { ?x a ub:GraduateStudent OPTIONAL { ?x ub:emailAddress ?e } } MINUS { GRAPH ?h { ?x ub:emailAddress ?e } } }", false),
    // EXISTS
    ("filter exists", "SELECT ?x { GRAPH ?g { ?x a ub:UndergraduateStudent FILTER EXISTS { ?x ub:emailAddress ?e } } }", false),
    ("filter not exists", "SELECT ?x { GRAPH ?g { ?x a ub:GraduateStudent FILTER NOT EXISTS { ?x ub:emailAddress ?e } } }", false),
    ("not exists in the default graph", "SELECT ?x { ?x a ub:GraduateStudent FILTER NOT EXISTS { ?x ub:takesCourse <http://www.Department1.University0.edu/GraduateCourse0> } }", false),
    ("exists with a filter inside", "SELECT ?x { GRAPH ?g { ?x a ub:FullProfessor FILTER EXISTS { ?x ub:age ?a FILTER(?a > 50) } } }", false),
    ("not exists counted", "SELECT (COUNT(*) AS ?n) { GRAPH ?g { ?c a ub:Course FILTER NOT EXISTS { ?t ub:teacherOf ?c } } }", false),
    ("exists or a comparison", "SELECT ?x { GRAPH ?g { ?x ub:age ?a FILTER(?a < 35 || EXISTS { ?x ub:headOf ?d }) } }", false),
    ("exists through two patterns", "SELECT ?s { GRAPH ?g { ?s a ub:GraduateStudent FILTER EXISTS { ?s ub:takesCourse ?c . ?t ub:teacherOf ?c } } }", false),
    ("not exists of an unbound variable", "SELECT ?x ?e { GRAPH ?g { ?x a ub:GraduateStudent OPTIONAL { ?x ub:emailAddress ?e } FILTER NOT EXISTS { ?x ub:emailAddress ?e } } }", false),
    // VALUES
    ("values of classes", "SELECT ?x ?c { VALUES ?c { ub:Lecturer ub:FullProfessor } GRAPH ?g { ?x a ?c } }", false),
    ("values of two variables with undef", "SELECT ?x ?n { VALUES (?x ?n) { (<http://www.Department0.University0.edu/FullProfessor0> \"FullProfessor0\") (<http://www.Department0.University0.edu/Lecturer0> UNDEF) } GRAPH ?g { ?x ub:name ?n } }", false),
    ("values with undef joins anything", "SELECT ?x ?a { VALUES ?a { 30 UNDEF } GRAPH ?g { ?x ub:age ?a } }", false),
    ("values alone", "SELECT ?v { VALUES ?v { 1 \"a\" <http://ex.org/z> \"b\"@en } }", false),
    ("values after the pattern", "SELECT ?x ?a { GRAPH ?g { ?x ub:age ?a } VALUES ?a { 30 40 } }", false),
    ("values of predicates counted", "SELECT (COUNT(*) AS ?n) { VALUES ?p { ub:name ub:age } GRAPH ?g { ?s ?p ?o } }", false),
    ("values with no rows", "SELECT ?x { VALUES ?x { } ?x a ub:Lecturer }", false),
    // aggregates
    ("sum", "SELECT (SUM(?a) AS ?t) { GRAPH ?g { ?x ub:age ?a } }", false),
    ("sum per graph", "SELECT ?g (SUM(?a) AS ?t) { GRAPH ?g { ?x ub:age ?a } } GROUP BY ?g", false),
    ("average per class", "SELECT ?c (AVG(?a) AS ?m) { GRAPH ?g { ?x a ?c ; ub:age ?a } } GROUP BY ?c", false),
    ("min and max", "SELECT (MIN(?a) AS ?lo) (MAX(?a) AS ?hi) { GRAPH ?g { ?x ub:age ?a } }", false),
    ("min and max per graph", "SELECT ?g (MIN(?a) AS ?lo) (MAX(?a) AS ?hi) { GRAPH ?g { ?x ub:age ?a } } GROUP BY ?g", false),
    ("max of strings", "SELECT (MAX(?n) AS ?m) { GRAPH ?g { ?x a ub:Lecturer ; ub:name ?n } }", false),
    ("min of iris", "SELECT (MIN(?x) AS ?m) { GRAPH ?g { ?x a ub:Course } }", false),
    ("sample of one value", "SELECT ?x (SAMPLE(?n) AS ?name) { GRAPH ?g { ?x a ub:FullProfessor ; ub:name ?n } } GROUP BY ?x", false),
    ("group_concat of one value", "SELECT ?x (GROUP_CONCAT(?n) AS ?names) { GRAPH ?g { ?x a ub:Lecturer ; ub:name ?n } } GROUP BY ?x", false),
    ("group_concat escapes", "SELECT (GROUP_CONCAT(?v; separator=\"|\") AS ?all) { ?s <http://ex.org/note> ?v FILTER(CONTAINS(?v, \"line\")) }", false),
    ("sum distinct", "SELECT (SUM(DISTINCT ?a) AS ?t) { GRAPH ?g { ?x ub:age ?a } }", false),
    ("count distinct beside a sum", "SELECT ?g (COUNT(DISTINCT ?x) AS ?n) (SUM(?a) AS ?t) { GRAPH ?g { ?x ub:age ?a } } GROUP BY ?g", false),
    ("having on a sum", "SELECT ?g (SUM(?a) AS ?t) { GRAPH ?g { ?x ub:age ?a } } GROUP BY ?g HAVING (SUM(?a) > 1000)", false),
    ("average of an integer and a decimal", "SELECT (AVG(?a) AS ?m) { <http://ex.org/c> ub:age ?a }", false),
    ("sum of an integer and a decimal", "SELECT (SUM(?a) AS ?t) { <http://ex.org/c> ub:age ?a }", false),
    ("max per subject, ordered", "SELECT ?x (MAX(?a) AS ?m) { GRAPH ?g { ?x ub:age ?a } } GROUP BY ?x ORDER BY DESC(?m) ?x LIMIT 5", true),
    ("sum and count of nothing", "SELECT (SUM(?a) AS ?t) (COUNT(*) AS ?n) { ?x ub:age 4500 ; ub:age ?a }", false),
    ("average of nothing", "SELECT (AVG(?a) AS ?m) { ?x ub:age 4500 ; ub:age ?a }", false),
    // IF, COALESCE, BIND of expressions, division
    ("bind arithmetic", "SELECT ?x ?y { GRAPH ?g { ?x ub:age ?a } BIND(?a + 1 AS ?y) }", false),
    ("bind a product with a decimal", "SELECT ?x ?y { GRAPH ?g { ?x ub:age ?a } BIND(?a * 1.5 AS ?y) }", false),
    ("bind a division", "SELECT ?x ?y { GRAPH ?g { ?x ub:age ?a } BIND(?a / 2 AS ?y) }", false),
    ("division by zero is unbound", "SELECT ?x ?y { GRAPH ?g { ?x ub:age ?a } BIND(?a / 0 AS ?y) }", false),
    ("bind a string function", "SELECT ?x ?u { GRAPH ?g { ?x a ub:Lecturer ; ub:name ?n } BIND(UCASE(?n) AS ?u) }", false),
    ("bind a length", "SELECT ?n ?l { ?x ub:name ?n BIND(STRLEN(?n) AS ?l) }", false),
    ("bind a comparison", "SELECT ?x ?old { GRAPH ?g { ?x ub:age ?a } BIND(?a > 50 AS ?old) }", false),
    ("if of strings", "SELECT ?x ?band { GRAPH ?g { ?x ub:age ?a } BIND(IF(?a > 50, \"senior\", \"junior\") AS ?band) }", false),
    ("if of numbers", "SELECT ?x ?v { GRAPH ?g { ?x ub:age ?a } BIND(IF(?a > 50, ?a, 0) AS ?v) }", false),
    ("coalesce after optional", "SELECT ?x ?e { GRAPH ?g { ?x a ub:GraduateStudent OPTIONAL { ?x ub:emailAddress ?m } BIND(COALESCE(?m, \"none\") AS ?e) } }", false),
    ("coalesce of terms", "SELECT ?x ?v { GRAPH ?g { ?x a ub:FullProfessor OPTIONAL { ?x ub:headOf ?d } BIND(COALESCE(?d, ?x) AS ?v) } }", false),
    ("filter on a computed value", "SELECT ?x ?y { GRAPH ?g { ?x ub:age ?a } BIND(?a * 2 AS ?y) FILTER(?y > 100) }", false),
    ("group by a computed key", "SELECT ?band (COUNT(*) AS ?n) { GRAPH ?g { ?x ub:age ?a } BIND(IF(?a >= 50, \"50+\", \"under 50\") AS ?band) } GROUP BY ?band", false),
    ("bind a datatype", "SELECT ?o ?t { <http://ex.org/c> ub:age ?o BIND(DATATYPE(?o) AS ?t) }", false),
    ("division in a filter", "SELECT ?x { GRAPH ?g { ?x ub:age ?a FILTER(?a / 2 > 30) } }", false),
    ("an expression in the projection", "SELECT ?x (?a + 10 AS ?b) { GRAPH ?g { ?x ub:age ?a } }", false),
    ("a negation in the projection", "SELECT ?x (-?a AS ?b) { ?x ub:age ?a }", false),
    // property paths (`+` and `*` on DuckDB only)
    ("one or more through two predicates", "SELECT ?x ?u { GRAPH ?g { ?x (ub:worksFor|ub:subOrganizationOf)+ ?u } }", false),
    ("one or more around a cycle", "SELECT ?x ?y { ?x <http://ex.org/next>+ ?y }", false),
    ("zero or more from a constant", "SELECT ?y { <http://ex.org/a> <http://ex.org/next>* ?y }", false),
    ("zero or more between two variables", "SELECT (COUNT(*) AS ?n) { ?x <http://ex.org/next>* ?y }", false),
    ("inverse one or more", "SELECT ?x { GRAPH ?g { <http://www.University0.edu> ^(ub:worksFor|ub:subOrganizationOf)+ ?x } }", false),
    ("one or more counted", "SELECT (COUNT(*) AS ?n) { GRAPH ?g { ?x ub:subOrganizationOf+ ?y } }", false),
    ("inverse", "SELECT ?s ?t { GRAPH ?g { ?s ^ub:advisor ?t } }", false),
    ("alternative", "SELECT ?x ?y { GRAPH ?g { ?x ub:worksFor|ub:memberOf ?y } }", false),
    ("zero or one from a constant", "SELECT ?y { GRAPH ?g { <http://www.Department0.University0.edu/FullProfessor0> ub:headOf? ?y } }", false),
    ("negated property set", "SELECT (COUNT(*) AS ?n) { GRAPH ?g { ?x !(a|ub:name|ub:age) ?y } }", false),
    ("alternative of inverses", "SELECT (COUNT(*) AS ?n) { GRAPH ?g { ?x (ub:advisor|^ub:advisor) ?y } }", false),
    ("a sequence as a path", "SELECT ?x ?y { ?x ub:advisor/ub:worksFor ?y }", false),
    ("ask true", "ASK { ?x ub:age 45 }", false),
    ("ask false", "ASK { ?x ub:age 4500 }", false),
];

/// The queries Spark is not given: paths of `+` or `*` need a recursive
/// query, which Spark SQL 4.0 lacks; `corpus sql --dialect spark` refuses
/// them naming Spark.
const NOT_ON_SPARK: &[&str] = &[
    "one or more through two predicates",
    "one or more around a cycle",
    "zero or more from a constant",
    "zero or more between two variables",
    "inverse one or more",
    "one or more counted",
];

/// Constructs outside the subset, and the words the refusal must name.
const REFUSED: &[(&str, &str)] = &[
    ("SELECT * { SERVICE <http://example.org/sparql> { ?s ?p ?o } }", "SERVICE"),
    ("CONSTRUCT { ?s ?p ?o } { ?s ?p ?o }", "CONSTRUCT"),
    ("SELECT ?x { ?x ub:name ?n FILTER(CONCAT(?n, \"x\") = \"y\") }", "the function"),
    ("SELECT (COUNT(DISTINCT *) AS ?n) { ?s ?p ?o }", "COUNT(DISTINCT *)"),
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
         <http://ex.org/a> <http://ex.org/next> <http://ex.org/b> . <http://ex.org/b> <http://ex.org/next> <http://ex.org/c> . \
         <http://ex.org/c> <http://ex.org/next> <http://ex.org/a> . \
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
        let out = bin()
            .args(["corpus", "sql"])
            .arg(corpus)
            .args(["--dialect", dialect, "-e", &query])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        if dialect == "spark" && NOT_ON_SPARK.contains(&name) {
            assert_eq!(out.status.code(), Some(1), "{name}: Spark refuses it");
            assert!(err.contains("on Spark"), "{name}: the refusal names the engine: {err}");
            return serde_json::Value::Null;
        }
        assert!(out.status.success(), "{name}: {err}");
        serde_json::Value::String(String::from_utf8(out.stdout).unwrap())
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
import io, json, re, sys
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
def numeric(t):
    # Numbers compare by datatype and value: engines print a decimal's or a
    # double's digits differently (1.6666666666666667, 1.666666666666666666).
    if t is None:
        return t
    m = re.fullmatch(r'"([^"]*)"\^\^<http://www.w3.org/2001/XMLSchema#(integer|decimal|double|float)>', t)
    if m:
        return (m.group(2), round(float(m.group(1)), 6))
    return t
failures = []
ran = 0
for c in cases:
    ours = c["ours"]
    if c[engine] is None:
        continue
    ran += 1
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
    mine = [tuple(numeric(term(b[v])) if v in b else None for v in vars) for b in ours["results"]["bindings"]]
    index = {name: i for i, name in enumerate(cols)}
    got = [tuple(numeric(parse(r[index[v]])) for v in vars) for r in rows]
    if not c["ordered"]:
        mine, got = sorted(mine, key=repr), sorted(got, key=repr)
    if mine != got:
        failures.append(f"{c['name']}: {len(mine)} rows ours, {len(got)} {engine}; "
                        f"only ours {[r for r in mine if r not in got][:3]}, only {engine} {[r for r in got if r not in mine][:3]}")
if failures:
    print("\n".join(failures))
    sys.exit(1)
print("ok", ran)
"#;

fn engine(python: &Path, engine: &str, export: &Path, cases: &Path) {
    let views = export.join(if engine == "duckdb" { "duckdb.sql" } else { "spark.sql" });
    let out = Command::new(python).args(["-c", ENGINE, engine]).arg(views).arg(cases).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{engine}:\n{said}\n{}", String::from_utf8_lossy(&out.stderr));
    let skipped = if engine == "spark" { NOT_ON_SPARK.len() } else { 0 };
    assert_eq!(said.trim(), format!("ok {}", QUERIES.len() - skipped));
}

#[test]
fn every_query_answers_the_same_on_our_evaluator_duckdb_and_spark() {
    assert!(QUERIES.len() >= 120);
    for name in NOT_ON_SPARK {
        assert!(QUERIES.iter().any(|(n, ..)| n == name), "{name}");
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(python) = corpus(dir.path()) else { return };
    let corpus = dir.path().join("corpus");
    let export = dir.path().join("export");
    run_ok(bin().args(["corpus", "export"]).arg(&corpus).arg("--out").arg(&export));
    let cases: Vec<serde_json::Value> = QUERIES.iter().map(|(n, q, o)| case(&corpus, n, q, *o)).collect();
    // A suite whose answers are all empty could agree by accident.
    let empty: Vec<&serde_json::Value> = cases
        .iter()
        .filter(|c| c["ours"]["results"]["bindings"].as_array().is_some_and(|b| b.is_empty()))
        .map(|c| &c["name"])
        .collect();
    assert!(empty.len() <= 2, "too many queries answer nothing: {empty:?}");
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
