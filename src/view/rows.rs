//! Base ⊕ delta as raw rows, for writing a new version: compaction's side of
//! the one merge. [`View`](super::View) answers readers with terms; this
//! answers a writer with the cells of the next version, under the same
//! overlay rules ([`Overlay::touches`], [`Overlay::hides`],
//! [`Overlay::added_sorted`]).
//!
//! A base row is kept unless the overlay hides it; a row whose graph the log
//! never names is kept without rendering its terms. Added quads come in SPOG
//! order, so a base that is itself in SPOG order merges with them as it
//! streams ([`RowMerge::push_base`]); a base in any other order is filtered
//! row by row ([`RowMerge::keeps`]) and sorted with the added quads by the
//! caller.

use crate::format::term::DEFAULT_GRAPH;

use super::overlay::{canonical_token, Key, Overlay};

/// One row: s, p, o, g cells as the base stores them.
pub type Row<'r> = [&'r [u8]; 4];

pub struct RowMerge<'a> {
    overlay: &'a Overlay,
    added: Vec<&'a Key>,
    next_added: usize,
    graphs: GraphKeys,
}

impl<'a> RowMerge<'a> {
    pub fn new(overlay: &'a Overlay) -> Self {
        RowMerge { overlay, added: overlay.added_sorted(), next_added: 0, graphs: GraphKeys::default() }
    }

    /// Quads the log adds, in SPOG order.
    pub fn added(&self) -> impl Iterator<Item = Row<'_>> {
        self.added.iter().map(|k| as_row(k))
    }

    pub fn added_len(&self) -> usize {
        self.added.len()
    }

    /// Whether a base row survives the overlay.
    pub fn keeps(&mut self, row: Row) -> bool {
        self.graphs.keeps(row, self.overlay)
    }

    /// Feeds the next base row of a base in SPOG order: emits every added
    /// quad before it, then the row if it is kept (an added quad equal to a
    /// base row is emitted once).
    pub fn push_base<E>(&mut self, row: Row, mut emit: impl FnMut(Row) -> Result<(), E>) -> Result<(), E> {
        if !self.keeps(row) {
            return Ok(());
        }
        while let Some(k) = self.added.get(self.next_added).filter(|k| as_row(k) < row) {
            emit(as_row(k))?;
            self.next_added += 1;
        }
        if self.added.get(self.next_added).is_some_and(|k| as_row(k) == row) {
            self.next_added += 1;
        }
        emit(row)
    }

    /// Emits the added quads after the last base row.
    pub fn finish<E>(self, mut emit: impl FnMut(Row) -> Result<(), E>) -> Result<(), E> {
        self.added[self.next_added..].iter().try_for_each(|k| emit(as_row(k)))
    }
}

fn as_row(k: &Key) -> Row<'_> {
    std::array::from_fn(|c| k[c].as_bytes())
}

/// The canonical graph token of each distinct g cell, so a base row whose
/// graph the overlay does not touch is kept without rendering its terms.
#[derive(Default)]
struct GraphKeys {
    seen: Vec<(Vec<u8>, String)>,
}

impl GraphKeys {
    fn keeps(&mut self, row: Row, overlay: &Overlay) -> bool {
        if overlay.graphs.is_empty() {
            return true;
        }
        let g = self.canonical(row[3]);
        if !overlay.touches(&g) {
            return true;
        }
        let t: [String; 3] = std::array::from_fn(|c| canonical_token(row[c]).unwrap_or_default());
        !overlay.hides([&t[0], &t[1], &t[2], &g])
    }

    fn canonical(&mut self, cell: &[u8]) -> String {
        if let Some((_, g)) = self.seen.iter().find(|(raw, _)| raw.as_slice() == cell) {
            return g.clone();
        }
        let g = if cell == DEFAULT_GRAPH.as_bytes() {
            DEFAULT_GRAPH.to_string()
        } else {
            canonical_token(cell).unwrap_or_default()
        };
        self.seen.push((cell.to_vec(), g.clone()));
        g
    }
}
