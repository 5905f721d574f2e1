//! Notes on an answer for the person who asked, never part of the answer:
//! `query` says them on stderr and the TUI under its results.
//!
//! The one here is the quad store's classic trap. A pattern outside `GRAPH`
//! reads the default graph only, and a store imported from N-Quads often has
//! none: the query answers nothing (or a count of 0), correctly, and nothing
//! says why.

use spargebra::algebra::GraphPattern;
use spargebra::Query;

use super::dataset::Part;
use super::limits::query_pattern;
use crate::format::term::DEFAULT_GRAPH;

/// What the note says; `query` adds its `--union-default-graph`.
pub const EMPTY_DEFAULT_GRAPH: &str = "the default graph is empty and the quads are in named graphs, \
     which patterns outside GRAPH do not read: use GRAPH ?g { … }";

/// Whether `query` reads the default graph of `parts` where it is empty and
/// named graphs are not: it has a pattern outside `GRAPH` and no `GRAPH` at
/// all (a query with one knows about named graphs, as the TUI's default
/// query, a UNION of both, does), names no dataset (`FROM`), and the
/// default graph is not the union. Decided from the graph dictionaries and
/// the logs, without reading rows; `false` when they cannot tell.
pub fn reads_an_empty_default_graph<'a>(
    query: &Query,
    parts: &[impl Copy + Into<Part<'a>>],
    union_default_graph: bool,
) -> bool {
    let r = reads(query_pattern(query));
    if union_default_graph || query.dataset().is_some() || !r.default || r.named {
        return false;
    }
    let mut named = false;
    for &part in parts {
        let part: Part = part.into();
        // A base that holds the default graph answers without the log: the
        // log could only clear it, and then no note is the safe side.
        if part
            .store()
            .sidecars
            .dict(3)
            .is_some_and(|d| matches!(d.find(DEFAULT_GRAPH.as_bytes()), Ok(Some(_))))
        {
            return false;
        }
        match part.view().and_then(|v| v.graphs_held()) {
            Ok(Some(held)) if !held.default => named |= held.named,
            _ => return false,
        }
    }
    named
}

#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
struct Reads {
    default: bool,
    named: bool,
}

impl Reads {
    fn or(self, other: Reads) -> Reads {
        Reads { default: self.default || other.default, named: self.named || other.named }
    }
}

fn reads(p: &GraphPattern) -> Reads {
    match p {
        GraphPattern::Bgp { patterns } => Reads { default: !patterns.is_empty(), named: false },
        GraphPattern::Path { .. } => Reads { default: true, named: false },
        GraphPattern::Graph { .. } => Reads { default: false, named: true },
        GraphPattern::Values { .. } | GraphPattern::Service { .. } => Reads::default(),
        GraphPattern::Join { left, right }
        | GraphPattern::LeftJoin { left, right, .. }
        | GraphPattern::Lateral { left, right }
        | GraphPattern::Union { left, right }
        | GraphPattern::Minus { left, right } => reads(left).or(reads(right)),
        GraphPattern::Filter { inner, .. }
        | GraphPattern::Extend { inner, .. }
        | GraphPattern::OrderBy { inner, .. }
        | GraphPattern::Project { inner, .. }
        | GraphPattern::Distinct { inner }
        | GraphPattern::Reduced { inner }
        | GraphPattern::Slice { inner, .. }
        | GraphPattern::Group { inner, .. } => reads(inner),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spargebra::SparqlParser;

    fn trap(text: &str) -> bool {
        let r = reads(query_pattern(&SparqlParser::new().parse_query(text).unwrap()));
        r.default && !r.named
    }

    #[test]
    fn patterns_outside_graph_in_a_query_without_graph() {
        assert!(trap("SELECT * { ?s ?p ?o }"));
        assert!(trap("SELECT (COUNT(*) AS ?n) { ?s <urn:p>+ ?o }"));
        assert!(trap("SELECT * { ?s ?p ?o FILTER(?o > 1) OPTIONAL { ?s <urn:q> ?x } } ORDER BY ?s LIMIT 1"));
        assert!(!trap("ASK { GRAPH ?g { ?s ?p ?o } OPTIONAL { ?s <urn:q> ?x } }"), "it knows about GRAPH");
        assert!(
            !trap("SELECT * { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } } LIMIT 100"),
            "the TUI's default"
        );
        assert!(!trap("SELECT * { GRAPH ?g { ?s ?p ?o } }"));
        assert!(!trap("SELECT * {}"));
        assert!(!trap("SELECT * { VALUES ?x { 1 } }"));
    }
}
