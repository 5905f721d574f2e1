//! Requests built to exhaust the stack get exit 1 and a message naming the
//! limit; requests just inside the limits still run (so the stack the binary
//! gives them is large enough). Each runs the real binary: a stack overflow
//! aborts a process, and must not be able to abort the test harness.

mod common;

use std::process::Output;

use common::{bin, sample_store};
use cottas_tui::sparql::limits::{MAX_ALGEBRA_DEPTH, MAX_TEXT_NESTING};

fn run(args: &[&str], text: &str) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let store = sample_store(dir.path());
    // Past 128 KiB one argument is refused by the kernel: pass a file.
    let file = dir.path().join("request.rq");
    std::fs::write(&file, text).unwrap();
    let mut cmd = bin();
    cmd.arg(args[0]).arg(&store).args(&args[1..]);
    cmd.arg("-f").arg(&file).output().unwrap()
}

fn assert_refused(o: &Output, what: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "stderr: {err}");
    assert!(err.contains(what), "stderr should name the limit ({what}): {err}");
    assert!(!err.contains("overflowed"), "{err}");
}

fn union_chain(n: usize) -> String {
    let groups = vec!["{ ?s ?p ?o }"; n].join(" UNION ");
    format!("SELECT (COUNT(*) AS ?n) WHERE {{ {groups} }}")
}

#[test]
fn fifty_thousand_nested_parentheses_are_refused() {
    let depth = 50_000;
    let q = format!("ASK {{ FILTER({}1{}) }}", "(".repeat(depth), ")".repeat(depth));
    assert_refused(&run(&["query"], &q), &format!("nested more than {MAX_TEXT_NESTING} deep"));
}

#[test]
fn a_twenty_thousand_group_union_chain_is_refused() {
    assert_refused(&run(&["query"], &union_chain(20_000)), "algebra is nested more than");
}

#[test]
fn a_long_operator_chain_is_refused() {
    let sum = vec!["1"; 20_000].join(" + ");
    let q = format!("SELECT (({sum}) AS ?x) {{}}");
    assert_refused(&run(&["query"], &q), "algebra is nested more than");
}

#[test]
fn hostile_updates_are_refused() {
    let depth = 50_000;
    let q = format!(
        "INSERT {{ <http://x/a> <http://x/p> 1 }} WHERE {{ FILTER({}1{}) }}",
        "(".repeat(depth),
        ")".repeat(depth)
    );
    assert_refused(&run(&["update"], &q), "nested more than");
    let groups = vec!["{ ?s ?p ?o }"; 20_000].join(" UNION ");
    let q = format!("DELETE {{ ?s ?p ?o }} WHERE {{ {groups} }}");
    assert_refused(&run(&["update"], &q), "algebra is nested more than");
}

#[test]
fn requests_just_inside_the_limits_run() {
    // A UNION chain nests one level per group, plus a few for the query.
    let o = run(&["query", "--format", "tsv"], &union_chain(MAX_ALGEBRA_DEPTH - 10));
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let d = MAX_TEXT_NESTING - 4;
    let q = format!("ASK {{ FILTER({}1{}) }}", "(".repeat(d), ")".repeat(d));
    let o = run(&["query", "--format", "tsv"], &q);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let sum = vec!["1"; MAX_ALGEBRA_DEPTH - 10].join(" + ");
    let o = run(&["query", "--format", "tsv"], &format!("SELECT (({sum}) AS ?x) {{}}"));
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
}
