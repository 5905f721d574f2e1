//! SPARQL over base ⊕ delta through the real binary and real stores.

mod common;

use std::path::Path;
use std::process::Output;

use cottas_tui::format::deltalog::{self, Batch, Entry, Object, Quad, Subject};
use cottas_tui::format::term;
use cottas_tui::format::transport::Transport;
use cottas_tui::import::{self, ImportOptions};

const EX: &str = "https://example.org";

use common::{bin, sample_store as store};

fn q(target: &Path, query: &str, extra: &[&str]) -> Output {
    bin().arg("query").arg(target).args(["-e", query]).args(extra).output().unwrap()
}

fn json_rows(o: &Output) -> Vec<serde_json::Value> {
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["results"]["bindings"].as_array().unwrap().clone()
}

fn lit(s: &str) -> Object {
    Object::Literal { lexical: s.into(), datatype: term::XSD_STRING.into(), language: None }
}

fn quad(s: &str, p: &str, o: Object, g: Option<&str>) -> Quad {
    Quad {
        subject: Subject::Iri(format!("{EX}/{s}")),
        predicate: format!("{EX}/{p}"),
        object: o,
        graph: g.map(|g| format!("{EX}/graph/{g}")),
    }
}

fn write_log(chunk: &Path, batches: &[Batch], tail: &[u8]) {
    let mut bytes = deltalog::encode_batches(batches, Transport::Raw);
    bytes.extend_from_slice(tail);
    std::fs::write(chunk.join("data.deltalog"), bytes).unwrap();
}

const NAMES: &str =
    "SELECT ?s ?name WHERE { GRAPH ?g { ?s <https://example.org/name> ?name } } ORDER BY ?name";

#[test]
fn select_over_the_base() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let rows = json_rows(&q(&s, NAMES, &["--format", "json"]));
    let names: Vec<&str> = rows.iter().map(|r| r["name"]["value"].as_str().unwrap()).collect();
    assert_eq!(names, ["Alice", "Bob"]);
    let rows = json_rows(&q(&s, "SELECT * WHERE { ?s ?p ?o }", &["--format", "json"]));
    assert_eq!(rows.len(), 1, "only the default graph's quad without GRAPH");
    let rows =
        json_rows(&q(&s, "SELECT * WHERE { ?s ?p ?o }", &["--format", "json", "--union-default-graph"]));
    assert_eq!(rows.len(), 5);
}

#[test]
fn the_delta_log_merges_on_read_and_shadowed_batches_stay_invisible() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let batches = vec![
        // Epoch 0 is at the import's marker (CE = 0): shadowed, never visible.
        Batch {
            seq: 1,
            epoch: 0,
            entries: vec![Entry::add(quad("ghost", "name", lit("Ghost"), Some("people")))],
        },
        Batch {
            seq: 2,
            epoch: 1,
            entries: vec![
                Entry::add(quad("carol", "name", lit("Carol"), Some("people"))),
                Entry::remove(quad("bob", "name", lit("Bob"), Some("people"))),
                // Already in the base: must not appear twice.
                Entry::add(quad("alice", "name", lit("Alice"), Some("people"))),
            ],
        },
        Batch { seq: 3, epoch: 1, entries: vec![Entry::clear(Some(format!("{EX}/graph/docs")))] },
        Batch {
            seq: 4,
            epoch: 1,
            entries: vec![
                Entry::create(format!("{EX}/graph/empty")),
                Entry::add(quad("dora", "name", lit("Dora"), Some("new"))),
                Entry::add(quad("tmp", "name", lit("Tmp"), Some("gone"))),
                Entry::drop_graph(format!("{EX}/graph/gone")),
            ],
        },
    ];
    // A torn tail after the last batch is ignored with a note.
    write_log(&s, &batches, b"DLB1\x01\0\0\0\xff\0\0\0partial");

    let o = q(&s, NAMES, &["--format", "json"]);
    let rows = json_rows(&o);
    let names: Vec<&str> = rows.iter().map(|r| r["name"]["value"].as_str().unwrap()).collect();
    assert_eq!(names, ["Alice", "Carol", "Dora"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("has 19 bytes at offset")
            && err.contains("that are not a committed batch (torn-frame); they are ignored"),
        "{err}"
    );
    // One stray byte reads in the singular.
    write_log(&s, &batches, b"D");
    let err = String::from_utf8_lossy(&q(&s, NAMES, &[]).stderr).into_owned();
    assert!(
        err.contains("has 1 byte at offset")
            && err.contains("that is not a committed batch")
            && err.contains("; it is ignored"),
        "{err}"
    );
    write_log(&s, &batches, b"DLB1\x01\0\0\0\xff\0\0\0partial");

    let count = |query: &str| -> i64 {
        let rows = json_rows(&q(&s, query, &["--format", "json"]));
        rows[0]["n"]["value"].as_str().unwrap().parse().unwrap()
    };
    assert_eq!(
        count("SELECT (COUNT(*) AS ?n) WHERE { GRAPH <https://example.org/graph/docs> { ?s ?p ?o } }"),
        0
    );
    assert_eq!(
        count("SELECT (COUNT(*) AS ?n) WHERE { GRAPH <https://example.org/graph/people> { ?s ?p ?o } }"),
        3
    );
    assert_eq!(count("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"), 1, "default graph untouched");

    // Named graphs: the base's plus every graph the log names, even emptied ones.
    let rows = json_rows(&q(&s, "SELECT ?g WHERE { GRAPH ?g { } } ORDER BY ?g", &["--format", "json"]));
    let graphs: Vec<String> = rows
        .iter()
        .map(|r| r["g"]["value"].as_str().unwrap().rsplit('/').next().unwrap().to_string())
        .collect();
    assert_eq!(graphs, ["docs", "empty", "gone", "new", "people"]);

    let o = q(&s, "ASK { GRAPH ?g { <https://example.org/ghost> ?p ?o } }", &["--format", "json"]);
    assert_eq!(serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["boolean"], false);
}

#[test]
fn result_formats() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let text = |o: Output| {
        assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    let csv = text(q(&s, NAMES, &["--format", "csv"]));
    assert_eq!(csv.lines().next(), Some("s,name"));
    assert!(csv.contains("https://example.org/alice,Alice"), "{csv}");
    let tsv = text(q(&s, NAMES, &[]));
    assert_eq!(tsv.lines().next(), Some("?s\t?name"), "TSV when stdout is not a terminal");
    assert!(tsv.contains("<https://example.org/bob>\t\"Bob\""));
    let xml = text(q(&s, NAMES, &["--format", "xml"]));
    assert!(xml.contains("<sparql") && xml.contains("<literal>Bob</literal>"));
    let table = text(q(&s, NAMES, &["--format", "table"]));
    assert!(table.contains("?name") && table.contains("(2 rows)"), "{table}");
    // `SELECT *`: the variables in the order the query names them, not by name.
    let star = text(q(&s, "SELECT * { ?s ?p ?o } LIMIT 1", &["--format", "csv"]));
    assert_eq!(star.lines().next(), Some("s,p,o"), "{star}");
    // Columns line up in terminal columns: the CJK characters and the emoji
    // take two each, so "東京😀" in quotes is 8 wide, as wide as "ab" and
    // four spaces.
    let wide = "SELECT ?x ?y { VALUES (?x ?y) { (\"東京😀\" \"1\") (\"ab\" \"é\") } }";
    let table = text(q(&s, wide, &["--format", "table"]));
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines[0], "?x       │ ?y", "{table}");
    assert_eq!(lines[1], format!("{}─┼─{}", "─".repeat(8), "─".repeat(3)), "{table}");
    assert_eq!(lines[2], "\"東京😀\" │ \"1\"", "{table}");
    assert_eq!(lines[3], "\"ab\"     │ \"é\"", "{table}");
    assert_eq!(lines[4], "(2 rows)", "{table}");
    let one = text(q(&s, "SELECT ?x { VALUES ?x { 1 } }", &["--format", "table"]));
    assert!(one.ends_with("(1 row)\n"), "{one}");
    // A long cell is cut at 60 columns with … in every column but the last,
    // which stays whole; the last line says so.
    let long = "x".repeat(100);
    let cut = format!("SELECT ?a ?b {{ VALUES (?a ?b) {{ (\"{long}\" \"{long}\") }} }}");
    let table = text(q(&s, &cut, &["--format", "table"]));
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines[2], format!("\"{}… │ \"{long}\"", "x".repeat(58)), "{table}");
    assert_eq!(lines[1], format!("{}─┼─{}", "─".repeat(60), "─".repeat(60)), "{table}");
    assert_eq!(
        lines[3], "(1 row; cells cut at 60 columns but in the last: --format tsv shows them whole)",
        "{table}"
    );
    let tsv = text(q(&s, &cut, &["--format", "tsv"]));
    assert!(tsv.contains(&format!("\"{long}\"\t\"{long}\"")), "TSV keeps every cell whole: {tsv}");
    let construct =
        "CONSTRUCT { ?s <urn:x:label> ?name } WHERE { GRAPH ?g { ?s <https://example.org/name> ?name } }";
    let nt = text(q(&s, construct, &[]));
    assert_eq!(nt.lines().count(), 2);
    assert!(nt.contains("<https://example.org/alice> <urn:x:label> \"Alice\" ."), "{nt}");
    let ttl = text(q(&s, construct, &["--format", "turtle"]));
    assert!(ttl.contains("<urn:x:label>"));
    let o = q(&s, construct, &["--format", "json"]);
    assert_eq!(o.status.code(), Some(1), "a graph result cannot be JSON");
}

#[test]
fn exit_codes_and_streams() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let o = q(&s, "SELECT ?x WHERE {\n  ?x ?y\n}", &[]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("error at 2:3: a triple pattern needs"), "line:column in {err}");
    assert!(o.stdout.is_empty(), "nothing on stdout for a failed query");
    let o = q(&s, "SELECT ?x {\n ?x <urn:p> , }", &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "one line, character classes in words: {err}");
    assert!(err.contains("error at 2:13:") && !err.contains("u{") && err.contains("a letter"), "{err}");
    let o = q(&s, "SELECT * { ?s foaf:name ?o }", &[]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("error at 1:24: the prefix `foaf:` of `foaf:name` is not declared"), "{err}");
    let o = q(&dir.path().join("nothing"), "ASK {}", &[]);
    assert_eq!(o.status.code(), Some(2));

    // --batch reads queries from stdin too; several -e run in order.
    let o = bin()
        .args(["--batch"])
        .arg(&s)
        .args(["-e", "ASK { ?s ?p ?o }", "-e", "ASK { <urn:no> ?p ?o }", "--format", "tsv"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout), "true\n\nfalse\n", "TSV result sets apart");
    let mut child = bin()
        .arg("--batch")
        .arg(&s)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }")
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout), "?n\n4\n");

    let o = q(&s, NAMES, &["--explain", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("plan:") && err.contains("row groups") && err.contains("visible batches"), "{err}");
    serde_json::from_slice::<serde_json::Value>(&o.stdout).expect("stdout holds only the results");
}

/// `query STORE 'SELECT …'` as sqlite3 and DuckDB take theirs; `-` is stdin,
/// in either place; positional queries run before `-e` and `-f` ones.
#[test]
fn queries_as_arguments_and_dash_for_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let o = bin()
        .arg("query")
        .arg(&s)
        .args(["ASK { ?s ?p ?o }", "ASK { <urn:no> ?p ?o }", "-e", "ASK {}", "--format", "tsv"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "true\n\nfalse\n\ntrue\n",
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    for dash in [&["-"][..], &["-f", "-"][..]] {
        let mut child = bin()
            .arg("query")
            .arg(&s)
            .args(dash)
            .args(["-e", "ASK { <urn:no> ?p ?o }", "--format", "tsv"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child.stdin.take().unwrap().write_all(b"SELECT (COUNT(*) AS ?n) { GRAPH ?g { ?s ?p ?o } }").unwrap();
        let o = child.wait_with_output().unwrap();
        let expected = if dash.len() == 1 { "?n\n4\n\nfalse\n" } else { "false\n\n?n\n4\n" };
        assert_eq!(String::from_utf8_lossy(&o.stdout), expected, "{dash:?}");
    }
    // A file name where the query goes: a usage error that says -f.
    let file = dir.path().join("report.rq");
    std::fs::write(&file, "ASK {}").unwrap();
    let o = bin().arg("query").arg(&s).arg(&file).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("is a file, not SPARQL: to run what it holds, use -f"), "{err}");
    assert!(o.stdout.is_empty());
}

/// Patterns outside GRAPH over a store whose quads are all in named graphs:
/// a note on stderr says why nothing matched, and where the quads are. Not
/// with GRAPH, not with --union-default-graph, not once the default graph
/// holds a quad, and again once the log clears it.
#[test]
fn a_note_when_the_query_reads_an_empty_default_graph() {
    let dir = tempfile::tempdir().unwrap();
    let chunk = common::store_of(dir.path(), "<urn:a> <urn:p> \"x\" <urn:g> .\n");
    let note = |o: &Output| {
        assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stderr)
            .contains("note: the default graph is empty and the quads are in named graphs")
    };
    let all = "SELECT (COUNT(*) AS ?n) { ?s ?p ?o }";
    let o = q(&chunk, all, &["--format", "csv"]);
    assert!(note(&o), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "n\r\n0\r\n", "the answer itself is unchanged");
    assert!(!note(&q(&chunk, all, &["--union-default-graph"])));
    assert!(!note(&q(&chunk, "SELECT * { GRAPH ?g { ?s ?p ?o } }", &[])));
    common::update(&chunk, "INSERT DATA { <urn:b> <urn:p> 1 }");
    assert!(!note(&q(&chunk, all, &[])), "the default graph holds a quad now");
    common::update(&chunk, "CLEAR DEFAULT");
    assert!(note(&q(&chunk, all, &[])), "cleared by the log");
}

#[test]
fn a_timeout_stops_a_runaway_query() {
    let dir = tempfile::tempdir().unwrap();
    let nq = dir.path().join("g.nq");
    let text: String = (0..400).map(|i| format!("<urn:s:{i}> <urn:p> \"{i}\" .\n")).collect();
    std::fs::write(&nq, text).unwrap();
    let s = dir.path().join("chunk");
    import::import(&ImportOptions::new(vec![nq], s.clone()), |_| {}).unwrap();
    let t = std::time::Instant::now();
    let o = q(
        &s,
        "SELECT (COUNT(*) AS ?n) WHERE { ?a ?p ?b . ?c ?p ?d . ?e ?p ?f . ?g ?p ?h }",
        &["--timeout", "0.5"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("timed out"));
    assert!(t.elapsed().as_secs() < 30);
}
