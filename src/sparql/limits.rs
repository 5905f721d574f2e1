//! Bounds on what one request may make the parser and the evaluator reach.
//!
//! spargebra parses and spareval evaluates by recursion, one stack frame (or
//! several) per level of nesting. A request nested deeply enough — 50,000
//! parentheses, or 20,000 groups chained by UNION, which parse into a tree as
//! deep — overflows the stack, and a stack overflow aborts the whole process:
//! it cannot be caught. For a CLI that loses one command; for a server it
//! loses every client. So depth is bounded twice, before it can hurt:
//! * the text's bracket nesting, before parsing ([`check_text`]);
//! * the parsed algebra's depth, before evaluating ([`check_query`],
//!   [`check_update`]), counted by a walk that stops at the limit;
//!
//! and every parse and evaluation runs on a thread whose stack is known to be
//! large enough for anything within those bounds ([`STACK_BYTES`], used by
//! `main`, the TUI's workers and the tests that check the bounds).

use spargebra::algebra::{
    AggregateExpression, Expression, GraphPattern, OrderExpression, PropertyPathExpression,
};
use spargebra::term::Variable;
use spargebra::{GraphUpdateOperation, Query, SparqlParser, Update};

use super::syntax::{self, Request};

/// Deepest bracket nesting ( `(`, `{`, `[` ) accepted in a request's text.
pub const MAX_TEXT_NESTING: usize = 256;

/// Deepest algebra (graph patterns, expressions and property paths together)
/// accepted for evaluation. A query written by a person is rarely deeper than
/// 30; a chain of a few thousand UNION groups from a query builder fits.
pub const MAX_ALGEBRA_DEPTH: usize = 5_000;

/// The stack of threads that parse and evaluate requests. Only the pages a
/// request touches are ever committed; the size is an upper bound that the
/// limits above stay inside with a wide margin (tests/limits.rs runs requests
/// at the limits on a thread of this size).
pub const STACK_BYTES: usize = 512 << 20;

/// Refuses text nested deeper than [`MAX_TEXT_NESTING`], naming the line and
/// column of the first bracket past the limit. Strings, IRIs and comments are
/// skipped so their brackets do not count.
pub fn check_text(text: &str) -> Result<(), String> {
    match first_bracket_past(text, MAX_TEXT_NESTING) {
        None => Ok(()),
        Some((line, column)) => Err(format!(
            "at line {line} column {column}: brackets are nested more than {MAX_TEXT_NESTING} deep; \
             this limit keeps one request from exhausting the stack"
        )),
    }
}

/// Line and column of the first bracket nested deeper than `max`.
fn first_bracket_past(text: &str, max: usize) -> Option<(usize, usize)> {
    let mut scan = Scanner { depth: 0, line: 1, column: 1 };
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '(' | '{' | '[' => {
                scan.depth += 1;
                if scan.depth > max {
                    return Some((scan.line, scan.column));
                }
            }
            ')' | '}' | ']' => scan.depth = scan.depth.saturating_sub(1),
            '"' | '\'' => scan.skip_string(c, &mut chars),
            '<' if chars.peek().is_some_and(|n| !n.is_whitespace() && *n != '=') => {
                scan.skip_until('>', &mut chars)
            }
            '#' => scan.skip_until('\n', &mut chars),
            _ => {}
        }
        scan.advance(c);
    }
    None
}

/// A request this small (text, bracket nesting, then algebra depth) parses
/// and evaluates well inside a default 2 MiB thread stack, so `serve` may
/// run it on the connection's own thread instead of handing it to a
/// large-stack worker (tests/serve.rs sends requests at these bounds).
pub const SMALL_TEXT_BYTES: usize = 4096;
pub const SMALL_TEXT_NESTING: usize = 16;
pub const SMALL_ALGEBRA_DEPTH: usize = 64;

/// Whether `text` is within [`SMALL_TEXT_BYTES`] and [`SMALL_TEXT_NESTING`]
/// (safe to parse on a small stack).
pub fn is_small_text(text: &str) -> bool {
    text.len() <= SMALL_TEXT_BYTES && first_bracket_past(text, SMALL_TEXT_NESTING).is_none()
}

/// What the algebra of a parsed query looks like, for choosing where to run it.
pub struct Shape {
    /// Deepest level of patterns, expressions and paths together.
    pub depth: usize,
    /// An ORDER BY or GROUP BY: all the work may come before the first row.
    pub sorts_or_groups: bool,
    /// The LIMIT of the outermost slice, if any.
    pub limit: Option<usize>,
}

pub fn query_shape(query: &Query) -> Shape {
    let pattern = query_pattern(query);
    let walked = Depth::new().pattern(pattern, 1);
    let limit = match pattern {
        GraphPattern::Slice { length, .. } => *length,
        _ => None,
    };
    Shape { depth: walked.deepest, sorts_or_groups: walked.sorts_or_groups, limit }
}

struct Scanner {
    depth: usize,
    line: usize,
    column: usize,
}

impl Scanner {
    fn advance(&mut self, c: char) {
        if c == '\n' {
            self.line += 1;
            self.column = 1;
        } else {
            self.column += 1;
        }
    }

    /// Skips to `end` (inclusive), stopping at a line end for IRIs and
    /// comments: neither spans lines, and a `<` that was an operator must not
    /// hide the rest of the text.
    fn skip_until(&mut self, end: char, chars: &mut std::iter::Peekable<std::str::Chars>) {
        while let Some(&c) = chars.peek() {
            if c == '\n' && end != '\n' {
                return;
            }
            chars.next();
            self.advance(c);
            if c == end {
                return;
            }
        }
    }

    /// Skips a short or long (`"""`) string literal, honouring escapes.
    fn skip_string(&mut self, quote: char, chars: &mut std::iter::Peekable<std::str::Chars>) {
        let mut run = 1;
        while chars.peek() == Some(&quote) && run < 3 {
            chars.next();
            self.advance(quote);
            run += 1;
        }
        if run == 2 {
            return; // the empty string ""
        }
        let closing = if run == 3 { 3 } else { 1 };
        let mut seen = 0;
        while let Some(c) = chars.next() {
            self.advance(c);
            if c == '\\' {
                if let Some(n) = chars.next() {
                    self.advance(n);
                }
                seen = 0;
                continue;
            }
            if c == '\n' && closing == 1 {
                return;
            }
            seen = if c == quote { seen + 1 } else { 0 };
            if seen == closing {
                return;
            }
        }
    }
}

/// Refuses a query whose algebra is deeper than [`MAX_ALGEBRA_DEPTH`].
pub fn check_query(query: &Query) -> Result<(), String> {
    refuse_deep(walk_query(query))
}

/// Refuses an update whose patterns are deeper than [`MAX_ALGEBRA_DEPTH`].
pub fn check_update(update: &Update) -> Result<(), String> {
    refuse_deep(walk_update(update))
}

/// Whether a (bounded, already checked) query has a SERVICE anywhere,
/// EXISTS filters included: the endpoint refuses those outright.
pub fn query_calls_service(query: &Query) -> bool {
    walk_query(query).service
}

/// [`query_calls_service`] for the WHERE clauses of an update.
pub fn update_calls_service(update: &Update) -> bool {
    walk_update(update).service
}

/// The WHERE clause of any query form.
pub fn query_pattern(query: &Query) -> &GraphPattern {
    match query {
        Query::Select { pattern, .. }
        | Query::Construct { pattern, .. }
        | Query::Describe { pattern, .. }
        | Query::Ask { pattern, .. } => pattern,
    }
}

fn walk_query(query: &Query) -> Depth {
    Depth::new().pattern(query_pattern(query), 1)
}

fn walk_update(update: &Update) -> Depth {
    let mut depth = Depth::new();
    for op in &update.operations {
        if let GraphUpdateOperation::DeleteInsert { pattern, .. } = op {
            depth = depth.pattern(pattern, 1);
        }
    }
    depth
}

fn refuse_deep(depth: Depth) -> Result<(), String> {
    if depth.exceeded {
        return Err(format!(
            "the request's algebra is nested more than {MAX_ALGEBRA_DEPTH} levels deep \
             (long chains of UNION, OPTIONAL, operators or path steps nest one level each); \
             this limit keeps one request from exhausting the stack"
        ));
    }
    Ok(())
}

/// The deepest level seen; the walk stops descending once past the limit,
/// so its own recursion is bounded too.
struct Depth {
    exceeded: bool,
    /// The deepest level entered (at most one past the limit).
    deepest: usize,
    /// A SERVICE pattern was seen.
    service: bool,
    /// An ORDER BY or GROUP BY was seen.
    sorts_or_groups: bool,
}

impl Depth {
    fn new() -> Depth {
        Depth { exceeded: false, deepest: 0, service: false, sorts_or_groups: false }
    }

    fn enter(&mut self, level: usize) -> bool {
        self.deepest = self.deepest.max(level);
        if level > MAX_ALGEBRA_DEPTH {
            self.exceeded = true;
        }
        !self.exceeded
    }

    fn pattern(mut self, p: &GraphPattern, level: usize) -> Depth {
        self.walk_pattern(p, level);
        self
    }

    fn walk_pattern(&mut self, p: &GraphPattern, level: usize) {
        if !self.enter(level) {
            return;
        }
        let next = level + 1;
        match p {
            GraphPattern::Bgp { .. } | GraphPattern::Values { .. } => {}
            GraphPattern::Path { path, .. } => self.walk_path(path, next),
            GraphPattern::Join { left, right }
            | GraphPattern::Union { left, right }
            | GraphPattern::Minus { left, right }
            | GraphPattern::Lateral { left, right } => {
                self.walk_pattern(left, next);
                self.walk_pattern(right, next);
            }
            GraphPattern::LeftJoin { left, right, expression } => {
                self.walk_pattern(left, next);
                self.walk_pattern(right, next);
                if let Some(e) = expression {
                    self.walk_expr(e, next);
                }
            }
            GraphPattern::Filter { expr, inner } | GraphPattern::Extend { inner, expression: expr, .. } => {
                self.walk_expr(expr, next);
                self.walk_pattern(inner, next);
            }
            GraphPattern::OrderBy { inner, expression } => {
                self.sorts_or_groups = true;
                for o in expression {
                    let (OrderExpression::Asc(e) | OrderExpression::Desc(e)) = o;
                    self.walk_expr(e, next);
                }
                self.walk_pattern(inner, next);
            }
            GraphPattern::Group { inner, aggregates, .. } => {
                self.sorts_or_groups = true;
                for (_, a) in aggregates {
                    if let AggregateExpression::FunctionCall { expr, .. } = a {
                        self.walk_expr(expr, next);
                    }
                }
                self.walk_pattern(inner, next);
            }
            GraphPattern::Graph { inner, .. }
            | GraphPattern::Project { inner, .. }
            | GraphPattern::Distinct { inner }
            | GraphPattern::Reduced { inner }
            | GraphPattern::Slice { inner, .. } => self.walk_pattern(inner, next),
            GraphPattern::Service { inner, .. } => {
                self.service = true;
                self.walk_pattern(inner, next)
            }
        }
    }

    fn walk_expr(&mut self, e: &Expression, level: usize) {
        if !self.enter(level) {
            return;
        }
        let next = level + 1;
        match e {
            Expression::NamedNode(_)
            | Expression::Literal(_)
            | Expression::Variable(_)
            | Expression::Bound(_) => {}
            Expression::Or(a, b)
            | Expression::And(a, b)
            | Expression::Equal(a, b)
            | Expression::SameTerm(a, b)
            | Expression::Greater(a, b)
            | Expression::GreaterOrEqual(a, b)
            | Expression::Less(a, b)
            | Expression::LessOrEqual(a, b)
            | Expression::Add(a, b)
            | Expression::Subtract(a, b)
            | Expression::Multiply(a, b)
            | Expression::Divide(a, b) => {
                self.walk_expr(a, next);
                self.walk_expr(b, next);
            }
            Expression::UnaryPlus(a) | Expression::UnaryMinus(a) | Expression::Not(a) => {
                self.walk_expr(a, next)
            }
            Expression::In(a, list) => {
                self.walk_expr(a, next);
                list.iter().for_each(|x| self.walk_expr(x, next));
            }
            Expression::If(a, b, c) => {
                self.walk_expr(a, next);
                self.walk_expr(b, next);
                self.walk_expr(c, next);
            }
            Expression::Coalesce(list) | Expression::FunctionCall(_, list) => {
                list.iter().for_each(|x| self.walk_expr(x, next))
            }
            Expression::Exists(p) => self.walk_pattern(p, next),
        }
    }

    fn walk_path(&mut self, p: &PropertyPathExpression, level: usize) {
        if !self.enter(level) {
            return;
        }
        let next = level + 1;
        match p {
            PropertyPathExpression::NamedNode(_) | PropertyPathExpression::NegatedPropertySet(_) => {}
            PropertyPathExpression::Reverse(a)
            | PropertyPathExpression::ZeroOrMore(a)
            | PropertyPathExpression::OneOrMore(a)
            | PropertyPathExpression::ZeroOrOne(a) => self.walk_path(a, next),
            PropertyPathExpression::Sequence(a, b) | PropertyPathExpression::Alternative(a, b) => {
                self.walk_path(a, next);
                self.walk_path(b, next);
            }
        }
    }
}

/// Why a request was not accepted for evaluation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// spargebra's message, which names line:column, as `syntax::describe`
    /// words it.
    Syntax(String),
    /// Past one of the bounds above.
    Limit(String),
}

/// Parses a query within the bounds: text nesting, then the parse, then the
/// algebra's depth.
pub fn parse_query(parser: SparqlParser, text: &str) -> Result<Query, Refusal> {
    check_text(text).map_err(Refusal::Limit)?;
    let mut query = parser
        .parse_query(text)
        .map_err(|e| Refusal::Syntax(syntax::describe(text, &e.to_string(), Request::Query)))?;
    check_query(&query).map_err(Refusal::Limit)?;
    if let Some(order) = syntax::star_variables_in_order(text) {
        star_in_order_of_appearance(&mut query, &order);
    }
    Ok(query)
}

/// `SELECT *` lists its variables in the order they first appear in the
/// text (`order`), as Oxigraph's and Jena's results do and a reader of the
/// query expects (`?s ?p ?o`); spargebra sorts them by name (`?o ?p ?s`).
/// The outermost projection is reordered; a variable the text does not name
/// (none, for text spargebra parsed) would keep its place after the others.
fn star_in_order_of_appearance(query: &mut Query, order: &[&str]) {
    let Query::Select { pattern, .. } = query else { return };
    let mut node = pattern;
    loop {
        node = match node {
            GraphPattern::Slice { inner, .. }
            | GraphPattern::Distinct { inner }
            | GraphPattern::Reduced { inner } => inner,
            GraphPattern::Project { variables, .. } => {
                let place = |v: &Variable| order.iter().position(|n| *n == v.as_str()).unwrap_or(order.len());
                variables.sort_by_key(place);
                return;
            }
            _ => return,
        };
    }
}

/// Parses an update request within the bounds.
pub fn parse_update(parser: SparqlParser, text: &str) -> Result<Update, Refusal> {
    check_text(text).map_err(Refusal::Limit)?;
    let update = parser
        .parse_update(text)
        .map_err(|e| Refusal::Syntax(syntax::describe(text, &e.to_string(), Request::Update)))?;
    check_update(&update).map_err(Refusal::Limit)?;
    Ok(update)
}

/// Spawns a worker that parses or evaluates requests, with a [`STACK_BYTES`]
/// stack. Where such a stack cannot be had (an address-space limit), the
/// worker gets the default stack: the depth limits still hold, on a smaller
/// margin. An error only when no thread can be started at all.
pub fn spawn_request_thread<T: Send + 'static, F: FnOnce() -> T + Send + 'static>(
    f: F,
) -> std::io::Result<std::thread::JoinHandle<T>> {
    // The closure moves into whichever spawn succeeds; a failed spawn drops
    // its copy of the slot, not the work.
    let slot = std::sync::Arc::new(std::sync::Mutex::new(Some(f)));
    let run = |slot: std::sync::Arc<std::sync::Mutex<Option<F>>>| {
        move || {
            let f = slot.lock().ok().and_then(|mut g| g.take());
            f.expect("a request runs once")()
        }
    };
    let big =
        std::thread::Builder::new().name("request".into()).stack_size(STACK_BYTES).spawn(run(slot.clone()));
    match big {
        Ok(handle) => Ok(handle),
        Err(_) => std::thread::Builder::new().name("request".into()).spawn(run(slot)),
    }
}

/// Runs `f` on a thread with a [`STACK_BYTES`] stack and returns what it
/// returns; a panic in `f` is resumed on the caller's thread. Where no such
/// thread can be had (an address-space limit), `f` runs on the caller's
/// thread: the depth limits still hold, on a smaller margin.
pub fn on_request_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    let f = std::sync::Mutex::new(Some(f));
    let take = || f.lock().ok().and_then(|mut g| g.take());
    let ran = std::thread::scope(|s| {
        let spawned = std::thread::Builder::new()
            .name("request".into())
            .stack_size(STACK_BYTES)
            .spawn_scoped(s, || take().map(|f| f()));
        match spawned.map(|h| h.join()) {
            Ok(Ok(v)) => v,
            Ok(Err(panic)) => std::panic::resume_unwind(panic),
            Err(_) => None,
        }
    });
    match ran {
        Some(v) => v,
        None => take().expect("the request ran nowhere")(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The outermost projection's variable names, in order.
    fn projected(text: &str) -> Vec<String> {
        let query = parse_query(SparqlParser::new(), text).unwrap();
        let Query::Select { pattern, .. } = &query else { panic!("not a SELECT") };
        let mut node = pattern;
        loop {
            node = match node {
                GraphPattern::Slice { inner, .. } | GraphPattern::Distinct { inner } => inner,
                GraphPattern::Project { variables, .. } => {
                    return variables.iter().map(|v| v.as_str().to_string()).collect()
                }
                other => panic!("no projection: {other:?}"),
            };
        }
    }

    #[test]
    fn select_star_lists_variables_in_order_of_appearance() {
        assert_eq!(projected("SELECT * { ?s ?p ?o }"), ["s", "p", "o"]);
        assert_eq!(
            projected("select distinct * where { ?x <http://e/p> ?b . ?a <http://e/q> ?x } LIMIT 3"),
            ["x", "b", "a"]
        );
        assert_eq!(projected("PREFIX e: <http://e/> SELECT * { ?z e:p ?y BIND(1 AS ?a) }"), ["z", "y", "a"]);
        // An explicit list keeps its order, and a subquery's `*` is not the query's.
        assert_eq!(projected("SELECT ?o ?s { ?s ?p ?o }"), ["o", "s"]);
        assert_eq!(projected("SELECT ?x ?y { { SELECT * { ?y ?p ?x } } }"), ["x", "y"]);
    }

    #[test]
    fn brackets_in_strings_iris_and_comments_do_not_count() {
        let deep = "(".repeat(MAX_TEXT_NESTING + 1);
        assert!(check_text(&format!("SELECT * {{ ?s ?p \"{deep}\" }}")).is_ok());
        assert!(check_text(&format!("SELECT * {{ ?s ?p '''{deep}''' }}")).is_ok());
        assert!(check_text(&format!("SELECT * {{ ?s <http://x/{deep}> ?o }}")).is_ok());
        assert!(check_text(&format!("# {deep}\nSELECT * {{ ?s ?p ?o }}")).is_ok());
        assert!(check_text(&format!("SELECT * {{ ?s ?p \"a\\\"{deep}\" }}")).is_ok());
    }

    #[test]
    fn deep_brackets_are_refused_with_their_position() {
        let text = format!("ASK {{\n FILTER({}1{}) }}", "(".repeat(300), ")".repeat(300));
        let e = check_text(&text).unwrap_err();
        assert!(e.starts_with("at line 2 column "), "{e}");
        let ok = format!("ASK {{ FILTER({}1{}) }}", "(".repeat(200), ")".repeat(200));
        assert!(check_text(&ok).is_ok());
        // `<` as an operator does not start an IRI that would hide brackets.
        let op = format!("ASK {{ FILTER(1 < 2 && {}1{}) }}", "(".repeat(300), ")".repeat(300));
        assert!(check_text(&op).is_err());
    }
}
