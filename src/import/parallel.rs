//! Parsing one large N-Quads or N-Triples file on several threads.
//!
//! Parsing and IRI validation were the import's critical path (one thread at
//! 100% while the others waited). Line-based syntaxes split cleanly at line
//! boundaries, so each worker parses its own slice of the mapped file with
//! oxttl and renders its statements straight into sort keys. The result must
//! not depend on the split, so two things stay in document order on the
//! importing thread: statements with blank nodes (their labels are numbered
//! in order of first appearance) and errors (the first one in the file is the
//! one reported, with its line in the whole file). Those are handed back
//! unrendered and processed only once every earlier slice is done; keys need
//! no order, the sort orders them.

use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, TryRecvError};
use std::time::Duration;

use oxrdf::{GraphName, NamedOrBlankNode, Quad, Term};
use oxttl::{NQuadsParser, NTriplesParser, TurtleParseError};

use super::render::Renderer;
use super::sort::encode_key;
use super::InputFormat;

/// Below this a second thread costs more than it saves.
const MIN_PARALLEL_BYTES: usize = 8 << 20;
/// Statements per message from a worker.
const BATCH: usize = 8192;
/// Held (blank-node or erroneous) statements buffered for later slices before
/// the importing thread stops reading those slices and lets their workers block.
const MAX_HELD: usize = 200_000;

/// What the importing thread is handed.
pub enum Event<'b> {
    Keys(&'b Batch),
    Held(usize, Result<Quad, TurtleParseError>),
}

/// What a worker sends: rendered keys, and the statements that must be
/// handled in document order.
pub struct Batch {
    pub keys: Vec<u8>,
    pub ends: Vec<usize>,
    pub held: Vec<Result<Quad, TurtleParseError>>,
}

/// A mapped input split into line-aligned slices.
pub struct Split {
    map: memmap2::Mmap,
    bounds: Vec<(usize, usize)>,
}

impl Split {
    /// `Some` for a plain (uncompressed) N-Quads / N-Triples file large enough
    /// to be worth splitting across `threads`.
    pub fn plan(path: &Path, format: InputFormat, threads: usize) -> std::io::Result<Option<Split>> {
        if threads < 2
            || path.as_os_str() == "-"
            || !matches!(format, InputFormat::NQuads | InputFormat::NTriples)
        {
            return Ok(None);
        }
        let file = std::fs::File::open(path)?;
        let meta = file.metadata()?;
        if !meta.is_file() || (meta.len() as usize) < MIN_PARALLEL_BYTES {
            return Ok(None);
        }
        // SAFETY: the input is only read; an input rewritten during the import
        // is the caller's race, as with any reader.
        let map = unsafe { memmap2::Mmap::map(&file)? };
        if map.starts_with(&[0x1f, 0x8b]) || map.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            return Ok(None); // compressed: the streaming path decompresses
        }
        let mut bounds = Vec::with_capacity(threads);
        let mut start = 0;
        for k in 1..threads {
            let target = (map.len() * k / threads).max(start);
            let cut = match map[target..].iter().position(|&b| b == b'\n') {
                Some(i) => target + i + 1,
                None => map.len(),
            };
            bounds.push((start, cut));
            start = cut;
        }
        bounds.push((start, map.len()));
        bounds.retain(|(a, b)| a < b);
        Ok(Some(Split { map, bounds }))
    }

    /// Lines before slice `k` starts, to turn its error lines into the file's.
    pub fn line_offset(&self, k: usize) -> u64 {
        self.map[..self.bounds[k].0].iter().filter(|&&b| b == b'\n').count() as u64
    }

    pub fn slices(&self) -> usize {
        self.bounds.len()
    }

    /// Runs the workers; `on` gets every rendered batch as it arrives and the
    /// held statements in document order with their slice. Returning `false`
    /// stops everything.
    pub fn run(
        &self,
        format: InputFormat,
        fallback_graph: Option<&str>,
        lenient: bool,
        on: &mut dyn FnMut(Event) -> bool,
    ) {
        let n = self.bounds.len();
        std::thread::scope(|scope| {
            let mut receivers: Vec<Receiver<Batch>> = Vec::with_capacity(n);
            for &(a, b) in &self.bounds {
                let (tx, rx) = sync_channel::<Batch>(4);
                receivers.push(rx);
                let slice = &self.map[a..b];
                scope.spawn(move || {
                    let mut batch = Batch::new();
                    let mut tokens: [String; 4] = Default::default();
                    let mut renderer = Renderer::default();
                    let items: Box<dyn Iterator<Item = Result<Quad, TurtleParseError>>> = match format {
                        InputFormat::NTriples => Box::new(
                            NTriplesParser::new()
                                .for_slice(slice)
                                .map(|r| r.map(|t| t.in_graph(GraphName::DefaultGraph)).map_err(Into::into)),
                        ),
                        _ => Box::new(NQuadsParser::new().for_slice(slice).map(|r| r.map_err(Into::into))),
                    };
                    for item in items {
                        let stop = item.is_err() && !lenient;
                        match item {
                            Ok(q) if !has_blank(&q) => {
                                renderer.quad(&mut tokens, &q, fallback_graph);
                                encode_key(&mut batch.keys, tokens.each_ref().map(|t| t.as_bytes()));
                                batch.ends.push(batch.keys.len());
                            }
                            other => batch.held.push(other),
                        }
                        if (stop || batch.len() >= BATCH)
                            && tx.send(std::mem::replace(&mut batch, Batch::new())).is_err()
                        {
                            return;
                        }
                        if stop {
                            return;
                        }
                    }
                    let _ = tx.send(batch);
                });
            }
            drain(&receivers, on);
            // Dropping the receivers unblocks any worker still sending.
            drop(receivers);
        });
    }
}

impl Batch {
    fn new() -> Batch {
        Batch { keys: Vec::with_capacity(BATCH * 160), ends: Vec::with_capacity(BATCH), held: Vec::new() }
    }
    fn len(&self) -> usize {
        self.ends.len() + self.held.len()
    }
    pub fn keys(&self) -> impl Iterator<Item = &[u8]> + '_ {
        (0..self.ends.len()).map(move |i| &self.keys[if i == 0 { 0 } else { self.ends[i - 1] }..self.ends[i]])
    }
}

fn has_blank(q: &Quad) -> bool {
    matches!(q.subject, NamedOrBlankNode::BlankNode(_))
        || matches!(q.object, Term::BlankNode(_))
        || matches!(q.graph_name, GraphName::BlankNode(_))
}

/// Keys from any slice at once; held statements of slice k only after every
/// slice before k has ended, buffering at most [`MAX_HELD`] of them.
fn drain(rx: &[Receiver<Batch>], on: &mut dyn FnMut(Event) -> bool) {
    let n = rx.len();
    let mut done = vec![false; n];
    let mut pending: Vec<Vec<Result<Quad, TurtleParseError>>> = (0..n).map(|_| Vec::new()).collect();
    let mut held_total = 0usize;
    let mut current = 0usize;
    loop {
        // Slices whose held statements can be handled now run in order.
        while current < n && (done[current] || !pending[current].is_empty()) {
            for item in pending[current].drain(..) {
                held_total -= 1;
                if !on(Event::Held(current, item)) {
                    return;
                }
            }
            if done[current] {
                current += 1;
            } else {
                break;
            }
        }
        if current == n {
            return;
        }
        let mut got = false;
        for k in current..n {
            if done[k] || (k != current && held_total >= MAX_HELD) {
                continue;
            }
            match rx[k].try_recv() {
                Ok(b) => {
                    got = true;
                    if !accept(k, b, &mut pending, &mut held_total, on) {
                        return;
                    }
                }
                Err(TryRecvError::Empty) => {}
                Err(TryRecvError::Disconnected) => {
                    done[k] = true;
                    got = true;
                }
            }
        }
        if !got {
            match rx[current].recv_timeout(Duration::from_millis(1)) {
                Ok(b) => {
                    if !accept(current, b, &mut pending, &mut held_total, on) {
                        return;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => done[current] = true,
            }
        }
    }
}

fn accept(
    k: usize,
    mut b: Batch,
    pending: &mut [Vec<Result<Quad, TurtleParseError>>],
    held_total: &mut usize,
    on: &mut dyn FnMut(Event) -> bool,
) -> bool {
    if !on(Event::Keys(&b)) {
        return false;
    }
    *held_total += b.held.len();
    pending[k].append(&mut b.held);
    true
}
