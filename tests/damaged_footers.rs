//! Footers that made the binary panic inside the parquet crate (found by
//! scripts/footer-mutations: 1-4 random bytes overwritten in the Thrift
//! footer of a pycottas-made file and of ours). Every command refuses them
//! with the file, the byte offset and what was expected; none panics.
//! case-7 came from the `base_rows` fuzz target: a list count of 706 million
//! in 697 bytes of footer, which the parquet crate reserved (34 GB) before
//! reading; `format::thrift::check_struct` now refuses it first. case-8,
//! from the same target: an i32 where the schema list belongs, which the
//! crate read as a list header anyway (it reads fields by id, not by the
//! type the bytes declare) and reserved 7.5 GB for; the footer's fields
//! are now checked against the types Parquet declares.

mod common;

use common::{bin, repo};

#[test]
fn damaged_footers_are_refused_by_every_command_without_a_panic() {
    let dir = repo().join("fixtures/damaged-footers");
    let mut cases: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    cases.sort();
    assert!(cases.len() >= 8);
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

/// A base whose bloom filter for one chunk has no blocks (found by
/// scripts/footer-mutations: the parquet crate's filter check indexed an
/// empty block list and panicked). A filter only prunes, so a damaged one
/// prunes nothing: the answers are those of the undamaged file.
#[test]
fn a_damaged_bloom_filter_prunes_nothing_and_panics_nowhere() {
    let damaged = repo().join("fixtures/damaged-bloom/pycottas-small.cottas");
    let pristine = common::pycottas_small("cottas");
    let queries = [
        "SELECT (COUNT(*) AS ?n) WHERE { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } }",
        "SELECT ?s ?p ?o WHERE { ?s ?p ?o } ORDER BY ?s ?p ?o",
        "SELECT ?s ?o WHERE { ?s <http://xmlns.com/foaf/0.1/name> ?o } ORDER BY ?s ?o",
    ];
    for q in queries {
        let answer = |base: &std::path::Path| {
            let work = tempfile::tempdir().unwrap();
            let file = work.path().join("data.cottas");
            std::fs::copy(base, &file).unwrap();
            let o = bin().args(["query"]).arg(&file).args(["--format", "tsv", "-e", q]).output().unwrap();
            let err = String::from_utf8_lossy(&o.stderr).into_owned();
            assert_eq!(o.status.code(), Some(0), "{base:?} {q}: {err}");
            String::from_utf8(o.stdout).unwrap()
        };
        assert_eq!(answer(&damaged), answer(&pristine), "{q}");
    }
}

/// case-8 is refused by our check of the footer's field types, before the
/// parquet crate reads it (the crate's own error, after its 7.5 GB
/// reservation, was "Required field name is missing").
#[test]
fn a_field_of_the_wrong_type_is_refused_before_the_crate_reads_it() {
    let work = tempfile::tempdir().unwrap();
    let base = work.path().join("data.cottas");
    std::fs::copy(repo().join("fixtures/damaged-footers/case-8.cottas"), &base).unwrap();
    let o = bin().arg("dump").arg(&base).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains(
            "at byte 983 (0x3d7): `footer.metadata`: field 2 holds an i32 where Parquet declares a list"
        ),
        "{text}"
    );
}
