//! SIGKILL real repairs mid-run, at least 100 times each: `repair rebuild-sidecars`,
//! `index` and `repair truncate-torn-tail`, at random moments and paused at
//! each step boundary (derived, backed up, before the digests; backed up
//! before the cut) so every one is hit. After every kill:
//! - the store opens;
//! - verify is clean, or every error names exactly the repair to run again
//!   (and a leftover temp dir is reported as debris, with `gc`);
//! - every backup under its own name is whole: the bytes the file had;
//! - the repair run again finishes, and the store then is what an
//!   uninterrupted repair leaves (the sidecars import wrote; the committed log).

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::Rng;
use cottas_tui::store::sidecars::SUFFIXES;
use cottas_tui::store::versions::open::Store;
use cottas_tui::triage::verify::{self, Severity, VerifyOptions};

const KILLS: usize = 100;
const EX: &str = "https://example.org";

#[derive(Clone, Copy, Debug)]
enum Repair {
    RebuildSidecars,
    Index,
    TruncateTornTail,
}

impl Repair {
    fn command(self, chunk: &Path) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_cottas-tui"));
        match self {
            Repair::RebuildSidecars => cmd.args(["repair", "rebuild-sidecars", "--yes"]).arg(chunk).arg("v1"),
            Repair::Index => cmd.arg("index").arg(chunk.join("v1")),
            Repair::TruncateTornTail => cmd.args(["repair", "truncate-torn-tail", "--yes"]).arg(chunk),
        };
        cmd
    }

    /// What verify must suggest for damage this repair leaves undone.
    fn next(self, chunk: &Path) -> String {
        let chunk = chunk.display();
        match self {
            Repair::RebuildSidecars | Repair::Index => {
                format!("cottas-tui repair rebuild-sidecars {chunk} v1 --yes")
            }
            Repair::TruncateTornTail => format!("cottas-tui repair truncate-torn-tail {chunk} --yes"),
        }
    }

    fn pauses(self) -> &'static [&'static str] {
        match self {
            Repair::RebuildSidecars | Repair::Index => {
                &["rebuild-derived", "rebuild-backed-up", "rebuild-before-digests"]
            }
            Repair::TruncateTornTail => &["truncate-backed-up"],
        }
    }
}

/// A store of a few thousand quads in small row groups, with pending
/// batches, and its sidecars as import wrote them.
fn template(dir: &Path) -> (PathBuf, Vec<(String, Vec<u8>)>) {
    let mut text = String::new();
    for i in 0..6000 {
        text += &format!("<{EX}/s{}> <{EX}/p{}> \"o {i}\" <{EX}/g{}> .\n", i % 700, i % 9, i % 3);
    }
    let input = dir.join("in.nq");
    std::fs::write(&input, text).unwrap();
    let chunk = dir.join("template");
    let mut opts = cottas_tui::import::ImportOptions::new(vec![input], chunk.clone());
    opts.base.row_group_size = 150;
    cottas_tui::import::import(&opts, |_| {}).unwrap();
    for i in 0..30 {
        common::update(&chunk, &format!("INSERT DATA {{ <{EX}/new{i}> <{EX}/p> \"pending {i}\" }}"));
    }
    (chunk.clone(), files_of(&chunk))
}

/// The chunk's files that a repair may touch, by name relative to it.
fn files_of(chunk: &Path) -> Vec<(String, Vec<u8>)> {
    let mut names: Vec<String> = SUFFIXES.iter().map(|s| format!("v1/data.cottas{s}")).collect();
    names.push("v1/cottas-tui.digests.json".into());
    names.push("v1/cottas-tui.blocks".into());
    names.push("data.deltalog".into());
    names.into_iter().filter_map(|n| std::fs::read(chunk.join(&n)).ok().map(|b| (n, b))).collect()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        let kind = entry.file_type().unwrap();
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(entry.path()).unwrap(), &target).unwrap();
        } else if kind.is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Damage the repair is for: sidecars flipped and deleted, or a torn tail.
fn damage(chunk: &Path, repair: Repair) {
    match repair {
        Repair::RebuildSidecars | Repair::Index => {
            for (suffix, at) in [(".s.dict", 100usize), (".o.presence", 40), (".po.presence", 30)] {
                let path = chunk.join(format!("v1/data.cottas{suffix}"));
                let mut bytes = std::fs::read(&path).unwrap();
                bytes[at] ^= 0x08;
                std::fs::write(&path, bytes).unwrap();
            }
            for suffix in [".p.offsets", ".g.dict"] {
                std::fs::remove_file(chunk.join(format!("v1/data.cottas{suffix}"))).unwrap();
            }
        }
        Repair::TruncateTornTail => {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new().append(true).open(chunk.join("data.deltalog")).unwrap();
            // A torn frame: a batch header and then not enough bytes.
            let mut torn = b"DLB1".to_vec();
            torn.extend_from_slice(&[1, 0]);
            torn.extend_from_slice(&(4u32 << 20).to_le_bytes());
            torn.resize(3 << 20, 0x17);
            f.write_all(&torn).unwrap();
        }
    }
}

/// Kills the repair either where it announces `pause` or after `after`.
fn kill_one(chunk: &Path, repair: Repair, pause: Option<&str>, after: Duration) -> &'static str {
    let mut cmd = repair.command(chunk);
    if let Some(p) = pause {
        cmd.env("COTTAS_TUI_DEBUG_PAUSE", format!("{p}=10000"));
    }
    let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let outcome = match pause {
        Some(p) => {
            let mut err = BufReader::new(child.stderr.take().unwrap());
            let mut line = String::new();
            let mut seen = false;
            while err.read_line(&mut line).unwrap_or(0) > 0 {
                if line.contains(&format!("debug pause at {p}")) {
                    seen = true;
                    break;
                }
                line.clear();
            }
            if seen {
                "paused"
            } else {
                "finished first"
            }
        }
        None => {
            std::thread::sleep(after);
            "random"
        }
    };
    let _ = child.kill(); // SIGKILL
    let status = child.wait().unwrap();
    if outcome == "random" && status.success() {
        return "finished first";
    }
    outcome
}

/// The checks after a kill (see the banner).
fn check_after_kill(chunk: &Path, repair: Repair, before: &[(String, Vec<u8>)], when: &str) {
    Store::open(chunk).unwrap_or_else(|e| panic!("{when}: the store does not open: {e}"));
    let report = verify::verify(chunk, VerifyOptions::default()).unwrap();
    let next = repair.next(chunk);
    for f in &report.findings {
        match f.severity {
            Severity::Error => {
                assert_eq!(f.next.as_deref(), Some(next.as_str()), "{when}: {f:?}")
            }
            Severity::Warning => assert!(
                f.check == "debris"
                    || (f.check == "sidecar-missing" && f.next.as_deref() == Some(next.as_str())),
                "{when}: {f:?}"
            ),
        }
    }
    // Every backup under its own name is whole: the bytes the file had.
    let backups = chunk.join("cottas-tui-backups");
    for entry in walkdir::WalkDir::new(&backups).into_iter().flatten().filter(|e| e.file_type().is_file()) {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".partial") {
            continue;
        }
        let had = before
            .iter()
            .find(|(n, _)| Path::new(n).file_name().is_some_and(|f| f.to_string_lossy() == name))
            .unwrap_or_else(|| panic!("{when}: backup {} of no file", entry.path().display()));
        assert!(
            std::fs::read(entry.path()).unwrap() == had.1,
            "{when}: backup {} is not whole",
            entry.path().display()
        );
    }
}

fn crash_test(repair: Repair) {
    let tmp = tempfile::tempdir().unwrap();
    let (template, imported) = template(tmp.path());
    let damaged = tmp.path().join("damaged");
    copy_dir(&template, &damaged);
    damage(&damaged, repair);
    let before = files_of(&damaged);
    // How long an uninterrupted run takes: the random kills fall inside it.
    let timed = tmp.path().join("timed");
    copy_dir(&damaged, &timed);
    let started = Instant::now();
    assert!(repair.command(&timed).output().unwrap().status.success());
    let span = started.elapsed().as_micros().max(1000) as u64;
    let want = files_of(&timed);
    let mut rng = Rng(0xc0de ^ repair as u64);
    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    // Kills that landed while the repair ran; a random one that came after
    // it finished does not count.
    let mut landed = 0;
    let mut i = 0;
    while landed < KILLS {
        assert!(i < 4 * KILLS, "only {landed} of {i} kills landed mid-run: {outcomes:?}");
        let chunk = tmp.path().join(format!("k{i}"));
        copy_dir(&damaged, &chunk);
        let pauses = repair.pauses();
        let pause = (i % 3 == 0).then(|| pauses[(i / 3) % pauses.len()]);
        let after = Duration::from_micros(rng.next() % span);
        let outcome = kill_one(&chunk, repair, pause, after);
        if outcome != "finished first" {
            landed += 1;
        }
        *outcomes
            .entry(format!("{}{}", outcome, pause.map(|p| format!(" at {p}")).unwrap_or_default()))
            .or_default() += 1;
        let when = format!("{repair:?} kill {i} ({outcome}, pause {pause:?}, after {after:?})");
        check_after_kill(&chunk, repair, &before, &when);
        // Run again: it finishes the work.
        let again = repair.command(&chunk).output().unwrap();
        assert!(again.status.success(), "{when}: again: {}", String::from_utf8_lossy(&again.stderr));
        let report = verify::verify(&chunk, VerifyOptions::default()).unwrap();
        let errors: Vec<_> = report.findings.iter().filter(|f| f.check != "debris").collect();
        assert!(errors.is_empty(), "{when}: after running it again: {errors:?}");
        let now = files_of(&chunk);
        for (name, bytes) in &want {
            if name.ends_with(".blocks") || name.ends_with(".json") {
                continue; // digests carry no time, but a foreign order may differ
            }
            let have = now.iter().find(|(n, _)| n == name).map(|(_, b)| b);
            assert!(have == Some(bytes), "{when}: {name} differs from an uninterrupted repair's");
        }
        std::fs::remove_dir_all(&chunk).unwrap();
        i += 1;
    }
    for (name, bytes) in &imported {
        if name.starts_with("v1/data.cottas") {
            let repaired = want.iter().find(|(n, _)| n == name).map(|(_, b)| b);
            assert!(repaired == Some(bytes), "{name}: the repair does not give import's bytes");
        }
    }
    eprintln!("{repair:?}: {landed} kills mid-run of {i}: {outcomes:?}");
    for p in repair.pauses() {
        assert!(outcomes.keys().any(|k| k == &format!("paused at {p}")), "never killed at {p}: {outcomes:?}");
    }
    assert!(outcomes.get("random").copied().unwrap_or(0) > 0, "no random kill landed mid-run: {outcomes:?}");
}

#[test]
fn sigkill_during_rebuild_sidecars() {
    crash_test(Repair::RebuildSidecars);
}

#[test]
fn sigkill_during_index() {
    crash_test(Repair::Index);
}

#[test]
fn sigkill_during_truncate_torn_tail() {
    crash_test(Repair::TruncateTornTail);
}
