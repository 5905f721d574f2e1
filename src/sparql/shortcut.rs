//! Answers a query from what the read path can count without producing
//! solutions, where that answer is by construction the one evaluation gives.
//!
//! `SELECT (COUNT(*) AS ?n) WHERE { s p o }` (optionally inside `GRAPH`) is a
//! count of one quad pattern: evaluated, every matching quad becomes a
//! solution that spareval then counts; here the view counts the pattern's
//! matches row group by row group (`view::Quads::try_count`, which decodes
//! only bound columns, or nothing when a sidecar already holds the rows).
//! The shape is matched exactly (no FROM, no repeated variable, no other
//! aggregate or grouping), and the same dataset call a plain evaluation
//! makes is counted, union default graph included. `tests/count_shortcuts.rs`
//! checks both against each other over base ⊕ delta.

use std::sync::Arc;

use oxrdf::{Literal, Term, Variable};
use spargebra::algebra::{AggregateExpression, Expression, GraphPattern};
use spargebra::term::{NamedNodePattern, TermPattern, TriplePattern};
use spargebra::Query;

use super::dataset::StoreDataset;
use crate::store::StoreError;
use crate::view::terms::Tok;

/// A `COUNT(*)` of one triple pattern, bound to `var`.
pub struct CountOf {
    pub var: Variable,
    triple: TriplePattern,
    /// `None`: the default graph; else the `GRAPH` clause's name.
    graph: Option<NamedNodePattern>,
}

/// The query's shape, when it is exactly a count of one triple pattern.
pub fn count_of(query: &Query) -> Option<CountOf> {
    let Query::Select { dataset: None, pattern, .. } = query else { return None };
    let GraphPattern::Project { inner, variables } = pattern else { return None };
    let [out] = variables.as_slice() else { return None };
    let GraphPattern::Extend { inner, variable, expression: Expression::Variable(agg) } = &**inner else {
        return None;
    };
    let GraphPattern::Group { inner, variables: keys, aggregates } = &**inner else { return None };
    let [(counted, AggregateExpression::CountSolutions { distinct: false })] = aggregates.as_slice() else {
        return None;
    };
    if variable != out || counted != agg || !keys.is_empty() {
        return None;
    }
    let (graph, bgp) = match &**inner {
        GraphPattern::Graph { name, inner } => (Some(name.clone()), &**inner),
        other => (None, other),
    };
    let GraphPattern::Bgp { patterns } = bgp else { return None };
    let [triple] = patterns.as_slice() else { return None };
    distinct_variables(triple, graph.as_ref()).then(|| CountOf {
        var: out.clone(),
        triple: triple.clone(),
        graph,
    })
}

/// Every variable and blank node occurs once: a repeated one is a join
/// condition the count would not apply.
fn distinct_variables(t: &TriplePattern, graph: Option<&NamedNodePattern>) -> bool {
    let mut names: Vec<String> = Vec::new();
    let mut open = |name: Option<String>| name.is_none_or(|n| !names.contains(&n) && (names.push(n), true).1);
    let term = |p: &TermPattern| match p {
        TermPattern::Variable(v) => Some(format!("?{}", v.as_str())),
        TermPattern::BlankNode(b) => Some(format!("_:{}", b.as_str())),
        _ => None,
    };
    let node = |p: &NamedNodePattern| match p {
        NamedNodePattern::Variable(v) => Some(format!("?{}", v.as_str())),
        NamedNodePattern::NamedNode(_) => None,
    };
    let simple = |p: &TermPattern| {
        matches!(
            p,
            TermPattern::Variable(_)
                | TermPattern::BlankNode(_)
                | TermPattern::NamedNode(_)
                | TermPattern::Literal(_)
        )
    };
    simple(&t.subject)
        && simple(&t.object)
        && open(term(&t.subject))
        && open(node(&t.predicate))
        && open(term(&t.object))
        && open(graph.and_then(node))
}

impl CountOf {
    /// The count, through the dataset a plain evaluation would read.
    pub fn count(&self, dataset: &StoreDataset) -> Result<usize, StoreError> {
        let bound = |p: &TermPattern| match p {
            TermPattern::NamedNode(n) => Some(Tok::from_term(&Term::NamedNode(n.clone()))),
            TermPattern::Literal(l) => Some(Tok::from_term(&Term::Literal(l.clone()))),
            _ => None,
        };
        let named = |p: &NamedNodePattern| match p {
            NamedNodePattern::NamedNode(n) => Some(Tok::from_term(&Term::NamedNode(n.clone()))),
            NamedNodePattern::Variable(_) => None,
        };
        let (s, p, o) =
            (bound(&self.triple.subject), named(&self.triple.predicate), bound(&self.triple.object));
        let g = self.graph.as_ref().and_then(named);
        let graph = match &self.graph {
            None => Some(None),
            Some(NamedNodePattern::Variable(_)) => None,
            Some(NamedNodePattern::NamedNode(_)) => Some(g.as_ref()),
        };
        dataset.count(s.as_ref(), p.as_ref(), o.as_ref(), graph)
    }

    /// The one solution: `?var` = the count as an `xsd:integer`.
    pub fn solution(&self, n: usize) -> spareval::QuerySolutionIter<'static> {
        let vars: Arc<[Variable]> = Arc::from(vec![self.var.clone()]);
        let value = Term::Literal(Literal::from(n as i64));
        spareval::QuerySolutionIter::from_tuples(vars, std::iter::once(Ok(vec![Some(value)])))
    }
}
