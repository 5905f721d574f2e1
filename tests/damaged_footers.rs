//! Footers that made the binary panic inside the parquet crate (found by
//! scripts/footer-mutations: 1-4 random bytes overwritten in the Thrift
//! footer of a pycottas-made file and of ours). Every command refuses them
//! with the file, the byte offset and what was expected; none panics.
//! case-7 came from the `base_rows` fuzz target: a list count of 706 million
//! in 697 bytes of footer, which the parquet crate reserved (34 GB) before
//! reading; `format::thrift::skim_struct` now refuses it first.

mod common;

use common::{bin, repo};

#[test]
fn damaged_footers_are_refused_by_every_command_without_a_panic() {
    let dir = repo().join("fixtures/damaged-footers");
    let mut cases: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    cases.sort();
    assert!(cases.len() >= 7);
    for case in &cases {
        let work = tempfile::tempdir().unwrap();
        let base = work.path().join("data.cottas");
        std::fs::copy(case, &base).unwrap();
        let runs: [&[&str]; 4] = [
            &["dump"],
            &["verify"],
            &["lookup", "--count"],
            &["query", "--format", "tsv", "-e", "ASK { ?s ?p ?o }"],
        ];
        for args in runs {
            let o = bin().arg(args[0]).arg(&base).args(&args[1..]).output().unwrap();
            let text = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
            assert!(matches!(o.status.code(), Some(1 | 2)), "{case:?} {args:?}: {:?}\n{text}", o.status);
            assert!(!text.contains("panicked"), "{case:?} {args:?}: {text}");
            assert!(text.contains("data.cottas") && text.contains("byte"), "{case:?} {args:?}: {text}");
        }
    }
}
