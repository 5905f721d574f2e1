//! Maintenance in bounded memory and safe beside writers:
//! - `index` and `repair rebuild-sidecars`, through the binary with a small
//!   `--memory-limit` (so the dictionaries spill), give the very bytes import
//!   wrote, on random stores with pending logs and damaged or missing
//!   sidecars; on bases in another row order (another producer's) they give
//!   the in-memory builder's bytes, and verify streams those bases too;
//! - the log index, `corpus list`'s summary and a query read the log while a
//!   writer cuts and appends to it, 1,000 rounds, and nothing dies of SIGBUS;
//! - `rollback`'s guard sees batches hidden behind damage.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};

use common::{bin, Rng};
use cottas_tui::import::{self, ImportOptions};
use cottas_tui::store::sidecars::{self, SUFFIXES};
use cottas_tui::triage::verify::{self, VerifyOptions};

const EX: &str = "https://example.org";

/// Random quads over small vocabularies (so terms repeat across row
/// groups), with literals, language tags, blank nodes and named graphs.
fn random_quads(rng: &mut Rng, n: usize) -> Vec<[String; 4]> {
    let subjects = 1 + rng.next() % 400;
    let predicates = 1 + rng.next() % 12;
    let objects = 1 + rng.next() % 900;
    let graphs = rng.next() % 4;
    (0..n)
        .map(|_| {
            let s = match rng.next() % 10 {
                0 => format!("_:b{}", rng.next() % subjects),
                _ => format!("<{EX}/s{}>", rng.next() % subjects),
            };
            let p = format!("<{EX}/p{}>", rng.next() % predicates);
            let o = match rng.next() % 4 {
                0 => format!("\"text {}\"@en", rng.next() % objects),
                1 => format!("\"{}\"^^<http://www.w3.org/2001/XMLSchema#integer>", rng.next() % objects),
                _ => format!("<{EX}/o{}>", rng.next() % objects),
            };
            let g = match graphs {
                0 => "DEFAULT".to_string(),
                k => match rng.next() % (k + 1) {
                    0 => "DEFAULT".to_string(),
                    i => format!("<{EX}/g{i}>"),
                },
            };
            [s, p, o, g]
        })
        .collect()
}

fn nquads(rows: &[[String; 4]]) -> String {
    let mut text = String::new();
    for [s, p, o, g] in rows {
        let g = if g == "DEFAULT" { String::new() } else { format!(" {g}") };
        text += &format!("{s} {p} {o}{g} .\n");
    }
    text
}

/// Every sidecar of the version in `dir` that exists, by suffix.
fn sidecar_bytes(dir: &Path) -> Vec<(&'static str, Vec<u8>)> {
    SUFFIXES
        .iter()
        .filter_map(|suffix| {
            std::fs::read(dir.join(format!("data.cottas{suffix}"))).ok().map(|b| (*suffix, b))
        })
        .collect()
}

/// Deletes some sidecars and flips a byte in others.
fn damage(dir: &Path, rng: &mut Rng) -> usize {
    let mut touched = 0;
    for suffix in SUFFIXES {
        let path = dir.join(format!("data.cottas{suffix}"));
        let Ok(mut bytes) = std::fs::read(&path) else { continue };
        match rng.next() % 4 {
            0 => std::fs::remove_file(&path).unwrap(),
            1 if !bytes.is_empty() => {
                let at = (rng.next() % bytes.len() as u64) as usize;
                bytes[at] ^= 0x20;
                std::fs::write(&path, bytes).unwrap();
            }
            _ => continue,
        }
        touched += 1;
    }
    touched
}

fn run(cmd: &mut std::process::Command) -> String {
    let out = cmd.output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{cmd:?} failed:\n{text}");
    text
}

#[test]
fn rebuilt_sidecars_are_the_bytes_import_wrote() {
    let mut rng = Rng(0x005e_ed46);
    for round in 0..10 {
        let tmp = tempfile::tempdir().unwrap();
        let n = 200 + (rng.next() % 3000) as usize;
        let rows = random_quads(&mut rng, n);
        let input = tmp.path().join("in.nq");
        std::fs::write(&input, nquads(&rows)).unwrap();
        let chunk = tmp.path().join("chunk");
        let mut opts = ImportOptions::new(vec![input], chunk.clone());
        opts.base.row_group_size = 50 + (rng.next() % 400) as usize;
        import::import(&opts, |_| {}).unwrap();
        let v1 = chunk.join("v1");
        if round % 2 == 0 {
            common::update(&chunk, &format!("INSERT DATA {{ <{EX}/new{round}> <{EX}/p0> \"pending\" }}"));
            if let Some(r) = rows.iter().find(|r| r[0].starts_with('<') && r[3] == "DEFAULT") {
                common::update(&chunk, &format!("DELETE DATA {{ {} {} {} }}", r[0], r[1], r[2]));
            }
        }
        let log_before = std::fs::read(chunk.join("data.deltalog")).ok();
        let imported = sidecar_bytes(&v1);
        let touched = damage(&v1, &mut rng);
        let mut cmd = bin();
        if round % 2 == 0 {
            cmd.args(["repair", "rebuild-sidecars", "--yes", "--memory-limit", "256K"]).arg(&chunk).arg("v1");
        } else {
            cmd.args(["index", "--memory-limit", "256K"]).arg(&v1);
        }
        let said = run(&mut cmd);
        assert_eq!(sidecar_bytes(&v1), imported, "round {round} ({touched} damaged):\n{said}");
        assert_eq!(
            std::fs::read(chunk.join("data.deltalog")).ok(),
            log_before,
            "round {round}: the log is untouched"
        );
        let report = verify::verify(&chunk, VerifyOptions::default()).unwrap();
        assert!(report.is_clean(), "round {round}: {:?}", report.findings);
    }
}

/// A version under `dir/foreign` whose base holds `rows` in the order
/// given, with no sidecars ([`common::foreign_base`]).
fn foreign_version(dir: &Path, rows: &[[String; 4]], rg: usize) -> PathBuf {
    let v1 = dir.join("foreign").join("v1");
    common::foreign_base(&v1, rows, rg);
    v1
}

#[test]
fn a_base_in_another_row_order_gets_the_in_memory_builders_sidecars() {
    let mut rng = Rng(0x00f0_4e16);
    for round in 0..10 {
        let tmp = tempfile::tempdir().unwrap();
        let n = 100 + (rng.next() % 2500) as usize;
        let mut rows = random_quads(&mut rng, n);
        // Another producer's order: by object, say, with repeats kept.
        match round % 3 {
            0 => rows.sort_by(|a, b| (&a[2], &a[1]).cmp(&(&b[2], &b[1]))),
            1 => rows.sort_by(|a, b| (&a[1], &a[2]).cmp(&(&b[1], &b[2]))),
            _ => {}
        }
        let rg = 40 + (rng.next() % 300) as usize;
        let v1 = foreign_version(tmp.path(), &rows, rg);
        let sizes: Vec<usize> = (0..rows.len()).step_by(rg).map(|i| rg.min(rows.len() - i)).collect();
        let expected: Vec<(&str, Vec<u8>)> = sidecars::build(&rows, &sizes).files();
        // Before: verify streams the bare base and says every sidecar is missing.
        let before = verify::verify(&v1.join("data.cottas"), VerifyOptions::default()).unwrap();
        assert!(before.findings.iter().all(|f| f.check == "sidecar-missing"), "{:?}", before.findings);
        run(bin().args(["index", "--memory-limit", "256K"]).arg(&v1));
        assert_eq!(sidecar_bytes(&v1), expected, "round {round}");
        let clean = verify::verify(&v1, VerifyOptions::default()).unwrap();
        assert!(clean.is_clean(), "round {round}: {:?}", clean.findings);
        // Damage one sidecar and take the digests away: verify still finds
        // the byte, by comparing with what the rows give.
        std::fs::remove_file(v1.join("cottas-tui.digests.json")).unwrap();
        let path = v1.join("data.cottas.o.dict");
        let mut bytes = std::fs::read(&path).unwrap();
        let at = bytes.len() - 1;
        bytes[at] ^= 1;
        std::fs::write(&path, bytes).unwrap();
        let found = verify::verify(&v1, VerifyOptions::default()).unwrap();
        let hit: Vec<_> = found.findings.iter().filter(|f| f.file.ends_with("data.cottas.o.dict")).collect();
        assert_eq!(hit.len(), 1, "round {round}: {:?}", found.findings);
        assert_eq!(hit[0].offset, Some(at as u64), "round {round}: {:?}", hit[0]);
        assert!(hit[0].next.as_deref().is_some_and(|n| n.contains("index")), "{:?}", hit[0]);
    }
}

#[test]
fn readers_survive_a_writer_cutting_and_appending_to_the_log() {
    let tmp = tempfile::tempdir().unwrap();
    let chunk = common::store_of(tmp.path(), &nquads(&random_quads(&mut Rng(7), 500)));
    for i in 0..40 {
        common::update(&chunk, &format!("INSERT DATA {{ <{EX}/w{i}> <{EX}/p> \"{}\" }}", "x".repeat(2000)));
    }
    let log = chunk.join("data.deltalog");
    let committed = std::fs::metadata(&log).unwrap().len();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (log, stop) = (log.clone(), stop.clone());
        std::thread::spawn(move || {
            // What a failed append and `repair truncate-torn-tail` do: bytes
            // past the committed batches appear and are cut, pages at a time.
            let f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
            let garbage = vec![0x42u8; 256 * 1024];
            let mut cuts = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                (&f).write_all(&garbage).unwrap();
                f.set_len(committed).unwrap();
                cuts += 1;
            }
            cuts
        })
    };
    let root = tmp.path();
    for round in 0..1000 {
        let ix = cottas_tui::store::log::index::LogIndex::build(&log);
        assert_eq!(ix.count, 40, "round {round}: {:?}", ix.error);
        let window = ix.window(30, 10);
        assert!(window.iter().all(|w| w.is_ok()), "round {round}");
        let summary = cottas_tui::corpus::summarize(root, &chunk);
        assert_eq!(summary.pending_batches, Some(40), "round {round}: {summary:?}");
        if round % 10 == 0 {
            let q = format!("SELECT (COUNT(*) AS ?n) {{ ?s <{EX}/p> ?o }}");
            let out = run(bin().arg("query").arg(&chunk).args(["--format", "tsv", "-e", &q]));
            assert!(out.contains("40"), "round {round}: {out}");
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let cuts = writer.join().unwrap();
    assert!(cuts > 100, "the writer cut the log only {cuts} times");
}

#[test]
fn rollback_refuses_when_damage_hides_committed_batches() {
    let tmp = tempfile::tempdir().unwrap();
    let chunk = common::store_of(tmp.path(), &nquads(&random_quads(&mut Rng(9), 50)));
    common::update(&chunk, &format!("INSERT DATA {{ <{EX}/a> <{EX}/p> 1 }}"));
    run(bin().arg("compact").arg(&chunk).arg("--quiet"));
    common::update(&chunk, &format!("INSERT DATA {{ <{EX}/b> <{EX}/p> 2 }}"));
    common::update(&chunk, &format!("INSERT DATA {{ <{EX}/c> <{EX}/p> 3 }}"));
    let log = chunk.join("data.deltalog");
    let full = cottas_tui::store::log::Log::read(&log).unwrap().unwrap();
    assert!(full.frames.len() >= 2, "{:?}", full.frames.len());
    // Damage the first batch's checksum: the second is hidden behind it.
    let first = &full.frames[0];
    let mut bytes = std::fs::read(&log).unwrap();
    bytes[(first.offset + first.len - 1) as usize] ^= 0xff;
    std::fs::write(&log, &bytes).unwrap();
    let damaged = cottas_tui::store::log::Log::read(&log).unwrap().unwrap();
    assert!(damaged.frames.len() < full.frames.len() && !damaged.tail.hidden().is_empty());
    let out = bin().args(["rollback", "--to", "v1"]).arg(&chunk).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "rollback went ahead: {err}");
    assert!(err.contains("valid batch") && err.contains("truncate-torn-tail"), "{err}");
    assert_eq!(std::fs::read_link(chunk.join("current")).unwrap(), Path::new("v2"));
}

/// A verify killed with `kill -9` leaves its spill directory behind; the
/// next verify removes it, and leaves a live process's alone.
#[test]
fn a_killed_verifys_spill_directory_is_removed_by_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let orphan = tmp.join(format!("cottas-tui-verify.{dead}.0"));
    let alive = tmp.join(format!("cottas-tui-verify.{}.0", std::process::id()));
    for d in [&orphan, &alive] {
        std::fs::create_dir_all(d).unwrap();
        std::fs::write(d.join("dict-s.tokens"), b"left behind").unwrap();
    }
    let store = common::sample_store(dir.path());
    let out = bin().arg("verify").arg(&store).env("TMPDIR", &tmp).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(!orphan.exists(), "the killed verify's directory is removed");
    assert!(alive.exists(), "a running process's directory is kept");
}
