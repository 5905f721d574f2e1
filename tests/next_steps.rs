//! Every finding leads somewhere. For each fault class of the fault corpus
//! (each file of a version and the log; a flipped byte in its header, one
//! in its body, a cut in half), `verify` runs through the binary, the
//! `next:` command it prints is run as printed, and `verify` runs again:
//! the command must change what verify finds, or it or the finding must
//! say why no repair can (a finding with no command must say so itself).

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Output;

use common::bin;

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

/// A chunk with one version of several row groups (and the copy of its
/// footer), an older version gone, and a log of three batches.
fn fixture(dir: &Path) -> PathBuf {
    let nq = dir.join("data.nq");
    let text: String = (0..300)
        .map(|i| {
            let g = ["", " <https://e.org/g1>"][i % 2];
            format!("<https://e.org/s{}> <https://e.org/p{}> \"v{i}\"{g} .\n", i % 23, i % 4)
        })
        .collect();
    std::fs::write(&nq, text).unwrap();
    let chunk = dir.join("chunk");
    let mut opts = cottas_tui::import::ImportOptions::new(vec![nq], chunk.clone());
    opts.base.row_group_size = 50;
    cottas_tui::import::import(&opts, |_| {}).unwrap();
    common::update(&chunk, "INSERT DATA { <https://e.org/new> <https://e.org/p0> \"x\" }");
    common::update(&chunk, "DELETE DATA { <https://e.org/s1> <https://e.org/p1> \"v1\" }");
    common::update(
        &chunk,
        "INSERT DATA { GRAPH <https://e.org/g2> { <https://e.org/s2> <https://e.org/p2> \"y\" } }",
    );
    chunk
}

fn shell_words(line: &str) -> Vec<String> {
    line.split(' ').map(|w| w.trim_matches('\'').to_string()).collect()
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Seen {
    file: String,
    check: String,
    offset: Option<u64>,
}

fn verify(work: &Path) -> (Vec<serde_json::Value>, BTreeSet<Seen>) {
    let o = bin().current_dir(work).args(["verify", "--json", "chunk"]).output().unwrap();
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let findings = v["findings"].as_array().unwrap().clone();
    let seen = findings
        .iter()
        .map(|f| Seen {
            file: f["file"].as_str().unwrap().to_string(),
            check: f["check"].as_str().unwrap().to_string(),
            offset: f["offset"].as_u64(),
        })
        .collect();
    (findings, seen)
}

/// The damages of one file: a byte in its header, a byte in its body, a
/// cut in half.
fn damages(bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
    let n = bytes.len();
    let flip = |at: usize| {
        let mut b = bytes.to_vec();
        b[at] ^= 0x20;
        b
    };
    vec![
        ("a byte of its header".into(), flip(5.min(n - 1))),
        ("a byte of its body".into(), flip(n * 2 / 3)),
        ("cut in half".into(), bytes[..n / 2].to_vec()),
    ]
}

#[test]
fn every_fault_class_has_a_next_step_that_changes_the_outcome_or_says_why_not() {
    let dir = tempfile::tempdir().unwrap();
    let pristine = fixture(dir.path());
    let (clean, _) = verify(dir.path());
    assert!(clean.is_empty(), "{clean:?}");
    let mut files: Vec<String> = vec!["data.deltalog".into()];
    for e in std::fs::read_dir(pristine.join("v1")).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        if name != "summary.json" {
            files.push(format!("v1/{name}"));
        }
    }
    files.sort();
    let mut table = Vec::new();
    let mut dead_ends = Vec::new();
    for file in &files {
        let original = std::fs::read(pristine.join(file)).unwrap();
        for (what, bytes) in damages(&original) {
            let work = tempfile::tempdir().unwrap();
            copy_dir(&pristine, &work.path().join("chunk"));
            std::fs::write(work.path().join("chunk").join(file), &bytes).unwrap();
            let case = format!("{file}, {what}");
            let (before, seen_before) = verify(work.path());
            assert!(!before.is_empty(), "{case}: verify found nothing");
            let mut nexts: Vec<String> =
                before.iter().filter_map(|f| f["next"].as_str().map(str::to_string)).collect();
            nexts.dedup();
            let mut said_why = Vec::new();
            for next in &nexts {
                let words = shell_words(next);
                assert_eq!(words[0], "cottas-tui", "{case}: {next}");
                let o = bin().current_dir(work.path()).args(&words[1..]).output().unwrap();
                assert!(!text(&o).contains("panicked"), "{case}: `{next}`: {}", text(&o));
                if text(&o).contains("cannot") {
                    said_why.push(next.clone());
                }
            }
            let (_, seen_after) = verify(work.path());
            let changed = seen_after != seen_before;
            for f in &before {
                let message = f["message"].as_str().unwrap();
                let check = f["check"].as_str().unwrap();
                let explained = message.contains("no repair");
                match f["next"].as_str() {
                    Some(next) if !changed && !explained && !said_why.iter().any(|n| n == next) => dead_ends
                        .push(format!(
                        "{case}: [{check}] `{next}` changed nothing and did not say why it cannot ({message})"
                    )),
                    None if !explained && !message.contains("cannot") => dead_ends
                        .push(format!("{case}: [{check}] has no next step and does not say why: {message}")),
                    _ => {}
                }
            }
            let outcome = if seen_after.is_empty() {
                "clean"
            } else if changed {
                "changed"
            } else {
                "explained"
            };
            table.push(format!(
                "{case:<48} {:<40} {outcome}",
                nexts.first().map_or("(none)", |n| n.split(" chunk").next().unwrap_or(n))
            ));
        }
    }
    common::announce(&format!("next steps, by fault class:\n{}", table.join("\n")));
    assert!(dead_ends.is_empty(), "{} dead ends:\n{}", dead_ends.len(), dead_ends.join("\n"));
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else if e.file_type().unwrap().is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(e.path()).unwrap(), &target).unwrap();
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}
