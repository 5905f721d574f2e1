//! Sub-selects the shortcuts answer, replaced by their solutions.
//!
//! `SELECT (MAX(?n) AS ?most) { { SELECT ?d (COUNT(?x) AS ?n) { … } GROUP BY
//! ?d } }` is a grouped count under an aggregate: the inner query is a shape
//! `sparql::analytic` or `sparql::shortcut` answers over ids, the outer one
//! is not. A sub-select is evaluated on its own (its variables are scoped
//! to it; SPARQL evaluates it bottom-up), so its solutions can stand in its
//! place as a `VALUES` block and spareval evaluates the rest. Only a
//! sub-select outside every `GRAPH` and `SERVICE` is replaced, since one
//! inside `GRAPH` reads that graph, not the dataset's default graph; and only
//! when its solutions are few enough to hold ([`MAX_ROWS`]) and hold no blank
//! node (which `VALUES` cannot write).

use spareval::QueryResults;
use spargebra::algebra::GraphPattern;
use spargebra::term::GroundTerm;
use spargebra::Query;

use super::run::QueryError;

/// Solutions past which a sub-select is evaluated in place instead.
const MAX_ROWS: usize = 1 << 20;

/// What answers a sub-select (as a query of its own), when one shortcut can.
pub type Answer<'f> = dyn FnMut(&Query) -> Result<Option<QueryResults<'static>>, QueryError> + 'f;

/// `query` with every sub-select `answer` answers replaced by its
/// solutions; `None` when none was.
pub fn answered(query: &Query, answer: &mut Answer) -> Result<Option<Query>, QueryError> {
    let mut query = query.clone();
    let pattern = match &mut query {
        Query::Select { pattern, .. }
        | Query::Construct { pattern, .. }
        | Query::Describe { pattern, .. }
        | Query::Ask { pattern, .. } => pattern,
    };
    // The query's own top-level pattern is not a sub-select.
    let Some(new) = children(pattern, answer)? else { return Ok(None) };
    *pattern = new;
    Ok(Some(query))
}

/// `p` itself replaced, when it is a sub-select `answer` answers, else its
/// children rewritten.
fn rewrite(p: &GraphPattern, answer: &mut Answer) -> Result<Option<GraphPattern>, QueryError> {
    if is_sub_select(p) {
        let q = Query::Select { dataset: None, pattern: p.clone(), base_iri: None };
        if let Some(QueryResults::Solutions(solutions)) = answer(&q)? {
            if let Some(values) = as_values(solutions)? {
                return Ok(Some(values));
            }
        }
    }
    children(p, answer)
}

fn is_sub_select(p: &GraphPattern) -> bool {
    match p {
        GraphPattern::Project { .. } => true,
        GraphPattern::Slice { inner, .. }
        | GraphPattern::Distinct { inner }
        | GraphPattern::Reduced { inner } => is_sub_select(inner),
        _ => false,
    }
}

/// `p` with its children rewritten; `None` when none changed. `GRAPH` and
/// `SERVICE` are not entered (see the module comment).
fn children(p: &GraphPattern, answer: &mut Answer) -> Result<Option<GraphPattern>, QueryError> {
    let mut one = |inner: &GraphPattern| rewrite(inner, answer);
    let boxed = |g: GraphPattern| Box::new(g);
    Ok(match p {
        GraphPattern::Join { left, right } => two(left, right, &mut one)?
            .map(|(left, right)| GraphPattern::Join { left: boxed(left), right: boxed(right) }),
        GraphPattern::Union { left, right } => two(left, right, &mut one)?
            .map(|(left, right)| GraphPattern::Union { left: boxed(left), right: boxed(right) }),
        GraphPattern::Minus { left, right } => two(left, right, &mut one)?
            .map(|(left, right)| GraphPattern::Minus { left: boxed(left), right: boxed(right) }),
        GraphPattern::LeftJoin { left, right, expression } => {
            two(left, right, &mut one)?.map(|(left, right)| GraphPattern::LeftJoin {
                left: boxed(left),
                right: boxed(right),
                expression: expression.clone(),
            })
        }
        GraphPattern::Filter { expr, inner } => {
            one(inner)?.map(|inner| GraphPattern::Filter { expr: expr.clone(), inner: boxed(inner) })
        }
        GraphPattern::Extend { inner, variable, expression } => {
            one(inner)?.map(|inner| GraphPattern::Extend {
                inner: boxed(inner),
                variable: variable.clone(),
                expression: expression.clone(),
            })
        }
        GraphPattern::OrderBy { inner, expression } => one(inner)?
            .map(|inner| GraphPattern::OrderBy { inner: boxed(inner), expression: expression.clone() }),
        GraphPattern::Project { inner, variables } => one(inner)?
            .map(|inner| GraphPattern::Project { inner: boxed(inner), variables: variables.clone() }),
        GraphPattern::Distinct { inner } => {
            one(inner)?.map(|inner| GraphPattern::Distinct { inner: boxed(inner) })
        }
        GraphPattern::Reduced { inner } => {
            one(inner)?.map(|inner| GraphPattern::Reduced { inner: boxed(inner) })
        }
        GraphPattern::Slice { inner, start, length } => one(inner)?.map(|inner| GraphPattern::Slice {
            inner: boxed(inner),
            start: *start,
            length: *length,
        }),
        GraphPattern::Group { inner, variables, aggregates } => {
            one(inner)?.map(|inner| GraphPattern::Group {
                inner: boxed(inner),
                variables: variables.clone(),
                aggregates: aggregates.clone(),
            })
        }
        _ => None,
    })
}

/// Both sides rewritten, when either changed.
fn two(
    left: &GraphPattern,
    right: &GraphPattern,
    one: &mut dyn FnMut(&GraphPattern) -> Result<Option<GraphPattern>, QueryError>,
) -> Result<Option<(GraphPattern, GraphPattern)>, QueryError> {
    let (l, r) = (one(left)?, one(right)?);
    if l.is_none() && r.is_none() {
        return Ok(None);
    }
    Ok(Some((l.unwrap_or_else(|| left.clone()), r.unwrap_or_else(|| right.clone()))))
}

/// The solutions as `VALUES`, or `None` past [`MAX_ROWS`] or with a blank
/// node.
fn as_values(solutions: spareval::QuerySolutionIter<'static>) -> Result<Option<GraphPattern>, QueryError> {
    let variables = solutions.variables().to_vec();
    let mut bindings = Vec::new();
    for solution in solutions {
        let solution = solution.map_err(|e| QueryError::Evaluation(e.to_string()))?;
        if bindings.len() == MAX_ROWS {
            return Ok(None);
        }
        let mut row = Vec::with_capacity(variables.len());
        for value in solution.values() {
            row.push(match value {
                None => None,
                Some(oxrdf::Term::NamedNode(n)) => Some(GroundTerm::NamedNode(n.clone())),
                Some(oxrdf::Term::Literal(l)) => Some(GroundTerm::Literal(l.clone())),
                Some(_) => return Ok(None),
            });
        }
        bindings.push(row);
    }
    Ok(Some(GraphPattern::Values { variables, bindings }))
}
