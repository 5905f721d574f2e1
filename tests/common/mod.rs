//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

pub mod manifest;
pub mod server;

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The W3C RDF test suites, copied into the repository with their licence.
pub fn w3c_suites() -> PathBuf {
    repo().join("fixtures/w3c-rdf-tests")
}

/// A pycottas-made base and its N-Quads input (fixtures/reference-data).
pub fn pycottas_small(ext: &str) -> PathBuf {
    repo().join("fixtures/reference-data/pycottas_small").with_extension(ext)
}

/// Parses `"0000  44 4c ..  ascii"` hex dumps and bare hex into bytes.
pub fn hex(s: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for line in s.lines() {
        let line = line.trim();
        let body = match line.split_once("  ") {
            Some((addr, rest)) if addr.len() == 4 && addr.chars().all(|c| c.is_ascii_hexdigit()) => rest,
            _ => line,
        };
        for tok in body.split_whitespace() {
            if tok.len() == 2 && tok.chars().all(|c| c.is_ascii_hexdigit()) {
                out.push(u8::from_str_radix(tok, 16).unwrap());
            } else {
                break; // the ASCII column
            }
        }
    }
    out
}

/// Little-endian assembly, independent of the crate's encoders.
#[derive(Default)]
pub struct Le(pub Vec<u8>);
impl Le {
    pub fn b(mut self, bytes: &[u8]) -> Self {
        self.0.extend_from_slice(bytes);
        self
    }
    pub fn u32(self, v: u32) -> Self {
        self.b(&v.to_le_bytes())
    }
    pub fn u64(self, v: u64) -> Self {
        self.b(&v.to_le_bytes())
    }
}

/// The rows of `cottas_sample.nq` as term tokens, SPOG-sorted (reference §15.3).
/// The sample's tokens contain no spaces, so splitting on whitespace is exact.
pub fn sample_rows() -> Vec<[String; 4]> {
    let text = include_str!("../../fixtures/cottas_sample.nq");
    let mut rows: Vec<[String; 4]> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let t: Vec<&str> = l.split_whitespace().collect();
            let g = if t.len() == 5 { t[3].to_string() } else { "DEFAULT".to_string() };
            [t[0].to_string(), t[1].to_string(), t[2].to_string(), g]
        })
        .collect();
    rows.sort();
    rows
}

/// Writes `bytes` to the fixture when COTTAS_BLESS=1, else checks it matches.
pub fn check_fixture(rel: &str, bytes: &[u8]) {
    let path = repo().join("fixtures").join(rel);
    if std::env::var("COTTAS_BLESS").as_deref() == Ok("1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, bytes).unwrap();
    }
    let on_disk =
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e} (run with COTTAS_BLESS=1)", path.display()));
    assert_eq!(on_disk, bytes, "fixture {rel} differs from the expected bytes");
}

/// The binary under test.
pub fn bin() -> std::process::Command {
    std::process::Command::new(env!("CARGO_BIN_EXE_cottas-tui"))
}

/// Runs `cmd`, which must succeed (its stderr is the failure message).
pub fn run_ok(cmd: &mut std::process::Command) -> std::process::Output {
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// `cottas-tui update CHUNK -e TEXT`, which must succeed.
pub fn update(chunk: &std::path::Path, text: &str) {
    run_ok(bin().arg("update").arg(chunk).args(["-e", text]));
}

/// A chunk dir `dir/chunk` imported from fixtures/cottas_sample.nq.
pub fn sample_store(dir: &std::path::Path) -> PathBuf {
    let out = dir.join("chunk");
    let src = repo().join("fixtures/cottas_sample.nq");
    cottas_tui::import::import(&cottas_tui::import::ImportOptions::new(vec![src], out.clone()), |_| {})
        .unwrap();
    out
}

/// A chunk dir `dir/chunk` imported from `nquads` (written to `dir/input.nq`).
pub fn store_of(dir: &std::path::Path, nquads: &str) -> PathBuf {
    let (src, out) = (dir.join("input.nq"), dir.join("chunk"));
    std::fs::write(&src, nquads).unwrap();
    cottas_tui::import::import(&cottas_tui::import::ImportOptions::new(vec![src], out.clone()), |_| {})
        .unwrap();
    out
}

/// splitmix64: deterministic schedules for the crash and fault tests, so a
/// failure can be replayed from its seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// Decodes every column chunk of `store` both ways — the fast id decoder
/// (and, for subjects, `.s.offsets`) and the parquet crate — and asserts the
/// ids agree. Returns how many chunks the fast decoder took, so a caller can
/// insist that the fast path really ran.
pub fn fast_decoder_agrees(store: &cottas_tui::store::versions::open::Store) -> usize {
    let base = &store.base;
    let mut fast_chunks = 0;
    for rg in 0..base.num_row_groups() {
        for col in 0..4 {
            let dict = store.sidecars.dict(col).expect("the store has dictionaries");
            let slow: Vec<u32> = base
                .read_column(rg, col)
                .unwrap()
                .iter()
                .map(|v| dict.find(v.data()).unwrap().expect("every cell is in the dictionary"))
                .collect();
            let mut lookup = |t: &[u8]| dict.find(t).unwrap();
            if let Some(fast) = base.read_ids(rg, col, &mut lookup).unwrap() {
                assert_eq!(fast, slow, "fast decoder, row group {rg} column {col}");
                fast_chunks += 1;
            }
            // Sparse reads: every 7th row, the last row, the first, and
            // random selections (most pages then hold no wanted row).
            let rows = slow.len() as u32;
            let mut at: Vec<u32> = (0..rows).step_by(7).collect();
            at.push(rows.saturating_sub(1));
            at.dedup();
            let mut rng = Rng(rg as u64 * 4 + col as u64);
            let random: Vec<Vec<u32>> = (0..3)
                .map(|k| {
                    let mut pick: Vec<u32> =
                        (0..1 + k * 5).map(|_| (rng.next() % u64::from(rows.max(1))) as u32).collect();
                    pick.sort_unstable();
                    pick.dedup();
                    pick
                })
                .collect();
            let fast_took = base.read_ids(rg, col, &mut lookup).unwrap().is_some();
            for want in
                [&at[..], &at[..1], &at[at.len() - 1..]].into_iter().chain(random.iter().map(|r| &r[..]))
            {
                let sparse = base.read_ids_at(rg, col, want, &mut lookup).unwrap();
                assert!(
                    sparse.is_some() || !fast_took,
                    "sparse declined where whole chunks decode, {rg}/{col}"
                );
                if let Some(sparse) = sparse {
                    let picked: Vec<u32> = want.iter().map(|&r| slow[r as usize]).collect();
                    assert_eq!(sparse, picked, "sparse decoder, row group {rg} column {col}, rows {want:?}");
                }
            }
            if col == 0 {
                if let Some(so) = store.sidecars.s_offsets() {
                    let by_offsets = so.ids_for_rows(base.rg_start(rg), base.rg_rows(rg)).unwrap();
                    assert_eq!(by_offsets.as_ref(), Some(&slow), ".s.offsets ids, row group {rg}");
                    // Ascending rows gallop; a row below the last searches again.
                    let rows_of = |at: &mut dyn Iterator<Item = &u32>| -> (Vec<u64>, Vec<u32>) {
                        at.map(|&r| (base.rg_start(rg) + u64::from(r), slow[r as usize])).unzip()
                    };
                    for (rows, want) in [rows_of(&mut at.iter()), rows_of(&mut at.iter().rev())] {
                        let ids = so.ids_of_rows(rows.iter().copied()).unwrap();
                        assert_eq!(ids, Some(want), ".s.offsets ids of rows {rows:?}, row group {rg}");
                    }
                }
            }
        }
    }
    fast_chunks
}

/// The venv's Python (`COTTAS_PYTHON`, else `.venv/bin/python`) if it can
/// import every module in `modules` (comma-separated, as in an `import`);
/// otherwise [`missing`] and `None`.
pub fn venv_python(modules: &str) -> Option<PathBuf> {
    let p = std::env::var_os("COTTAS_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join(".venv/bin/python"));
    let import = format!("import {modules}");
    let ok = std::process::Command::new(&p).args(["-c", &import]).output().is_ok_and(|o| o.status.success());
    if ok {
        return Some(p);
    }
    missing(&format!("{modules} not importable from {}; run scripts/test to install them", p.display()));
    None
}

/// A test's missing prerequisite (a venv, tmux, Java). Outside CI the test
/// prints a NOTICE and skips; with `CI=true` a missing prerequisite is a
/// failure, so CI can never pass by skipping.
///
/// When `COTTAS_SKIP_LOG` names a file (scripts/test sets it), the test's
/// name and the reason are appended to it as one line, so the run can end
/// with one summary of everything that skipped, whichever binary it was in.
pub fn missing(what: &str) {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("CI=true and {what}: CI must install what its tests need (scripts/test)");
    }
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    eprintln!("NOTICE: {what}; skipping {test}");
    if let Some(log) = std::env::var_os("COTTAS_SKIP_LOG") {
        use std::io::Write;
        let line = format!("{test}\t{}\n", what.replace(['\t', '\n'], " "));
        // One write per line with O_APPEND: test threads and binaries do not
        // interleave within a line.
        let file = std::fs::OpenOptions::new().create(true).append(true).open(log);
        let _ = file.and_then(|mut f| f.write_all(line.as_bytes()));
    }
}

/// Prints one line that cargo's capture does not swallow: the W3C suites
/// name every test they run, so a reader of the test output sees which
/// ones ran. (`println!` inside a test is captured; a write to the stdout
/// handle is not.)
pub fn announce(line: &str) {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(format!("{line}\n").as_bytes());
}

/// Writes `version_dir/data.cottas` holding `rows` in the order given
/// (another producer's order, or cells no importer would write), in row
/// groups of `rg`, with no sidecars: written with the parquet crate's own
/// writer, as a producer other than this program would.
pub fn foreign_base(version_dir: &std::path::Path, rows: &[[String; 4]], rg: usize) {
    foreign_base_paged(version_dir, rows, rg, None)
}

/// [`foreign_base`] with at most `page_rows` rows a data page (the parquet
/// crate's writer otherwise puts a small row group's column in one page).
pub fn foreign_base_paged(
    version_dir: &std::path::Path,
    rows: &[[String; 4]],
    rg: usize,
    page_rows: Option<usize>,
) {
    use parquet::data_type::{ByteArray, ByteArrayType};
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::parser::parse_message_type;
    use std::sync::Arc;
    std::fs::create_dir_all(version_dir).unwrap();
    let schema = "message quads { required binary s (STRING); required binary p (STRING); \
                  required binary o (STRING); required binary g (STRING); }";
    let schema = Arc::new(parse_message_type(schema).unwrap());
    let mut props = WriterProperties::builder()
        .set_compression(parquet::basic::Compression::ZSTD(Default::default()))
        .set_created_by("another producer".into());
    if let Some(n) = page_rows {
        props = props.set_data_page_row_count_limit(n).set_write_batch_size(n);
    }
    let props = props.build();
    let file = std::fs::File::create(version_dir.join("data.cottas")).unwrap();
    let mut writer = SerializedFileWriter::new(file, schema, Arc::new(props)).unwrap();
    for group in rows.chunks(rg) {
        let mut row_group = writer.next_row_group().unwrap();
        for c in 0..4 {
            let values: Vec<ByteArray> =
                group.iter().map(|r| ByteArray::from(r[c].as_bytes().to_vec())).collect();
            let mut col = row_group.next_column().unwrap().unwrap();
            col.typed::<ByteArrayType>().write_batch(&values, None, None).unwrap();
            col.close().unwrap();
        }
        row_group.close().unwrap();
    }
    writer.close().unwrap();
}

/// No temp dir of a compaction is left in `store`.
pub fn assert_no_compaction_leftovers(store: &std::path::Path) {
    let leftovers: Vec<String> = std::fs::read_dir(store)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("compact-tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// A query's answer over `snaps` (one chunk, or a corpus of them) as TSV
/// lines, the rows sorted unless the query orders them, and whether a
/// shortcut gave it.
pub fn tsv_answer(
    snaps: &[&cottas_tui::view::Snapshot],
    q: &str,
    union: bool,
    no_shortcuts: bool,
) -> (Vec<String>, bool) {
    use cottas_tui::sparql::run::{run_query, OutputFormat, QueryOptions};
    let opts = QueryOptions {
        format: Some(OutputFormat::Tsv),
        union_default_graph: union,
        no_shortcuts,
        ..QueryOptions::default()
    };
    let views: Vec<_> = snaps.iter().map(|s| s.view()).collect();
    let mut out = Vec::new();
    let summary = run_query(&views, q, &opts, &mut out).unwrap_or_else(|e| panic!("{q}: {e}"));
    let mut lines: Vec<String> = String::from_utf8(out).unwrap().lines().map(str::to_string).collect();
    if !q.contains("ORDER BY") && lines.len() > 1 {
        lines[1..].sort();
    }
    (lines, summary.shortcut)
}
