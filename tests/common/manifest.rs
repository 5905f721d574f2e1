//! Reading W3C test manifests (Turtle): entries, lists, and the data files
//! of `ut:data` / `ut:graphData`. Shared by the SPARQL and protocol suites.

use std::fs::File;
use std::path::{Path, PathBuf};

use oxrdf::{NamedNode, NamedOrBlankNode, Term};
use oxttl::{NTriplesParser, TurtleParser};

pub const MF: &str = "http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#";
pub const RDF: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#";

pub const UT: &str = "http://www.w3.org/2009/sparql/tests/test-update#";
pub const RDFS_LABEL: &str = "http://www.w3.org/2000/01/rdf-schema#label";

pub fn url(p: &Path) -> String {
    format!("file://{}", p.display())
}
pub fn path_of(u: &str) -> PathBuf {
    PathBuf::from(u.trim_start_matches("file://"))
}

pub fn parse_turtle(path: &Path) -> Result<Vec<oxrdf::Triple>, String> {
    let f = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let base = url(path);
    let r: Result<Vec<_>, _> = if path.extension().is_some_and(|e| e == "nt") {
        NTriplesParser::new().for_reader(f).collect()
    } else {
        TurtleParser::new().with_base_iri(&base).map_err(|e| e.to_string())?.for_reader(f).collect()
    };
    r.map_err(|e| format!("{}: {e}", path.display()))
}

pub struct Manifest {
    pub triples: Vec<oxrdf::Triple>,
}

impl Manifest {
    pub fn objects(&self, s: &NamedOrBlankNode, p: &str) -> Vec<&Term> {
        self.triples
            .iter()
            .filter(|t| &t.subject == s && t.predicate.as_str() == p)
            .map(|t| &t.object)
            .collect()
    }
    pub fn object(&self, s: &NamedOrBlankNode, p: &str) -> Option<&Term> {
        self.triples.iter().find(|t| &t.subject == s && t.predicate.as_str() == p).map(|t| &t.object)
    }
    pub fn list(&self, head: &Term) -> Vec<Term> {
        let mut out = Vec::new();
        let mut cur = head.clone();
        while let Some(node) = as_subject(&cur) {
            let Some(first) = self.object(&node, &format!("{RDF}first")) else { break };
            out.push(first.clone());
            match self.object(&node, &format!("{RDF}rest")) {
                Some(rest) => cur = rest.clone(),
                None => break,
            }
        }
        out
    }
}

pub fn as_subject(t: &Term) -> Option<NamedOrBlankNode> {
    match t {
        Term::NamedNode(n) => Some(n.clone().into()),
        Term::BlankNode(b) => Some(b.clone().into()),
        _ => None,
    }
}

/// A manifest and its entries (name, node) of type `mf:<kind>`.
pub fn entries_of(manifest: &Path, kind: &str) -> (Manifest, Vec<(Term, NamedOrBlankNode)>) {
    let m = Manifest { triples: parse_turtle(manifest).unwrap() };
    let me: NamedOrBlankNode = NamedNode::new_unchecked(url(manifest)).into();
    let want = format!("<{MF}{kind}>");
    let entries = m.object(&me, &format!("{MF}entries")).map(|e| m.list(e)).unwrap_or_default();
    let picked = entries
        .into_iter()
        .filter_map(|e| as_subject(&e).map(|n| (e, n)))
        .filter(|(_, n)| m.objects(n, &format!("{RDF}type")).iter().any(|t| t.to_string() == want))
        .collect();
    (m, picked)
}

/// `ut:data` files (default graph) and `ut:graphData [ ut:graph F; rdfs:label G ]`.
pub fn graph_files(m: &Manifest, node: &NamedOrBlankNode) -> Vec<(Option<String>, PathBuf)> {
    let file = |t: &Term| match t {
        Term::NamedNode(n) => Some(path_of(n.as_str())),
        _ => None,
    };
    let mut out: Vec<(Option<String>, PathBuf)> =
        m.objects(node, &format!("{UT}data")).into_iter().filter_map(file).map(|f| (None, f)).collect();
    for gd in m.objects(node, &format!("{UT}graphData")) {
        let Some(gd) = as_subject(gd) else { continue };
        let (Some(f), Some(Term::Literal(label))) =
            (m.object(&gd, &format!("{UT}graph")).and_then(file), m.object(&gd, RDFS_LABEL))
        else {
            continue;
        };
        out.push((Some(label.value().to_string()), f));
    }
    out
}
