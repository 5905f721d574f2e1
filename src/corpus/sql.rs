//! `corpus sql`: a SPARQL SELECT or ASK as one SQL statement over the
//! `cottas_quads` view of an export (`corpus::views`), for DuckDB or Spark.
//!
//! The subset: basic graph patterns (in the default graph or under GRAPH),
//! FILTER with comparisons, boolean logic, arithmetic, BOUND, IN, sameTerm,
//! IF, COALESCE, EXISTS / NOT EXISTS and the string and term functions
//! below, OPTIONAL, UNION, MINUS, VALUES, sub-SELECTs, DISTINCT, ORDER BY,
//! LIMIT/OFFSET, GROUP BY with HAVING and COUNT, SUM, AVG, MIN, MAX, SAMPLE
//! and GROUP_CONCAT, BIND of any of these expressions, and property paths
//! (`+` and `*` through a recursive query, which DuckDB has and Spark SQL
//! 4.0 has not: refused for Spark, naming it). Anything else is refused,
//! naming the construct, rather than translated approximately.
//!
//! Values stay N-Triples tokens, as the bases store them: each solution is a
//! row with one column per variable (NULL when unbound), so joins compare
//! tokens. A constant in a pattern matches every rendering a producer may
//! have written (docs/format.md §2), as the store's own lookup does.
//! Expressions work on typed values: a token is read as a number only when
//! its datatype is numeric, as a string only when it is a string literal;
//! anything else is NULL, and SQL's three-valued logic then does what
//! SPARQL's error propagation does in FILTER (`error || true` is true,
//! `error && false` is false, a FILTER that errs drops the row).

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write;

use oxrdf::{Literal, Term, Variable};
use spargebra::algebra::{
    AggregateExpression, AggregateFunction, Expression, Function, GraphPattern, OrderExpression,
    PropertyPathExpression,
};
use spargebra::term::{GroundTerm, NamedNodePattern, TermPattern, TriplePattern};
use spargebra::Query;

use super::views::Dialect;
use crate::format::term::{render, Escaping, XSD, XSD_NUMERIC_TYPES as NUMERIC_TYPES};
use crate::view::terms::to_ours;

/// Why a query is not translated: the construct, as a person would name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported(pub String);

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "not in the SQL subset of `corpus sql`: {} (docs/engines.md lists what is)", self.0)
    }
}

impl std::error::Error for Unsupported {}

fn refuse<T>(what: impl Into<String>) -> Result<T, Unsupported> {
    Err(Unsupported(what.into()))
}

/// The SQL statement answering `query` over `cottas_quads`; its columns are
/// the projected variables, named as in the query (`ask` for ASK).
pub fn translate(query: &Query, dialect: Dialect) -> Result<String, Unsupported> {
    let mut t = Translator {
        d: dialect,
        columns: HashMap::new(),
        aliases: 0,
        ctx: Ctx::Default,
        certain: BTreeSet::new(),
    };
    match query {
        Query::Select { dataset: Some(_), .. } | Query::Ask { dataset: Some(_), .. } => {
            refuse("a FROM / FROM NAMED dataset clause")
        }
        Query::Select { pattern, .. } if is_modifier(pattern) => {
            Ok(t.modifiers(pattern, &Ctx::Default, true)?.sql)
        }
        Query::Select { pattern, .. } => {
            let rel = t.pattern(pattern, &Ctx::Default)?;
            let a = t.alias();
            let cols: Vec<String> =
                rel.vars.iter().map(|v| format!("{a}.{} AS {}", t.col(v), t.d.ident(v.as_str()))).collect();
            let cols = if cols.is_empty() { "1 AS one".to_owned() } else { cols.join(", ") };
            Ok(format!("SELECT {cols} FROM ({}) {a}", rel.sql))
        }
        Query::Ask { pattern, .. } => {
            let rel = t.pattern(pattern, &Ctx::Default)?;
            let (a, b) = (t.alias(), t.alias());
            Ok(format!(
                "SELECT count(*) > 0 AS ask FROM (SELECT 1 AS one FROM ({}) {a} LIMIT 1) {b}",
                rel.sql
            ))
        }
        Query::Construct { .. } => refuse("CONSTRUCT (only SELECT and ASK)"),
        Query::Describe { .. } => refuse("DESCRIBE (only SELECT and ASK)"),
    }
}

/// A relation: SQL whose columns are `col(v)` for each of `vars`.
struct Rel {
    sql: String,
    vars: Vec<Variable>,
    /// Variables bound in every row (the others may be NULL).
    certain: BTreeSet<Variable>,
}

/// Which graphs a basic graph pattern ranges over.
#[derive(Clone)]
enum Ctx {
    Default,
    /// A graph name's renderings.
    Named(Vec<String>),
    Var(Variable),
}

struct Translator {
    d: Dialect,
    columns: HashMap<Variable, usize>,
    aliases: usize,
    /// The graphs of the pattern being translated, for an `EXISTS` inside
    /// one of its expressions.
    ctx: Ctx,
    /// The variables bound in every row a FILTER's expression reads.
    certain: BTreeSet<Variable>,
}

impl Translator {
    fn alias(&mut self) -> String {
        self.aliases += 1;
        format!("t{}", self.aliases)
    }

    /// A variable's column name inside the statement (names in queries may
    /// hold characters SQL identifiers may not).
    fn col(&mut self, v: &Variable) -> String {
        let next = self.columns.len();
        format!("c{}", self.columns.entry(v.clone()).or_insert(next))
    }

    fn lit(&self, s: &str) -> String {
        self.d.string_literal(s)
    }

    fn null(&self) -> String {
        format!("CAST(NULL AS {})", self.d.string_type())
    }

    fn pattern(&mut self, p: &GraphPattern, ctx: &Ctx) -> Result<Rel, Unsupported> {
        let outer = std::mem::replace(&mut self.ctx, ctx.clone());
        let rel = self.pattern_in(p, ctx);
        self.ctx = outer;
        rel
    }

    fn pattern_in(&mut self, p: &GraphPattern, ctx: &Ctx) -> Result<Rel, Unsupported> {
        match p {
            GraphPattern::Bgp { patterns } => self.bgp(patterns, ctx),
            GraphPattern::Graph { name, inner } => {
                let ctx = match name {
                    NamedNodePattern::NamedNode(n) => Ctx::Named(renderings(&Term::NamedNode(n.clone()))),
                    NamedNodePattern::Variable(v) => Ctx::Var(v.clone()),
                };
                self.pattern(inner, &ctx)
            }
            GraphPattern::Join { left, right } => {
                let (l, r) = (self.pattern(left, ctx)?, self.pattern(right, ctx)?);
                Ok(self.join(l, r, None, false)?)
            }
            GraphPattern::LeftJoin { left, right, expression } => {
                let (l, r) = (self.pattern(left, ctx)?, self.pattern(right, ctx)?);
                self.join(l, r, expression.as_ref(), true)
            }
            GraphPattern::Filter { expr, inner } => {
                let rel = self.pattern(inner, ctx)?;
                let a = self.alias();
                let cols = self.resolver(&rel, &a);
                let outer = std::mem::replace(&mut self.certain, rel.certain.clone());
                let cond = self.expr(expr, &cols).and_then(Val::boolean);
                self.certain = outer;
                let select = self.select_list(&rel.vars, &cols);
                Ok(Rel { sql: format!("SELECT {select} FROM ({}) {a} WHERE {}", rel.sql, cond?), ..rel })
            }
            GraphPattern::Union { left, right } => {
                let (l, r) = (self.pattern(left, ctx)?, self.pattern(right, ctx)?);
                Ok(self.union(l, r))
            }
            GraphPattern::Extend { inner, variable, expression } => {
                self.extend(inner, variable, expression, ctx)
            }
            GraphPattern::Group { inner, variables, aggregates } => {
                self.group(inner, variables, aggregates, ctx)
            }
            GraphPattern::Project { .. }
            | GraphPattern::Distinct { .. }
            | GraphPattern::Reduced { .. }
            | GraphPattern::Slice { .. }
            | GraphPattern::OrderBy { .. } => self.modifiers(p, ctx, false),
            GraphPattern::Path { subject, path, object } => self.path(subject, path, object, ctx),
            GraphPattern::Minus { left, right } => {
                let (l, r) = (self.pattern(left, ctx)?, self.pattern(right, ctx)?);
                Ok(self.minus(l, r))
            }
            GraphPattern::Values { variables, bindings } => Ok(self.values(variables, bindings)),
            GraphPattern::Service { .. } => refuse("SERVICE"),
            #[allow(unreachable_patterns)]
            _ => refuse("a LATERAL join"),
        }
    }

    /// `v`'s column in relation alias `a`, for every variable of `rel`.
    fn resolver(&mut self, rel: &Rel, a: &str) -> HashMap<Variable, String> {
        rel.vars.iter().map(|v| (v.clone(), format!("{a}.{}", self.col(v)))).collect()
    }

    fn select_list(&mut self, vars: &[Variable], cols: &HashMap<Variable, String>) -> String {
        if vars.is_empty() {
            return "1 AS one".to_owned();
        }
        let items: Vec<String> = vars.iter().map(|v| format!("{} AS {}", cols[v], self.col(v))).collect();
        items.join(", ")
    }

    /// The result's columns, named after the variables.
    fn named_list(&mut self, vars: &[Variable], cols: &HashMap<Variable, String>) -> String {
        if vars.is_empty() {
            return "1 AS one".to_owned();
        }
        let items: Vec<String> =
            vars.iter().map(|v| format!("{} AS {}", cols[v], self.d.ident(v.as_str()))).collect();
        items.join(", ")
    }

    fn bgp(&mut self, patterns: &[TriplePattern], ctx: &Ctx) -> Result<Rel, Unsupported> {
        if patterns.is_empty() {
            return Ok(Rel { sql: "SELECT 1 AS one".into(), vars: Vec::new(), certain: BTreeSet::new() });
        }
        let mut from = Vec::new();
        let mut conds = Vec::new();
        let mut bound: HashMap<Variable, String> = HashMap::new();
        let mut vars = Vec::new();
        for tp in patterns {
            let a = self.alias();
            from.push(format!("cottas_quads {a}"));
            let places: [(String, Option<Slot>); 4] = [
                (format!("{a}.s"), Some(self.slot_of(&tp.subject)?)),
                (format!("{a}.p"), Some(named_slot(&tp.predicate))),
                (format!("{a}.o"), Some(self.slot_of(&tp.object)?)),
                (format!("{a}.g"), None),
            ];
            for (column, slot) in places {
                let slot = match slot {
                    Some(s) => s,
                    None => match ctx {
                        Ctx::Default => Slot::Const(vec!["DEFAULT".to_owned()]),
                        Ctx::Named(n) => Slot::Const(n.clone()),
                        Ctx::Var(v) => {
                            conds.push(format!("{column} <> 'DEFAULT'"));
                            Slot::Var(v.clone(), true)
                        }
                    },
                };
                match slot {
                    Slot::Const(tokens) => conds.push(self.one_of(&column, &tokens)),
                    Slot::Var(v, visible) => match bound.get(&v) {
                        Some(first) => conds.push(format!("{column} = {first}")),
                        None => {
                            bound.insert(v.clone(), column);
                            if visible {
                                vars.push(v);
                            }
                        }
                    },
                }
            }
        }
        let select = self.select_list(&vars, &bound);
        let sql = format!("SELECT {select} FROM {} WHERE {}", from.join(", "), conds.join(" AND "));
        let certain = vars.iter().cloned().collect();
        Ok(Rel { sql, vars, certain })
    }

    /// A blank node is a variable that is not returned, the same one for
    /// every use of its label (a path `a/b` joins through one).
    fn slot_of(&self, t: &TermPattern) -> Result<Slot, Unsupported> {
        Ok(match t {
            TermPattern::NamedNode(n) => Slot::Const(renderings(&Term::NamedNode(n.clone()))),
            TermPattern::Literal(l) => Slot::Const(renderings(&Term::Literal(l.clone()))),
            TermPattern::Variable(v) => Slot::Var(v.clone(), true),
            TermPattern::BlankNode(b) => {
                Slot::Var(Variable::new_unchecked(format!("_bnode_{}", b.as_str())), false)
            }
            #[allow(unreachable_patterns)]
            _ => return refuse("an RDF-star triple term"),
        })
    }

    /// `column` equals one of `tokens` (a constant's renderings).
    fn one_of(&self, column: &str, tokens: &[String]) -> String {
        match tokens {
            [one] => format!("{column} = {}", self.lit(one)),
            many => {
                let list: Vec<String> = many.iter().map(|t| self.lit(t)).collect();
                format!("{column} IN ({})", list.join(", "))
            }
        }
    }

    /// Join (or left join, with an optional condition) on the shared variables.
    fn join(&mut self, l: Rel, r: Rel, expr: Option<&Expression>, left: bool) -> Result<Rel, Unsupported> {
        let (la, ra) = (self.alias(), self.alias());
        let mut conds = Vec::new();
        let mut cols: HashMap<Variable, String> = HashMap::new();
        let mut vars = l.vars.clone();
        for v in &l.vars {
            let lc = format!("{la}.{}", self.col(v));
            if r.vars.contains(v) {
                let rc = format!("{ra}.{}", self.col(v));
                if l.certain.contains(v) && r.certain.contains(v) {
                    conds.push(format!("{lc} = {rc}"));
                    cols.insert(v.clone(), lc);
                } else {
                    conds.push(format!("({lc} = {rc} OR {lc} IS NULL OR {rc} IS NULL)"));
                    cols.insert(v.clone(), format!("COALESCE({lc}, {rc})"));
                }
            } else {
                cols.insert(v.clone(), lc);
            }
        }
        for v in &r.vars {
            if !l.vars.contains(v) {
                cols.insert(v.clone(), format!("{ra}.{}", self.col(v)));
                vars.push(v.clone());
            }
        }
        if let Some(e) = expr {
            conds.push(self.expr(e, &cols)?.boolean()?);
        }
        let on = if conds.is_empty() { "1 = 1".to_owned() } else { conds.join(" AND ") };
        let kind = if left { "LEFT JOIN" } else { "JOIN" };
        let select = self.select_list(&vars, &cols);
        let sql = format!("SELECT {select} FROM ({}) {la} {kind} ({}) {ra} ON {on}", l.sql, r.sql);
        let certain = if left { l.certain } else { l.certain.union(&r.certain).cloned().collect() };
        Ok(Rel { sql, vars, certain })
    }

    fn union(&mut self, l: Rel, r: Rel) -> Rel {
        let mut vars = l.vars.clone();
        vars.extend(r.vars.iter().filter(|v| !l.vars.contains(v)).cloned());
        let side = |t: &mut Self, rel: &Rel| {
            let a = t.alias();
            let items: Vec<String> = vars
                .iter()
                .map(|v| {
                    let c = t.col(v);
                    if rel.vars.contains(v) {
                        format!("{a}.{c} AS {c}")
                    } else {
                        format!("{} AS {c}", t.null())
                    }
                })
                .collect();
            let items = if items.is_empty() { "1 AS one".to_owned() } else { items.join(", ") };
            format!("SELECT {items} FROM ({}) {a}", rel.sql)
        };
        let sql = format!("{} UNION ALL {}", side(self, &l), side(self, &r));
        let certain = l.certain.intersection(&r.certain).cloned().collect();
        Rel { sql, vars, certain }
    }

    /// `l MINUS r`: the rows of `l` that no row of `r` is compatible with
    /// through at least one variable both bind.
    fn minus(&mut self, l: Rel, r: Rel) -> Rel {
        let shared: Vec<Variable> = l.vars.iter().filter(|v| r.vars.contains(v)).cloned().collect();
        if shared.is_empty() {
            return l;
        }
        let (la, ra) = (self.alias(), self.alias());
        let (mut compatible, mut meets) = (Vec::new(), Vec::new());
        for v in &shared {
            let c = self.col(v);
            let (lc, rc) = (format!("{la}.{c}"), format!("{ra}.{c}"));
            if l.certain.contains(v) && r.certain.contains(v) {
                compatible.push(format!("{lc} = {rc}"));
                meets.push("1 = 1".to_owned());
            } else {
                compatible.push(format!("({lc} = {rc} OR {lc} IS NULL OR {rc} IS NULL)"));
                meets.push(format!("({lc} IS NOT NULL AND {rc} IS NOT NULL)"));
            }
        }
        let cols = self.resolver(&l, &la);
        let select = self.select_list(&l.vars, &cols);
        let sql = format!(
            "SELECT {select} FROM ({}) {la} WHERE NOT EXISTS (SELECT 1 FROM ({}) {ra} WHERE {} AND ({}))",
            l.sql,
            r.sql,
            compatible.join(" AND "),
            meets.join(" OR ")
        );
        Rel { sql, ..l }
    }

    /// A property path between two terms: the pairs it links, then the
    /// endpoints bound or returned as a triple pattern's are.
    fn path(
        &mut self,
        subject: &TermPattern,
        path: &PropertyPathExpression,
        object: &TermPattern,
        ctx: &Ctx,
    ) -> Result<Rel, Unsupported> {
        let ends = [self.slot_of(subject)?, self.slot_of(object)?];
        let pairs = self.path_pairs(path, ctx)?;
        let a = self.alias();
        let mut conds = Vec::new();
        let mut bound: HashMap<Variable, String> = HashMap::new();
        let mut vars = Vec::new();
        let graph = match ctx {
            Ctx::Var(v) => Some(Slot::Var(v.clone(), true)),
            _ => None,
        };
        let places = [
            (format!("{a}.a"), Some(&ends[0])),
            (format!("{a}.b"), Some(&ends[1])),
            (format!("{a}.g"), graph.as_ref()),
        ];
        for (column, slot) in places {
            match slot {
                None => {}
                Some(Slot::Const(tokens)) => conds.push(self.one_of(&column, tokens)),
                Some(Slot::Var(v, visible)) => match bound.get(v) {
                    Some(first) => conds.push(format!("{column} = {first}")),
                    None => {
                        bound.insert(v.clone(), column);
                        if *visible {
                            vars.push(v.clone());
                        }
                    }
                },
            }
        }
        let select = self.select_list(&vars, &bound);
        let filter = if conds.is_empty() { String::new() } else { format!(" WHERE {}", conds.join(" AND ")) };
        let sql = format!("SELECT {select} FROM ({pairs}) {a}{filter}");
        let certain = vars.iter().cloned().collect();
        Ok(Rel { sql, vars, certain })
    }

    /// The `(a, b, g)` pairs a path links in the context's graphs. A
    /// zero-length path links every node of the graphs to itself; as in our
    /// evaluator, a constant no quad of the graphs holds is no node.
    fn path_pairs(&mut self, path: &PropertyPathExpression, ctx: &Ctx) -> Result<String, Unsupported> {
        use PropertyPathExpression as P;
        let in_graph = |t: &Self| match ctx {
            Ctx::Default => "g = 'DEFAULT'".to_owned(),
            Ctx::Named(n) => t.one_of("g", n),
            Ctx::Var(_) => "g <> 'DEFAULT'".to_owned(),
        };
        Ok(match path {
            P::NamedNode(n) => format!(
                "SELECT s AS a, o AS b, g FROM cottas_quads WHERE {} AND {}",
                self.one_of("p", &renderings(&Term::NamedNode(n.clone()))),
                in_graph(self)
            ),
            P::NegatedPropertySet(list) => {
                let mut tokens = Vec::new();
                for n in list {
                    tokens.extend(renderings(&Term::NamedNode(n.clone())));
                }
                let not_in = if tokens.is_empty() {
                    "1 = 1".to_owned()
                } else {
                    format!(
                        "p NOT IN ({})",
                        tokens.iter().map(|t| self.lit(t)).collect::<Vec<_>>().join(", ")
                    )
                };
                format!("SELECT s AS a, o AS b, g FROM cottas_quads WHERE {not_in} AND {}", in_graph(self))
            }
            P::Reverse(x) => {
                let (x, r) = (self.path_pairs(x, ctx)?, self.alias());
                format!("SELECT {r}.b AS a, {r}.a AS b, {r}.g AS g FROM ({x}) {r}")
            }
            P::Sequence(x, y) => {
                let (x, y) = (self.path_pairs(x, ctx)?, self.path_pairs(y, ctx)?);
                let (l, r) = (self.alias(), self.alias());
                format!(
                    "SELECT {l}.a AS a, {r}.b AS b, {l}.g AS g FROM ({x}) {l} JOIN ({y}) {r} ON {l}.b = {r}.a AND {l}.g = {r}.g"
                )
            }
            P::Alternative(x, y) => {
                let (x, y) = (self.path_pairs(x, ctx)?, self.path_pairs(y, ctx)?);
                format!("{x} UNION ALL {y}")
            }
            P::ZeroOrOne(x) => {
                let x = self.path_pairs(x, ctx)?;
                let same = self.zero_length(ctx);
                let a = self.alias();
                format!("SELECT DISTINCT a, b, g FROM ({x} UNION {same}) {a}")
            }
            P::OneOrMore(x) => self.closure(x, ctx)?,
            P::ZeroOrMore(x) => {
                let (closure, same) = (self.closure(x, ctx)?, self.zero_length(ctx));
                let a = self.alias();
                format!("SELECT a, b, g FROM ({closure} UNION {same}) {a}")
            }
        })
    }

    /// The pairs one or more steps of `x` link: a recursive CTE (`UNION`
    /// keeps each pair once, so a cycle ends the recursion).
    fn closure(&mut self, x: &PropertyPathExpression, ctx: &Ctx) -> Result<String, Unsupported> {
        if self.d == Dialect::Spark {
            return refuse(
                "a property path with `+` or `*` on Spark (Spark SQL 4.0 has no recursive query; DuckDB has)",
            );
        }
        let step = self.path_pairs(x, ctx)?;
        let (r, s, t) = (self.alias(), self.alias(), self.alias());
        Ok(format!(
            "WITH RECURSIVE {r}(a, b, g) AS (SELECT a, b, g FROM ({step}) {s} UNION \
             SELECT {r}.a, {t}.b, {r}.g FROM {r} JOIN ({step}) {t} ON {r}.b = {t}.a AND {r}.g = {t}.g) \
             SELECT a, b, g FROM {r}"
        ))
    }

    /// Every node of the context's graphs linked to itself.
    fn zero_length(&mut self, ctx: &Ctx) -> String {
        let graph = match ctx {
            Ctx::Default => "g = 'DEFAULT'".to_owned(),
            Ctx::Named(n) => self.one_of("g", n),
            Ctx::Var(_) => "g <> 'DEFAULT'".to_owned(),
        };
        format!(
            "SELECT s AS a, s AS b, g FROM cottas_quads WHERE {graph} UNION SELECT o AS a, o AS b, g FROM cottas_quads WHERE {graph}"
        )
    }

    /// `VALUES`: one row per binding, NULL where a binding leaves a
    /// variable unbound.
    fn values(&mut self, variables: &[Variable], bindings: &[Vec<Option<GroundTerm>>]) -> Rel {
        let cols: Vec<String> = variables.iter().map(|v| self.col(v)).collect();
        let row = |values: Vec<String>| {
            let items: Vec<String> = values.iter().zip(&cols).map(|(v, c)| format!("{v} AS {c}")).collect();
            if items.is_empty() {
                "SELECT 1 AS one".to_owned()
            } else {
                format!("SELECT {}", items.join(", "))
            }
        };
        let mut rows = Vec::new();
        for binding in bindings {
            let values = binding
                .iter()
                .map(|t| match t {
                    Some(GroundTerm::NamedNode(n)) => self.lit(&term_token(&Term::NamedNode(n.clone()))),
                    Some(GroundTerm::Literal(l)) => self.lit(&term_token(&Term::Literal(l.clone()))),
                    #[allow(unreachable_patterns)]
                    _ => self.null(),
                })
                .collect();
            rows.push(row(values));
        }
        let sql = if rows.is_empty() {
            let nulls = cols.iter().map(|_| self.null()).collect();
            format!("{} WHERE 1 = 0", row(nulls))
        } else {
            rows.join(" UNION ALL ")
        };
        let certain = variables
            .iter()
            .enumerate()
            .filter(|(i, _)| bindings.iter().all(|b| b.get(*i).is_some_and(Option::is_some)))
            .map(|(_, v)| v.clone())
            .collect();
        Rel { sql, vars: variables.to_vec(), certain }
    }

    fn extend(
        &mut self,
        inner: &GraphPattern,
        variable: &Variable,
        expression: &Expression,
        ctx: &Ctx,
    ) -> Result<Rel, Unsupported> {
        let rel = self.pattern(inner, ctx)?;
        if rel.vars.contains(variable) {
            return refuse(format!("BIND to ?{variable}, already bound", variable = variable.as_str()));
        }
        let a = self.alias();
        let mut cols = self.resolver(&rel, &a);
        let (value, certain) = match expression {
            Expression::Variable(v) => match cols.get(v) {
                Some(c) => (c.clone(), rel.certain.contains(v)),
                None => (self.null(), false),
            },
            Expression::NamedNode(n) => (self.lit(&term_token(&Term::NamedNode(n.clone()))), true),
            Expression::Literal(l) => (self.lit(&term_token(&Term::Literal(l.clone()))), true),
            computed => {
                let value = self.expr(computed, &cols)?;
                (self.token_of(value)?, false)
            }
        };
        cols.insert(variable.clone(), value);
        let mut vars = rel.vars.clone();
        vars.push(variable.clone());
        let mut known = rel.certain.clone();
        if certain {
            known.insert(variable.clone());
        }
        let select = self.select_list(&vars, &cols);
        Ok(Rel { sql: format!("SELECT {select} FROM ({}) {a}", rel.sql), vars, certain: known })
    }

    fn group(
        &mut self,
        inner: &GraphPattern,
        keys: &[Variable],
        aggregates: &[(Variable, AggregateExpression)],
        ctx: &Ctx,
    ) -> Result<Rel, Unsupported> {
        let rel = self.pattern(inner, ctx)?;
        let a = self.alias();
        let cols = self.resolver(&rel, &a);
        let mut items = Vec::new();
        let mut by = Vec::new();
        let mut vars = Vec::new();
        for k in keys {
            let c = self.col(k);
            let value = cols.get(k).cloned().unwrap_or_else(|| self.null());
            items.push(format!("{value} AS {c}"));
            by.push(value);
            vars.push(k.clone());
        }
        let mut certain: BTreeSet<Variable> =
            keys.iter().filter(|k| rel.certain.contains(*k)).cloned().collect();
        for (v, agg) in aggregates {
            let token = self.aggregate(agg, &cols)?;
            items.push(format!("{token} AS {}", self.col(v)));
            vars.push(v.clone());
            // COUNT is always bound; the others are unbound on an error.
            if matches!(
                agg,
                AggregateExpression::CountSolutions { .. }
                    | AggregateExpression::FunctionCall { name: AggregateFunction::Count, .. }
            ) {
                certain.insert(v.clone());
            }
        }
        let items = if items.is_empty() { "1 AS one".to_owned() } else { items.join(", ") };
        let group_by = if by.is_empty() { String::new() } else { format!(" GROUP BY {}", by.join(", ")) };
        Ok(Rel { sql: format!("SELECT {items} FROM ({}) {a}{group_by}", rel.sql), vars, certain })
    }

    /// One aggregate of a group, as the token it binds.
    fn aggregate(
        &mut self,
        agg: &AggregateExpression,
        cols: &HashMap<Variable, String>,
    ) -> Result<String, Unsupported> {
        let integer = |t: &Self, count: String| {
            format!(
                "'\"' || CAST({count} AS {}) || {}",
                t.d.string_type(),
                t.lit(&format!("\"^^<{XSD}integer>"))
            )
        };
        let (name, expr, distinct) = match agg {
            AggregateExpression::CountSolutions { distinct: false } => {
                return Ok(integer(self, "count(*)".into()))
            }
            AggregateExpression::CountSolutions { distinct: true } => return refuse("COUNT(DISTINCT *)"),
            AggregateExpression::FunctionCall { name, expr, distinct } => (name, expr, *distinct),
        };
        let d = if distinct { "DISTINCT " } else { "" };
        let value = self.expr(expr, cols)?;
        match name {
            AggregateFunction::Count => {
                let Val::Term(t) = value else {
                    return refuse("COUNT of an expression (only of a variable)");
                };
                Ok(integer(self, format!("count({d}{t})")))
            }
            AggregateFunction::Sum | AggregateFunction::Avg => {
                let dt = self.num_type_of(&value)?;
                let whole = self.token_of(value.clone())?;
                let n = self.as_num(value)?;
                // An empty group sums to 0; a value that is not a number
                // makes the aggregate an error (unbound).
                let rank = format!(
                    "max(CASE {dt} WHEN 'integer' THEN 0 WHEN 'decimal' THEN 1 WHEN 'float' THEN 2 ELSE 3 END)"
                );
                let avg = matches!(name, AggregateFunction::Avg);
                let rank = if avg { format!("greatest({rank}, 1)") } else { rank };
                let dt = format!(
                    "(CASE {rank} WHEN 0 THEN 'integer' WHEN 1 THEN 'decimal' WHEN 2 THEN 'float' ELSE 'double' END)"
                );
                let total = if avg { format!("avg({d}{n})") } else { format!("sum({d}{n})") };
                let token = self.number_token(&total, &dt);
                Ok(format!(
                    "(CASE WHEN count({whole}) = 0 THEN {} WHEN count({whole}) = count({n}) THEN {token} END)",
                    self.lit(&format!("\"0\"^^<{XSD}integer>"))
                ))
            }
            AggregateFunction::Min | AggregateFunction::Max => {
                let t = self.token_of(value)?;
                let by = if matches!(name, AggregateFunction::Min) { "min_by" } else { "max_by" };
                let (n, plain) = (self.num(&t), self.plain(&t));
                let iri = format!("(CASE WHEN substr({t}, 1, 1) = '<' THEN {t} END)");
                // Within one kind of term, SPARQL's order is the SQL order
                // of these keys; a group mixing kinds is left unbound.
                Ok(format!(
                    "(CASE WHEN count({n}) = count({t}) THEN {by}({t}, {n}) \
                     WHEN count({plain}) = count({t}) THEN {by}({t}, {plain}) \
                     WHEN count({iri}) = count({t}) THEN {by}({t}, {iri}) END)"
                ))
            }
            AggregateFunction::Sample => Ok(format!("min({})", self.token_of(value)?)),
            AggregateFunction::GroupConcat { separator } => {
                let sep = self.lit(separator.as_deref().unwrap_or(" "));
                let text = self.as_string_arg(value)?;
                let joined = match self.d {
                    Dialect::DuckDb => format!("string_agg({d}{text}, {sep})"),
                    Dialect::Spark if distinct => format!("concat_ws({sep}, collect_set({text}))"),
                    Dialect::Spark => format!("concat_ws({sep}, collect_list({text}))"),
                };
                Ok(format!("('\"' || {} || '\"')", self.escaped(&format!("COALESCE({joined}, '')"))))
            }
            AggregateFunction::Custom(f) => refuse(format!("the custom aggregate <{}>", f.as_str())),
        }
    }

    /// Slice ∘ Distinct ∘ Project ∘ OrderBy as one SELECT (so ORDER BY and
    /// LIMIT act in the same statement, as SQL defines them). `top`: the
    /// query's own result, whose columns take the variables' names in that
    /// same SELECT (an outer SELECT would not keep the order).
    fn modifiers(&mut self, p: &GraphPattern, ctx: &Ctx, top: bool) -> Result<Rel, Unsupported> {
        let mut p = p;
        let (mut start, mut length) = (0, None);
        if let GraphPattern::Slice { inner, start: s, length: l } = p {
            (start, length) = (*s, *l);
            p = inner;
        }
        let mut distinct = false;
        if let GraphPattern::Distinct { inner } | GraphPattern::Reduced { inner } = p {
            distinct = matches!(p, GraphPattern::Distinct { .. });
            p = inner;
        }
        let mut projection = None;
        if let GraphPattern::Project { inner, variables } = p {
            projection = Some(variables.clone());
            p = inner;
        }
        let mut order: &[OrderExpression] = &[];
        if let GraphPattern::OrderBy { inner, expression } = p {
            order = expression;
            p = inner;
        }
        let rel = self.pattern(p, ctx)?;
        let vars = projection.unwrap_or_else(|| rel.vars.clone());
        let a = self.alias();
        let mut cols = self.resolver(&rel, &a);
        for v in &vars {
            if !cols.contains_key(v) {
                cols.insert(v.clone(), self.null());
            }
        }
        let select = self.select_list(&vars, &cols);
        let certain = vars.iter().filter(|v| rel.certain.contains(*v)).cloned().collect();
        let tail = |t: &Self| {
            let mut s = String::new();
            if let Some(n) = length {
                let _ = write!(s, " LIMIT {n}");
            }
            if start > 0 {
                if length.is_none() && t.d == Dialect::Spark {
                    // Spark wants a LIMIT before an OFFSET.
                    let _ = write!(s, " LIMIT {}", i64::MAX);
                }
                let _ = write!(s, " OFFSET {start}");
            }
            s
        };
        if !distinct {
            let keys = self.order_keys(order, &cols)?;
            let select = if top { self.named_list(&vars, &cols) } else { select };
            let sql = format!("SELECT {select} FROM ({}) {a}{keys}{}", rel.sql, tail(self));
            return Ok(Rel { sql, vars, certain });
        }
        // DISTINCT first, then order the distinct rows by their own columns.
        let uses_only_projected = order.iter().all(|o| {
            let e = match o {
                OrderExpression::Asc(e) | OrderExpression::Desc(e) => e,
            };
            expression_vars(e).iter().all(|v| vars.contains(v))
        });
        if !uses_only_projected {
            return refuse("DISTINCT with ORDER BY on a variable that is not selected");
        }
        let b = self.alias();
        let outer =
            self.resolver(&Rel { sql: String::new(), vars: vars.clone(), certain: BTreeSet::new() }, &b);
        let keys = self.order_keys(order, &outer)?;
        let outer_list = if top { self.named_list(&vars, &outer) } else { "*".to_owned() };
        let sql = format!(
            "SELECT {outer_list} FROM (SELECT DISTINCT {select} FROM ({}) {a}) {b}{keys}{}",
            rel.sql,
            tail(self)
        );
        Ok(Rel { sql, vars, certain })
    }

    /// ` ORDER BY …` in SPARQL's order of terms: unbound, blank nodes, IRIs,
    /// literals; numbers by value, strings by code point, then the token.
    fn order_keys(
        &mut self,
        order: &[OrderExpression],
        cols: &HashMap<Variable, String>,
    ) -> Result<String, Unsupported> {
        if order.is_empty() {
            return Ok(String::new());
        }
        let mut keys = Vec::new();
        for o in order {
            let (e, dir) = match o {
                OrderExpression::Asc(e) => (e, "ASC NULLS FIRST"),
                OrderExpression::Desc(e) => (e, "DESC NULLS LAST"),
            };
            match self.expr(e, cols)? {
                Val::Term(t) => {
                    keys.push(format!(
                        "CASE WHEN {t} IS NULL THEN 0 WHEN substr({t}, 1, 2) = '_:' THEN 1 \
                         WHEN substr({t}, 1, 1) = '<' THEN 2 ELSE 3 END {dir}"
                    ));
                    keys.push(format!("{} {dir}", self.num(&t)));
                    keys.push(format!("{} {dir}", self.string_arg(&t)));
                    // IRIs by their text: `<a1>` before `<a10>`, unlike their tokens.
                    keys.push(format!(
                        "(CASE WHEN substr({t}, 1, 1) = '<' THEN substr({t}, 2, length({t}) - 2) ELSE {t} END) {dir}"
                    ));
                }
                Val::Num(n, _) => keys.push(format!("{n} {dir}")),
                Val::Str(s) => keys.push(format!("{s} {dir}")),
                Val::Bool(b) => keys.push(format!("{b} {dir}")),
                Val::Const(_) => {} // the same for every row
            }
        }
        if keys.is_empty() {
            return Ok(String::new());
        }
        Ok(format!(" ORDER BY {}", keys.join(", ")))
    }

    // ---- expressions: each value is typed, as SPARQL's operators need ----

    fn expr(&mut self, e: &Expression, cols: &HashMap<Variable, String>) -> Result<Val, Unsupported> {
        use Expression as E;
        Ok(match e {
            E::Variable(v) => Val::Term(cols.get(v).cloned().unwrap_or_else(|| self.null())),
            E::NamedNode(n) => Val::Const(Term::NamedNode(n.clone())),
            E::Literal(l) => Val::Const(Term::Literal(l.clone())),
            E::Bound(v) => Val::Bool(match cols.get(v) {
                Some(c) => format!("({c} IS NOT NULL)"),
                None => "(1 = 0)".into(),
            }),
            E::Not(x) => Val::Bool(format!("(NOT {})", self.expr(x, cols)?.boolean()?)),
            E::And(a, b) => Val::Bool(format!(
                "({} AND {})",
                self.expr(a, cols)?.boolean()?,
                self.expr(b, cols)?.boolean()?
            )),
            E::Or(a, b) => Val::Bool(format!(
                "({} OR {})",
                self.expr(a, cols)?.boolean()?,
                self.expr(b, cols)?.boolean()?
            )),
            E::Equal(a, b) => self.compare("=", a, b, cols)?,
            E::Greater(a, b) => self.compare(">", a, b, cols)?,
            E::GreaterOrEqual(a, b) => self.compare(">=", a, b, cols)?,
            E::Less(a, b) => self.compare("<", a, b, cols)?,
            E::LessOrEqual(a, b) => self.compare("<=", a, b, cols)?,
            E::SameTerm(a, b) => {
                let (a, b) = (self.expr(a, cols)?, self.expr(b, cols)?);
                Val::Bool(self.same_term(a, b)?)
            }
            E::In(x, list) => {
                if list.is_empty() {
                    return Ok(Val::Bool("(1 = 0)".into()));
                }
                let mut alternatives = Vec::new();
                for item in list {
                    alternatives.push(self.compare("=", x, item, cols)?.boolean()?);
                }
                Val::Bool(format!("({})", alternatives.join(" OR ")))
            }
            E::Add(a, b) => self.arithmetic("+", a, b, cols)?,
            E::Subtract(a, b) => self.arithmetic("-", a, b, cols)?,
            E::Multiply(a, b) => self.arithmetic("*", a, b, cols)?,
            E::UnaryPlus(x) => {
                let x = self.expr(x, cols)?;
                let dt = self.num_type_of(&x)?;
                Val::Num(self.as_num(x)?, dt)
            }
            E::UnaryMinus(x) => {
                let x = self.expr(x, cols)?;
                let dt = self.num_type_of(&x)?;
                Val::Num(format!("(-{})", self.as_num(x)?), dt)
            }
            E::FunctionCall(f, args) => self.function(f, args, cols)?,
            E::Divide(a, b) => {
                let (a, b) = (self.expr(a, cols)?, self.expr(b, cols)?);
                let dt = promote(&promote(&self.num_type_of(&a)?, &self.num_type_of(&b)?), "'decimal'");
                let (a, b) = (self.as_num(a)?, self.as_num(b)?);
                // A division by zero is an error (unbound) for integers and
                // decimals; for doubles too here (SQL has no infinity literal
                // both engines share).
                Val::Num(format!("(CASE WHEN {b} <> 0 THEN {a} / {b} END)"), dt)
            }
            E::Exists(pattern) => Val::Bool(self.exists(pattern, cols)?),
            E::If(c, a, b) => {
                let c = self.expr(c, cols)?.boolean()?;
                let (a, b) = (self.expr(a, cols)?, self.expr(b, cols)?);
                if a.is_numeric() && b.is_numeric() {
                    let (ta, tb) = (self.num_type_of(&a)?, self.num_type_of(&b)?);
                    let (a, b) = (self.as_num(a)?, self.as_num(b)?);
                    Val::Num(
                        format!("(CASE WHEN {c} THEN {a} WHEN NOT {c} THEN {b} END)"),
                        format!("(CASE WHEN {c} THEN {ta} ELSE {tb} END)"),
                    )
                } else {
                    let (a, b) = (self.token_of(a)?, self.token_of(b)?);
                    Val::Term(format!("(CASE WHEN {c} THEN {a} WHEN NOT {c} THEN {b} END)"))
                }
            }
            E::Coalesce(list) => {
                let mut tokens = Vec::new();
                for x in list {
                    let x = self.expr(x, cols)?;
                    tokens.push(self.token_of(x)?);
                }
                match tokens.as_slice() {
                    [] => Val::Term(self.null()),
                    [one] => Val::Term(one.clone()),
                    _ => Val::Term(format!("COALESCE({})", tokens.join(", "))),
                }
            }
        })
    }

    /// `EXISTS { pattern }` for the row whose columns are `cols`: the
    /// pattern, in the same graphs, has a solution compatible with the row
    /// (a variable the row leaves unbound is free).
    fn exists(
        &mut self,
        pattern: &GraphPattern,
        cols: &HashMap<Variable, String>,
    ) -> Result<String, Unsupported> {
        let ctx = self.ctx.clone();
        let inner = self.pattern(pattern, &ctx)?;
        let e = self.alias();
        let mut conds = Vec::new();
        for v in &inner.vars {
            if let Some(outer) = cols.get(v) {
                let c = format!("{e}.{}", self.col(v));
                // Plain equality where both are always bound: an engine
                // turns it into a hash (anti-)join; the OR form is a nested
                // loop.
                if self.certain.contains(v) && inner.certain.contains(v) {
                    conds.push(format!("{c} = {outer}"));
                } else {
                    conds.push(format!("({c} = {outer} OR {outer} IS NULL OR {c} IS NULL)"));
                }
            }
        }
        let cond = if conds.is_empty() { String::new() } else { format!(" WHERE {}", conds.join(" AND ")) };
        Ok(format!("(EXISTS (SELECT 1 FROM ({}) {e}{cond}))", inner.sql))
    }

    /// The SQL datatype expression of a numeric value.
    fn num_type_of(&self, v: &Val) -> Result<String, Unsupported> {
        Ok(match v {
            Val::Num(_, dt) => dt.clone(),
            Val::Term(t) => self.num_type(t),
            Val::Const(Term::Literal(l)) if is_numeric(l) => {
                let local = l.datatype().as_str().strip_prefix(XSD).unwrap_or("double");
                format!("'{}'", family(local))
            }
            _ => self.null(),
        })
    }

    /// The XSD local name of a numeric token's datatype (`integer` for the
    /// integer family), else NULL.
    fn num_type(&self, t: &str) -> String {
        let suffix = self.suffix(t);
        let ints: Vec<String> = NUMERIC_TYPES
            .iter()
            .filter(|n| family(n) == "integer")
            .map(|n| self.lit(&format!("^^<{XSD}{n}>")))
            .collect();
        let one = |n: &str| self.lit(&format!("^^<{XSD}{n}>"));
        format!(
            "(CASE WHEN substr({t}, 1, 1) <> '\"' THEN NULL WHEN {suffix} IN ({}) THEN 'integer' \
             WHEN {suffix} = {} THEN 'decimal' WHEN {suffix} = {} THEN 'float' WHEN {suffix} = {} THEN 'double' END)",
            ints.join(", "),
            one("decimal"),
            one("float"),
            one("double"),
        )
    }

    /// Any value as the token SPARQL would bind: terms as they are, numbers
    /// in their datatype, strings as simple literals, booleans as
    /// `xsd:boolean`.
    fn token_of(&self, v: Val) -> Result<String, Unsupported> {
        Ok(match v {
            Val::Term(t) => t,
            Val::Const(c) => self.lit(&term_token(&c)),
            Val::Num(n, dt) => self.number_token(&n, &dt),
            Val::Str(s) => format!("('\"' || {} || '\"')", self.escaped(&s)),
            Val::Bool(b) => format!(
                "(CASE WHEN {b} THEN {} WHEN NOT {b} THEN {} END)",
                self.lit(&format!("\"true\"^^<{XSD}boolean>")),
                self.lit(&format!("\"false\"^^<{XSD}boolean>"))
            ),
        })
    }

    /// A number's token: an integer's digits, a decimal without a trailing
    /// `.0`, a float or double as the engine prints it.
    fn number_token(&self, n: &str, dt: &str) -> String {
        let text = |x: &str| format!("CAST({x} AS {})", self.d.string_type());
        let integer = text(&format!("CAST({n} AS BIGINT)"));
        let decimal = format!("regexp_replace({}, {}, '')", text(n), self.lit("\\.0$"));
        format!(
            "('\"' || (CASE WHEN {dt} = 'integer' THEN {integer} WHEN {dt} = 'decimal' THEN {decimal} ELSE {} END) \
             || '\"^^<{XSD}' || {dt} || '>')",
            text(n)
        )
    }

    /// A lexical form escaped as inside a literal token.
    fn escaped(&self, s: &str) -> String {
        let steps = [
            (self.lit("\\"), self.lit("\\\\")),
            (self.lit("\""), self.lit("\\\"")),
            ("chr(10)".to_owned(), self.lit("\\n")),
            ("chr(13)".to_owned(), self.lit("\\r")),
        ];
        steps.iter().fold(s.to_owned(), |acc, (from, to)| format!("replace({acc}, {from}, {to})"))
    }

    fn arithmetic(
        &mut self,
        op: &str,
        a: &Expression,
        b: &Expression,
        cols: &HashMap<Variable, String>,
    ) -> Result<Val, Unsupported> {
        let (a, b) = (self.expr(a, cols)?, self.expr(b, cols)?);
        let dt = promote(&self.num_type_of(&a)?, &self.num_type_of(&b)?);
        Ok(Val::Num(format!("({} {op} {})", self.as_num(a)?, self.as_num(b)?), dt))
    }

    fn compare(
        &mut self,
        op: &str,
        a: &Expression,
        b: &Expression,
        cols: &HashMap<Variable, String>,
    ) -> Result<Val, Unsupported> {
        let (a, b) = (self.expr(a, cols)?, self.expr(b, cols)?);
        let numeric = a.is_numeric() || b.is_numeric();
        let textual = a.is_string() || b.is_string();
        if numeric {
            return Ok(Val::Bool(format!("({} {op} {})", self.as_num(a)?, self.as_num(b)?)));
        }
        if textual {
            return Ok(Val::Bool(format!("({} {op} {})", self.as_plain(a)?, self.as_plain(b)?)));
        }
        match (&a, &b) {
            (Val::Bool(x), Val::Bool(y)) if op == "=" => Ok(Val::Bool(format!("({x} = {y})"))),
            (Val::Const(_), Val::Term(_))
            | (Val::Term(_), Val::Const(_))
            | (Val::Const(_), Val::Const(_))
                if op == "=" =>
            {
                Ok(Val::Bool(self.same_term(a, b)?))
            }
            (Val::Term(x), Val::Term(y)) if op == "=" => {
                Ok(Val::Bool(format!("({x} = {y} OR {} = {})", self.num(x), self.num(y))))
            }
            (Val::Term(x), Val::Term(y)) => {
                let (nx, ny, sx, sy) = (self.num(x), self.num(y), self.plain(x), self.plain(y));
                Ok(Val::Bool(format!(
                    "(CASE WHEN {nx} IS NOT NULL AND {ny} IS NOT NULL THEN {nx} {op} {ny} \
                     WHEN {sx} IS NOT NULL AND {sy} IS NOT NULL THEN {sx} {op} {sy} END)"
                )))
            }
            _ => refuse(format!("`{op}` between these operands (only numbers, strings, or `=` of terms)")),
        }
    }

    /// Whether two values are the same term (a constant in any rendering).
    fn same_term(&self, a: Val, b: Val) -> Result<String, Unsupported> {
        Ok(match (a, b) {
            (Val::Term(x), Val::Const(c)) | (Val::Const(c), Val::Term(x)) => {
                format!("({})", self.one_of(&x, &renderings(&c)))
            }
            (Val::Term(x), Val::Term(y)) => format!("({x} = {y})"),
            (Val::Const(x), Val::Const(y)) => if x == y { "(1 = 1)" } else { "(1 = 0)" }.into(),
            _ => return refuse("sameTerm / `=` of a computed value and a term"),
        })
    }

    fn function(
        &mut self,
        f: &Function,
        args: &[Expression],
        cols: &HashMap<Variable, String>,
    ) -> Result<Val, Unsupported> {
        let mut vals = Vec::new();
        for a in args {
            vals.push(self.expr(a, cols)?);
        }
        let term = |t: &Self, v: &Val| -> Result<String, Unsupported> {
            match v {
                Val::Term(x) => Ok(x.clone()),
                Val::Const(c) => Ok(t.lit(&term_token(c))),
                _ => refuse("a term function applied to a computed value"),
            }
        };
        Ok(match (f, vals.as_slice()) {
            (Function::Str, [x]) => match x {
                Val::Term(_) | Val::Const(_) => {
                    let t = term(self, x)?;
                    Val::Str(format!(
                        "(CASE WHEN substr({t}, 1, 1) = '<' THEN substr({t}, 2, length({t}) - 2) \
                         WHEN substr({t}, 1, 1) = '\"' THEN {} END)",
                        self.lexical(&t)
                    ))
                }
                Val::Str(s) => Val::Str(s.clone()),
                _ => return refuse("STR of a computed value"),
            },
            (Function::StrLen, [x]) => Val::Num(
                format!("CAST(length({}) AS DOUBLE)", self.as_string_arg(x.clone())?),
                "'integer'".into(),
            ),
            (Function::UCase, [x]) => Val::Str(format!("upper({})", self.as_string_arg(x.clone())?)),
            (Function::LCase, [x]) => Val::Str(format!("lower({})", self.as_string_arg(x.clone())?)),
            (Function::StrStarts, [x, y]) => {
                let (x, y) = (self.as_string_arg(x.clone())?, self.as_string_arg(y.clone())?);
                Val::Bool(format!("(substr({x}, 1, length({y})) = {y})"))
            }
            (Function::StrEnds, [x, y]) => {
                let (x, y) = (self.as_string_arg(x.clone())?, self.as_string_arg(y.clone())?);
                Val::Bool(format!("(length({y}) = 0 OR right({x}, length({y})) = {y})"))
            }
            (Function::Contains, [x, y]) => {
                let (x, y) = (self.as_string_arg(x.clone())?, self.as_string_arg(y.clone())?);
                Val::Bool(format!("(instr({x}, {y}) > 0)"))
            }
            (Function::Regex, [x, pattern, rest @ ..]) => {
                let text = self.as_string_arg(x.clone())?;
                let Val::Const(Term::Literal(p)) = pattern else {
                    return refuse("REGEX with a computed pattern");
                };
                let flags = match rest {
                    [] => "",
                    [Val::Const(Term::Literal(f))] if f.value() == "i" => "(?i)",
                    [Val::Const(Term::Literal(f))] if f.value().is_empty() => "",
                    _ => return refuse("REGEX flags other than \"i\""),
                };
                let p = self.lit(&format!("{flags}{}", p.value()));
                Val::Bool(match self.d {
                    Dialect::DuckDb => format!("regexp_matches({text}, {p})"),
                    Dialect::Spark => format!("({text} RLIKE {p})"),
                })
            }
            (Function::Lang, [x]) => {
                let t = term(self, x)?;
                let suffix = self.suffix(&t);
                Val::Str(format!(
                    "(CASE WHEN substr({t}, 1, 1) = '\"' THEN \
                     (CASE WHEN substr({suffix}, 1, 1) = '@' THEN substr({suffix}, 2) ELSE '' END) END)"
                ))
            }
            (Function::LangMatches, [tag, range]) => {
                let (tag, range) = (self.as_plain(tag.clone())?, self.as_plain(range.clone())?);
                Val::Bool(format!(
                    "(CASE WHEN {range} = '*' THEN {tag} <> '' ELSE \
                     (lower({tag}) = lower({range}) OR substr(lower({tag}), 1, length({range}) + 1) = lower({range}) || '-') END)"
                ))
            }
            (Function::Datatype, [x]) => {
                let t = term(self, x)?;
                let suffix = self.suffix(&t);
                let (string, lang) = (
                    self.lit(&format!("<{XSD}string>")),
                    self.lit("<http://www.w3.org/1999/02/22-rdf-syntax-ns#langString>"),
                );
                Val::Term(format!(
                    "(CASE WHEN substr({t}, 1, 1) = '\"' THEN (CASE WHEN {suffix} = '' THEN {string} \
                     WHEN substr({suffix}, 1, 1) = '@' THEN {lang} ELSE substr({suffix}, 3) END) END)"
                ))
            }
            (Function::IsIri, [x]) => Val::Bool(format!("(substr({}, 1, 1) = '<')", term(self, x)?)),
            (Function::IsBlank, [x]) => Val::Bool(format!("(substr({}, 1, 2) = '_:')", term(self, x)?)),
            (Function::IsLiteral, [x]) => Val::Bool(format!("(substr({}, 1, 1) = '\"')", term(self, x)?)),
            (Function::IsNumeric, [x]) => Val::Bool(format!("({} IS NOT NULL)", self.num(&term(self, x)?))),
            (f, _) => return refuse(format!("the function {f}")),
        })
    }

    // ---- reading tokens ----

    /// The text after a literal's closing quote: `''`, `@lang` or `^^<dt>`.
    fn suffix(&self, t: &str) -> String {
        format!("regexp_extract({t}, {}, 1)", self.lit("\"((@[a-zA-Z0-9-]+)|\\^\\^<[^>]*>)?$"))
    }

    /// A literal token's lexical form, unescaped.
    fn lexical(&self, t: &str) -> String {
        let raw =
            format!("regexp_extract({t}, {}, 1)", self.lit("^\"(.*)\"(@[a-zA-Z0-9-]+|\\^\\^<[^>]*>)?$"));
        // `\\` first becomes a byte no token holds, so `\\n` stays `\n`.
        let steps = [
            (self.lit("\\\\"), "chr(1)".to_owned()),
            (self.lit("\\\""), self.lit("\"")),
            (self.lit("\\n"), "chr(10)".to_owned()),
            (self.lit("\\r"), "chr(13)".to_owned()),
            (self.lit("\\t"), "chr(9)".to_owned()),
            ("chr(1)".to_owned(), self.lit("\\")),
        ];
        steps.iter().fold(raw, |acc, (from, to)| format!("replace({acc}, {from}, {to})"))
    }

    /// The value of a numeric literal token as DOUBLE, else NULL.
    fn num(&self, t: &str) -> String {
        let types: Vec<String> = NUMERIC_TYPES.iter().map(|n| self.lit(&format!("^^<{XSD}{n}>"))).collect();
        format!(
            "(CASE WHEN substr({t}, 1, 1) = '\"' AND {} IN ({}) THEN TRY_CAST({} AS DOUBLE) END)",
            self.suffix(t),
            types.join(", "),
            self.lexical(t)
        )
    }

    /// The lexical form of a simple or xsd:string literal, else NULL.
    fn plain(&self, t: &str) -> String {
        self.string_lexical(t, false)
    }

    /// The lexical form of a string literal (simple, xsd:string or with a
    /// language), as string functions take it; else NULL.
    fn string_arg(&self, t: &str) -> String {
        self.string_lexical(t, true)
    }

    fn string_lexical(&self, t: &str, with_language: bool) -> String {
        let s = self.suffix(t);
        let language = if with_language { format!(" OR substr({s}, 1, 1) = '@'") } else { String::new() };
        format!(
            "(CASE WHEN substr({t}, 1, 1) = '\"' AND ({s} = '' OR {s} = {}{language}) THEN {} END)",
            self.lit(&format!("^^<{XSD}string>")),
            self.lexical(t)
        )
    }

    fn as_num(&self, v: Val) -> Result<String, Unsupported> {
        Ok(match v {
            Val::Num(n, _) => n,
            Val::Term(t) => self.num(&t),
            Val::Const(Term::Literal(l)) if is_numeric(&l) => match l.value().parse::<f64>() {
                Ok(_) => format!("CAST({} AS DOUBLE)", self.lit(l.value())),
                Err(_) => return refuse(format!("the malformed number {l}")),
            },
            Val::Const(_) | Val::Str(_) => "CAST(NULL AS DOUBLE)".into(),
            Val::Bool(_) => return refuse("arithmetic or comparison of a boolean with a number"),
        })
    }

    fn as_plain(&self, v: Val) -> Result<String, Unsupported> {
        Ok(match v {
            Val::Str(s) => s,
            Val::Term(t) => self.plain(&t),
            Val::Const(Term::Literal(l)) if is_plain(&l) => self.lit(l.value()),
            Val::Const(_) | Val::Num(..) => self.null(),
            Val::Bool(_) => return refuse("comparison of a boolean with a string"),
        })
    }

    fn as_string_arg(&self, v: Val) -> Result<String, Unsupported> {
        Ok(match v {
            Val::Term(t) => self.string_arg(&t),
            Val::Const(Term::Literal(l))
                if l.datatype().as_str() == format!("{XSD}string") || l.language().is_some() =>
            {
                self.lit(l.value())
            }
            other => self.as_plain(other)?,
        })
    }
}

fn is_modifier(p: &GraphPattern) -> bool {
    matches!(
        p,
        GraphPattern::Project { .. }
            | GraphPattern::Distinct { .. }
            | GraphPattern::Reduced { .. }
            | GraphPattern::Slice { .. }
            | GraphPattern::OrderBy { .. }
    )
}

/// A pattern position: a constant (its renderings) or a variable (and
/// whether it is a result column; a blank node's is not).
enum Slot {
    Const(Vec<String>),
    Var(Variable, bool),
}

fn named_slot(p: &NamedNodePattern) -> Slot {
    match p {
        NamedNodePattern::NamedNode(n) => Slot::Const(renderings(&Term::NamedNode(n.clone()))),
        NamedNodePattern::Variable(v) => Slot::Var(v.clone(), true),
    }
}

/// A typed SQL value.
#[derive(Clone)]
enum Val {
    /// A column or expression holding a token (NULL: unbound or an error).
    Term(String),
    /// A constant of the query, kept as a term until its use says its type.
    Const(Term),
    /// A number (DOUBLE) and its datatype's XSD local name, as SQL
    /// (`'integer'` for the whole integer family).
    Num(String, String),
    /// A string value (a lexical form, no quotes).
    Str(String),
    Bool(String),
}

impl Val {
    fn boolean(self) -> Result<String, Unsupported> {
        match self {
            Val::Bool(b) => Ok(b),
            _ => refuse("a FILTER on a term's effective boolean value (compare it instead)"),
        }
    }
    fn is_numeric(&self) -> bool {
        matches!(self, Val::Num(..)) || matches!(self, Val::Const(Term::Literal(l)) if is_numeric(l))
    }
    fn is_string(&self) -> bool {
        matches!(self, Val::Str(_)) || matches!(self, Val::Const(Term::Literal(l)) if is_plain(l))
    }
}

/// The numeric datatype an XSD numeric type computes as: the integer
/// family is `integer`.
fn family(local: &str) -> &str {
    match local {
        "decimal" | "float" | "double" => local,
        _ => "integer",
    }
}

/// The datatype of `a op b` (SPARQL's numeric type promotion), as SQL over
/// two datatype expressions.
fn promote(a: &str, b: &str) -> String {
    format!(
        "(CASE WHEN {a} = 'double' OR {b} = 'double' THEN 'double' WHEN {a} = 'float' OR {b} = 'float' THEN 'float' \
         WHEN {a} = 'decimal' OR {b} = 'decimal' THEN 'decimal' WHEN {a} = 'integer' AND {b} = 'integer' THEN 'integer' END)"
    )
}

fn is_numeric(l: &Literal) -> bool {
    l.datatype().as_str().strip_prefix(XSD).is_some_and(|t| NUMERIC_TYPES.contains(&t))
}

fn is_plain(l: &Literal) -> bool {
    l.language().is_none() && l.datatype() == oxrdf::vocab::xsd::STRING
}

/// The token our writers store for `t`.
fn term_token(t: &Term) -> String {
    render(&to_ours(t), Escaping::Pycottas)
}

/// Every token a producer may have stored for `t` (docs/format.md §2).
fn renderings(t: &Term) -> Vec<String> {
    let ours = to_ours(t);
    let mut all: Vec<String> = Escaping::ALL.iter().map(|e| render(&ours, *e)).collect();
    all.dedup();
    let mut seen = BTreeSet::new();
    all.retain(|t| seen.insert(t.clone()));
    all
}

/// The variables an expression mentions.
fn expression_vars(e: &Expression) -> Vec<Variable> {
    let mut out = Vec::new();
    collect_vars(e, &mut out);
    out
}

fn collect_vars(e: &Expression, out: &mut Vec<Variable>) {
    use Expression as E;
    match e {
        E::Variable(v) | E::Bound(v) => out.push(v.clone()),
        E::NamedNode(_) | E::Literal(_) | E::Exists(_) => {}
        E::Not(x) | E::UnaryPlus(x) | E::UnaryMinus(x) => collect_vars(x, out),
        E::Or(a, b)
        | E::And(a, b)
        | E::Equal(a, b)
        | E::SameTerm(a, b)
        | E::Greater(a, b)
        | E::GreaterOrEqual(a, b)
        | E::Less(a, b)
        | E::LessOrEqual(a, b)
        | E::Add(a, b)
        | E::Subtract(a, b)
        | E::Multiply(a, b)
        | E::Divide(a, b) => {
            collect_vars(a, out);
            collect_vars(b, out);
        }
        E::In(x, list) => {
            collect_vars(x, out);
            list.iter().for_each(|i| collect_vars(i, out));
        }
        E::If(a, b, c) => [a, b, c].iter().for_each(|x| collect_vars(x, out)),
        E::Coalesce(list) | E::FunctionCall(_, list) => list.iter().for_each(|i| collect_vars(i, out)),
    }
}
