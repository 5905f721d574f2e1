//! SIGKILL a real `cottas-tui compact` 200 times on one store: at random
//! moments, and paused at every step boundary (publish, lock, log rewrite,
//! flip, truncate, after truncate) so each is hit. After every kill, five
//! facts hold and the store shows exactly the pre- or the post-compaction
//! view: an added row, a removed base row, a cleared graph, an untouched
//! graph, and a write made after the compaction started. Then the next
//! compaction succeeds and the store checks clean.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use cottas_tui::compact::{self, CompactOptions};
use cottas_tui::import::{self, ImportOptions};
use cottas_tui::sparql::update::Updater;
use cottas_tui::store::read::ColumnCache;
use cottas_tui::store::versions;
use cottas_tui::store::versions::open::Store;
use cottas_tui::triage::verify::{self, VerifyOptions};
use cottas_tui::view::overlay::Overlay;

const KILLS: usize = 200;
const EX: &str = "https://example.org";
const POINTS: [&str; 6] = [
    "compact-before-publish",
    "compact-before-lock",
    "compact-before-log-rewrite",
    "compact-before-flip",
    "compact-before-truncate",
    "compact-after-truncate",
];

use common::Rng;

fn write_base(path: &Path) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for i in 0..KILLS {
        writeln!(f, "<{EX}/base{i}> <{EX}/p> \"{i}\" .").unwrap();
        writeln!(f, "<{EX}/c{i}> <{EX}/p> \"{i}\" <{EX}/cleared{i}> .").unwrap();
    }
    for i in 0..50 {
        writeln!(f, "<{EX}/u{i}> <{EX}/p> \"{i}\" <{EX}/untouched> .").unwrap();
    }
    for i in 0..3000 {
        writeln!(f, "<{EX}/filler{}> <{EX}/q{}> \"filler {i}\" .", i % 97, i % 5).unwrap();
    }
}

/// The base of `write_base` imported into `dir/chunk`.
fn imported_chunk(dir: &Path) -> std::path::PathBuf {
    let nq = dir.join("base.nq");
    write_base(&nq);
    let chunk = dir.join("chunk");
    import::import(&ImportOptions::new(vec![nq], chunk.clone()), |_| {}).unwrap();
    chunk
}

/// Rows of the view matching a pattern (base ⊕ delta), via the read path.
struct View {
    store: Store,
    overlay: Overlay,
    cache: ColumnCache,
}

impl View {
    fn open(chunk: &Path) -> View {
        let store = Store::open(chunk).unwrap();
        let cache = ColumnCache::new(16 << 20);
        let overlay = Overlay::load(&store, &cache).unwrap();
        View { store, overlay, cache }
    }
    fn count(&self, s: Option<&str>, g: Option<&str>) -> usize {
        let explain = Default::default();
        let ds = cottas_tui::sparql::dataset::StoreDataset::single(
            &self.store,
            &self.overlay,
            &self.cache,
            &explain,
        );
        let q = match (s, g) {
            (Some(s), None) => format!("SELECT (COUNT(*) AS ?n) {{ <{EX}/{s}> ?p ?o }}"),
            (None, Some(g)) => format!("SELECT (COUNT(*) AS ?n) {{ GRAPH <{EX}/{g}> {{ ?s ?p ?o }} }}"),
            _ => "SELECT (COUNT(*) AS ?n) { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } }".to_string(),
        };
        let q = spargebra::SparqlParser::new().parse_query(&q).unwrap();
        let evaluator = spareval::QueryEvaluator::new();
        let Ok(spareval::QueryResults::Solutions(mut sols)) = evaluator.prepare(&q).execute(ds) else {
            panic!()
        };
        let n = sols.next().unwrap().unwrap().get("n").unwrap().clone();
        let oxrdf::Term::Literal(l) = n else { panic!() };
        l.value().parse().unwrap()
    }
}

/// The five facts of iteration `i`, plus the total count.
fn check_facts(chunk: &Path, i: usize, during: bool, total: usize, when: &str) {
    let v = View::open(chunk);
    assert_eq!(v.count(Some(&format!("added{i}")), None), 1, "{when}: the added row");
    assert_eq!(v.count(Some(&format!("base{i}")), None), 0, "{when}: the removed base row");
    assert_eq!(v.count(None, Some(&format!("cleared{i}"))), 0, "{when}: the cleared graph");
    assert_eq!(v.count(None, Some("untouched")), 50, "{when}: the untouched graph");
    assert_eq!(
        v.count(Some(&format!("during{i}")), None),
        usize::from(during),
        "{when}: the write made during compaction"
    );
    assert_eq!(v.count(None, None), total, "{when}: the whole view");
}

/// `verify` (and, when `deep`, `verify --deep`) finds nothing.
fn check_clean(chunk: &Path, deep_too: bool, when: &str) {
    for deep in [false, deep_too] {
        let r = verify::verify(chunk, VerifyOptions { deep, ..VerifyOptions::default() }).unwrap();
        assert!(r.is_clean(), "{when}: verify{}: {:?}", if deep { " --deep" } else { "" }, r.findings);
    }
}

fn wait_for(err: &mut impl BufRead, point: &str) -> bool {
    let mut line = String::new();
    loop {
        line.clear();
        match err.read_line(&mut line) {
            Ok(0) | Err(_) => return false,
            Ok(_) if line.contains(&format!("debug pause at {point}")) => return true,
            Ok(_) => {}
        }
    }
}

fn spawn_compact(chunk: &Path, pauses: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_cottas-tui"))
        .arg("compact")
        .arg(chunk)
        .arg("--quiet")
        .env("COTTAS_TUI_DEBUG_PAUSE", pauses)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn sigkill_during_compaction_leaves_the_pre_or_post_view() {
    let dir = tempfile::tempdir().unwrap();
    let chunk = imported_chunk(dir.path());
    let mut total = View::open(&chunk).count(None, None);

    let mut rng = Rng(0xc0_4ac7);
    let mut hits: BTreeMap<&str, usize> = BTreeMap::new();
    let (mut pre, mut post) = (0, 0);
    for i in 0..KILLS {
        let mut u = Updater::open(&chunk, None).unwrap();
        u.apply(&format!("INSERT DATA {{ <{EX}/added{i}> <{EX}/p> {i} }}")).unwrap();
        u.apply(&format!("DELETE DATA {{ <{EX}/base{i}> <{EX}/p> \"{i}\" }}")).unwrap();
        u.apply(&format!("CLEAR GRAPH <{EX}/cleared{i}>")).unwrap();
        drop(u);
        total -= 1;
        let from = std::fs::read_link(chunk.join("current")).unwrap();

        let during = format!("INSERT DATA {{ <{EX}/during{i}> <{EX}/p> {i} }}");
        let point = POINTS.get(i % (POINTS.len() + 1)).copied();
        let mut child = match point {
            // Paused: a write lands between fold and swap, then the kill.
            Some(p) => {
                // The write goes in at the first pause (the fold is done by then).
                let first = if p == "compact-before-publish" { p } else { "compact-before-lock" };
                let mut child = spawn_compact(&chunk, &format!("{first}=100,{p}=20000"));
                let mut err = BufReader::new(child.stderr.take().unwrap());
                assert!(wait_for(&mut err, first), "kill {i}: no pause at {first}");
                Updater::open(&chunk, Some(Duration::from_secs(10))).unwrap().apply(&during).unwrap();
                if p != first {
                    assert!(wait_for(&mut err, p), "kill {i}: no pause at {p}");
                }
                *hits.entry(p).or_default() += 1;
                child
            }
            // At a random moment, with the write at another random moment.
            None => {
                let child = spawn_compact(&chunk, "");
                std::thread::sleep(Duration::from_micros(rng.next() % 30_000));
                Updater::open(&chunk, Some(Duration::from_secs(10))).unwrap().apply(&during).unwrap();
                std::thread::sleep(Duration::from_micros(rng.next() % 30_000));
                *hits.entry("random").or_default() += 1;
                child
            }
        };
        total += 1;
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();

        let now = std::fs::read_link(chunk.join("current")).unwrap();
        if now == from {
            pre += 1;
        } else {
            post += 1;
        }
        check_facts(&chunk, i, true, total, &format!("kill {i} at {point:?}, current {}", now.display()));

        // The next compaction succeeds, and the store is clean. With nothing
        // to fold, a kill between the flip and the truncation may have left
        // folded batches in the log: `compact` finishes that truncation.
        compact::compact(&chunk, &CompactOptions::default(), |_| {}).unwrap();
        check_facts(&chunk, i, true, total, &format!("after recompacting, kill {i}"));
        check_clean(&chunk, i.is_multiple_of(10), &format!("kill {i}"));
        if i % 10 == 9 && i > 0 {
            versions::gc_apply(&chunk, Some(2), None).unwrap();
        }
    }
    eprintln!(
        "compaction crash test: {KILLS} kills; pre-compaction view {pre} times, post-compaction view {post} times; kills per point: {hits:?}"
    );
    assert!(pre > 0 && post > 0, "both views were observed");
    for p in POINTS {
        assert!(hits.get(p).copied().unwrap_or(0) > 0, "no kill at {p}");
    }
}

/// A chunk whose compaction was SIGKILLed after flipping `current` and
/// before truncating the log, with no write after it: the log still holds
/// the two folded batches, invisible, and `verify` warns `log-shadowed`.
/// Returns the chunk and the number of quads it shows.
fn a_truncation_interrupted(dir: &Path) -> (std::path::PathBuf, usize) {
    let chunk = imported_chunk(dir);
    let mut u = Updater::open(&chunk, None).unwrap();
    u.apply(&format!("INSERT DATA {{ <{EX}/added0> <{EX}/p> 0 }}")).unwrap();
    u.apply(&format!("DELETE DATA {{ <{EX}/base0> <{EX}/p> \"0\" }}")).unwrap();
    drop(u);
    let total = View::open(&chunk).count(None, None);
    let from = std::fs::read_link(chunk.join("current")).unwrap();

    let mut child = spawn_compact(&chunk, "compact-before-truncate=20000");
    let mut err = BufReader::new(child.stderr.take().unwrap());
    assert!(wait_for(&mut err, "compact-before-truncate"));
    child.kill().unwrap();
    child.wait().unwrap();
    assert_ne!(std::fs::read_link(chunk.join("current")).unwrap(), from, "current was flipped");
    let report = verify::verify(&chunk, VerifyOptions::default()).unwrap();
    assert!(report.findings.iter().any(|f| f.check == "log-shadowed"), "{:?}", report.findings);
    assert_eq!(View::open(&chunk).count(None, None), total);
    (chunk, total)
}

/// After the truncation was finished: clean, the same quads, the dropped
/// bytes kept beside the log, and no new version.
fn check_finished(chunk: &Path, total: usize, when: &str) {
    check_clean(chunk, true, when);
    let v = View::open(chunk);
    assert_eq!(v.count(None, None), total, "{when}");
    assert_eq!(v.count(Some("added0"), None), 1, "{when}");
    assert_eq!(v.count(Some("base0"), None), 0, "{when}");
    let saved: Vec<_> = std::fs::read_dir(chunk)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("data.deltalog.cut-at-8."))
        .collect();
    assert_eq!(saved.len(), 1, "{when}: the dropped bytes are kept");
    assert!(saved[0].metadata().unwrap().len() > 0, "{when}");
    assert_eq!(std::fs::read_link(chunk.join("current")).unwrap(), Path::new("v2"), "{when}: no new version");
    assert!(!chunk.join("v3").exists(), "{when}");
}

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_cottas-tui"))
}

/// `cottas-tui compact` has nothing to fold, so it finishes the truncation;
/// run again, it has nothing to do.
#[test]
fn compact_finishes_a_truncation_a_kill_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let (chunk, total) = a_truncation_interrupted(dir.path());
    let run = || bin().arg("compact").arg(&chunk).output().unwrap();
    let out = run();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("2 batches already folded") && text.contains("log emptied"), "{text}");
    check_finished(&chunk, total, "after compact");
    let again = String::from_utf8_lossy(&run().stdout).into_owned();
    assert!(again.contains("nothing to fold") && again.contains("nothing written"), "{again}");
}

/// `corpus compact` does not skip such a chunk (its dry run says what it
/// would do), and a chunk with an empty log is still skipped.
#[test]
fn corpus_compact_finishes_a_truncation_a_kill_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let (chunk, total) = a_truncation_interrupted(dir.path());
    let other = dir.path().join("other");
    import::import(&ImportOptions::new(vec![dir.path().join("base.nq")], other.clone()), |_| {}).unwrap();
    let corpus = |extra: &[&str]| {
        let out = bin().args(["corpus", "compact"]).arg(dir.path()).args(extra).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let dry = corpus(&["--dry-run"]);
    assert!(dry.contains("chunk: would drop the batches an interrupted compaction folded"), "{dry}");
    assert!(dry.contains("result:    no new version; `current` stays v2"), "{dry}");
    assert!(dry.contains("other: skipped, nothing to fold"), "{dry}");
    let text = corpus(&[]);
    assert!(text.contains("chunk: compact: nothing to fold; the log still held 2 batches"), "{text}");
    assert!(text.contains("0 compacted, 1 interrupted compactions finished, 0 failed, 1 skipped"), "{text}");
    check_finished(&chunk, total, "after corpus compact");
    let again = corpus(&[]);
    assert!(again.contains("chunk: skipped, nothing to fold"), "{again}");
}

/// The TUI's compaction (`:compact`, as `c` on the Timeline) offers to
/// finish the truncation instead of refusing with "nothing to fold".
#[test]
fn the_tui_finishes_a_truncation_a_kill_interrupted() {
    use cottas_tui::tui::action::{self, Action};
    use cottas_tui::tui::{command, state::App, worker};
    let dir = tempfile::tempdir().unwrap();
    let (chunk, total) = a_truncation_interrupted(dir.path());
    let mut app = App::new(&chunk, true);
    let effects = app.startup();
    worker::settle(&mut app, effects);
    let effects = command::run_command(&mut app, ":compact");
    worker::settle(&mut app, effects);
    let confirm = app.confirm.as_ref().expect("a confirmation, not a refusal");
    assert_eq!(confirm.title, "Finish an interrupted compaction?", "{}", app.status);
    assert!(confirm.text.contains("shadowed:  2 batches"), "{}", confirm.text);
    let effects = action::update(&mut app, Action::ConfirmYes);
    worker::settle(&mut app, effects);
    assert!(
        app.status.contains("2 batches already folded") && app.status.contains("log emptied"),
        "{}",
        app.status
    );
    check_finished(&chunk, total, "after the TUI's compaction");
    let effects = command::run_command(&mut app, ":compact");
    worker::settle(&mut app, effects);
    assert!(app.confirm.is_none() && app.status.contains("nothing to fold"), "{}", app.status);
}
