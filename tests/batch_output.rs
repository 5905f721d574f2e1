//! `cottas-tui --batch` as a script reads it: several queries' JSON parsed
//! line by line by Python's `json`, CSV by its `csv` module, a timeout that
//! leaves only complete documents on stdout, and errors that name the
//! request, where it came from and its line:column.

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::bin;

const UNION: &str = "--union-default-graph";

fn batch(store: &Path, args: &[&str]) -> Output {
    bin().arg("--batch").arg(store).arg(UNION).args(args).output().unwrap()
}

/// Two names, an ASK and the five quads, in `format`.
fn three_results(store: &Path, format: &str) -> Output {
    let name = "SELECT ?s ?o { ?s <https://example.org/name> ?o }";
    batch(store, &["--format", format, "-e", name, "-e", "ASK { ?s ?p ?o }", "-e", "SELECT * { ?s ?p ?o }"])
}

/// Runs `script` with the output on stdin and returns what it prints.
fn python(script: &str, stdin: &[u8]) -> String {
    let mut child = Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 on PATH");
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), stdin).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "python: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Each line of stdin parsed as one JSON document; prints what each holds.
const JSON_LINES: &str = r#"
import json, sys
for line in sys.stdin.read().splitlines():
    doc = json.loads(line)
    print(len(doc["results"]["bindings"]) if "results" in doc else doc["boolean"])
"#;

#[test]
fn several_json_results_are_one_document_per_line() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::sample_store(dir.path());
    let out = three_results(&store, "json");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(python(JSON_LINES, &out.stdout), "2\nTrue\n5\n");
}

/// The CSV output's result sets, split at blank lines and read by `csv`.
const CSV_SETS: &str = r#"
import csv, io, sys
text = sys.stdin.buffer.read().decode()
assert "\n" not in text.replace("\r\n", ""), "a line that does not end in CRLF"
for part in text.split("\r\n\r\n"):
    print(len(list(csv.reader(io.StringIO(part, newline="")))))
"#;

#[test]
fn csv_result_sets_are_apart_and_every_line_ends_alike() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::sample_store(dir.path());
    let out = three_results(&store, "csv");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // A header and two rows; ASK's one line; a header and five rows.
    assert_eq!(python(CSV_SETS, &out.stdout), "3\n1\n6\n");

    let out = batch(&store, &["--format", "tsv", "-e", "ASK {}", "-e", "SELECT ?s { ?s ?p \"Bob\" }"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "true\n\n?s\n<https://example.org/bob>\n");
}

/// A cross product of the sample's quads (5^10 rows) that cannot finish in
/// a tenth of a second.
fn endless_query() -> String {
    let patterns: Vec<String> = (0..10).map(|i| format!("?s{i} ?p{i} ?o{i} .")).collect();
    format!("SELECT * {{ {} }}", patterns.join(" "))
}

#[test]
fn a_timeout_leaves_only_complete_documents_on_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::sample_store(dir.path());
    for format in ["json", "xml", "csv"] {
        let out = batch(
            &store,
            &["--format", format, "--timeout", "0.3", "-e", "ASK {}", "-e", &endless_query(), "-e", "ASK {}"],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{format}: {stderr}");
        assert!(stderr.contains("query 2 of 3 (from the command line)"), "{stderr}");
        assert!(stderr.contains("timed out"), "{stderr}");
        assert!(stderr.contains("closed as a complete document"), "{stderr}");
        match format {
            "json" => {
                let counts = python(JSON_LINES, &out.stdout);
                let lines: Vec<&str> = counts.lines().collect();
                assert_eq!(lines.len(), 2, "ASK and the cut result, nothing after: {counts}");
                assert!(lines[1].parse::<u64>().unwrap() > 0, "{counts}");
            }
            "xml" => {
                let script = "import sys, xml.dom.minidom as m\n\
                              for l in sys.stdin.read().splitlines(): m.parseString(l)\nprint('ok')";
                assert_eq!(python(script, &out.stdout), "ok\n");
            }
            _ => {
                let sets = python(CSV_SETS, &out.stdout);
                assert_eq!(sets.lines().count(), 2, "{sets}");
            }
        }
    }
}

#[test]
fn an_error_names_the_request_its_file_and_line_column() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::sample_store(dir.path());
    let file = dir.path().join("three.rq");
    std::fs::write(&file, "SELECT ?s { ?s ?p ?o }\n\nASK { ?s ?p ?o }\nASK {}\n").unwrap();
    let out = batch(&store, &["-f", file.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("the query from {}", file.display())), "{stderr}");
    assert!(stderr.contains("error at 3:1: a second query begins here (`ASK`)"), "{stderr}");
    assert!(stderr.contains("give each its own -e or -f"), "{stderr}");

    let out = batch(&store, &["-e", "ASK {}", "-e", "SELECT * WHERE { ?s ?p }"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "true\n\n", "the first query's answer stands");
    assert!(
        stderr.contains(
            "query 2 of 2 (from the command line): query syntax: error at 1:18: a triple pattern needs"
        ),
        "{stderr}"
    );
}
