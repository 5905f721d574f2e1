//! A corpus chunk whose log is folded only when a pattern may reach it.
//!
//! Folding a chunk's log costs O(log): a 2,000-entry log is about 4 ms. A
//! corpus query that folded every chunk's log on open paid that for every
//! chunk, so a lookup of one subject over 10 chunks cost 6× the same lookup
//! on the chunk that holds it. A chunk here is opened (its files mapped,
//! nothing decoded) and its log is read as bytes only when first asked; a
//! pattern whose bound terms the chunk cannot hold skips it, without the
//! fold:
//!
//! * the base cannot match when a bound term is in none of its spellings in
//!   its column's dictionary ([`Store::may_match`]);
//! * the log cannot add a match when a bound term's text occurs nowhere in
//!   the log's bytes. The log stores terms bare (IRIs without `<>`, labels,
//!   lexical forms unescaped, docs/format.md §9), so a quad the log adds has
//!   each of its terms' text in the file. A text with bytes above 0x7f is
//!   looked for in both transports (§9.1). A removal or a CLEAR only hides
//!   base rows, which the first test already ruled out.
//!
//! The bytes searched are the bytes later folded, so one query sees one
//! snapshot of each chunk's log even while a writer appends. A search reads
//! the whole log, so a join that asks a chunk once per row would read it
//! once per row: after [`SEARCHES_BEFORE_FOLD`] searches the chunk is folded
//! instead, and its view answers every later pattern from its dictionaries.

use std::cell::{Cell, OnceCell, RefCell};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::format::term::Term;
use crate::store::log::Log;
use crate::store::read::{ColumnCache, Pattern};
use crate::store::versions::open::Store;
use crate::store::StoreError;
use crate::view::overlay::Overlay;
use crate::view::terms::Tok;
use crate::view::{Graphs, View};

/// Searches of a log's bytes after which folding it costs less than going on.
const SEARCHES_BEFORE_FOLD: u32 = 4;

/// One chunk: its store open, its log folded on first need.
pub struct LazyChunk {
    pub store: Store,
    pub cache: ColumnCache,
    /// The log's bytes, read on first need and kept until the fold.
    log: RefCell<LogBytes>,
    overlay: OnceCell<Overlay>,
    fold_time: Cell<Duration>,
    searches: Cell<u32>,
}

enum LogBytes {
    Unread,
    /// `None`: the store has no log.
    Read(Option<Vec<u8>>),
    /// Handed to the fold.
    Folded,
}

impl LazyChunk {
    /// Opens the store at `path`; the cache is chosen once it is open. The
    /// log is not read.
    pub fn open(path: &Path, cache: impl FnOnce(&Store) -> ColumnCache) -> Result<LazyChunk, StoreError> {
        let store = Store::open(path)?;
        let cache = cache(&store);
        Ok(LazyChunk {
            store,
            cache,
            log: RefCell::new(LogBytes::Unread),
            overlay: OnceCell::new(),
            fold_time: Cell::new(Duration::ZERO),
            searches: Cell::new(0),
        })
    }

    /// The chunk's view, its log folded now if it was not yet.
    pub fn view(&self) -> Result<View<'_>, StoreError> {
        Ok(View::new(&self.store, self.overlay()?, &self.cache))
    }

    /// The folded log, if a pattern has needed it.
    pub fn folded(&self) -> Option<&Overlay> {
        self.overlay.get()
    }

    /// How long reading and folding the log took (zero if it was not).
    pub fn fold_time(&self) -> Duration {
        self.fold_time.get()
    }

    fn overlay(&self) -> Result<&Overlay, StoreError> {
        if let Some(ov) = self.overlay.get() {
            return Ok(ov);
        }
        let started = Instant::now();
        self.read_log()?;
        let bytes = match std::mem::replace(&mut *self.log.borrow_mut(), LogBytes::Folded) {
            LogBytes::Read(bytes) => bytes,
            LogBytes::Unread | LogBytes::Folded => None,
        };
        let log = match (&self.store.layout.log, bytes) {
            (Some(path), Some(bytes)) => Some(Log::decode(path, bytes)?),
            _ => None,
        };
        let overlay = Overlay::from_log(&self.store, &self.cache, log)?;
        self.fold_time.set(started.elapsed());
        Ok(self.overlay.get_or_init(|| overlay))
    }

    fn read_log(&self) -> Result<(), StoreError> {
        if !matches!(*self.log.borrow(), LogBytes::Unread) {
            return Ok(());
        }
        let bytes = match &self.store.layout.log {
            Some(path) => Log::read_bytes(path)?,
            None => None,
        };
        *self.log.borrow_mut() = LogBytes::Read(bytes);
        Ok(())
    }

    /// Whether base ⊕ log may hold a quad matching the bound terms; `false`
    /// only when neither can (see the module banner). A chunk already
    /// folded answers `true`: its view says exactly, as cheaply.
    pub fn may_match(
        &self,
        [s, p, o]: [Option<&Tok<'_>>; 3],
        graphs: &Graphs<'_, '_>,
    ) -> Result<bool, StoreError> {
        if self.overlay.get().is_some() {
            return Ok(true);
        }
        let g = match graphs {
            Graphs::Named(g) => g.to_ours(),
            Graphs::Default => Some(Term::DefaultGraph),
            Graphs::AnyNamed | Graphs::All => None,
        };
        let ours = |t: Option<&Tok<'_>>| t.and_then(Tok::to_ours);
        let base = Pattern { s: ours(s), p: ours(p), o: ours(o), g };
        let bound: Vec<&Term> = [&base.s, &base.p, &base.o, &base.g].into_iter().flatten().collect();
        if bound.is_empty() {
            return Ok(true);
        }
        if self.store.may_match(&base)? {
            return Ok(true);
        }
        if self.searches.get() >= SEARCHES_BEFORE_FOLD {
            self.overlay()?;
            return Ok(true);
        }
        self.searches.set(self.searches.get() + 1);
        self.read_log()?;
        Ok(match &*self.log.borrow() {
            LogBytes::Read(Some(bytes)) => bound.iter().all(|t| mentions(bytes, t)),
            LogBytes::Read(None) => false,
            LogBytes::Unread | LogBytes::Folded => true,
        })
    }
}

/// Whether a log's bytes may hold `term`: its stored text occurs in them,
/// in the raw transport or the legacy code-point one.
fn mentions(bytes: &[u8], term: &Term) -> bool {
    let text = match term {
        Term::Iri(s) | Term::Blank(s) => s.as_bytes(),
        Term::Literal(l) => l.lexical.as_bytes(),
        Term::DefaultGraph => return true,
    };
    if memchr::memmem::find(bytes, text).is_some() {
        return true;
    }
    text.iter().any(|&b| b >= 0x80) && memchr::memmem::find(bytes, &code_points(text)).is_some()
}

/// `text` as the legacy transport writes it: every byte as one code point.
fn code_points(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() * 2);
    for &b in text {
        if b < 0x80 {
            out.push(b);
        } else {
            out.extend_from_slice(&[0xC0 | (b >> 6), 0x80 | (b & 0x3F)]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_term_is_found_in_either_transport() {
        let iri = Term::Iri("http://x/é".into());
        assert!(mentions("…http://x/é…".as_bytes(), &iri));
        let legacy: Vec<u8> =
            "http://x/é".bytes().flat_map(|b| char::from(b).to_string().into_bytes()).collect();
        assert!(mentions(&legacy, &iri));
        assert!(!mentions(b"http://x/e", &iri));
        assert!(!mentions(b"http://y", &Term::Iri("http://x".into())));
    }
}
