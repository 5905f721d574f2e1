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
//! snapshot of each chunk's log even while a writer appends: the first
//! search keeps the file open and notes its length, and a later fold reads
//! that many bytes of that file. A search streams the log through one small
//! buffer rather than holding it (a chunk a pattern skips never needs its
//! bytes again, and a 400 KB log copied into fresh memory per chunk was a
//! third of a bound-subject lookup over ten chunks). A search still reads
//! the whole log, so a join that asks a chunk once per row would read it
//! once per row: after [`SEARCHES_BEFORE_FOLD`] searches the chunk is folded
//! instead, and its view answers every later pattern from its dictionaries.

use std::cell::{Cell, OnceCell, RefCell};
use std::fs::File;
use std::os::unix::fs::FileExt;
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
    /// The log file as first searched, kept until the fold.
    log: RefCell<LogBytes>,
    overlay: OnceCell<Overlay>,
    fold_time: Cell<Duration>,
    searches: Cell<u32>,
}

enum LogBytes {
    Unread,
    /// The file open and its length when first searched, the snapshot a
    /// fold reads; `None`: the store has no log.
    Searched(Option<(File, u64)>),
    /// Handed to the fold.
    Folded,
}

/// Bytes of the log read at a time by a search.
const SEARCH_WINDOW: usize = 64 * 1024;

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

    /// Every chunk of a corpus, opened, `memory_limit` shared evenly
    /// between their caches. (Opening them on one thread per core saved
    /// nothing measurable on ten chunks of 10M quads: an open is about
    /// 0.1 ms of a lookup's 11–20 ms.)
    pub fn open_all(
        chunks: &[std::path::PathBuf],
        memory_limit: usize,
    ) -> Result<Vec<LazyChunk>, StoreError> {
        let share = memory_limit / chunks.len().max(1);
        chunks.iter().map(|c| LazyChunk::open(c, |store| ColumnCache::within(store, share))).collect()
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
        let bytes = match (
            std::mem::replace(&mut *self.log.borrow_mut(), LogBytes::Folded),
            &self.store.layout.log,
        ) {
            (LogBytes::Searched(Some((file, len))), Some(path)) => Some(read_prefix(&file, len, path)?),
            (LogBytes::Unread, Some(path)) => Log::read_bytes(path)?,
            _ => None,
        };
        let log = match (&self.store.layout.log, bytes) {
            (Some(path), Some(bytes)) => Some(Log::decode(path, bytes)?),
            _ => None,
        };
        let overlay = Overlay::from_log(&self.store, &self.cache, log)?;
        self.fold_time.set(started.elapsed());
        Ok(self.overlay.get_or_init(|| overlay))
    }

    /// Opens the log for searching, once, noting its length: the snapshot
    /// every later search and the fold read.
    fn open_log(&self) -> Result<(), StoreError> {
        if !matches!(*self.log.borrow(), LogBytes::Unread) {
            return Ok(());
        }
        let opened = match &self.store.layout.log {
            Some(path) => match File::open(path) {
                Ok(file) => {
                    let len = file.metadata().map_err(|e| StoreError::io(path, e))?.len();
                    Some((file, len))
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => return Err(StoreError::io(path, e)),
            },
            None => None,
        };
        *self.log.borrow_mut() = LogBytes::Searched(opened);
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
        self.open_log()?;
        let (Some(path), LogBytes::Searched(Some((file, len)))) =
            (&self.store.layout.log, &*self.log.borrow())
        else {
            return Ok(!matches!(*self.log.borrow(), LogBytes::Searched(None)));
        };
        let texts: Vec<Vec<Vec<u8>>> = bound.iter().filter_map(|t| spellings(t)).collect();
        mentions_all(file, *len, path, &texts)
    }
}

/// The texts a log may hold `term` as (the raw transport, and the legacy
/// code-point one when they differ); `None` for the default graph, which
/// every log may name.
fn spellings(term: &Term) -> Option<Vec<Vec<u8>>> {
    let text = match term {
        Term::Iri(s) | Term::Blank(s) => s.as_bytes(),
        Term::Literal(l) => l.lexical.as_bytes(),
        Term::DefaultGraph => return None,
    };
    let mut all = vec![text.to_vec()];
    if text.iter().any(|&b| b >= 0x80) {
        all.push(code_points(text));
    }
    Some(all)
}

/// Whether the first `len` bytes of the log `file` hold each term of
/// `terms` in one of its spellings, read a window at a time (consecutive
/// windows overlap by the longest text, so no occurrence is cut).
fn mentions_all(file: &File, len: u64, path: &Path, terms: &[Vec<Vec<u8>>]) -> Result<bool, StoreError> {
    let finders: Vec<Vec<memchr::memmem::Finder>> =
        terms.iter().map(|texts| texts.iter().map(memchr::memmem::Finder::new).collect()).collect();
    let mut found = vec![false; terms.len()];
    let overlap = terms.iter().flatten().map(Vec::len).max().unwrap_or(0).saturating_sub(1);
    let mut window = vec![0u8; SEARCH_WINDOW.max(2 * overlap)];
    let (mut at, mut kept) = (0u64, 0usize);
    while !found.iter().all(|&f| f) && at < len {
        let want = (window.len() - kept).min((len - at) as usize);
        let n = file.read_at(&mut window[kept..kept + want], at).map_err(|e| StoreError::io(path, e))?;
        if n == 0 {
            break;
        }
        let filled = kept + n;
        for (f, finders) in found.iter_mut().zip(&finders) {
            *f = *f || finders.iter().any(|finder| finder.find(&window[..filled]).is_some());
        }
        at += n as u64;
        kept = overlap.min(filled);
        window.copy_within(filled - kept..filled, 0);
    }
    Ok(found.iter().all(|&f| f))
}

/// The first `len` bytes of the log `file` (fewer if it was cut since).
fn read_prefix(file: &File, len: u64, path: &Path) -> Result<Vec<u8>, StoreError> {
    let mut bytes = vec![0u8; len as usize];
    let mut filled = 0;
    while filled < bytes.len() {
        match file.read_at(&mut bytes[filled..], filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(StoreError::io(path, e)),
        }
    }
    bytes.truncate(filled);
    Ok(bytes)
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

    /// Whether a log of `bytes` mentions `term`, searched through the file.
    fn mentions(bytes: &[u8], term: &Term) -> bool {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        std::fs::write(&path, bytes).unwrap();
        let file = File::open(&path).unwrap();
        let terms: Vec<_> = spellings(term).into_iter().collect();
        mentions_all(&file, bytes.len() as u64, &path, &terms).unwrap()
    }

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

    #[test]
    fn a_term_across_two_windows_is_found_and_one_past_the_snapshot_is_not() {
        let iri = Term::Iri("http://x/term".into());
        for cut in [SEARCH_WINDOW - 5, SEARCH_WINDOW, 3 * SEARCH_WINDOW - 1] {
            let mut bytes = vec![b'.'; cut];
            bytes.extend_from_slice(b"http://x/term");
            bytes.extend_from_slice(&[b'.'; 100]);
            assert!(mentions(&bytes, &iri), "cut at {cut}");
        }
        // Only the first `len` bytes are the snapshot searched.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        std::fs::write(&path, [&[b'.'; 10][..], b"http://x/term"].concat()).unwrap();
        let file = File::open(&path).unwrap();
        let terms = vec![spellings(&iri).unwrap()];
        assert!(!mentions_all(&file, 10, &path, &terms).unwrap());
        assert_eq!(read_prefix(&file, 10, &path).unwrap(), vec![b'.'; 10]);
    }
}
