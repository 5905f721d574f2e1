//! A pattern's answer as dictionary ids: the base rows the view shows, a row
//! group at a time, and the quads the overlay adds, as tokens.
//!
//! Operators that only group, count or compare a column's values (grouped
//! counts, anti- and semi-joins: `sparql::analytic`) need no term per row.
//! Within one base, one column's dictionary gives each term one id (a file
//! has one producer, so one spelling per term), so equal ids are equal terms
//! and a key can be hashed as a `u32`. Which base rows the view shows is
//! still decided by [`View::shows_base_row`], the rule [`super::Quads`]
//! applies; only a row in a graph the log touches is rendered to decide it.

use std::collections::HashMap;

use super::terms::Tok;
use super::union::Seen;
use super::{GraphRows, Graphs, View, ViewQuad};
use crate::format::term::DEFAULT_GRAPH;
use crate::store::read::{Rows, Scan};
use crate::store::sidecars::mapped::DictMap;
use crate::store::StoreError;

/// One row group's visible rows: `[s, p, o, g]` ids into `dicts`.
pub struct IdRows<'a> {
    pub dicts: [&'a DictMap; 4],
    pub ids: Vec<[u32; 4]>,
}

/// The answer to one pattern in ids ([`View::id_quads`]).
pub struct IdQuads<'a> {
    view: View<'a>,
    scan: Option<Scan<'a>>,
    with_default: bool,
    /// Per graph id: what the view does with its rows.
    plain_graph: HashMap<u32, GraphRows>,
    /// Whether a row can be hidden at all (else every row is shown).
    check_rows: bool,
    /// The quads the overlay adds in range.
    pub added: Vec<ViewQuad<'a>>,
    /// The columns the scan reads.
    read: [bool; 4],
    /// Over a corpus whose chunks may share quads: what drops the rows an
    /// earlier chunk already shows.
    copies: Option<Copies<'a>>,
}

/// The rows of a corpus chunk that are copies of an earlier chunk's quads
/// ([`IdQuads::drop_copies`]).
struct Copies<'a> {
    seen: Seen<'a>,
    /// The pattern's bound subject, predicate and object (columns not read).
    bound: [Option<Tok<'a>>; 3],
    /// Per graph id: its canonical token when an earlier chunk may hold
    /// quads of that graph (rendered once per graph, not once per row).
    shared: HashMap<u32, Option<Tok<'a>>>,
}

impl<'a> View<'a> {
    /// [`View::quads`] as ids. `None` when the base's rows do not come as
    /// ids (no dictionaries): the caller evaluates instead.
    ///
    /// Only `columns` are read (see [`crate::store::read::Scan::only_columns`]),
    /// and the graph column when the view may hide a row by its graph;
    /// every column when the log touches a graph, since a row there is
    /// rendered whole to decide.
    pub fn id_quads(
        &self,
        s: Option<&Tok<'a>>,
        p: Option<&Tok<'a>>,
        o: Option<&Tok<'a>>,
        graphs: Graphs<'_, 'a>,
        columns: [bool; 4],
    ) -> Result<Option<IdQuads<'a>>, StoreError> {
        if self.store.sidecars.all_dicts().is_none() {
            return Ok(None);
        }
        let (mut quads, _) = self.quads(s, p, o, graphs)?;
        let with_default = quads.with_default;
        let touched = !self.overlay.graphs.is_empty();
        let mut read = columns;
        read[3] |= !with_default || touched;
        if touched {
            read = [true; 4];
        }
        let mut scan = quads.scan.take();
        if let Some(scan) = scan.as_mut() {
            scan.only_columns(read);
        }
        Ok(Some(IdQuads {
            view: *self,
            scan,
            with_default,
            check_rows: !with_default || touched,
            plain_graph: HashMap::new(),
            added: std::mem::take(&mut quads.added).collect(),
            read,
            copies: None,
        }))
    }
}

impl<'a> IdQuads<'a> {
    /// Reads only the base rows of these subjects ([`Scan::restrict_subjects`]);
    /// `false` when the base cannot (the caller filters the rows itself).
    /// The added quads are not restricted.
    pub fn restrict_subjects(&mut self, ids: &[u32]) -> Result<bool, StoreError> {
        match self.scan.as_mut() {
            Some(scan) => scan.restrict_subjects(ids),
            None => Ok(true),
        }
    }

    /// Drops the rows and added quads that an earlier chunk of a corpus
    /// shows (`seen`), so the answer over the corpus is a set: `bound` are
    /// the pattern's bound subject, predicate and object. Every other
    /// column is read from now on, and only rows in a graph an earlier
    /// chunk may share are rendered and looked up.
    pub fn drop_copies(&mut self, mut seen: Seen<'a>, bound: [Option<Tok<'a>>; 3]) -> Result<(), StoreError> {
        let mut added = Vec::with_capacity(self.added.len());
        for q in std::mem::take(&mut self.added) {
            if !seen.holds(&q)? {
                added.push(q);
            }
        }
        self.added = added;
        for (c, b) in bound.iter().enumerate() {
            self.read[c] |= b.is_none();
        }
        self.read[3] = true;
        if let Some(scan) = self.scan.as_mut() {
            scan.only_columns(self.read);
        }
        self.copies = Some(Copies { seen, bound, shared: HashMap::new() });
        Ok(())
    }

    /// The next row group's visible rows.
    pub fn next_rows(&mut self) -> Result<Next<'a>, StoreError> {
        let Some(scan) = self.scan.as_mut() else { return Ok(Next::End) };
        let Some(rows) = scan.next_group(self.view.cache) else { return Ok(Next::End) };
        let Rows::Ids { dicts, mut ids } = rows? else { return Ok(Next::Tokens) };
        if !self.check_rows && self.copies.is_none() {
            return Ok(Next::Rows(IdRows { dicts, ids }));
        }
        let mut keep = Vec::with_capacity(ids.len());
        for r in &ids {
            keep.push(self.shows(dicts, r)? && !self.is_copy(dicts, r)?);
        }
        let mut k = keep.into_iter();
        ids.retain(|_| k.next().unwrap_or(false));
        Ok(Next::Rows(IdRows { dicts, ids }))
    }

    fn shows(&mut self, dicts: [&'a DictMap; 4], r: &[u32; 4]) -> Result<bool, StoreError> {
        if !self.check_rows {
            return Ok(true);
        }
        let graph = match self.plain_graph.get(&r[3]) {
            Some(&g) => g,
            None => {
                let g = self.view.graph_rows(dicts[3].token(r[3])?, self.with_default);
                self.plain_graph.insert(r[3], g);
                g
            }
        };
        match graph {
            GraphRows::Shown => return Ok(true),
            GraphRows::Hidden => return Ok(false),
            // The log touches the graph: every column was read (`id_quads`).
            GraphRows::Checked => {}
        }
        let mut cells: [Option<Tok<'a>>; 4] = Default::default();
        for c in 0..4 {
            let raw = dicts[c].token(r[c])?;
            cells[c] = Some(if c == 3 && raw == DEFAULT_GRAPH.as_bytes() {
                Tok::Ref(raw)
            } else {
                self.view.cell(raw)?
            });
        }
        let [s, p, o, g] = cells.map(|c| c.expect("filled"));
        Ok(self.view.shows_base_row([&s, &p, &o, &g], self.with_default))
    }
}

impl<'a> IdQuads<'a> {
    /// Whether an earlier chunk shows the row ([`IdQuads::drop_copies`]).
    fn is_copy(&mut self, dicts: [&'a DictMap; 4], r: &[u32; 4]) -> Result<bool, StoreError> {
        let Some(copies) = self.copies.as_mut() else { return Ok(false) };
        let graph = match copies.shared.get(&r[3]) {
            Some(graph) => graph.clone(),
            None => {
                let g = graph_key(self.view, dicts[3].token(r[3])?)?;
                let graph = copies.seen.may_share(g.as_str()).then_some(g);
                copies.shared.insert(r[3], graph.clone());
                graph
            }
        };
        let Some(g) = graph else { return Ok(false) };
        let mut cells: [Option<Tok<'a>>; 3] = Default::default();
        for (c, cell) in cells.iter_mut().enumerate() {
            *cell = Some(match &copies.bound[c] {
                Some(t) => t.clone(),
                None => self.view.cell(dicts[c].token(r[c])?)?,
            });
        }
        let [s, p, o] = cells.map(|c| c.expect("filled"));
        let g = (g.bytes() != DEFAULT_GRAPH.as_bytes()).then_some(g);
        copies.seen.holds(&ViewQuad { s, p, o, g })
    }
}

/// A graph cell as its canonical token (`DEFAULT` for the default graph).
fn graph_key<'a>(view: View<'a>, raw: &'a [u8]) -> Result<Tok<'a>, StoreError> {
    if raw == DEFAULT_GRAPH.as_bytes() {
        Ok(Tok::Ref(raw))
    } else {
        view.cell(raw)
    }
}

/// What [`IdQuads::next_rows`] read.
pub enum Next<'a> {
    Rows(IdRows<'a>),
    /// The row group came as tokens (read without dictionaries): the
    /// caller evaluates instead.
    Tokens,
    End,
}
