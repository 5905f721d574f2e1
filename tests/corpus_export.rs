//! `corpus export` read by the real engines, against `cottas-tui query`
//! over the same corpus root.
//!
//! The corpus: a pycottas-made chunk (3 columns, literals with a raw tab and
//! a newline), one of ours whose pending log deletes a quad the pycottas
//! chunk also holds, deletes and re-inserts another, clears a graph and adds
//! one of its quads back, and adds new quads; and one compacted twice with
//! a pending batch on top. DuckDB and Spark (local mode) run the generated
//! views; their rows must equal, as a multiset, what our evaluator answers
//! over the corpus root.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{bin, run_ok, update};

const PY_TRIPLES: &str = "\
<https://example.org/default-subject> <https://example.org/status> \"default\" .
<https://example.org/bob> <https://example.org/name> \"Bob\\tTab\" .
<http://ex.org/n1> <http://ex.org/p> \"1\"^^<http://www.w3.org/2001/XMLSchema#integer> .
<https://example.org/x> <https://example.org/note> \"line1\\nline2\"@en .
";

const RDF2COTTAS_SPO: &str = r#"
import pycottas, sys
pycottas.rdf2cottas(sys.argv[1], sys.argv[2], index="spo")
"#;

/// Runs the generated views on one engine and compares `cottas_quads` with
/// our answer (SPARQL JSON) as multisets of quads, both sides parsed and
/// printed by pyoxigraph so renderings cannot differ. Prints `ok N`.
const COMPARE: &str = r#"
import collections, io, json, sys
import pyoxigraph as ox
engine, sql_path, ours_path = sys.argv[1:4]
sql = open(sql_path).read()
statements = []
for part in sql.split(";\n"):
    text = "\n".join(l for l in part.splitlines() if not l.startswith("--")).strip()
    if text:
        statements.append(text)
query = "SELECT s, p, o, g FROM cottas_quads"
if engine == "duckdb":
    import duckdb
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    for s in statements:
        con.execute(s)
    rows = con.execute(query).fetchall()
else:
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[1]").appName("cottas-export-test")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    for s in statements:
        spark.sql(s)
    rows = [tuple(r) for r in spark.sql(query).collect()]
    spark.stop()
doc = "".join(f"{s} {p} {o}{'' if g == 'DEFAULT' else ' ' + g} .\n" for s, p, o, g in rows)
theirs = collections.Counter(str(q) for q in ox.parse(io.BytesIO(doc.encode()), "application/n-quads"))
def term(b):
    if b["type"] == "uri":
        return ox.NamedNode(b["value"])
    if b["type"] == "bnode":
        return ox.BlankNode(b["value"])
    if "xml:lang" in b:
        return ox.Literal(b["value"], language=b["xml:lang"])
    return ox.Literal(b["value"], datatype=ox.NamedNode(b.get("datatype", "http://www.w3.org/2001/XMLSchema#string")))
ours = collections.Counter()
for b in json.load(open(ours_path))["results"]["bindings"]:
    g = term(b["g"]) if "g" in b else ox.DefaultGraph()
    ours[str(ox.Quad(term(b["s"]), term(b["p"]), term(b["o"]), g))] += 1
if ours != theirs:
    print("only ours:", sorted((ours - theirs).elements()))
    print("only", engine + ":", sorted((theirs - ours).elements()))
    sys.exit(1)
print("ok", sum(ours.values()))
"#;

const ALL_QUADS: &str = "SELECT ?s ?p ?o ?g { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } }";

/// Builds the corpus under `root`; `None` when the venv lacks pycottas.
fn corpus(root: &Path) -> Option<PathBuf> {
    let python = common::venv_python("pycottas, duckdb, pyoxigraph")?;
    let nt = root.join("py.nt");
    std::fs::write(&nt, PY_TRIPLES).unwrap();
    let py = root.join("corpus/py/v1");
    std::fs::create_dir_all(&py).unwrap();
    run_ok(Command::new(&python).args(["-c", RDF2COTTAS_SPO]).arg(&nt).arg(py.join("data.cottas")));

    let corpus = root.join("corpus");
    let pending = corpus.join("pending");
    std::fs::rename(common::sample_store(root), &pending).unwrap();
    let ex = "https://example.org";
    // Also in the pycottas chunk, which keeps its copy.
    update(&pending, &format!("DELETE DATA {{ <{ex}/default-subject> <{ex}/status> \"default\" }}"));
    let alice = format!("GRAPH <{ex}/graph/people> {{ <{ex}/alice> <{ex}/name> \"Alice\" }}");
    update(&pending, &format!("DELETE DATA {{ {alice} }}"));
    update(&pending, &format!("INSERT DATA {{ {alice} }}"));
    update(&pending, &format!("CLEAR GRAPH <{ex}/graph/docs>"));
    update(
        &pending,
        &format!(
            "INSERT DATA {{ GRAPH <{ex}/graph/docs> {{ <{ex}/doc> <{ex}/title> \"Specimen\", \"Second\" }} }}"
        ),
    );
    update(&pending, "INSERT DATA { <http://ex.org/new> <http://ex.org/p> \"tab\\there\" }");
    update(&pending, "DELETE DATA { <http://ex.org/never> <http://ex.org/p> 1 }");

    let twice = corpus.join("team/twice");
    std::fs::create_dir_all(twice.parent().unwrap()).unwrap();
    std::fs::rename(common::sample_store(&corpus.join("team")), &twice).unwrap();
    for i in 0..2 {
        update(&twice, &format!("INSERT DATA {{ <http://ex.org/c{i}> <http://ex.org/p> {i} }}"));
        run_ok(bin().arg("compact").arg(&twice).arg("-q"));
    }
    update(
        &twice,
        &format!("DELETE DATA {{ GRAPH <{ex}/graph/people> {{ <{ex}/bob> <{ex}/name> \"Bob\" }} }}"),
    );
    Some(python)
}

fn export(corpus: &Path, out: &Path, extra: &[&str]) -> Output {
    bin().args(["corpus", "export"]).arg(corpus).arg("--out").arg(out).args(extra).output().unwrap()
}

fn manifest(out: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap()
}

fn chunk<'m>(m: &'m serde_json::Value, name: &str) -> &'m serde_json::Value {
    m["chunks"].as_array().unwrap().iter().find(|c| c["name"] == name).unwrap()
}

/// Our answer over the corpus root, as SPARQL JSON in `dir/ours.json`.
fn ours(corpus: &Path, dir: &Path) -> PathBuf {
    let out = run_ok(bin().arg("query").arg(corpus).args(["--format", "json", "-e", ALL_QUADS]));
    let path = dir.join("ours.json");
    std::fs::write(&path, out.stdout).unwrap();
    path
}

fn compare(python: &Path, engine: &str, sql: &Path, ours: &Path) -> String {
    let out = Command::new(python).args(["-c", COMPARE, engine]).arg(sql).arg(ours).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{engine}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    stdout
}

#[test]
fn the_duckdb_view_of_an_export_equals_query_over_the_corpus() {
    let dir = tempfile::tempdir().unwrap();
    let Some(python) = corpus(dir.path()) else { return };
    let corpus = dir.path().join("corpus");
    let out = dir.path().join("export");
    let done = export(&corpus, &out, &[]);
    assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));

    let m = manifest(&out);
    assert_eq!(m["schema"], "cottas-tui.corpus-export");
    assert_eq!(m["version"], 2);
    let pairs = m["may_share"].as_array().unwrap();
    let pair = pairs.iter().find(|p| p["chunks"] == serde_json::json!(["pending", "team/twice"]));
    assert!(pair.is_some(), "copies of one sample may share quads: {pairs:?}");
    let py = chunk(&m, "py");
    assert_eq!((py["columns"].as_u64(), py["rows"].as_u64()), (Some(3), Some(4)));
    assert!(py["delta"].is_null());
    let twice = chunk(&m, "team/twice");
    assert_eq!(twice["version"], "v3");
    assert_eq!(twice["base"], "team/twice/v3/data.cottas", "the resolved version, never `current`");
    assert_eq!(twice["log"]["compacted_epoch"], 2, "{twice}");
    assert_eq!(twice["log"]["batches_visible"], 1);
    let pending = chunk(&m, "pending");
    let log_len = std::fs::metadata(corpus.join("pending/data.deltalog")).unwrap().len();
    assert_eq!(pending["log"]["committed_bytes"], log_len);
    assert_eq!(pending["log"]["last_seq"], 6, "seven updates; deleting an absent quad appends nothing");
    // Net: the deleted default quad; "Second" and the new quad. The
    // re-inserted and re-added quads and the delete of an absent quad are no change.
    assert_eq!((pending["delta"]["adds"].as_u64(), pending["delta"]["removes"].as_u64()), (Some(2), Some(1)));
    for c in m["chunks"].as_array().unwrap() {
        assert!(corpus.join(c["base"].as_str().unwrap()).is_file(), "{c}");
        if let Some(delta) = c["delta"]["path"].as_str() {
            assert!(out.join(delta).is_file(), "{c}");
        }
    }
    let ours = ours(&corpus, dir.path());
    let said = compare(&python, "duckdb", &out.join("duckdb.sql"), &ours);
    assert!(said.starts_with("ok "), "{said}");
    let n: usize = said.trim()[3..].parse().unwrap();
    // A set: py 4; pending 5 - 1 - 1 + 2 + 1; of twice's 5 + 2 - 1, the two
    // new quads (its sample quads are pending's, or py's for the default one).
    assert_eq!(n, 4 + 6 + 2, "each quad once however many chunks hold it");
}

/// The delta file's rows, read by DuckDB: `-` rows carry the base's own
/// cells, `+` rows our rendering; sorted.
#[test]
fn delta_files_hold_the_net_effect_with_the_bases_cells() {
    let dir = tempfile::tempdir().unwrap();
    let Some(python) = corpus(dir.path()) else { return };
    let corpus = dir.path().join("corpus");
    let out = dir.path().join("export");
    assert!(export(&corpus, &out, &[]).status.success());
    let m = manifest(&out);
    let delta = out.join(chunk(&m, "pending")["delta"]["path"].as_str().unwrap());
    let code = "import duckdb, json, sys\n\
                print(json.dumps(duckdb.sql(f\"SELECT * FROM read_parquet('{sys.argv[1]}')\").fetchall()))";
    let rows = run_ok(Command::new(&python).args(["-c", code]).arg(&delta)).stdout;
    let rows: Vec<Vec<String>> = serde_json::from_slice(&rows).unwrap();
    let row = |cells: [&str; 5]| cells.map(|c| c.replace("EX", "https://example.org")).to_vec();
    let expected = vec![
        row(["<http://ex.org/new>", "<http://ex.org/p>", "\"tab\there\"", "DEFAULT", "+"]),
        row(["<EX/default-subject>", "<EX/status>", "\"default\"", "DEFAULT", "-"]),
        row(["<EX/doc>", "<EX/title>", "\"Second\"", "<EX/graph/docs>", "+"]),
    ];
    assert_eq!(rows, expected);
}

#[test]
fn spark_reads_the_same_view() {
    let dir = tempfile::tempdir().unwrap();
    let Some(python) = corpus(dir.path()) else { return };
    if common::venv_python("pyspark").is_none() {
        return;
    }
    let java = Command::new("java").arg("-version").output().is_ok_and(|o| o.status.success());
    if !java {
        return common::missing("java (openjdk-17-jre-headless) is not installed; Spark needs it");
    }
    let corpus = dir.path().join("corpus");
    let out = dir.path().join("export");
    assert!(export(&corpus, &out, &[]).status.success());
    let ours = ours(&corpus, dir.path());
    let said = compare(&python, "spark", &out.join("spark.sql"), &ours);
    assert_eq!(said.trim(), "ok 12", "{said}");
}

#[test]
fn an_export_replaces_only_an_earlier_export_and_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    std::fs::create_dir_all(&corpus).unwrap();
    let chunk = common::sample_store(&corpus);
    update(&chunk, "INSERT DATA { <http://ex.org/a> <http://ex.org/p> 1 }");
    let out = dir.path().join("export");
    assert!(export(&corpus, &out, &[]).status.success());
    let again = export(&corpus, &out, &[]);
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("--force"), "{again:?}");
    update(&chunk, "INSERT DATA { <http://ex.org/b> <http://ex.org/p> 2 }");
    let forced = export(&corpus, &out, &["--force", "--json"]);
    assert!(forced.status.success(), "{forced:?}");
    let m: serde_json::Value = serde_json::from_slice(&forced.stdout).unwrap();
    assert_eq!(chunk_adds(&m), 2, "the second export sees both batches");
    assert_eq!(manifest(&out), m);
    std::fs::write(out.join("notes.txt"), "mine").unwrap();
    let refused = export(&corpus, &out, &["--force"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(out.join("manifest.json").is_file(), "a refused export leaves the earlier one alone");
    assert_eq!(std::fs::read_to_string(out.join("notes.txt")).unwrap(), "mine");
}

fn chunk_adds(m: &serde_json::Value) -> u64 {
    m["chunks"][0]["delta"]["adds"].as_u64().unwrap()
}

/// The generated SQL names the bases and deltas where the engine will
/// find them (`--root-url`, `--out-url`), relative paths joined with `/`.
#[test]
fn urls_replace_local_paths_in_the_views() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    std::fs::create_dir_all(corpus.join("nested")).unwrap();
    let chunk = common::sample_store(&corpus.join("nested"));
    update(&chunk, "INSERT DATA { <http://ex.org/a> <http://ex.org/p> 1 }");
    let out = dir.path().join("export");
    let urls = ["--root-url", "s3://bucket/corpus/", "--out-url", "s3://bucket/export"];
    assert!(export(&corpus, &out, &urls).status.success());
    let spark = std::fs::read_to_string(out.join("spark.sql")).unwrap();
    assert!(spark.contains("parquet.`s3://bucket/corpus/nested/chunk/v1/data.cottas`"), "{spark}");
    assert!(spark.contains("parquet.`s3://bucket/export/deltas/00000-nested_chunk.parquet`"), "{spark}");
    let duck = std::fs::read_to_string(out.join("duckdb.sql")).unwrap();
    assert!(duck.contains("read_parquet('s3://bucket/corpus/nested/chunk/v1/data.cottas')"), "{duck}");
    assert!(!duck.contains(&dir.path().display().to_string()), "no local path is left: {duck}");
}

/// Over a corpus the answers from sidecars (`COUNT(*)` of one pattern,
/// `DISTINCT ?p`/`?g`) agree with plain evaluation: counts add up, distinct
/// values are each listed once.
#[test]
fn shortcuts_over_a_corpus_agree_with_evaluation() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    for name in ["a", "b"] {
        std::fs::create_dir_all(corpus.join(name)).unwrap();
        common::sample_store(&corpus.join(name));
    }
    update(&corpus.join("b/chunk"), "INSERT DATA { <http://ex.org/b> <http://ex.org/only-b> 1 }");
    // Folded, so neither chunk has a log and both answer from their sidecars.
    run_ok(bin().arg("compact").arg(corpus.join("b/chunk")).arg("-q"));
    let queries = [
        "SELECT (COUNT(*) AS ?n) { GRAPH ?g { ?s ?p ?o } }",
        "SELECT (COUNT(*) AS ?n) { ?s ?p ?o }",
        "SELECT DISTINCT ?p { ?s ?p ?o }",
        "SELECT DISTINCT ?g { GRAPH ?g { ?s ?p ?o } }",
    ];
    for q in queries {
        let answer = |extra: &[&str]| {
            let out = run_ok(bin().arg("query").arg(&corpus).args(["--format", "csv", "-e", q]).args(extra));
            let mut lines: Vec<String> =
                String::from_utf8(out.stdout).unwrap().lines().map(str::to_owned).collect();
            lines.sort();
            lines
        };
        assert_eq!(answer(&[]), answer(&["--no-shortcuts"]), "{q}");
    }
    let count = run_ok(bin().arg("query").arg(&corpus).args(["--format", "csv", "-e", queries[0]])).stdout;
    assert_eq!(
        String::from_utf8(count).unwrap().lines().nth(1),
        Some("4"),
        "the same 4 named-graph quads in each chunk, once"
    );
    let both = run_ok(bin().arg("query").arg(&corpus).args(["--format", "csv", "-e", queries[1]])).stdout;
    assert_eq!(
        String::from_utf8(both).unwrap().lines().nth(1),
        Some("2"),
        "the shared default quad once, and the insert"
    );
    let preds = run_ok(bin().arg("query").arg(&corpus).args(["--format", "csv", "-e", queries[2]])).stdout;
    assert_eq!(String::from_utf8(preds).unwrap().lines().count(), 1 + 2, "status, only-b: each once");
}
