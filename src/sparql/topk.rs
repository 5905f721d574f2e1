//! `SELECT … { A . B } ORDER BY ?k… LIMIT n` (and one pattern alone): the
//! first rows in SPARQL order, kept in a heap of `OFFSET + LIMIT` rows while
//! the pattern's rows stream by, where spareval joins every row as terms
//! and sorts them all.
//!
//! Without a `LIMIT` every row is kept (up to [`MAX_SORTED`]) with its keys
//! decoded and owned, and sorted once. spareval's sort evaluates each key at
//! each comparison from the term's bytes, which for a store are mapped
//! dictionary pages: n log n random reads that made every page of a large
//! class's dictionary resident (1.5 GiB for 431,876 members at 100M quads,
//! past any `--memory-limit`), where here each term is read twice, in order
//! of rows, with the mapped pages' budget kept.
//!
//! Two patterns are joined through the one variable they share, smaller
//! side first (counted as evaluation would count it): its rows are held by
//! their join value, and the other side reads only the rows that can meet
//! one. When that side's join variable is its subject, those are the rows
//! `.s.offsets` gives for the held subjects, read sparsely
//! ([`crate::store::read::Scan::restrict_subjects`]): a class's 43,000
//! members' names at 10M quads, not the 2M names of everyone.
//!
//! Order is exactly spareval's where this module answers: every key value
//! is an IRI, a string literal or an `xsd:integer` literal; IRIs come before
//! literals, IRIs and strings compare by code point, integers by value. A key
//! variable holding both strings and integers (which spareval orders by its
//! fallback on lexical form and datatype), a blank node, a language-tagged
//! or other typed literal: the query is evaluated. Rows whose keys tie are
//! in no promised order, in SPARQL as here.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;

use oxrdf::{Term, Variable};
use spargebra::algebra::{Expression, GraphPattern, OrderExpression};
use spargebra::Query;

use super::analytic::{
    added_value, canonical, id_map_bytes, id_near, next_rows, only_shared, term_of, two_patterns, IdMap,
    Operand, PagesWithinBudget, Stop, MAX_ROWS,
};
use super::dataset::StoreDataset;
use crate::store::read::held::HeldBytes;
use crate::store::sidecars::mapped::DictMap;
use crate::store::StoreError;
use crate::view::ids::{IdQuads, Next};
use crate::view::terms::{from_token, Tok};

/// Rows kept (`OFFSET + LIMIT`) beyond which the query is evaluated.
const MAX_KEPT: usize = 10_000;

/// Rows an ordered query without a `LIMIT` sorts here, with its keys
/// decoded; past this the query is evaluated.
const MAX_SORTED: usize = MAX_ROWS;

const INTEGER_SUFFIX: &str = "\"^^<http://www.w3.org/2001/XMLSchema#integer>";

/// The first rows of an ordered query with a `LIMIT`.
pub struct TopK {
    /// The projection, in order.
    vars: Vec<Variable>,
    /// Each key: its place in `needed` and whether it is descending.
    keys: Vec<(usize, bool)>,
    /// The variables a row carries: the projection's, then the keys' others.
    needed: Vec<Variable>,
    start: usize,
    /// `OFFSET + LIMIT`, or [`MAX_SORTED`] for every row.
    kept: usize,
    /// No `LIMIT`: every row is answered, in order.
    every_row: bool,
    shape: Shape,
}

enum Shape {
    One(Operand),
    /// Two patterns joined through their one shared variable.
    Two(Box<[Operand; 2]>, Variable),
}

impl Shape {
    fn binds(&self, v: &Variable) -> bool {
        match self {
            Shape::One(op) => op.col_of(v).is_some(),
            Shape::Two(sides, _) => sides.iter().any(|s| s.col_of(v).is_some()),
        }
    }
}

/// The query's shape, when this module answers it.
pub fn top_k_of(query: &Query) -> Option<TopK> {
    let Query::Select { dataset: None, pattern, .. } = query else { return None };
    let (projection, start, kept, every_row) = match pattern {
        GraphPattern::Slice { inner, start, length: Some(length) } => {
            (&**inner, *start, start.checked_add(*length).filter(|&k| k > 0 && k <= MAX_KEPT)?, false)
        }
        projection => (projection, 0, MAX_SORTED, true),
    };
    let GraphPattern::Project { inner, variables } = projection else { return None };
    let GraphPattern::OrderBy { inner: body, expression } = &**inner else { return None };
    let shape = match Operand::of(body) {
        Some(op) => Shape::One(op),
        None => {
            let (a, b) = two_patterns(body)?;
            let shared = only_shared(&a, &b)?;
            Shape::Two(Box::new([a, b]), shared)
        }
    };
    let mut needed = variables.clone();
    let mut keys = Vec::with_capacity(expression.len());
    for e in expression {
        let (v, descending) = match e {
            OrderExpression::Asc(Expression::Variable(v)) => (v, false),
            OrderExpression::Desc(Expression::Variable(v)) => (v, true),
            _ => return None,
        };
        let at = match needed.iter().position(|n| n == v) {
            Some(at) => at,
            None => {
                needed.push(v.clone());
                needed.len() - 1
            }
        };
        keys.push((at, descending));
    }
    // Every variable must be one the patterns bind: an unbound one is an
    // expression spareval evaluates (and orders first).
    if !needed.iter().all(|v| shape.binds(v)) {
        return None;
    }
    Some(TopK { vars: variables.clone(), keys, needed, start, kept, every_row, shape })
}

impl TopK {
    /// Whether every row is answered (no `LIMIT`).
    pub fn every_row(&self) -> bool {
        self.every_row
    }

    /// The answer, or `None` when a key value is outside what this module
    /// orders, or a part cannot give ids (the query is then evaluated).
    pub fn answer(
        &self,
        ds: &StoreDataset,
        stop: Stop,
    ) -> Result<Option<spareval::QuerySolutionIter<'static>>, StoreError> {
        let mut top = Top::new(self);
        let complete = match &self.shape {
            Shape::One(op) => self.one(op, ds, stop, &mut top)?,
            Shape::Two(sides, shared) => self.two(sides, shared, ds, stop, &mut top)?,
        };
        if !complete || top.declined {
            return Ok(None);
        }
        let (sorted, _held) = top.into_sorted();
        let mut rows = Vec::with_capacity(sorted.len().saturating_sub(self.start));
        // Every row's terms come off mapped dictionary pages once more.
        let mut pages = PagesWithinBudget::new(ds);
        for entry in sorted.into_iter().skip(self.start) {
            let mut row = Vec::with_capacity(self.vars.len());
            for t in &entry.row[..self.vars.len()] {
                pages.tick();
                row.push(Some(term_of(t)?));
            }
            rows.push(Ok(row));
        }
        let vars: Arc<[Variable]> = Arc::from(self.vars.clone());
        Ok(Some(spareval::QuerySolutionIter::from_tuples(vars, rows)))
    }

    /// One pattern: each row offered as it comes.
    fn one<'a>(
        &self,
        op: &Operand,
        ds: &StoreDataset<'a>,
        stop: Stop,
        top: &mut Top<'a>,
    ) -> Result<bool, StoreError> {
        let Some(cols) = self.needed.iter().map(|v| op.col_of(v)).collect::<Option<Vec<usize>>>() else {
            return Ok(false);
        };
        let Some(scans) = op.scan(ds, &cols)? else { return Ok(false) };
        for mut scan in scans {
            loop {
                let r = match next_rows(&mut scan, stop)? {
                    Next::Rows(r) => r,
                    Next::Tokens => return Ok(false),
                    Next::End => break,
                };
                for ids in &r.ids {
                    let row =
                        cols.iter().map(|&c| canonical(r.dicts[c], ids[c])).collect::<Result<_, _>>()?;
                    top.offer(row);
                }
            }
            for q in &scan.added {
                let Some(row) = cols.iter().map(|&c| added_value(q, c).cloned()).collect() else {
                    return Ok(false);
                };
                top.offer(row);
            }
            if top.declined {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Two patterns: the side with fewer rows held by join value, the other
    /// read for the rows that meet it.
    fn two<'a>(
        &self,
        [a, b]: &[Operand; 2],
        shared: &Variable,
        ds: &StoreDataset<'a>,
        stop: Stop,
        top: &mut Top<'a>,
    ) -> Result<bool, StoreError> {
        let Some([held, read]) = smaller_first(a, b, ds)? else { return Ok(false) };
        // Each needed variable from the read side where it has it (the
        // shared one among them), else from the held side.
        let from_read: Vec<Option<usize>> = self.needed.iter().map(|v| read.col_of(v)).collect();
        let held_vars: Vec<&Variable> =
            self.needed.iter().zip(&from_read).filter(|(_, r)| r.is_none()).map(|(v, _)| v).collect();
        let Some(held) = Held::of(held, shared, &held_vars, ds, stop)? else { return Ok(false) };
        let Some(rc) = read.col_of(shared) else { return Ok(false) };
        let read_cols: Vec<usize> = from_read.iter().flatten().copied().chain([rc]).collect();
        let Some(scans) = read.scan(ds, &read_cols)? else { return Ok(false) };
        for (i, scan) in scans.into_iter().enumerate() {
            let part = ReadPart { i, rc, from_read: &from_read };
            if !part.join(scan, &held, ds, stop, top)? {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// The two sides, the one to hold first: the one with more bound terms
/// (a class's members before everyone's names), else the one with fewer
/// rows. Counting a side with a bound object reads its object column once
/// more, so it is done only when the bound terms do not tell. `None` when
/// the side to hold has more rows than are held.
fn smaller_first<'o>(
    a: &'o Operand,
    b: &'o Operand,
    ds: &StoreDataset,
) -> Result<Option<[&'o Operand; 2]>, StoreError> {
    let (na, nb) = (a.bound_terms(), b.bound_terms());
    let [held, read] = match na.cmp(&nb) {
        Ordering::Greater => [a, b],
        Ordering::Less => [b, a],
        Ordering::Equal => {
            let (ca, cb) = (a.count(ds)?, b.count(ds)?);
            if ca.min(cb) > MAX_ROWS {
                return Ok(None);
            }
            if ca <= cb {
                [a, b]
            } else {
                [b, a]
            }
        }
    };
    Ok(Some([held, read]))
}

/// The held side's rows (its needed values the read side lacks), by join
/// value: per part by id of that part's dictionary, and the log's added
/// quads by token.
struct Held<'a> {
    rows: Vec<Vec<Tok<'a>>>,
    col: usize,
    parts: Vec<(IdMap<Vec<u32>>, Option<&'a DictMap>)>,
    added: HashMap<Vec<u8>, Vec<u32>>,
    /// The rows and maps, counted against the memory limit.
    held: HeldBytes,
}

impl<'a> Held<'a> {
    fn of(
        op: &Operand,
        shared: &Variable,
        vars: &[&Variable],
        ds: &StoreDataset<'a>,
        stop: Stop,
    ) -> Result<Option<Held<'a>>, StoreError> {
        let (Some(col), Some(cols)) =
            (op.col_of(shared), vars.iter().map(|v| op.col_of(v)).collect::<Option<Vec<usize>>>())
        else {
            return Ok(None);
        };
        let read: Vec<usize> = cols.iter().copied().chain([col]).collect();
        let Some(scans) = op.scan(ds, &read)? else { return Ok(None) };
        let mut held =
            Held { rows: Vec::new(), col, parts: Vec::new(), added: HashMap::new(), held: HeldBytes::new() };
        let row_bytes = std::mem::size_of::<Vec<Tok>>() + cols.len() * std::mem::size_of::<Tok>();
        let mut earlier_parts = 0;
        for mut scan in scans {
            let (mut by_id, mut dict): (IdMap<Vec<u32>>, _) = (IdMap::default(), None);
            loop {
                let r = match next_rows(&mut scan, stop)? {
                    Next::Rows(r) => r,
                    Next::Tokens => return Ok(None),
                    Next::End => break,
                };
                dict = Some(r.dicts[col]);
                for ids in &r.ids {
                    let row =
                        cols.iter().map(|&c| canonical(r.dicts[c], ids[c])).collect::<Result<_, _>>()?;
                    by_id.entry(ids[col]).or_default().push(held.push(row));
                }
                // Past what is held, before holding more: the other side
                // was to be the larger.
                if held.rows.len() > MAX_ROWS {
                    return Ok(None);
                }
                // Each row's place in the map's lists is 4 bytes more.
                let rows = held.rows.len() * (row_bytes + 4);
                held.held.set(rows + earlier_parts + id_map_bytes(&by_id));
            }
            for q in &scan.added {
                let (Some(key), Some(row)) =
                    (added_value(q, col), cols.iter().map(|&c| added_value(q, c).cloned()).collect())
                else {
                    return Ok(None);
                };
                let at = held.push(row);
                held.added.entry(key.bytes().to_vec()).or_default().push(at);
            }
            earlier_parts += id_map_bytes(&by_id);
            held.parts.push((by_id, dict));
        }
        Ok((held.rows.len() <= MAX_ROWS).then_some(held))
    }

    fn push(&mut self, row: Vec<Tok<'a>>) -> u32 {
        self.rows.push(row);
        (self.rows.len() - 1) as u32
    }

    /// The held rows by id of `dict` (column `col` of part `i`): the held
    /// ids themselves when they come from that dictionary, else each value
    /// looked up once, galloping in its own dictionary's order.
    fn by_id_in(
        &self,
        ds: &StoreDataset,
        i: usize,
        dict: &DictMap,
        col: usize,
    ) -> Result<Cow<'_, IdMap<Vec<u32>>>, StoreError> {
        if let [(by_id, Some(d))] = self.parts.as_slice() {
            if i == 0 && col == self.col && std::ptr::eq(*d, dict) && self.added.is_empty() {
                return Ok(Cow::Borrowed(by_id));
            }
        }
        let mut out: IdMap<Vec<u32>> = IdMap::default();
        let mut pages = PagesWithinBudget::new(ds);
        for (by_id, source) in &self.parts {
            let Some(source) = source else { continue };
            let mut ids: Vec<(&u32, &Vec<u32>)> = by_id.iter().collect();
            ids.sort_unstable_by_key(|(id, _)| **id);
            let mut hint = 0;
            for (&id, rows) in ids {
                pages.tick();
                if let Some(to) = id_near(dict, &canonical(source, id)?, &mut hint)? {
                    out.entry(to).or_default().extend(rows);
                }
            }
        }
        let mut hint = 0;
        for (t, rows) in &self.added {
            if let Some(to) = id_near(dict, &Tok::Ref(t), &mut hint)? {
                out.entry(to).or_default().extend(rows);
            }
        }
        Ok(Cow::Owned(out))
    }

    /// The held rows whose join value is the token `t`.
    fn rows_of_token(&self, t: &Tok) -> Result<Vec<u32>, StoreError> {
        let mut out = self.added.get(t.bytes()).cloned().unwrap_or_default();
        for (by_id, dict) in &self.parts {
            let Some(dict) = dict else { continue };
            if let Some(rows) = id_near(dict, t, &mut 0)?.and_then(|id| by_id.get(&id)) {
                out.extend(rows);
            }
        }
        Ok(out)
    }
}

/// One part of the read side.
struct ReadPart<'r> {
    i: usize,
    /// The join variable's column.
    rc: usize,
    /// Per needed variable, its column on this side, if it has it.
    from_read: &'r [Option<usize>],
}

impl ReadPart<'_> {
    /// Offers every row of this part that meets a held row, joined.
    fn join<'a>(
        &self,
        mut scan: IdQuads<'a>,
        held: &Held<'a>,
        ds: &StoreDataset<'a>,
        stop: Stop,
        top: &mut Top<'a>,
    ) -> Result<bool, StoreError> {
        let Some(dict) = ds.parts[self.i].store().sidecars.dict(self.rc) else { return Ok(false) };
        let wanted = held.by_id_in(ds, self.i, dict, self.rc)?;
        if self.rc == 0 {
            let mut subjects: Vec<u32> = wanted.keys().copied().collect();
            subjects.sort_unstable();
            scan.restrict_subjects(&subjects)?;
        }
        loop {
            let r = match next_rows(&mut scan, stop)? {
                Next::Rows(r) => r,
                Next::Tokens => return Ok(false),
                Next::End => break,
            };
            if !std::ptr::eq(r.dicts[self.rc], dict) {
                return Ok(false);
            }
            for ids in &r.ids {
                let Some(matched) = wanted.get(&ids[self.rc]) else { continue };
                let read = |c: usize| canonical(r.dicts[c], ids[c]);
                self.offer_joined(&read, matched, held, top)?;
            }
            if top.declined {
                return Ok(false);
            }
        }
        for q in &scan.added {
            let Some(key) = added_value(q, self.rc) else { return Ok(false) };
            if self.from_read.iter().flatten().any(|&c| added_value(q, c).is_none()) {
                return Ok(false);
            }
            let matched = held.rows_of_token(key)?;
            let read = |c: usize| Ok(added_value(q, c).cloned().expect("checked above"));
            self.offer_joined(&read, &matched, held, top)?;
        }
        Ok(!top.declined)
    }

    /// The read row (its cells through `read`) joined with each of the
    /// `matched` held rows.
    fn offer_joined<'a>(
        &self,
        read: &dyn Fn(usize) -> Result<Tok<'a>, StoreError>,
        matched: &[u32],
        held: &Held<'a>,
        top: &mut Top<'a>,
    ) -> Result<(), StoreError> {
        let mut own = Vec::with_capacity(self.from_read.len());
        for c in self.from_read {
            own.push(c.map(read).transpose()?);
        }
        for &h in matched {
            let mut from_held = held.rows[h as usize].iter();
            let row = own.iter().map(|t| t.clone().or_else(|| from_held.next().cloned()));
            let Some(row) = row.collect() else { continue };
            top.offer(row);
        }
        Ok(())
    }
}

/// An order key's value, as spareval orders it (see the module banner).
/// The derived order puts IRIs before literals; strings and integers are
/// never compared with each other ([`Top::offer`] declines first).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Key<'k> {
    Iri(Cow<'k, str>),
    Str(Cow<'k, str>),
    Int(i64),
}

impl<'k> Key<'k> {
    /// The key of a canonical token; `None` outside what is ordered here.
    fn of(t: &Tok<'k>) -> Option<Key<'k>> {
        match t {
            Tok::Ref(b) => Key::of_bytes(b),
            Tok::Own(b) => Key::of_bytes(b).map(Key::into_owned),
        }
    }

    fn of_bytes(b: &[u8]) -> Option<Key<'_>> {
        let text = std::str::from_utf8(b).ok()?;
        if !text.contains('\\') {
            if let Some(iri) = text.strip_prefix('<').and_then(|t| t.strip_suffix('>')) {
                return Some(Key::Iri(Cow::Borrowed(iri)));
            }
            let literal = text.strip_prefix('"');
            if let Some(value) = literal.and_then(|t| t.strip_suffix('"')) {
                return Some(Key::Str(Cow::Borrowed(value)));
            }
            if let Some(digits) = literal.and_then(|t| t.strip_suffix(INTEGER_SUFFIX)) {
                return integer(digits);
            }
        }
        match from_token(b)? {
            Term::NamedNode(n) => Some(Key::Iri(Cow::Owned(n.into_string()))),
            Term::Literal(l) if l.datatype() == oxrdf::vocab::xsd::STRING => {
                Some(Key::Str(Cow::Owned(l.value().to_owned())))
            }
            Term::Literal(l) if l.datatype() == oxrdf::vocab::xsd::INTEGER => integer(l.value()),
            _ => None,
        }
    }

    fn into_owned(self) -> Key<'static> {
        match self {
            Key::Iri(s) => Key::Iri(Cow::Owned(s.into_owned())),
            Key::Str(s) => Key::Str(Cow::Owned(s.into_owned())),
            Key::Int(n) => Key::Int(n),
        }
    }
}

fn integer(lexical: &str) -> Option<Key<'static>> {
    lexical.parse::<oxsdatatypes::Integer>().ok().map(|n| Key::Int(i64::from(n)))
}

/// A row's keys with their directions: the order of the result (rows
/// with equal keys are equal here, whatever else they hold).
struct Ranked<'a> {
    keys: Vec<(Key<'a>, bool)>,
    row: Vec<Tok<'a>>,
}

impl Ranked<'_> {
    /// Its bytes, owned strings included (a borrowed token is a mapped
    /// page's, not the heap's).
    fn bytes(&self) -> usize {
        let key_text = |k: &Key| match k {
            Key::Iri(Cow::Owned(s)) | Key::Str(Cow::Owned(s)) => s.capacity(),
            _ => 0,
        };
        let own = |t: &Tok| match t {
            Tok::Own(b) => b.len() + 16,
            Tok::Ref(_) => 0,
        };
        std::mem::size_of::<Self>()
            + self.keys.capacity() * std::mem::size_of::<(Key, bool)>()
            + self.keys.iter().map(|(k, _)| key_text(k)).sum::<usize>()
            + self.row.capacity() * std::mem::size_of::<Tok>()
            + self.row.iter().map(own).sum::<usize>()
    }
}

/// Rows kept between two reports of what a full sort holds.
const ROWS_PER_HELD_REPORT: usize = 1024;

impl Ord for Ranked<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        for ((a, descending), (b, _)) in self.keys.iter().zip(&other.keys) {
            let o = a.cmp(b);
            match (o, descending) {
                (Ordering::Equal, _) => continue,
                (o, false) => return o,
                (o, true) => return o.reverse(),
            }
        }
        Ordering::Equal
    }
}

impl PartialEq for Ranked<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Ranked<'_> {}

impl PartialOrd for Ranked<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The best rows so far: a max-heap of at most `kept`, its top the worst;
/// or, for a query without a `LIMIT`, every row (up to `kept`, past which
/// the query is declined) with its keys owned, so that sorting them reads
/// no mapped page.
struct Top<'a> {
    heap: BinaryHeap<Ranked<'a>>,
    every: Option<Vec<Ranked<'a>>>,
    /// What `every` holds, counted against the memory limit.
    held: HeldBytes,
    every_bytes: usize,
    kept: usize,
    keys: Vec<(usize, bool)>,
    /// Per key: whether a string and an integer have been seen.
    kinds: Vec<[bool; 2]>,
    /// A key value this module does not order was met.
    declined: bool,
}

impl<'a> Top<'a> {
    fn new(q: &TopK) -> Top<'a> {
        Top {
            heap: BinaryHeap::with_capacity(if q.every_row { 0 } else { q.kept + 1 }),
            every: q.every_row.then(Vec::new),
            held: HeldBytes::new(),
            every_bytes: 0,
            kept: q.kept,
            keys: q.keys.clone(),
            kinds: vec![[false; 2]; q.keys.len()],
            declined: false,
        }
    }

    /// Keeps `row` (the needed variables' values) if it is among the best.
    fn offer(&mut self, row: Vec<Tok<'a>>) {
        if self.declined {
            return;
        }
        let mut keys = Vec::with_capacity(self.keys.len());
        for (k, &(at, descending)) in self.keys.iter().enumerate() {
            let Some(key) = Key::of(&row[at]) else {
                self.declined = true;
                return;
            };
            let kind = &mut self.kinds[k];
            match key {
                Key::Str(_) => kind[0] = true,
                Key::Int(_) => kind[1] = true,
                Key::Iri(_) => {}
            }
            if kind[0] && kind[1] {
                self.declined = true;
                return;
            }
            keys.push((key, descending));
        }
        if let Some(every) = &mut self.every {
            if every.len() == self.kept {
                self.declined = true;
                *every = Vec::new();
                return;
            }
            let keys: Vec<(Key, bool)> = keys.into_iter().map(|(k, d)| (k.into_owned(), d)).collect();
            let ranked = Ranked { keys, row };
            self.every_bytes += ranked.bytes();
            every.push(ranked);
            if every.len().is_multiple_of(ROWS_PER_HELD_REPORT) {
                self.held.set(self.every_bytes);
            }
            return;
        }
        let candidate = Ranked { keys, row };
        if self.heap.len() < self.kept {
            self.heap.push(candidate);
        } else if self.heap.peek().is_some_and(|worst| candidate < *worst) {
            self.heap.pop();
            self.heap.push(candidate);
        }
    }
}

impl<'a> Top<'a> {
    /// The rows kept, best first, and their count against the memory
    /// limit, to keep until they have become terms (dropping it sooner let
    /// the caches grow back while the rows were still held).
    fn into_sorted(self) -> (Vec<Ranked<'a>>, HeldBytes) {
        let rows = match self.every {
            Some(mut every) => {
                every.sort_unstable();
                every
            }
            None => self.heap.into_sorted_vec(),
        };
        (rows, self.held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(token: &str) -> Option<Key<'_>> {
        Key::of(&Tok::Ref(token.as_bytes()))
    }

    #[test]
    fn keys_are_the_values_spareval_compares() {
        assert_eq!(key("<http://a/b>"), Some(Key::Iri("http://a/b".into())));
        assert_eq!(key("\"ab\""), Some(Key::Str("ab".into())));
        // Escapes are undone before comparing: `"ab\"c"` sorts after `"ab"`
        // by its value, where its bytes (`\` < `"`) would not.
        assert_eq!(key("\"ab\\\"c\""), Some(Key::Str("ab\"c".into())));
        assert!(key("\"ab\\\"c\"") > key("\"ab\""));
        assert_eq!(key("\"x\"^^<http://www.w3.org/2001/XMLSchema#string>"), Some(Key::Str("x".into())));
        assert_eq!(key("\"-12\"^^<http://www.w3.org/2001/XMLSchema#integer>"), Some(Key::Int(-12)));
        assert!(
            key("\"9\"^^<http://www.w3.org/2001/XMLSchema#integer>")
                < key("\"10\"^^<http://www.w3.org/2001/XMLSchema#integer>")
        );
        // IRIs before literals, as spareval orders them.
        assert!(key("<http://z>") < key("\"a\""));
        // Outside what is ordered here: evaluated instead.
        for other in [
            "\"a\"@en",
            "\"1.5\"^^<http://www.w3.org/2001/XMLSchema#decimal>",
            "\"x\"^^<http://www.w3.org/2001/XMLSchema#integer>",
            "_:b0",
        ] {
            assert_eq!(key(other), None, "{other}");
        }
    }
}
