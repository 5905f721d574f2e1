//! The W3C RDF 1.1 N-Quads syntax tests (fixtures/w3c-rdf-tests), through
//! our import.
//!
//! A positive test must import, and the quads in the new base, read back
//! cell by cell, must be the dataset a strict parser (oxttl) reads from the
//! same file, blank nodes canonicalised. A negative test must be refused,
//! and the refusal must name the file and a line:column inside it. Every
//! test is named in the output; none is skipped.

mod common;

use std::path::{Path, PathBuf};

use oxrdf::Dataset;
use oxttl::NQuadsParser;

use common::manifest::*;
use cottas_tui::import::{self, ImportOptions, InputFormat};
use cottas_tui::store::base::Base;

const RDFT: &str = "http://www.w3.org/ns/rdftest#";

struct SyntaxTest {
    name: String,
    file: PathBuf,
    positive: bool,
}

fn suite() -> Vec<SyntaxTest> {
    let manifest = common::w3c_suites().join("rdf/rdf11/rdf-n-quads/manifest.ttl");
    let m = Manifest { triples: parse_turtle(&manifest).unwrap() };
    let me: oxrdf::NamedOrBlankNode = oxrdf::NamedNode::new_unchecked(url(&manifest)).into();
    let entries = m.list(m.object(&me, &format!("{MF}entries")).unwrap());
    entries
        .iter()
        .filter_map(as_subject)
        .filter_map(|node| {
            let kind = m.object(&node, &format!("{RDF}type"))?.to_string();
            let positive = match kind.trim_start_matches('<').trim_end_matches('>').strip_prefix(RDFT)? {
                "TestNQuadsPositiveSyntax" => true,
                "TestNQuadsNegativeSyntax" => false,
                _ => return None,
            };
            let oxrdf::Term::NamedNode(action) = m.object(&node, &format!("{MF}action"))? else {
                return None;
            };
            let oxrdf::Term::Literal(name) = m.object(&node, &format!("{MF}name"))? else { return None };
            Some(SyntaxTest { name: name.value().to_owned(), file: path_of(action.as_str()), positive })
        })
        .collect()
}

/// Imports `file` as N-Quads into a fresh chunk under `dir`.
fn import_nquads(file: &Path, dir: &Path) -> Result<PathBuf, String> {
    let out = dir.join("chunk");
    let mut options = ImportOptions::new(vec![file.to_path_buf()], out.clone());
    options.format = Some(InputFormat::NQuads);
    import::import(&options, |_| {}).map_err(|e| e.to_string())?;
    Ok(out.join("v1/data.cottas"))
}

/// The base's rows as a dataset: each row's cells are N-Triples tokens, so
/// a row is one N-Quads line (the default graph's `DEFAULT` left out).
fn dataset_of(base: &Base) -> Result<Dataset, String> {
    let mut text = String::new();
    for rg in 0..base.num_row_groups() {
        let cols: Vec<_> =
            (0..4).map(|c| base.read_column(rg, c).map_err(|e| e.to_string())).collect::<Result<_, _>>()?;
        let cell = |c: usize, r: usize| String::from_utf8_lossy(cols[c][r].data()).into_owned();
        for r in 0..base.rg_rows(rg) {
            let g = cell(3, r);
            // A blank-node graph name is stored as an IRI (docs/format.md).
            let g = match g.strip_prefix("<urn:cottas-tui:bnode-graph:") {
                _ if g == "DEFAULT" => String::new(),
                Some(label) => format!("_:{}", label.trim_end_matches('>')),
                None => g,
            };
            text.push_str(&format!("{} {} {} {g} .\n", cell(0, r), cell(1, r), cell(2, r)));
        }
    }
    canonical(text.as_bytes())
}

fn canonical(bytes: &[u8]) -> Result<Dataset, String> {
    let mut d: Dataset = NQuadsParser::new()
        .for_slice(bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?
        .into_iter()
        .collect();
    d.canonicalize(oxrdf::dataset::CanonicalizationAlgorithm::Unstable);
    Ok(d)
}

fn run(t: &SyntaxTest) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let imported = import_nquads(&t.file, dir.path());
    if !t.positive {
        let error = match imported {
            Ok(_) => return Err("imported; the test says it is not N-Quads".into()),
            Err(e) => e,
        };
        let file_name = t.file.file_name().unwrap().to_string_lossy();
        let has_position = error.split(|c: char| !c.is_ascii_digit() && c != ':').any(|w| {
            let mut parts = w.split(':').filter(|p| !p.is_empty());
            parts.next().is_some_and(|l| l.parse::<u64>().is_ok())
                && parts.next().is_some_and(|c| c.parse::<u64>().is_ok())
        });
        return if error.contains(file_name.as_ref()) && has_position {
            Ok(())
        } else {
            Err(format!("refused, but the error names no file and line:column: {error}"))
        };
    }
    let base_path = imported?;
    let ours = dataset_of(&Base::open(&base_path).map_err(|e| e.to_string())?)?;
    let theirs = canonical(&std::fs::read(&t.file).unwrap())?;
    if ours == theirs {
        Ok(())
    } else {
        Err(format!("the base holds\n{ours}\nwhere the file says\n{theirs}"))
    }
}

#[test]
fn w3c_rdf11_nquads_syntax() {
    let tests = suite();
    assert_eq!(tests.iter().filter(|t| t.positive).count(), 53, "the manifest's positive tests");
    assert_eq!(tests.iter().filter(|t| !t.positive).count(), 34, "the manifest's negative tests");
    let mut failures = Vec::new();
    for t in &tests {
        let outcome = run(t);
        common::announce(&format!(
            "test w3c-nquads {} ... {}",
            t.name,
            if outcome.is_ok() { "ok" } else { "FAILED" }
        ));
        if let Err(e) = outcome {
            failures.push(format!("{} ({}): {e}", t.name, t.file.display()));
        }
    }
    assert!(failures.is_empty(), "{} of {} fail:\n{}", failures.len(), tests.len(), failures.join("\n"));
}
