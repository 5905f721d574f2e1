//! Interoperability with the real pycottas and DuckDB, run from the venv that
//! `scripts/test` installs (`COTTAS_PYTHON`, else `.venv/bin/python`). Where
//! they cannot be found, each test prints a NOTICE and returns (with CI=true, fails).

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use cottas_tui::format::term::{self, Term};
use cottas_tui::import::{self, ImportOptions};
use cottas_tui::store::base::Base;
use cottas_tui::store::read::{ColumnCache, Pattern};
use cottas_tui::store::versions::open::Store;

fn python() -> Option<PathBuf> {
    common::venv_python("pycottas, duckdb")
}

/// Runs a Python snippet with `args` as sys.argv[1:]; returns its stdout as JSON.
fn py(python: &Path, code: &str, args: &[&Path]) -> serde_json::Value {
    let o = Command::new(python).arg("-c").arg(code).args(args).output().unwrap();
    assert!(o.status.success(), "python failed: {}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)))
}

fn rows_of(base: &Base) -> Vec<[String; 4]> {
    let mut out = Vec::new();
    for rg in 0..base.num_row_groups() {
        let cols: Vec<_> = (0..4).map(|c| base.read_column(rg, c).unwrap()).collect();
        out.extend(
            (0..base.rg_rows(rg))
                .map(|r| std::array::from_fn(|c| String::from_utf8(cols[c][r].data().to_vec()).unwrap())),
        );
    }
    out
}

/// Blank nodes are labelled differently by every producer (pycottas: random
/// hex; us: first-appearance numbers), and a blank-node *graph* becomes an IRI
/// in our import: compare up to relabelling.
fn normalised(rows: &[[String; 4]]) -> Vec<[String; 4]> {
    let mut v: Vec<[String; 4]> = rows
        .iter()
        .map(|r| {
            std::array::from_fn(|c| {
                let t = &r[c];
                if t.starts_with("_:") || t.starts_with("<urn:cottas-tui:bnode-graph:") {
                    "_:B".to_string()
                } else {
                    t.clone()
                }
            })
        })
        .collect();
    v.sort();
    v
}

fn import_nq(src: &Path, out: &Path) {
    import::import(&ImportOptions::new(vec![src.to_path_buf()], out.to_path_buf()), |_| {}).unwrap();
}

const DUCKDB_ROWS: &str = r#"
import duckdb, json, sys
rows = duckdb.sql(f"SELECT s, p, o, g FROM read_parquet('{sys.argv[1]}')").fetchall()
print(json.dumps([list(r) for r in rows]))
"#;

#[test]
fn duckdb_reads_our_base_row_for_row() {
    let Some(py3) = python() else { return };
    let nq = common::pycottas_small("nq");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("chunk");
    import_nq(&nq, &out);
    let base_path = out.join("v1/data.cottas");
    let ours = rows_of(&Base::open(&base_path).unwrap());
    let theirs: Vec<[String; 4]> = serde_json::from_value(py(&py3, DUCKDB_ROWS, &[&base_path])).unwrap();
    assert_eq!(theirs, ours, "DuckDB sees exactly our rows, in our order");
    assert_eq!(ours.len(), 22);
}

const PYCOTTAS_SEARCH: &str = r#"
import pycottas, json, sys
print(json.dumps([[list(r) for r in pycottas.search(sys.argv[1], p)] for p in json.load(open(sys.argv[2]))]))
"#;

#[test]
fn pycottas_search_on_our_file_matches_our_lookups() {
    let Some(py3) = python() else { return };
    let nq = common::pycottas_small("nq");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("chunk");
    import_nq(&nq, &out);
    let store = Store::open(&out).unwrap();
    let cache = ColumnCache::new(1 << 20);
    let cases: Vec<(&str, Pattern)> = vec![
        (
            "<http://ex.org/alice> ?p ?o",
            Pattern { s: Some(Term::Iri("http://ex.org/alice".into())), ..Default::default() },
        ),
        (
            "?s <http://xmlns.com/foaf/0.1/name> ?o",
            Pattern { p: Some(Term::Iri("http://xmlns.com/foaf/0.1/name".into())), ..Default::default() },
        ),
        ("?s ?p \"Bob\"", Pattern { o: Some(term::parse_token("\"Bob\"").unwrap()), ..Default::default() }),
        (
            "?s ?p ?o <http://ex.org/g2>",
            Pattern { g: Some(Term::Iri("http://ex.org/g2".into())), ..Default::default() },
        ),
        (
            "?s <http://ex.org/age> \"42\"^^<http://www.w3.org/2001/XMLSchema#integer>",
            Pattern {
                p: Some(Term::Iri("http://ex.org/age".into())),
                o: Some(term::parse_token("\"42\"^^<http://www.w3.org/2001/XMLSchema#integer>").unwrap()),
                ..Default::default()
            },
        ),
    ];
    let patterns = dir.path().join("patterns.json");
    std::fs::write(&patterns, serde_json::to_vec(&cases.iter().map(|c| c.0).collect::<Vec<_>>()).unwrap())
        .unwrap();
    // pycottas has no graph variable: a three-term pattern answers (s, p, o)
    // over all graphs, a four-term one whole quads. Compare at its arity.
    let theirs: Vec<Vec<Vec<String>>> =
        serde_json::from_value(py(&py3, PYCOTTAS_SEARCH, &[&out.join("v1/data.cottas"), &patterns])).unwrap();
    for ((text, pat), theirs) in cases.iter().zip(theirs) {
        let arity = text.split_whitespace().count().max(3);
        let (rows, _) = store.quads_for_pattern(pat, &cache).unwrap();
        let ours: BTreeSet<Vec<String>> = rows
            .iter()
            .map(|r| r.unwrap())
            .map(|r| (0..arity).map(|c| String::from_utf8(r[c].to_vec()).unwrap()).collect())
            .collect();
        let theirs: BTreeSet<Vec<String>> = theirs.into_iter().collect();
        assert!(!ours.is_empty(), "{text}");
        assert_eq!(ours, theirs, "{text}");
    }
}

const RDF2COTTAS: &str = r#"
import pycottas, sys, json
pycottas.rdf2cottas(sys.argv[1], sys.argv[2], index="spog")
print(json.dumps(True))
"#;

#[test]
fn we_read_pycottas_output_with_the_same_quads() {
    let Some(py3) = python() else { return };
    let nq = common::pycottas_small("nq");
    let dir = tempfile::tempdir().unwrap();
    let theirs_path = dir.path().join("theirs.cottas");
    py(&py3, RDF2COTTAS, &[&nq, &theirs_path]);
    let out = dir.path().join("chunk");
    import_nq(&nq, &out);
    let ours = normalised(&rows_of(&Base::open(&out.join("v1/data.cottas")).unwrap()));
    let fresh = normalised(&rows_of(&Base::open(&theirs_path).unwrap()));
    assert_eq!(fresh, ours, "a fresh pycottas rdf2cottas file");
    let shipped = common::pycottas_small("cottas");
    let shipped = normalised(&rows_of(&Base::open(&shipped).unwrap()));
    assert_eq!(shipped, ours, "fixtures/reference-data/pycottas_small.cottas");
}

#[test]
fn a_pycottas_base_indexed_by_us_answers_like_our_import() {
    let Some(py3) = python() else { return };
    let nq = common::pycottas_small("nq");
    let dir = tempfile::tempdir().unwrap();
    let v1 = dir.path().join("theirs/v1");
    std::fs::create_dir_all(&v1).unwrap();
    py(&py3, RDF2COTTAS, &[&nq, &v1.join("data.cottas")]);
    let o = Command::new(env!("CARGO_BIN_EXE_cottas-tui"))
        .arg("index")
        .arg(dir.path().join("theirs"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout).matches("was missing: written").count(), 11);
    let theirs = Store::open(&dir.path().join("theirs")).unwrap();
    assert!(theirs.sidecars.problems().is_empty(), "{:?}", theirs.sidecars.problems());
    let out = dir.path().join("ours");
    import_nq(&nq, &out);
    let ours = Store::open(&out).unwrap();
    let cache_a = ColumnCache::new(1 << 20);
    let cache_b = ColumnCache::new(1 << 20);
    // Every non-blank term of the data, in every position it can be bound.
    let rows = rows_of(&ours.base);
    let mut checked = 0;
    for r in &rows {
        for (c, t) in r.iter().enumerate() {
            if t.starts_with("_:") || t.starts_with("<urn:") {
                continue;
            }
            let t = term::parse_token(t).unwrap();
            let mut pat = Pattern::default();
            match c {
                0 => pat.s = Some(t),
                1 => pat.p = Some(t),
                2 => pat.o = Some(t),
                _ => pat.g = Some(t),
            }
            let get = |s: &Store, cache: &ColumnCache| {
                let rows: Vec<[String; 4]> = s
                    .quads_for_pattern(&pat, cache)
                    .unwrap()
                    .0
                    .iter()
                    .map(|r| r.unwrap())
                    .map(|r| std::array::from_fn(|c| String::from_utf8(r[c].to_vec()).unwrap()))
                    .collect();
                normalised(&rows)
            };
            assert_eq!(get(&theirs, &cache_b), get(&ours, &cache_a), "{pat:?}");
            checked += 1;
        }
    }
    assert!(checked > 60, "{checked}");
}

#[test]
fn pycottas_triple_files_and_bloom_filters_are_read() {
    let Some(py3) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let nt = dir.path().join("t.nt");
    std::fs::write(&nt, "<http://e/a> <http://e/p> \"x\" .\n<http://e/b> <http://e/p> <http://e/c> .\n")
        .unwrap();
    let file = dir.path().join("t.cottas");
    py(&py3, RDF2COTTAS.replace("index=\"spog\"", "index=\"spo\"").as_str(), &[&nt, &file]);
    let base = Base::open(&file).unwrap();
    assert_eq!(base.num_columns(), 3, "pycottas writes no g column for triples");
    let rows = rows_of(&base);
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|r| r[3] == "DEFAULT"), "{rows:?}");
    let store = Store::open(&file).unwrap();
    let (got, _) = store
        .quads_for_pattern(
            &Pattern { g: Some(Term::DefaultGraph), ..Default::default() },
            &ColumnCache::new(1 << 20),
        )
        .unwrap();
    assert_eq!(got.len(), 2);

    // DuckDB writes bloom filters for dictionary-encoded chunks: without
    // sidecars, a subject inside the chunk's min/max but absent is ruled out.
    let bare = Store::open(&common::pycottas_small("cottas")).unwrap();
    assert_eq!(bare.sidecars.problems().len(), 11);
    let absent = Pattern { s: Some(Term::Iri("http://ex.org/alicf".into())), ..Default::default() };
    let (got, ex) = bare.quads_for_pattern(&absent, &ColumnCache::new(1 << 20)).unwrap();
    assert!(got.is_empty());
    assert_eq!((ex.pruned_by_statistics, ex.pruned_by_bloom, ex.decoded_row_groups), (0, 1, 0), "{ex:?}");
}

const DUCKDB_REWRITE: &str = r#"
import duckdb, json, sys
src, out, codec, rg = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
duckdb.sql(f"COPY (SELECT s, p, o, g FROM read_parquet('{src}') ORDER BY s, p, o, g) TO '{out}' (FORMAT parquet, COMPRESSION {codec}, ROW_GROUP_SIZE {rg})")
print(json.dumps(True))
"#;

/// DuckDB files of several row-group sizes and codecs: the fast chunk
/// decoder takes the ZSTD and uncompressed ones and agrees with the parquet
/// crate on every chunk; other codecs fall back and still agree.
#[test]
fn the_fast_chunk_decoder_agrees_on_duckdb_files() {
    let Some(py3) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut nq = String::new();
    for i in 0..6_000 {
        let g = if i % 4 == 0 { String::new() } else { format!(" <http://e/g{}>", i % 3) };
        nq.push_str(&format!(
            "<http://e/s{}> <http://e/p{}> \"v{} é\\t\\\"x\\\"\"@en{g} .\n<http://e/s{}> <http://e/q> <http://e/o{}>{g} .\n",
            i / 3,
            i % 5,
            i % 700,
            i / 3,
            i % 900
        ));
    }
    let src = dir.path().join("in.nq");
    std::fs::write(&src, nq).unwrap();
    let ours = dir.path().join("ours");
    import_nq(&src, &ours);
    let base = ours.join("v1/data.cottas");
    for (codec, rg, fast) in [
        ("zstd", "2048", true),
        ("uncompressed", "100000", true),
        ("snappy", "4096", false),
        ("gzip", "3000", false),
        ("lz4_raw", "5000", false),
    ] {
        let v = dir.path().join(format!("{codec}/v1"));
        std::fs::create_dir_all(&v).unwrap();
        py(&py3, DUCKDB_REWRITE, &[&base, &v.join("data.cottas"), Path::new(codec), Path::new(rg)]);
        let o = Command::new(env!("CARGO_BIN_EXE_cottas-tui")).arg("index").arg(&v).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
        let store = Store::open(&v).unwrap();
        let taken = common::fast_decoder_agrees(&store);
        let chunks = 4 * store.base.num_row_groups();
        if fast {
            assert_eq!(taken, chunks, "{codec}: every chunk through the fast decoder");
        } else {
            assert_eq!(taken, 0, "{codec}: the fast decoder does not take this codec");
        }
    }
}

/// factoidal's `--row-order cs`: rows grouped by characteristic set (the
/// subject's sorted predicate list), subjects contiguous but not sorted.
const DUCKDB_CS_ORDER: &str = r#"
import duckdb, json, sys
src, out = sys.argv[1], sys.argv[2]
duckdb.sql(f"""COPY (
  WITH q AS (SELECT s, p, o, g FROM read_parquet('{src}')),
       cs AS (SELECT s, string_agg(DISTINCT p, ' ' ORDER BY p) AS cs, hash(s) AS h FROM q GROUP BY s)
  SELECT q.s, q.p, q.o, q.g FROM q JOIN cs USING (s) ORDER BY cs.cs DESC, cs.h, q.p, q.o, q.g
) TO '{out}' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 700)""")
print(json.dumps(duckdb.sql(f"SELECT count(*) FROM read_parquet('{out}')").fetchone()[0]))
"#;

fn sorted_nquads(target: &Path) -> Vec<String> {
    let o = Command::new(env!("CARGO_BIN_EXE_cottas-tui"))
        .arg("query")
        .arg(target)
        .args([
            "--format",
            "nquads",
            "-e",
            "CONSTRUCT { ?s ?p ?o } WHERE { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } }",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let mut lines: Vec<String> = String::from_utf8(o.stdout).unwrap().lines().map(str::to_owned).collect();
    lines.sort();
    lines
}

#[test]
fn a_cs_ordered_duckdb_store_compacts_with_its_delta() {
    let Some(py3) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut nq = String::new();
    for i in 0..3_000 {
        let g = if i % 3 == 0 { String::new() } else { format!(" <http://e/g{}>", i % 2) };
        nq.push_str(&format!("<http://e/s{}> <http://e/p{}> \"v{i}\"{g} .\n", i % 800, i % (2 + i % 5)));
    }
    let src = dir.path().join("in.nq");
    std::fs::write(&src, nq).unwrap();
    let ours = dir.path().join("ours");
    import_nq(&src, &ours);
    let chunk = dir.path().join("cs");
    let v1 = chunk.join("v1");
    std::fs::create_dir_all(&v1).unwrap();
    py(&py3, DUCKDB_CS_ORDER, &[&ours.join("v1/data.cottas"), &v1.join("data.cottas")]);
    std::os::unix::fs::symlink("v1", chunk.join("current")).unwrap();
    let bin = || Command::new(env!("CARGO_BIN_EXE_cottas-tui"));
    let o = bin().arg("index").arg(&v1).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    // The file really is out of SPOG order.
    let rows = rows_of(&Base::open(&v1.join("data.cottas")).unwrap());
    assert!(rows.windows(2).any(|w| w[0] > w[1]), "DuckDB wrote SPOG order; the test proves nothing");

    let o = bin()
        .arg("update")
        .arg(&chunk)
        .args(["-e", "INSERT DATA { <http://e/new> <http://e/p0> \"n\" } ; DELETE DATA { GRAPH <http://e/g1> { <http://e/s1> <http://e/p1> \"v1\" } }"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let before = sorted_nquads(&chunk);
    assert!(before.iter().any(|l| l.starts_with("<http://e/new>")));

    let o = bin().arg("compact").arg(&chunk).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read_link(chunk.join("current")).unwrap(), Path::new("v2"));
    assert_eq!(sorted_nquads(&chunk), before);
    // The new version is in SPOG order and verifies clean, deep.
    let rows = rows_of(&Base::open(&chunk.join("v2/data.cottas")).unwrap());
    assert!(rows.windows(2).all(|w| w[0] < w[1]));
    let o = bin().args(["verify", "--deep"]).arg(&chunk).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stdout));
}
