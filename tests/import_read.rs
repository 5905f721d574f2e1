//! Import and the read path, end to end on real stores in temp directories.

mod common;

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use cottas_tui::format::term::{self, Escaping, Literal, Term};
use cottas_tui::import::{self, ImportOptions};
use cottas_tui::store::base::writer::{write_base, BaseOptions};
use cottas_tui::store::base::Base;
use cottas_tui::store::read::{ColumnCache, Pattern};
use cottas_tui::store::sidecars;
use cottas_tui::store::versions::layout::Resolution;
use cottas_tui::store::versions::open::Store;
use parquet::basic::Encoding;
use parquet::column::page::Page;
use parquet::file::reader::{FileReader, SerializedFileReader};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_cottas-tui"))
}

fn sample() -> PathBuf {
    common::repo().join("fixtures/cottas_sample.nq")
}

fn import_with(
    inputs: Vec<PathBuf>,
    out: &Path,
    f: impl FnOnce(&mut ImportOptions),
) -> import::ImportSummary {
    let mut o = ImportOptions::new(inputs, out.to_path_buf());
    f(&mut o);
    import::import(&o, |_| {}).unwrap()
}

/// A deterministic LUBM-flavoured N-Quads text of about `n` quads.
fn generated(n: usize) -> String {
    let mut s = String::new();
    let mut i = 0;
    let mut k = 0u64;
    while i < n {
        k = k.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let u = (k >> 40) % 5;
        let person = format!("<http://u{u}.example/p{}>", i / 7);
        let g = if i % 3 == 0 { String::new() } else { format!(" <http://u{u}.example/graph>") };
        let line = match i % 7 {
            0 => format!("{person} <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://lubm.example/Student>{g} .\n"),
            1 => format!("{person} <http://lubm.example/name> \"Person {}\"{g} .\n", i / 7),
            2 => format!("{person} <http://lubm.example/email> \"p{}@u{u}.example\"{g} .\n", i / 7),
            3 => format!("{person} <http://lubm.example/age> \"{}\"^^<http://www.w3.org/2001/XMLSchema#integer>{g} .\n", 18 + (k >> 50) % 40),
            4 => format!("{person} <http://lubm.example/memberOf> <http://u{u}.example/dept{}>{g} .\n", (k >> 45) % 15),
            5 => format!("{person} <http://lubm.example/motto> \"tab\\there \\\"q\\\" é\"@EN-gb{g} .\n"),
            _ => format!("{person} <http://lubm.example/knows> <http://u{u}.example/p{}>{g} .\n", (k >> 33) % (n as u64 / 7 + 1)),
        };
        s.push_str(&line);
        i += 1;
    }
    s
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn all_rows(base: &Base) -> Vec<[Vec<u8>; 4]> {
    let mut out = Vec::new();
    for rg in 0..base.num_row_groups() {
        let cols: Vec<_> = (0..4).map(|c| base.read_column(rg, c).unwrap()).collect();
        out.extend((0..base.rg_rows(rg)).map(|r| std::array::from_fn(|c| cols[c][r].data().to_vec())));
    }
    out
}

#[test]
fn import_writes_the_reference_sidecars_and_a_complete_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("chunk");
    let s = import_with(vec![sample()], &out, |_| {});
    assert_eq!((s.parsed, s.distinct, s.graphs), (5, 5, 2));
    for suffix in sidecars::SUFFIXES {
        let ours = std::fs::read(out.join(format!("v1/data.cottas{suffix}"))).unwrap();
        let golden =
            std::fs::read(common::repo().join(format!("fixtures/golden/sample/data.cottas{suffix}")))
                .unwrap();
        assert_eq!(ours, golden, "{suffix}");
    }
    assert_eq!(std::fs::read_link(out.join("current")).unwrap(), PathBuf::from("v1"));
    assert_eq!(std::fs::read(out.join("data.deltalog")).unwrap(), b"DLOG\x01\0\0\0");
    assert_eq!(
        std::fs::read(out.join("v1/data.compacted-epoch")).unwrap(),
        common::hex("43 45 50 31 01 00 00 00 08 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00")
    );
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("v1/summary.json")).unwrap()).unwrap();
    assert_eq!(summary["quad_count"], 5);
    assert_eq!(summary["graph_count"], 2);
    assert_eq!(summary["sidecars_built"].as_array().unwrap().len(), 11);
    // Nothing else was left beside the chunk.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["chunk"]);
}

#[test]
fn the_base_uses_only_the_readable_parquet_subset() {
    let dir = tempfile::tempdir().unwrap();
    let nq = write(dir.path(), "g.nq", &generated(130_000));
    let out = dir.path().join("chunk");
    import_with(vec![nq], &out, |_| {});
    let file = std::fs::File::open(out.join("v1/data.cottas")).unwrap();
    let reader = SerializedFileReader::new(file).unwrap();
    let meta = reader.metadata();
    let kv = meta.file_metadata().key_value_metadata().unwrap();
    assert!(kv.iter().any(|k| k.key == "index" && k.value.as_deref() == Some("spog")));
    assert_eq!(meta.row_group(0).num_rows(), 122_880, "DuckDB's row-group size");
    assert!(meta.num_row_groups() >= 2);
    for c in meta.file_metadata().schema_descr().columns() {
        assert_eq!(c.max_def_level(), 1, "{} is OPTIONAL", c.name());
    }
    let mut data_pages = 0;
    for rg in 0..meta.num_row_groups() {
        let group = reader.get_row_group(rg).unwrap();
        for c in 0..4 {
            assert_eq!(
                meta.row_group(rg).column(c).compression().to_string().split('(').next(),
                Some("ZSTD")
            );
            let pages = group.get_column_page_reader(c).unwrap();
            for page in pages {
                match page.unwrap() {
                    Page::DataPage { encoding, .. } => {
                        data_pages += 1;
                        assert!(
                            matches!(encoding, Encoding::RLE_DICTIONARY | Encoding::DELTA_LENGTH_BYTE_ARRAY),
                            "rg {rg} col {c}: data page encoding {encoding:?}"
                        );
                    }
                    Page::DataPageV2 { .. } => panic!("DATA_PAGE_V2 written"),
                    Page::DictionaryPage { .. } => {}
                }
            }
        }
    }
    assert!(data_pages >= 8);
}

#[test]
fn import_is_deterministic_with_blank_nodes_and_spilling_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let ttl = write(
        dir.path(),
        "b.ttl",
        "@prefix : <http://e/> .\n:a :knows [ :name \"x\" ], [ :name \"y\" ] .\n_:n :p _:n .\n",
    );
    let nq = write(dir.path(), "g.nq", &generated(30_000));
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    let c = dir.path().join("c");
    import_with(vec![ttl.clone(), nq.clone()], &a, |_| {});
    import_with(vec![ttl.clone(), nq.clone()], &b, |_| {});
    let spilled = import_with(vec![ttl, nq], &c, |o| o.memory_limit = 1 << 18);
    assert!(spilled.spilled_runs > 2, "{} runs", spilled.spilled_runs);
    for f in std::fs::read_dir(a.join("v1")).unwrap() {
        let name = f.unwrap().file_name();
        if name == "summary.json" {
            continue;
        }
        let x = std::fs::read(a.join("v1").join(&name)).unwrap();
        assert_eq!(x, std::fs::read(b.join("v1").join(&name)).unwrap(), "{name:?} differs between runs");
        assert_eq!(x, std::fs::read(c.join("v1").join(&name)).unwrap(), "{name:?} differs when spilled");
    }
    let base = Base::open(&a.join("v1/data.cottas")).unwrap();
    let rows = all_rows(&base);
    let blanks: BTreeSet<&[u8]> =
        rows.iter().flat_map(|r| [&r[0][..], &r[2][..]]).filter(|t| t.starts_with(b"_:")).collect();
    assert_eq!(blanks, [&b"_:b0"[..], b"_:b1", b"_:b2"].into_iter().collect());
}

#[test]
fn formats_compression_stdin_and_the_graph_option() {
    let dir = tempfile::tempdir().unwrap();
    let nt = "<http://e/s> <http://e/p> \"o\" .\n";
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(nt.as_bytes()).unwrap();
    std::fs::write(dir.path().join("t.nt.gz"), gz.finish().unwrap()).unwrap();
    let zst =
        zstd::encode_all("<http://e/s2> <http://e/p> <http://e/o> <http://e/g> .\n".as_bytes(), 3).unwrap();
    std::fs::write(dir.path().join("q.nq.zst"), zst).unwrap();
    write(dir.path(), "x.trig", "<http://e/g2> { <http://e/s3> <http://e/p> \"t\"@EN }\n");
    let out = dir.path().join("chunk");
    let o = bin()
        .args(["import", "--graph", "http://e/triples", "--out"])
        .arg(&out)
        .args(["t.nt.gz", "q.nq.zst", "x.trig", "-"])
        .current_dir(dir.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            child.stdin.take().unwrap().write_all(b"<http://e/s4> <http://e/p> \"in\" .\n")?;
            child.wait_with_output()
        })
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let line = String::from_utf8_lossy(&o.stdout);
    assert!(line.starts_with("4 quads (4 distinct), 3 graphs,"), "{line}");
    assert!(line.contains("B/quad in"), "{line}");
    let base = Base::open(&out.join("v1/data.cottas")).unwrap();
    let rows: BTreeSet<String> = all_rows(&base)
        .iter()
        .map(|r| r.iter().map(|t| String::from_utf8_lossy(t).into_owned()).collect::<Vec<_>>().join(" "))
        .collect();
    let expected: BTreeSet<String> = [
        "<http://e/s> <http://e/p> \"o\" <http://e/triples>",
        "<http://e/s2> <http://e/p> <http://e/o> <http://e/g>",
        "<http://e/s3> <http://e/p> \"t\"@en <http://e/g2>",
        "<http://e/s4> <http://e/p> \"in\" DEFAULT",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(rows, expected, "--graph applies to triple files only; stdin is N-Quads");
}

#[test]
fn a_malformed_statement_stops_the_import_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write(dir.path(), "bad.nq", "<http://e/a> <http://e/b> <http://e/c> .\n<http://e/a> <http://e/b> .\n<http://e/x> <http://e/y> <http://e/z> .\n");
    // An unclosed literal: oxttl reads on to the end and said "Unexpected
    // end of file" at 2:27, with a line after it.
    let open = write(dir.path(), "open.nq", "<http://e/a> <http://e/b> \"x\" .\n<http://e/a> <http://e/b> \"y .\n<http://e/x> <http://e/y> <http://e/z> .\n");
    let out = dir.path().join("chunk");
    for (input, expected) in [
        (&open, "open.nq:2:27: the term that starts here is not closed (read on to line 4 without finding its end)"),
        (&bad, "bad.nq:2:27: The object of a triple must be"),
    ] {
        let o = bin().arg("import").arg(input).arg("--out").arg(&out).output().unwrap();
        assert_eq!(o.status.code(), Some(1));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(expected), "file:line:column and the message in {err}");
        assert!(!out.exists());
    }
    std::fs::remove_file(&open).unwrap();
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no temp dir left behind");

    let o = bin().arg("import").arg(&bad).arg("--lenient").arg("--out").arg(&out).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("skipped 1 malformed statement:\n"));
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("2 quads (2 distinct)"));

    // Importing over an existing store is refused.
    let o = bin().arg("import").arg(&bad).arg("--lenient").arg("--out").arg(&out).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("already exists"));
}

#[test]
fn stores_open_through_current_highest_version_version_dir_or_bare_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("chunk");
    import_with(vec![sample()], &out, |_| {});
    assert_eq!(Store::open(&out).unwrap().layout.resolution, Resolution::ViaCurrent);
    assert_eq!(Store::open(&out.join("v1")).unwrap().layout.resolution, Resolution::VersionDir);
    let bare = Store::open(&out.join("v1/data.cottas")).unwrap();
    assert_eq!(bare.layout.resolution, Resolution::BareFile);
    std::fs::remove_file(out.join("current")).unwrap();
    let s = Store::open(&out).unwrap();
    assert_eq!((s.layout.resolution, s.layout.version.as_deref()), (Resolution::HighestVersion, Some("v1")));
    assert_eq!(s.marker.unwrap().epoch, 0);
    // A marker that exists but does not decode refuses the open.
    std::fs::write(out.join("v1/data.compacted-epoch"), b"CEP1garbage").unwrap();
    let e = Store::open(&out).err().unwrap().to_string();
    assert!(e.contains("data.compacted-epoch") && e.contains("at byte"), "{e}");
    assert!(Store::open(dir.path()).is_err());
}

fn brute(rows: &[[Vec<u8>; 4]], pat: &Pattern) -> BTreeSet<[Vec<u8>; 4]> {
    let b = [&pat.s, &pat.p, &pat.o, &pat.g].map(|t| t.as_ref().map(term::token_variants));
    rows.iter()
        .filter(|r| {
            (0..4).all(|c| b[c].as_ref().is_none_or(|vs| vs.iter().any(|v| v.as_bytes() == &r[c][..])))
        })
        .cloned()
        .collect()
}

fn tok(t: &[u8]) -> Term {
    term::parse_token(std::str::from_utf8(t).unwrap()).unwrap()
}

#[test]
fn lookups_equal_a_full_scan_with_sidecars_and_without() {
    let dir = tempfile::tempdir().unwrap();
    let nq = write(dir.path(), "g.nq", &generated(40_000));
    let out = dir.path().join("chunk");
    import_with(vec![nq], &out, |o| o.base.row_group_size = 4096);
    let store = Store::open(&out).unwrap();
    assert!(store.sidecars.problems().is_empty(), "{:?}", store.sidecars.problems());
    let rows = all_rows(&store.base);
    let cache = ColumnCache::new(8 << 20);
    let mut patterns = vec![Pattern { s: Some(Term::Iri("http://nobody".into())), ..Default::default() }];
    for (i, r) in rows.iter().enumerate().step_by(997) {
        let t: [Term; 4] = std::array::from_fn(|c| tok(&r[c]));
        patterns.push(Pattern { s: Some(t[0].clone()), ..Default::default() });
        patterns.push(Pattern { p: Some(t[1].clone()), ..Default::default() });
        patterns.push(Pattern { o: Some(t[2].clone()), ..Default::default() });
        patterns.push(Pattern { p: Some(t[1].clone()), o: Some(t[2].clone()), ..Default::default() });
        patterns.push(Pattern {
            s: Some(t[0].clone()),
            p: Some(t[1].clone()),
            g: Some(t[3].clone()),
            ..Default::default()
        });
        if i % 3 == 0 {
            patterns.push(Pattern { g: Some(t[3].clone()), ..Default::default() });
        }
    }
    let mut pruned = 0;
    for pat in &patterns {
        let (got, ex) = store.quads_for_pattern(pat, &cache).unwrap();
        let got: BTreeSet<[Vec<u8>; 4]> = got.to_vecs().unwrap().into_iter().collect();
        assert_eq!(got, brute(&rows, pat), "{pat:?}");
        pruned += ex.pruned_by_presence + ex.pruned_by_s_offsets + ex.pruned_by_po_presence;
        if pat.s.is_some() && !got.is_empty() {
            assert!(ex.decoded_row_groups <= 2, "a bound subject narrows to its row groups: {ex:?}");
            assert!(ex.positions_from.contains(&".s.offsets"));
        }
    }
    assert!(pruned > 0);
    let (_, ex) = store.quads_for_pattern(&patterns[0], &cache).unwrap();
    assert_eq!((ex.absent_in_dict, ex.decoded_row_groups, ex.cache_misses), (Some("s"), 0, 0));

    // Without any sidecar the same answers come back, pruned by statistics.
    for s in sidecars::SUFFIXES {
        std::fs::remove_file(out.join(format!("v1/data.cottas{s}"))).unwrap();
    }
    let bare = Store::open(&out).unwrap();
    assert_eq!(bare.sidecars.problems().len(), 11);
    let cache = ColumnCache::new(8 << 20);
    let mut by_stats = 0;
    for pat in &patterns {
        let (got, ex) = bare.quads_for_pattern(pat, &cache).unwrap();
        let got: BTreeSet<[Vec<u8>; 4]> = got.to_vecs().unwrap().into_iter().collect();
        assert_eq!(got, brute(&rows, pat), "{pat:?} without sidecars");
        by_stats += ex.pruned_by_statistics;
    }
    assert!(by_stats > 0, "min/max statistics prune sorted subjects");

    // `index` rebuilds them, byte-identical to the import's.
    let o = bin().arg("index").arg(&out).output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&o.stdout).matches("was missing: written").count(), 11);
    let again = bin().arg("index").arg(&out).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&again.stdout).matches("ok, kept").count(), 11);
}

#[test]
fn a_bound_literal_is_found_whichever_producer_escaped_it() {
    let dir = tempfile::tempdir().unwrap();
    let v = dir.path().join("v1");
    std::fs::create_dir_all(&v).unwrap();
    let lit = Term::Literal(Literal::simple("tab\there\u{7}"));
    let mut rows = Vec::new();
    for (i, esc) in Escaping::ALL.iter().enumerate() {
        rows.push([
            format!("<http://e/s{i}>"),
            "<http://e/p>".to_string(),
            term::render(&lit, *esc),
            "DEFAULT".to_string(),
        ]);
    }
    rows.sort();
    let sizes = write_base(&v.join("data.cottas"), &rows, &BaseOptions::default()).unwrap();
    for (suffix, bytes) in sidecars::build(&rows, &sizes).files() {
        std::fs::write(v.join(format!("data.cottas{suffix}")), bytes).unwrap();
    }
    let store = Store::open(&v).unwrap();
    let (got, _) = store
        .quads_for_pattern(&Pattern { o: Some(lit), ..Default::default() }, &ColumnCache::new(1 << 20))
        .unwrap();
    assert_eq!(got.len(), 3, "pycottas, factoidal and oxrdf renderings all match");
}

#[test]
fn damaged_sidecars_are_not_used_and_answers_stay_right() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("chunk");
    import_with(vec![sample()], &out, |_| {});
    // A presence file for the wrong number of row groups.
    let mut b = std::fs::read(out.join("v1/data.cottas.s.presence")).unwrap();
    b[8] = 9;
    std::fs::write(out.join("v1/data.cottas.s.presence"), &b).unwrap();
    std::fs::write(out.join("v1/data.cottas.o.dict"), b"COTD").unwrap();
    let store = Store::open(&out).unwrap();
    let sc = &store.sidecars;
    assert!(sc.presence(0).is_none() && sc.dict(2).is_none());
    // What depends on the broken .o.dict is not trusted either.
    assert!(sc.presence(2).is_none() && sc.po_presence().is_none());
    assert!(sc.presence(1).is_some() && sc.p_offsets().is_some() && sc.s_offsets().is_some());
    assert_eq!(sc.problems().len(), 4, "{:?}", sc.problems());
    let pat = Pattern { o: Some(Term::Literal(Literal::simple("Bob"))), ..Default::default() };
    let (got, _) = store.quads_for_pattern(&pat, &ColumnCache::new(1 << 20)).unwrap();
    assert_eq!(got.len(), 1);
}

#[test]
fn a_stale_dictionary_fails_the_lookup_clearly_instead_of_returning_rows() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("chunk");
    import_with(vec![sample()], &out, |_| {});
    // Same length, still sorted, dimensions unchanged: only the content is stale.
    let p = out.join("v1/data.cottas.o.dict");
    let b = std::fs::read(&p).unwrap();
    let at = b.windows(5).position(|w| w == b"\"Bob\"").unwrap();
    let mut b2 = b.clone();
    b2[at + 3] = b'c';
    std::fs::write(&p, &b2).unwrap();
    // With the digest file, the stale dictionary is refused on open and the
    // lookup answers from the base alone.
    let store = Store::open(&out).unwrap();
    assert!(store.sidecars.dict(2).is_none(), "{:?}", store.sidecars.problems());
    let pat = Pattern { o: Some(Term::Literal(Literal::simple("Bob"))), ..Default::default() };
    assert_eq!(store.quads_for_pattern(&pat, &ColumnCache::new(1 << 20)).unwrap().0.len(), 1);
    // A store from another producer has no digests: the read path itself notices.
    std::fs::remove_file(out.join("v1/cottas-tui.digests.json")).unwrap();
    let store = Store::open(&out).unwrap();
    assert!(store.sidecars.problems().is_empty(), "structurally valid");
    let pat = Pattern { p: Some(Term::Iri("https://example.org/name".into())), ..Default::default() };
    let err =
        store.quads_for_pattern(&pat, &ColumnCache::new(1 << 20)).err().expect("a clear error").to_string();
    assert!(err.contains("is not in .o.dict") && err.contains("cottas-tui index"), "{err}");
}

#[test]
fn sidecars_streamed_during_import_equal_those_rebuilt_from_the_base() {
    let dir = tempfile::tempdir().unwrap();
    let ttl = write(dir.path(), "b.ttl", "@prefix : <http://e/> .\n:a :knows [ :name \"x\" ] .\n");
    let nq = write(dir.path(), "g.nq", &generated(25_000));
    let out = dir.path().join("chunk");
    import_with(vec![nq, ttl], &out, |o| o.base.row_group_size = 3000);
    let o = bin().arg("index").arg(&out).output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(text.matches("ok, kept").count(), 11, "{text}");
}

#[test]
fn the_fast_chunk_decoder_agrees_with_the_parquet_crate() {
    let dir = tempfile::tempdir().unwrap();
    // Several row groups, dictionary and DELTA_LENGTH_BYTE_ARRAY columns,
    // escapes and language tags, the default graph and named graphs.
    let nq = write(dir.path(), "g.nq", &generated(30_000));
    let out = dir.path().join("chunk");
    import_with(vec![nq], &out, |o| o.base.row_group_size = 4_096);
    let store = Store::open(&out).unwrap();
    assert!(store.base.num_row_groups() > 5);
    assert_eq!(common::fast_decoder_agrees(&store), 4 * store.base.num_row_groups());

    // Every column dictionary-encoded, then every column DELTA_LENGTH_BYTE_ARRAY.
    let rows = all_rows(&store.base);
    for dictionary in [[true; 4], [false; 4]] {
        let v = dir.path().join(format!("d{}", dictionary[0]));
        std::fs::create_dir_all(&v).unwrap();
        let opts = BaseOptions { row_group_size: 5_000, dictionary, ..BaseOptions::default() };
        write_base(&v.join("data.cottas"), &rows, &opts).unwrap();
        let o = bin().arg("index").arg(&v).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
        let s = Store::open(&v).unwrap();
        assert_eq!(common::fast_decoder_agrees(&s), 4 * s.base.num_row_groups(), "{dictionary:?}");
    }

    // Another producer's pages of at most 64 rows: a sparse read skips the
    // pages without a wanted row, and reads runs and bit-packed groups at
    // the wanted rows alone.
    let v = dir.path().join("paged/v1");
    let text: Vec<[String; 4]> =
        rows.iter().map(|r| r.clone().map(|b| String::from_utf8(b).unwrap())).collect();
    common::foreign_base_paged(&v, &text, 2_000, Some(64));
    let o = bin().arg("index").arg(&v).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let s = Store::open(&v).unwrap();
    assert_eq!(common::fast_decoder_agrees(&s), 4 * s.base.num_row_groups());

    // The file pycottas (through DuckDB) wrote, once we have indexed it.
    let v = dir.path().join("py/v1");
    std::fs::create_dir_all(&v).unwrap();
    std::fs::copy(common::pycottas_small("cottas"), v.join("data.cottas")).unwrap();
    assert!(bin().arg("index").arg(&v).output().unwrap().status.success());
    let s = Store::open(&v).unwrap();
    assert_eq!(common::fast_decoder_agrees(&s), 4 * s.base.num_row_groups());
}

/// An N-Quads text over 8 MiB (the size where parsing splits across threads)
/// with blank nodes and named graphs throughout, and `bad` lines replaced by
/// malformed statements.
fn large_nq_with_blanks(bad: &[usize]) -> String {
    let mut s = String::new();
    let mut line = 0;
    while s.len() < (9 << 20) {
        line += 1;
        if bad.contains(&line) {
            s.push_str("<http://e/broken> <http://e/p> .\n");
            continue;
        }
        let i = line;
        let g = if i % 3 == 0 { String::new() } else { format!(" <http://e/g{}>", i % 4) };
        match i % 5 {
            0 => s.push_str(&format!("_:n{} <http://e/next> _:n{}{g} .\n", i % 9000, (i + 1) % 9000)),
            1 => s.push_str(&format!("<http://e/s{i}> <http://e/label> \"tab\\t {i}\"@en{g} .\n")),
            2 => s.push_str(&format!("<http://e/s{}> <http://e/knows> _:k{}{g} .\n", i / 2, i % 777)),
            _ => s.push_str(&format!(
                "<http://e/s{}> <http://e/p{}> <http://e/o{}>{g} .\n",
                i / 3,
                i % 7,
                i % 1000
            )),
        }
    }
    s
}

#[test]
fn parsing_on_several_threads_changes_nothing_in_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let nq = write(dir.path(), "big.nq", &large_nq_with_blanks(&[]));
    let one = dir.path().join("one");
    let three = dir.path().join("three");
    let a = import_with(vec![nq.clone()], &one, |o| o.threads = 1);
    let b = import_with(vec![nq], &three, |o| o.threads = 3);
    assert_eq!((a.parsed, a.distinct), (b.parsed, b.distinct));
    for f in std::fs::read_dir(one.join("v1")).unwrap() {
        let name = f.unwrap().file_name();
        if name != "summary.json" {
            let x = std::fs::read(one.join("v1").join(&name)).unwrap();
            assert_eq!(x, std::fs::read(three.join("v1").join(&name)).unwrap(), "{name:?} differs");
        }
    }
    // Each label keeps its spelling behind the document's prefix: one node
    // per label of the file, whichever unit and thread it was parsed in.
    let rows = all_rows(&Base::open(&three.join("v1/data.cottas")).unwrap());
    let stored: BTreeSet<&[u8]> =
        rows.iter().flat_map(|r| [&r[0][..], &r[2][..]]).filter(|t| t.starts_with(b"_:")).collect();
    let text = large_nq_with_blanks(&[]);
    let written: BTreeSet<String> = text
        .split([' ', '\n'])
        .filter_map(|t| t.strip_prefix("_:"))
        .map(|label| format!("_:b0_{label}"))
        .collect();
    assert_eq!(stored, written.iter().map(|t| t.as_bytes()).collect());
    assert!(rows.iter().filter(|r| r[0].starts_with(b"_:")).count() > 1_000);
}

#[test]
fn a_label_names_one_blank_node_per_document() {
    let dir = tempfile::tempdir().unwrap();
    let line = "_:x <http://e/p> _:y .\n_:x <http://e/q> \"v\" .\n";
    let first = write(dir.path(), "first.nq", line);
    let second = write(dir.path(), "second.nt", line);
    let out = dir.path().join("out");
    import_with(vec![first, second], &out, |_| {});
    let rows = all_rows(&Base::open(&out.join("v1/data.cottas")).unwrap());
    let subjects: BTreeSet<&[u8]> = rows.iter().map(|r| &r[0][..]).collect();
    assert_eq!(subjects, [&b"_:b0_x"[..], b"_:b1_x"].into_iter().collect(), "{rows:?}");
    assert!(rows.iter().any(|r| r[0] == b"_:b1_x" && r[2] == b"_:b1_y"));
}

#[test]
fn errors_in_a_later_slice_report_the_line_in_the_whole_file() {
    let dir = tempfile::tempdir().unwrap();
    let text = large_nq_with_blanks(&[100_000, 150_000]);
    let lines = text.lines().count();
    assert!(lines > 150_000 && lines < 200_000, "{lines} lines: the bad lines must sit in later slices");
    let nq = write(dir.path(), "bad.nq", &text);
    for threads in ["1", "3"] {
        let out = dir.path().join(format!("out{threads}"));
        let o =
            bin().args(["import", "--threads", threads]).arg(&nq).arg("--out").arg(&out).output().unwrap();
        assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("bad.nq:100000:"), "threads={threads}: the first bad line in {err}");
        assert!(!out.exists());
        let o = bin()
            .args(["import", "--lenient", "--threads", threads])
            .arg(&nq)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("skipped 2 malformed statements"), "{err}");
        let first = err.find("bad.nq:100000:").expect("first error listed");
        let second = err.find("bad.nq:150000:").expect("second error listed");
        assert!(first < second, "errors in file order: {err}");
    }
}

fn gzip(text: &str) -> Vec<u8> {
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(text.as_bytes()).unwrap();
    gz.finish().unwrap()
}

#[test]
fn compressed_and_piped_inputs_parse_on_several_threads_with_the_same_result() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let text = large_nq_with_blanks(&[]);
    let plain = write(dir.path(), "big.nq", &text);
    let gz = gzip(&text);
    std::fs::write(dir.path().join("big.nq.gz"), &gz).unwrap();
    let reference = dir.path().join("plain");
    import_with(vec![plain.clone()], &reference, |o| o.threads = 3);
    let same_files = |other: &Path| {
        for f in std::fs::read_dir(reference.join("v1")).unwrap() {
            let name = f.unwrap().file_name();
            if name != "summary.json" {
                let x = std::fs::read(reference.join("v1").join(&name)).unwrap();
                assert_eq!(x, std::fs::read(other.join("v1").join(&name)).unwrap(), "{name:?} differs");
            }
        }
    };
    let from_gz = dir.path().join("gz");
    import_with(vec![dir.path().join("big.nq.gz")], &from_gz, |o| o.threads = 3);
    same_files(&from_gz);
    let from_stdin = dir.path().join("stdin");
    let mut child = bin()
        .args(["import", "--quiet", "--threads", "2", "-", "--out"])
        .arg(&from_stdin)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    assert!(child.wait().unwrap().success());
    same_files(&from_stdin);

    // A truncated stream fails naming the file, after the units before it,
    // and leaves nothing behind; a syntax error before the damage wins.
    std::fs::write(dir.path().join("cut.nq.gz"), &gz[..gz.len() * 2 / 3]).unwrap();
    let out = dir.path().join("cut");
    let o = bin()
        .args(["import", "--threads", "3", "cut.nq.gz", "--out", "cut"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_ne!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("cut.nq.gz"), "the file is named: {err}");
    assert!(!out.exists());
    let gz = gzip(&large_nq_with_blanks(&[20_000]));
    std::fs::write(dir.path().join("badcut.nq.gz"), &gz[..gz.len() / 2]).unwrap();
    let o = bin()
        .args(["import", "--threads", "3", "badcut.nq.gz", "--out", "x"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("badcut.nq.gz:20000:"), "the syntax error comes first: {err}");
    assert_eq!(
        std::fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().starts_with('.'))
            .count(),
        0,
        "no temp dir left behind"
    );
}

/// Opening reads no sidecar: each is mapped, checked against its digest and
/// decoded when a read first needs it. A subject lookup needs the
/// dictionaries, `.s.presence` and `.s.offsets`, not the predicate and
/// object indexes; a damaged sidecar nothing asks for costs nothing and is
/// still reported by `problems()`.
#[test]
fn opening_loads_no_sidecar_and_a_read_loads_only_what_it_needs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("chunk");
    import_with(vec![sample()], &out, |_| {});
    let po = out.join("v1/data.cottas.po.presence");
    let mut b = std::fs::read(&po).unwrap();
    let last = b.len() - 1;
    b[last] ^= 0xff;
    std::fs::write(&po, &b).unwrap();
    let store = Store::open(&out).unwrap();
    assert_eq!(store.sidecars.loaded(), 0);
    let pat = Pattern { s: Some(Term::Iri("https://example.org/alice".into())), ..Default::default() };
    let (rows, ex) = store.quads_for_pattern(&pat, &ColumnCache::new(1 << 20)).unwrap();
    assert!(!rows.is_empty(), "{ex:?}");
    assert!(store.sidecars.loaded() < 11, "{}", store.sidecars.loaded());
    let problems = store.sidecars.problems();
    assert_eq!(store.sidecars.loaded(), 11);
    assert!(problems.len() == 1 && problems[0].contains(".po.presence"), "{problems:?}");
}

/// Per-block digests (`cottas-tui.blocks`): a damaged byte deep inside a
/// sidecar fails exactly the reads that touch its block, with the file and
/// byte range; reads elsewhere answer, and the store opens without hashing
/// anything whole. Without the block table the whole-file check refuses the
/// sidecar as before and the answer comes from the base.
#[test]
fn a_damaged_sidecar_block_fails_the_reads_that_touch_it_and_only_those() {
    let dir = tempfile::tempdir().unwrap();
    let nq = write(dir.path(), "g.nq", &generated(40_000));
    let out = dir.path().join("chunk");
    import_with(vec![nq], &out, |o| o.base.row_group_size = 4096);
    assert!(out.join("v1/cottas-tui.blocks").exists());
    let dict_path = out.join("v1/data.cottas.s.dict");
    let clean = std::fs::read(&dict_path).unwrap();
    assert!(clean.len() > 8 * 4096, "the dictionary spans many blocks");
    // Damage one token byte in the middle of the token area, and find which
    // subject owns it (ids are ranks; tokens are laid out in id order).
    let at = clean.len() - clean.len() / 4;
    let victim_block = at / 4096;
    let mut bad = clean.clone();
    bad[at] ^= 0x01;
    std::fs::write(&dict_path, &bad).unwrap();
    let subject_at = |store: &Store, id: u32| store.sidecars.dict(0).unwrap().token(id).map(<[u8]>::to_vec);

    let store = Store::open(&out).unwrap();
    let d = store.sidecars.dict(0).expect("the header is intact, so the dictionary loads");
    let blocks = clean.len().div_ceil(4096) as u64;
    assert!(
        d.blocks_checked() <= 3,
        "opening reads the header and two bounds: {} of {blocks}",
        d.blocks_checked()
    );
    // The first subject's token is far from the damage: it reads.
    let first = subject_at(&store, 0).unwrap();
    let pat = Pattern { s: Some(tok(&first)), ..Default::default() };
    assert!(!store.quads_for_pattern(&pat, &ColumnCache::new(1 << 20)).unwrap().0.is_empty());
    // A subject whose token lies in the damaged block: any read of it fails,
    // naming the file and the block's byte range.
    let victim = (0..d.len() as u32)
        .rev()
        .find(|&id| matches!(d.token(id), Err(ref e) if e.to_string().contains(&format!("{}..", victim_block * 4096))))
        .expect("some token lies in the damaged block");
    let e = d.token(victim).unwrap_err().to_string();
    assert!(e.contains("data.cottas.s.dict") && e.contains("block digest"), "{e}");
    // verify names the block.
    let o = bin().arg("verify").arg(&out).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(text.contains("blocks") && text.contains(&format!("bytes {}..", victim_block * 4096)), "{text}");

    // Without the block table (a store from an earlier release), the
    // whole-file digest refuses the dictionary and lookups still answer.
    std::fs::remove_file(out.join("v1/cottas-tui.blocks")).unwrap();
    let store = Store::open(&out).unwrap();
    assert!(store.sidecars.dict(0).is_none(), "{:?}", store.sidecars.problems());
    assert!(!store.quads_for_pattern(&pat, &ColumnCache::new(1 << 20)).unwrap().0.is_empty());
    // `index` rebuilds the sidecars and writes the block table again.
    std::fs::write(&dict_path, &clean).unwrap();
    let o = bin().args(["index"]).arg(&out).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.join("v1/cottas-tui.blocks").exists());
    let o = bin().arg("verify").arg(&out).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stdout));
}
