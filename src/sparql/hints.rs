//! Notes on an answer for the person who asked, never part of the answer:
//! `query` says them on stderr and the TUI under its results.
//!
//! The one here is the quad store's classic trap. A pattern outside `GRAPH`
//! reads the default graph only, and a store imported from N-Quads often has
//! none: the query answers nothing (or a count of 0), correctly, and nothing
//! says why.

use spargebra::algebra::GraphPattern;
use spargebra::Query;

use super::limits::query_pattern;
use crate::view::View;

/// What the note says; `query` adds its `--union-default-graph`.
pub const EMPTY_DEFAULT_GRAPH: &str = "the default graph is empty and the quads are in named graphs, \
     which patterns outside GRAPH do not read: use GRAPH ?g { … }";

/// Whether `query` reads the default graph of `parts` where it is empty and
/// named graphs are not: it has a pattern outside `GRAPH`, names no dataset
/// (`FROM`), and the default graph is not the union. Decided from the graph
/// dictionaries and the logs, without reading rows; `false` when they
/// cannot tell.
pub fn reads_an_empty_default_graph(query: &Query, parts: &[View<'_>], union_default_graph: bool) -> bool {
    if union_default_graph || query.dataset().is_some() || !reads_default_graph(query_pattern(query)) {
        return false;
    }
    let mut named = false;
    for part in parts {
        match part.graphs_held() {
            Ok(Some(held)) if !held.default => named |= held.named,
            _ => return false,
        }
    }
    named
}

/// A triple or path pattern outside any `GRAPH` (EXISTS in filters aside).
fn reads_default_graph(p: &GraphPattern) -> bool {
    match p {
        GraphPattern::Bgp { patterns } => !patterns.is_empty(),
        GraphPattern::Path { .. } => true,
        GraphPattern::Graph { .. } | GraphPattern::Values { .. } | GraphPattern::Service { .. } => false,
        GraphPattern::Join { left, right }
        | GraphPattern::LeftJoin { left, right, .. }
        | GraphPattern::Lateral { left, right }
        | GraphPattern::Union { left, right }
        | GraphPattern::Minus { left, right } => reads_default_graph(left) || reads_default_graph(right),
        GraphPattern::Filter { inner, .. }
        | GraphPattern::Extend { inner, .. }
        | GraphPattern::OrderBy { inner, .. }
        | GraphPattern::Project { inner, .. }
        | GraphPattern::Distinct { inner }
        | GraphPattern::Reduced { inner }
        | GraphPattern::Slice { inner, .. }
        | GraphPattern::Group { inner, .. } => reads_default_graph(inner),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spargebra::SparqlParser;

    fn reads(text: &str) -> bool {
        reads_default_graph(query_pattern(&SparqlParser::new().parse_query(text).unwrap()))
    }

    #[test]
    fn patterns_outside_graph_read_the_default_graph() {
        assert!(reads("SELECT * { ?s ?p ?o }"));
        assert!(reads("SELECT (COUNT(*) AS ?n) { ?s <urn:p>+ ?o }"));
        assert!(reads("ASK { GRAPH ?g { ?s ?p ?o } OPTIONAL { ?s <urn:q> ?x } }"));
        assert!(reads("SELECT * { { GRAPH ?g { ?s ?p ?o } } UNION { ?s ?p ?o } } LIMIT 1"));
        assert!(!reads("SELECT * { GRAPH ?g { ?s ?p ?o } }"));
        assert!(!reads("SELECT * { GRAPH <urn:g> { ?s ?p ?o } FILTER(?o > 1) } ORDER BY ?s"));
        assert!(!reads("SELECT * {}"));
        assert!(!reads("SELECT * { VALUES ?x { 1 } }"));
    }
}
