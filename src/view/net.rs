//! The overlay's net effect on a base, as rows: what an engine that reads
//! the base as plain Parquet must add and take away to see what the view
//! shows (`corpus export`). The overlay decides what is visible; this only
//! turns its decision into rows, at a cost proportional to the log: added
//! quads are the overlay's own (it already dropped those the base holds),
//! each removed quad is found through the sidecar read path, and only a
//! cleared graph's base rows are read, being what the clear takes away.
//! `-` rows carry the base's cells byte for byte, so an engine removes them
//! with plain equality whichever producer rendered the base.

use std::collections::HashSet;

use crate::format::term::{self, Term};
use crate::store::read::{ColumnCache, Pattern};
use crate::store::versions::open::Store;
use crate::store::StoreError;

use super::overlay::{canonical_token, Key, Overlay};

/// One net record: a row's four cells (s p o g, `DEFAULT` for the default
/// graph) and `b'+'` or `b'-'`.
pub type NetRow = ([Vec<u8>; 4], u8);

/// The overlay's net effect on the store's base, unsorted: `+` for a quad
/// the view shows and the base lacks, `-` (with the base's own cells) for a
/// base row the view hides.
pub fn net_effect(store: &Store, overlay: &Overlay, cache: &ColumnCache) -> Result<Vec<NetRow>, StoreError> {
    let mut net = Vec::new();
    let added = |k: &Key| -> NetRow { (std::array::from_fn(|c| k[c].as_bytes().to_vec()), b'+') };
    for (graph, delta) in &overlay.graphs {
        if delta.cleared {
            // Every base row of the graph goes, except those added back.
            let mut kept: HashSet<Key> = HashSet::new();
            let pattern = Pattern { g: Some(graph_term(graph)), ..Pattern::default() };
            for_each_base_row(store, cache, &pattern, |cells| {
                let key = canonical_key(cells, graph);
                if delta.added.contains(&key) {
                    kept.insert(key);
                } else {
                    net.push((cells.map(<[u8]>::to_vec), b'-'));
                }
            })?;
            net.extend(delta.added.iter().filter(|k| !kept.contains(&***k)).map(|k| added(k)));
        } else {
            // The overlay already dropped adds the base holds.
            net.extend(delta.added.iter().map(|k| added(k)));
            for key in &delta.removed {
                let Some(pattern) = bound_pattern(key) else { continue };
                for_each_base_row(store, cache, &pattern, |cells| {
                    net.push((cells.map(<[u8]>::to_vec), b'-'))
                })?;
            }
        }
    }
    Ok(net)
}

fn graph_term(graph: &str) -> Term {
    term::parse_token(graph).unwrap_or(Term::DefaultGraph)
}

/// A removed quad as a fully bound pattern (`None` if a token does not
/// parse, which the log's decoder does not let through).
fn bound_pattern(k: &Key) -> Option<Pattern> {
    let t = |c: usize| term::parse_token(&k[c]).ok();
    Some(Pattern { s: Some(t(0)?), p: Some(t(1)?), o: Some(t(2)?), g: Some(t(3)?) })
}

/// A base row's key in the canonical rendering, its graph being `graph`.
fn canonical_key(cells: [&[u8]; 4], graph: &str) -> Key {
    let c = |i: usize| {
        canonical_token(cells[i]).unwrap_or_else(|| String::from_utf8_lossy(cells[i]).into_owned())
    };
    [c(0), c(1), c(2), graph.to_owned()]
}

/// `f` of every base row matching `pattern`, a row group at a time.
fn for_each_base_row(
    store: &Store,
    cache: &ColumnCache,
    pattern: &Pattern,
    mut f: impl FnMut([&[u8]; 4]),
) -> Result<(), StoreError> {
    if store.base.num_rows() == 0 {
        return Ok(());
    }
    let mut scan = store.scan(pattern);
    while let Some(rows) = scan.next_group(cache) {
        for row in rows?.iter() {
            f(row?);
        }
    }
    Ok(())
}
