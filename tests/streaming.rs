//! The view reads a pattern a row group at a time: a reader that stops
//! early decodes only the row groups it reached, and reading to the end
//! gives exactly what the whole-pattern read path gives.

mod common;

use std::cell::RefCell;

use cottas_tui::import::{self, ImportOptions};
use cottas_tui::store::read::{ColumnCache, Explain, Pattern};
use cottas_tui::view::{Graphs, Snapshot};

fn store_of(dir: &std::path::Path, quads: usize, rg: usize) -> std::path::PathBuf {
    let nq = dir.join("in.nq");
    let mut text = String::new();
    for i in 0..quads {
        let g = if i % 3 == 0 { String::new() } else { format!(" <http://x/g{}>", i % 3) };
        text.push_str(&format!("<http://x/s{i:05}> <http://x/p{}> \"v{i}\"{g} .\n", i % 7));
    }
    std::fs::write(&nq, text).unwrap();
    let out = dir.join("chunk");
    let mut o = ImportOptions::new(vec![nq], out.clone());
    o.base.row_group_size = rg;
    import::import(&o, |_| {}).unwrap();
    out
}

#[test]
fn taking_the_first_quads_reads_only_the_first_row_groups() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_of(dir.path(), 5000, 100);
    let snap = Snapshot::open(&store, 1 << 20).unwrap();
    assert!(snap.store.base.num_row_groups() >= 50);
    let view = snap.view();
    let sink = RefCell::new(Explain::default());
    let (quads, _) = view.quads(None, None, None, Graphs::All).unwrap();
    let first: Vec<_> = quads.report_to(&sink).take(10).collect::<Result<_, _>>().unwrap();
    assert_eq!(first.len(), 10);
    assert_eq!(sink.borrow().decoded_row_groups, 1, "{}", sink.borrow());

    // Read to the end: the same rows as the whole-pattern read.
    let sink = RefCell::new(Explain::default());
    let (quads, _) = view.quads(None, None, None, Graphs::All).unwrap();
    let n = quads.report_to(&sink).try_count().unwrap();
    let (all, ex) = snap.store.quads_for_pattern(&Pattern::default(), &ColumnCache::new(1 << 20)).unwrap();
    assert_eq!((n, all.len()), (5000, 5000));
    assert_eq!(sink.borrow().decoded_row_groups, ex.decoded_row_groups);
}

/// An ASK over the binary stops at the first match: `--explain` reports one
/// row group probed of the many.
#[test]
fn ask_probes_one_row_group() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_of(dir.path(), 3000, 100);
    let o = common::bin()
        .args(["query"])
        .arg(&store)
        .args(["--explain", "--format", "tsv", "-e", "ASK { GRAPH ?g { ?s ?p ?o } }"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "true");
    let probed = err.lines().find(|l| l.starts_with("row groups probed")).unwrap_or_else(|| panic!("{err}"));
    assert_eq!(probed.split_whitespace().last(), Some("1"), "{err}");
}

/// A scan with nothing bound reads each row group's first rows in slices
/// before the rest: every quad still comes back once, with its own cells.
#[test]
fn a_scan_read_in_slices_returns_every_quad_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_of(dir.path(), 5000, 1000);
    let o = common::bin()
        .args(["query"])
        .arg(&store)
        .args(["--format", "tsv", "-e", "SELECT ?s ?p ?o ?g WHERE { GRAPH ?g { ?s ?p ?o } }"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let mut got: Vec<String> =
        String::from_utf8(o.stdout).unwrap().lines().skip(1).map(str::to_owned).collect();
    got.sort();
    let mut want: Vec<String> = (0..5000)
        .filter(|i| i % 3 != 0)
        .map(|i| format!("<http://x/s{i:05}>\t<http://x/p{}>\t\"v{i}\"\t<http://x/g{}>", i % 7, i % 3))
        .collect();
    want.sort();
    assert_eq!(got, want);
}

/// With a memory limit far below what the mapped files take, every scan
/// releases the mapped pages between row groups (`Store::limit_mapped_pages`);
/// reads fault them in again and every answer is the same.
#[test]
fn releasing_mapped_pages_between_row_groups_changes_no_answer() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_of(dir.path(), 5000, 500);
    let queries = [
        "SELECT ?s ?p ?o ?g WHERE { GRAPH ?g { ?s ?p ?o } }",
        "SELECT ?s WHERE { GRAPH ?g { ?s <http://x/p3> ?o } }",
        "SELECT ?s ?g WHERE { GRAPH ?g { ?s ?p \"v4241\" } }",
        "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }",
    ];
    for q in queries {
        let run = |limit: &str| {
            let o = common::bin()
                .args(["query"])
                .arg(&store)
                .args(["--memory-limit", limit, "--format", "tsv", "-e", q])
                .output()
                .unwrap();
            assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
            let mut lines: Vec<String> =
                String::from_utf8(o.stdout).unwrap().lines().map(str::to_owned).collect();
            lines.sort();
            lines
        };
        let (tight, roomy) = (run("4K"), run("1G"));
        assert!(tight.len() > 1, "{q}: no rows");
        assert_eq!(tight, roomy, "{q}");
    }
}

/// A `LIMIT` that ends within a row group's slices reads each slice's cells
/// sparsely: no column is decoded whole (`--explain`'s column cache stays
/// empty). The second slice used to decode every column of the row group,
/// resolving its whole dictionary page (50,000 `.o.dict` lookups at 100M).
#[test]
fn a_limit_within_the_slices_decodes_no_column_whole() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_of(dir.path(), 5000, 1000);
    let o = common::bin()
        .args(["query"])
        .arg(&store)
        .args(["--explain", "--format", "tsv", "-e", "SELECT * WHERE { GRAPH ?g { ?s ?p ?o } } LIMIT 100"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 101);
    let probed = err.lines().find(|l| l.starts_with("rows probed")).unwrap_or_else(|| panic!("{err}"));
    let probed: u32 = probed.split_whitespace().last().unwrap().parse().unwrap();
    assert!(probed > 64, "the second slice was read: {err}");
    let cache = err.lines().find(|l| l.starts_with("column cache")).unwrap_or_else(|| panic!("{err}"));
    assert_eq!(cache, "column cache           0 hits, 0 misses", "{err}");
}

/// What the query operators hold (`store::read::held`) is taken from the
/// column caches' room: a cache already full gives its columns up on the
/// next read, even one that finds everything cached, and fills again once
/// the operator is done.
#[test]
fn the_column_cache_gives_way_to_what_operators_hold() {
    use cottas_tui::store::read::held::HeldBytes;
    let dir = tempfile::tempdir().unwrap();
    let store = store_of(dir.path(), 5000, 500);
    let snap = Snapshot::open(&store, 1 << 20).unwrap();
    let read_all = || {
        let p3 = cottas_tui::view::terms::Tok::Ref(b"<http://x/p3>");
        let (quads, _) = snap.view().quads(None, Some(&p3), None, Graphs::All).unwrap();
        quads.count()
    };
    let n = read_all();
    read_all();
    assert!(snap.cache.held() > 0, "a warm scan caches its columns");
    {
        // More than every cache of this process may hold.
        let mut operator = HeldBytes::new();
        operator.set(1 << 40);
        assert_eq!(read_all(), n);
        assert_eq!(snap.cache.held(), 0, "the cache kept columns while an operator held everything");
    }
    read_all();
    read_all();
    assert!(snap.cache.held() > 0, "the cache stayed empty after the operator was done");
}
