//! `lookup` answers base ⊕ visible delta like every other reader; only
//! `--base-only` asks for the base alone.

mod common;

use std::path::Path;

use common::{bin, sample_store, update};

fn lookup(chunk: &Path, args: &[&str]) -> String {
    let o = bin().arg("lookup").arg(chunk).args(args).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

fn count_by_query(chunk: &Path, pattern: &str) -> String {
    let q =
        format!("SELECT (COUNT(*) AS ?n) WHERE {{ {{ {pattern} }} UNION {{ GRAPH ?g {{ {pattern} }} }} }}");
    let o = bin().arg("query").arg(chunk).args(["--format", "csv", "-e", &q]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap().lines().nth(1).unwrap().trim().to_string()
}

#[test]
fn lookup_sees_inserts_deletes_and_clears_of_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let chunk = sample_store(dir.path());
    let all_before = lookup(&chunk, &[]);
    let first = all_before.lines().next().unwrap().to_string();
    let subject = first.split(' ').next().unwrap().to_string();

    update(&chunk, r#"INSERT DATA { <http://x/new> <http://x/p> "v" }"#);
    assert_eq!(lookup(&chunk, &["-s", "<http://x/new>"]), "<http://x/new> <http://x/p> \"v\" .\n");
    assert_eq!(lookup(&chunk, &["-s", "<http://x/new>", "--base-only"]), "");
    assert_eq!(lookup(&chunk, &["-s", "<http://x/new>", "-g", "DEFAULT", "--count"]), "1\n");

    // Deleting a base quad hides it from lookup, and --base-only still has it.
    let nquads = first.clone();
    let data = match nquads.split(' ').count() {
        5 => {
            let parts: Vec<&str> = nquads.trim_end_matches(" .").rsplitn(2, ' ').collect();
            format!("GRAPH {} {{ {} }}", parts[0], parts[1])
        }
        _ => nquads.trim_end_matches(" .").to_string(),
    };
    update(&chunk, &format!("DELETE DATA {{ {data} }}"));
    let after = lookup(&chunk, &["-s", &subject]);
    assert!(!after.lines().any(|l| l == first), "{after}");
    assert!(lookup(&chunk, &["-s", &subject, "--base-only"]).lines().any(|l| l == first));

    // Counts agree with SPARQL over the same view.
    let n = lookup(&chunk, &["--count"]);
    assert_eq!(n.trim(), count_by_query(&chunk, "?s ?p ?o"));
    let n = lookup(&chunk, &["-s", &subject, "--count"]);
    assert_eq!(n.trim(), count_by_query(&chunk, &format!("{subject} ?p ?o")));

    // Clearing the default graph hides every default-graph quad of the base.
    update(&chunk, "CLEAR DEFAULT");
    assert_eq!(lookup(&chunk, &["-g", "DEFAULT", "--count"]), "0\n");
    assert_ne!(lookup(&chunk, &["-g", "DEFAULT", "--count", "--base-only"]), "0\n");
}
