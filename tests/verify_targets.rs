//! `verify` takes whatever `open` takes (a chunk dir, a version dir, a
//! directory holding a lone data.cottas, a bare .cottas file), and every
//! `next:` command it prints runs as printed, from the directory it was
//! printed in, relative paths, spaces and all.

mod common;

use std::path::Path;
use std::process::Output;

use common::{bin, sample_store};

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

/// Splits a command line as a POSIX shell would for the quoting `verify`
/// uses (bare words and single quotes).
fn shell_words(line: &str) -> Vec<String> {
    let (mut words, mut cur, mut quoted, mut any) = (Vec::new(), String::new(), false, false);
    for c in line.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                any = true;
            }
            ' ' if !quoted => {
                if any {
                    words.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            c => {
                cur.push(c);
                any = true;
            }
        }
    }
    if any {
        words.push(cur);
    }
    words
}

fn verify_json(cwd: &Path, target: &str) -> serde_json::Value {
    let o = bin().current_dir(cwd).args(["verify", "--json", target]).output().unwrap();
    assert!(matches!(o.status.code(), Some(0 | 1)), "verify {target}: {}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Runs every `next` command of the findings; each must parse and run
/// (exit 0 or 1: 1 is a command reporting what it found, 2 a usage or
/// store error). Returns how many ran.
fn run_every_next(cwd: &Path, report: &serde_json::Value) -> usize {
    let mut ran = 0;
    for f in report["findings"].as_array().unwrap() {
        let Some(next) = f["next"].as_str() else { continue };
        let words = shell_words(next);
        assert_eq!(words[0], "cottas-tui", "{next}");
        assert!(!next.contains("  "), "an empty argument in {next:?}");
        let o = bin().current_dir(cwd).args(&words[1..]).output().unwrap();
        assert!(matches!(o.status.code(), Some(0 | 1)), "`{next}` (from {cwd:?}): {}", text(&o));
        ran += 1;
    }
    ran
}

fn damage_a_sidecar(version_dir: &Path) {
    let p = version_dir.join("data.cottas.p.offsets");
    let mut b = std::fs::read(&p).unwrap();
    let n = b.len();
    b[n - 3] ^= 0x5a;
    std::fs::write(&p, b).unwrap();
}

fn codes(report: &serde_json::Value) -> Vec<String> {
    report["findings"].as_array().unwrap().iter().map(|f| f["check"].as_str().unwrap().to_string()).collect()
}

#[test]
fn next_commands_run_as_printed_for_relative_version_dirs() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("on call");
    std::fs::create_dir(&root).unwrap();
    let chunk = sample_store(&root);
    damage_a_sidecar(&chunk.join("v1"));
    let mut log = std::fs::read(chunk.join("data.deltalog")).unwrap();
    log.extend_from_slice(b"DLB1\x01\x00\x00\x00\xff");
    std::fs::write(chunk.join("data.deltalog"), log).unwrap();

    // From inside the chunk, naming the version relatively: its parent is "".
    let report = verify_json(&chunk, "v1");
    assert!(codes(&report).iter().any(|c| c == "decode" || c == "digest"), "{report}");
    assert!(run_every_next(&chunk, &report) > 0);
    // The rebuild ran: the version verifies clean now.
    let again = verify_json(&chunk, "v1");
    assert_eq!(again["findings"].as_array().unwrap().len(), 0, "{again}");

    // From the directory above, naming the chunk (path with a space).
    damage_a_sidecar(&chunk.join("v1"));
    let report = verify_json(dir.path(), "on call/chunk");
    assert!(codes(&report).iter().any(|c| c == "log-tail"), "{report}");
    assert!(run_every_next(dir.path(), &report) >= 2);
    let again = verify_json(dir.path(), "on call/chunk");
    assert_eq!(again["findings"].as_array().unwrap().len(), 0, "{again}");
}

#[test]
fn a_lone_version_dir_is_rebuilt_with_index() {
    let dir = tempfile::tempdir().unwrap();
    let chunk = sample_store(dir.path());
    let lone = dir.path().join("lone");
    std::fs::create_dir(&lone).unwrap();
    for e in std::fs::read_dir(chunk.join("v1")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), lone.join(e.file_name())).unwrap();
    }
    damage_a_sidecar(&lone);
    let report = verify_json(dir.path(), "lone");
    let nexts: Vec<&str> =
        report["findings"].as_array().unwrap().iter().filter_map(|f| f["next"].as_str()).collect();
    assert!(nexts.iter().all(|n| !n.contains("rebuild-sidecars")), "{nexts:?}");
    assert!(nexts.contains(&"cottas-tui index lone"), "{nexts:?}");
    assert!(run_every_next(dir.path(), &report) > 0);
    assert_eq!(verify_json(dir.path(), "lone")["findings"].as_array().unwrap().len(), 0);
}

#[test]
fn verify_takes_a_bare_data_cottas_like_dump_and_open() {
    let dir = tempfile::tempdir().unwrap();
    let chunk = sample_store(dir.path());
    let base = chunk.join("v1/data.cottas");
    // dump and lookup accept the file; so does verify now.
    assert_eq!(bin().arg("dump").arg(&base).output().unwrap().status.code(), Some(0));
    let o = bin().arg("verify").arg(&base).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("verify: clean"), "{}", text(&o));

    // A pycottas-style file of another name, with no sidecars at all.
    let other = dir.path().join("triples.cottas");
    std::fs::copy(&base, &other).unwrap();
    let report = verify_json(dir.path(), "triples.cottas");
    let found = codes(&report);
    assert!(found.iter().all(|c| c == "sidecar-missing"), "{report}");
    assert_eq!(run_every_next(dir.path(), &report), 0, "no command can give it sidecars: none is printed");

    // Damage in the file itself is found and named at its offset.
    let mut b = std::fs::read(&base).unwrap();
    let n = b.len();
    b[n - 1] = b'X';
    std::fs::write(&base, b).unwrap();
    let o = bin().arg("verify").arg(&base).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("data.cottas"), "{}", text(&o));
}
