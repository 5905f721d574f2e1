//! Parsing N-Quads and N-Triples on several threads.
//!
//! Parsing was the import's critical path. Line-based syntaxes split cleanly
//! at line boundaries, so the input is cut into units of about 1 MiB of whole
//! lines, and worker threads take the next unit as they become free (fixed
//! halves left one core idle while the other finished). The input, plain,
//! compressed or stdin, is read (and decompressed) by whichever worker takes
//! the next unit.
//!
//! Each unit is parsed leniently and proven equal to a strict parse, or else
//! parsed strictly (see `checked.rs`); workers render statements straight into
//! sort keys, blank nodes included (a label keeps its spelling behind the
//! document's prefix, whichever unit it is in). Keys need no order, the sort
//! orders them. The result must not depend on the cut, so errors alone stay in
//! document order: the first one in the file is the one reported, with its
//! line in the whole file, so they are handed back unit by unit in file order.
//! (Blank nodes were numbered in order of first appearance, so their
//! statements were handed back too, parsed, and rendered on the importing
//! thread: a tenth of the vocabularies' import, on the critical path.)

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::sync_channel;
use std::sync::Mutex;

use oxrdf::{GraphName, Quad};
use oxttl::{NQuadsParser, NTriplesParser, TurtleParseError};

use super::checked;
use super::fast;
use super::render::{kept_label_prefix, Renderer};
use super::InputFormat;
use crate::format::term::DEFAULT_GRAPH;
use crate::store::sort::encode_key;

/// Bytes of whole lines a worker parses at a time: small enough to balance
/// the threads at the end and to bound what waits for document order, large
/// enough that per-unit costs (a parser, a message) do not show.
const UNIT_BYTES: usize = 1 << 20;

/// What the importing thread is handed.
pub enum Event<'b> {
    /// Rendered keys of a unit's statements, in no particular order.
    Keys(&'b mut Batch),
    /// A parse error, in document order; `line_offset` is the number of
    /// lines before its unit.
    Error { line_offset: u64, error: TurtleParseError },
    /// Reading the input failed here, after everything before it was handed over.
    Failed(io::Error),
}

/// One unit's output.
pub struct Batch {
    pub keys: Vec<u8>,
    pub ends: Vec<usize>,
    /// (offset, length) of each distinct key, in ascending key order.
    pub sorted: Vec<(u32, u32)>,
    /// Parse errors, in order.
    errors: Vec<TurtleParseError>,
    newlines: u64,
    failed: Option<io::Error>,
    /// A strict parse stopped at an error (not `--lenient`).
    stopped: bool,
}

/// Where the input's bytes are: a file (plain or compressed) or stdin, read
/// in units by whichever worker takes the next one.
///
/// Plain files used to be mapped and cut in place. Reading is faster (the
/// 10M-quad parse took 5.9 s read against 7.8 s mapped: no page faults) and
/// keeps the input out of the process's memory, where the kernel's
/// fault-around left about 16 bytes a quad of a mapped input resident (3 GB
/// at 100M quads, three times the default memory limit).
pub struct Source(Box<dyn Read + Send>);

impl Source {
    pub fn open(path: &Path) -> io::Result<Source> {
        Ok(Source(super::input::open(path)?))
    }
}

/// Hands out units in file order, to whichever worker asks.
struct Units<'m> {
    reader: &'m mut (dyn Read + Send),
    carry: Vec<u8>,
    next: usize,
    done: bool,
}

impl Units<'_> {
    fn next(&mut self) -> Option<(usize, io::Result<Vec<u8>>)> {
        if self.done {
            return None;
        }
        let unit = match read_unit(&mut *self.reader, &mut self.carry) {
            Ok(Some(v)) => Ok(v),
            Ok(None) => {
                self.done = true;
                return None;
            }
            Err(e) => {
                self.done = true;
                Err(e)
            }
        };
        self.next += 1;
        Some((self.next - 1, unit))
    }
}

/// About [`UNIT_BYTES`] of whole lines (or what is left): once that much is
/// read, the unit ends at the last line end, and the partial line after it is
/// carried over to the next unit.
fn read_unit(reader: &mut dyn Read, carry: &mut Vec<u8>) -> io::Result<Option<Vec<u8>>> {
    let mut buf = std::mem::take(carry);
    buf.reserve(UNIT_BYTES + (64 << 10));
    let mut searched = 0;
    loop {
        if buf.len() >= UNIT_BYTES {
            if let Some(i) = memchr::memrchr(b'\n', &buf[searched..]) {
                let cut = searched + i + 1;
                carry.extend_from_slice(&buf[cut..]);
                buf.truncate(cut);
                return Ok(Some(buf));
            }
            searched = buf.len();
        }
        let old = buf.len();
        buf.resize(old + (256 << 10), 0);
        let n = loop {
            match reader.read(&mut buf[old..]) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => break r,
            }
        };
        let n = n.inspect_err(|_| buf.truncate(old))?;
        buf.truncate(old + n);
        if n == 0 {
            return Ok((!buf.is_empty()).then_some(buf));
        }
    }
}

/// Parses `source`, input `document` (counted from 0) of the import, on
/// `threads` workers; `on` gets every unit's keys as they
/// arrive and the parse errors in document order. Returning `false` stops
/// everything.
pub fn run(
    mut source: Source,
    document: usize,
    format: InputFormat,
    fallback_graph: Option<&str>,
    lenient: bool,
    threads: usize,
    on: &mut dyn FnMut(Event) -> bool,
) {
    let units = Mutex::new(Units { reader: &mut *source.0, carry: Vec::new(), next: 0, done: false });
    let stop = AtomicBool::new(false);
    // The first unit where a strict parse stopped at an error: later units
    // cannot matter any more.
    let last_needed = AtomicUsize::new(usize::MAX);
    std::thread::scope(|scope| {
        let (tx, rx) = sync_channel::<(usize, Batch)>(threads.max(1) * 2);
        for _ in 0..threads.max(1) {
            let tx = tx.clone();
            let (units, stop, last_needed) = (&units, &stop, &last_needed);
            scope.spawn(move || {
                let mut worker = Worker::new(document);
                while !stop.load(Ordering::Relaxed) {
                    let next = units.lock().map(|mut u| u.next());
                    let Ok(Some((k, bytes))) = next else { break };
                    if k > last_needed.load(Ordering::Relaxed) {
                        break;
                    }
                    let batch = match bytes {
                        Ok(bytes) => worker.unit(&bytes, format, fallback_graph, lenient),
                        Err(e) => Batch::failed(e),
                    };
                    if batch.stopped || batch.failed.is_some() {
                        last_needed.fetch_min(k, Ordering::Relaxed);
                    }
                    if tx.send((k, batch)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        if !in_order(rx, on) {
            stop.store(true, Ordering::Relaxed);
        }
    });
}

/// Keys at once; errors unit by unit in file order. `false` when
/// `on` asked to stop.
fn in_order(rx: std::sync::mpsc::Receiver<(usize, Batch)>, on: &mut dyn FnMut(Event) -> bool) -> bool {
    let mut waiting: BTreeMap<usize, Batch> = BTreeMap::new();
    let mut next = 0usize;
    let mut lines_before = 0u64;
    for (k, mut batch) in rx {
        if !on(Event::Keys(&mut batch)) {
            return false;
        }
        waiting.insert(k, batch);
        while let Some(batch) = waiting.remove(&next) {
            for error in batch.errors {
                if !on(Event::Error { line_offset: lines_before, error }) {
                    return false;
                }
            }
            if let Some(e) = batch.failed {
                on(Event::Failed(e));
                return false;
            }
            if batch.stopped {
                return true;
            }
            lines_before += batch.newlines;
            next += 1;
        }
    }
    true
}

struct Worker {
    renderer: Renderer,
    /// `_:` and the document's prefix: the start of every blank-node token.
    blank_prefix: String,
    tokens: [String; 4],
    recent: fast::Recent,
}

impl Worker {
    /// A worker for input `document` (counted from 0) of the import.
    fn new(document: usize) -> Worker {
        Worker {
            renderer: Renderer::keeping_labels(document),
            blank_prefix: kept_label_prefix(document),
            tokens: Default::default(),
            recent: fast::Recent::default(),
        }
    }
}

impl Worker {
    fn unit(
        &mut self,
        bytes: &[u8],
        format: InputFormat,
        fallback_graph: Option<&str>,
        lenient: bool,
    ) -> Batch {
        let scan = checked::scan_unit(bytes);
        let canonical =
            if scan.suspect { None } else { self.canonical(bytes, format, fallback_graph, lenient) };
        let mut batch =
            canonical.unwrap_or_else(|| self.parsed(bytes, scan.suspect, format, fallback_graph, lenient));
        batch.newlines = scan.newlines;
        batch.sort_keys();
        batch
    }

    /// The unit through the parser: leniently where that is proven equal to
    /// strict parsing, else strictly.
    fn parsed(
        &mut self,
        bytes: &[u8],
        suspect: bool,
        format: InputFormat,
        fallback_graph: Option<&str>,
        lenient: bool,
    ) -> Batch {
        let mut batch = Batch::new(0);
        // Keys are about as long as the lines they come from.
        batch.keys.reserve(bytes.len() + bytes.len() / 4);
        batch.ends.reserve(bytes.len() / 100);
        if suspect || !self.fill(&mut batch, bytes, format, fallback_graph, true, lenient) {
            batch.keys.clear();
            batch.ends.clear();
            batch.errors.clear();
            self.fill(&mut batch, bytes, format, fallback_graph, false, lenient);
        }
        batch
    }

    /// Canonical lines keyed from their own bytes (`fast.rs`), the other
    /// lines through the parser, in their order. `None` when the parser met
    /// an error: its line number and its place among the unit's errors are
    /// only right from a parse of the whole unit.
    fn canonical(
        &mut self,
        bytes: &[u8],
        format: InputFormat,
        fallback_graph: Option<&str>,
        lenient: bool,
    ) -> Option<Batch> {
        std::str::from_utf8(bytes).ok()?;
        let graph = match fallback_graph {
            Some(iri) => format!("<{iri}>"),
            None => DEFAULT_GRAPH.to_owned(),
        };
        let triples = format == InputFormat::NTriples;
        let mut batch = Batch::new(0);
        batch.keys.reserve(bytes.len() + bytes.len() / 4);
        batch.ends.reserve(bytes.len() / 100);
        let mut others = Vec::new();
        for line in lines(bytes) {
            let body = line.strip_suffix(b"\n").unwrap_or(line);
            let doc = fast::Document {
                graph: graph.as_bytes(),
                blank_prefix: self.blank_prefix.as_bytes(),
                triples,
            };
            match fast::line_key(body, &doc, &mut self.recent, &mut batch.keys) {
                fast::Line::Key => batch.ends.push(batch.keys.len()),
                fast::Line::Empty => {}
                fast::Line::Other => others.extend_from_slice(line),
            }
        }
        if others.is_empty() {
            return Some(batch);
        }
        let parsed = self.parsed(&others, false, format, fallback_graph, lenient);
        if parsed.stopped || !parsed.errors.is_empty() {
            return None;
        }
        let offset = batch.keys.len();
        batch.keys.extend_from_slice(&parsed.keys);
        batch.ends.extend(parsed.ends.iter().map(|end| end + offset));
        batch.errors = parsed.errors;
        Some(batch)
    }

    /// Parses `bytes` into `batch`. With `checked`, the parse is lenient and
    /// gives up (`false`) at the first statement not proven strict-equal or
    /// at any error.
    fn fill(
        &mut self,
        batch: &mut Batch,
        bytes: &[u8],
        format: InputFormat,
        fallback_graph: Option<&str>,
        checked: bool,
        lenient: bool,
    ) -> bool {
        let items: Box<dyn Iterator<Item = Result<Quad, TurtleParseError>>> = match (format, checked) {
            (InputFormat::NTriples, c) => {
                let p = if c { NTriplesParser::new().lenient() } else { NTriplesParser::new() };
                Box::new(
                    p.for_slice(bytes)
                        .map(|r| r.map(|t| t.in_graph(GraphName::DefaultGraph)).map_err(Into::into)),
                )
            }
            (_, c) => {
                let p = if c { NQuadsParser::new().lenient() } else { NQuadsParser::new() };
                Box::new(p.for_slice(bytes).map(|r| r.map_err(Into::into)))
            }
        };
        let mut no_raw_breaks = None;
        let mut ask = || *no_raw_breaks.get_or_insert_with(|| !checked::raw_line_break_in_string(bytes));
        for item in items {
            if checked && !matches!(&item, Ok(q) if checked::quad_ok(q, &mut ask)) {
                return false;
            }
            let stop = item.is_err() && !lenient;
            match item {
                Ok(q) => {
                    self.renderer.quad(&mut self.tokens, &q, fallback_graph);
                    encode_key(&mut batch.keys, self.tokens.each_ref().map(|t| t.as_bytes()));
                    batch.ends.push(batch.keys.len());
                }
                Err(e) => batch.errors.push(e),
            }
            if stop {
                batch.stopped = true;
                break;
            }
        }
        true
    }
}

impl Batch {
    fn new(newlines: u64) -> Batch {
        Batch {
            keys: Vec::new(),
            ends: Vec::new(),
            sorted: Vec::new(),
            errors: Vec::new(),
            newlines,
            failed: None,
            stopped: false,
        }
    }
    fn failed(e: io::Error) -> Batch {
        let mut b = Batch::new(0);
        b.failed = Some(e);
        b
    }
}

impl Batch {
    /// Sorts and deduplicates the keys' positions (not the keys themselves).
    fn sort_keys(&mut self) {
        let mut start = 0;
        let mut order: Vec<(u32, u32)> = self
            .ends
            .iter()
            .map(|&end| {
                let loc = (start as u32, (end - start) as u32);
                start = end;
                loc
            })
            .collect();
        let keys = &self.keys;
        let key = |&(at, len): &(u32, u32)| &keys[at as usize..(at + len) as usize];
        // Stable sort: it takes runs of lines already in key order (real
        // files list a subject's statements together, often sorted) as they
        // are, where quicksort compared every one of them again.
        order.sort_by(|a, b| key(a).cmp(key(b)));
        order.dedup_by(|a, b| key(a) == key(b));
        self.sorted = order;
    }
}

/// The lines of `bytes`, each with its `\n` (the last one may lack it).
/// `split_inclusive` looked for the newline a byte at a time: 5% of the
/// vocabularies' import, where `memchr` takes a vector at a time.
fn lines(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut start = 0;
    let ends = memchr::memchr_iter(b'\n', bytes).map(|i| i + 1);
    ends.chain((!bytes.ends_with(b"\n")).then_some(bytes.len())).filter_map(move |end| {
        let line = &bytes[start..end];
        start = end;
        (!line.is_empty()).then_some(line)
    })
}

/// How the import's parse of `text` as one unit (the canonical path, the
/// checked lenient parse, the fallbacks) differs from a plain strict parse,
/// if it does, under each of the settings an import runs with. They must
/// never differ: the shortcuts are only taken where they are proven to give
/// what strict parsing gives. Shared by the tests and the `import_unit` fuzz
/// target.
pub fn unit_differs_from_strict(text: &[u8], format: InputFormat) -> Option<String> {
    let mut worker = Worker::new(0);
    for (lenient, graph) in [(false, None), (true, None), (false, Some("http://ex.org/fallback"))] {
        let got = worker.unit(text, format, graph, lenient);
        let mut strict = Batch::new(0);
        worker.fill(&mut strict, text, format, graph, false, lenient);
        let (got, want) = (comparable(&got), comparable(&strict));
        if got != want {
            return Some(format!(
                "{format:?}, lenient import: {lenient}, fallback graph: {graph:?}: \
                 the import's unit gives {got:?}, strict parsing {want:?}"
            ));
        }
    }
    None
}

/// A unit's output in a comparable form: keys sorted (their order within a
/// unit does not matter, the sort orders them), errors in order as their
/// debug text (message and position), and whether parsing stopped.
fn comparable(batch: &Batch) -> (Vec<Vec<u8>>, Vec<String>, bool) {
    let mut keys = Vec::new();
    let mut start = 0;
    for &end in &batch.ends {
        keys.push(batch.keys[start..end].to_vec());
        start = end;
    }
    keys.sort();
    (keys, batch.errors.iter().map(|e| format!("{e:?}")).collect(), batch.stopped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_split_as_split_inclusive_splits_them() {
        for text in ["", "\n", "a", "a\n", "a\nb", "a\n\nb\n", "\n\na\n\n", "ab\ncd\nef"] {
            let ours: Vec<&[u8]> = lines(text.as_bytes()).collect();
            let std: Vec<&[u8]> = text.as_bytes().split_inclusive(|&b| b == b'\n').collect();
            assert_eq!(ours, std, "{text:?}");
        }
    }

    /// The unit as the import parses it against a plain strict parse.
    fn assert_same_as_strict(text: &[u8], format: InputFormat, what: &str) {
        if let Some(difference) = unit_differs_from_strict(text, format) {
            panic!("{what}: {difference}");
        }
    }

    #[test]
    fn checked_lenient_parsing_equals_strict_parsing_on_the_w3c_suite() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/w3c-rdf-tests/rdf/rdf11/rdf-n-quads");
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let mut files = 0;
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "nq" || e == "nt") {
                let text = std::fs::read(&path).unwrap();
                let name = path.display().to_string();
                assert_same_as_strict(&text, InputFormat::NQuads, &name);
                assert_same_as_strict(&text, InputFormat::NTriples, &name);
                files += 1;
            }
        }
        assert!(files > 50, "only {files} test files under {}", dir.display());
    }

    #[test]
    fn checked_lenient_parsing_equals_strict_parsing_on_near_misses() {
        let ok = "<http://ex.org/s> <http://ex.org/p> <http://ex.org/o> <http://ex.org/g> .\n";
        let cases: &[&str] = &[
            "<http://ex.org/a b> <http://ex.org/p> <http://ex.org/o> .",
            "<relative> <http://ex.org/p> <http://ex.org/o> .",
            "<> <http://ex.org/p> <http://ex.org/o> .",
            "<http://ex.org/s> <> <http://ex.org/o> <> .",
            "<http://ex.org/s> <http://ex.org/p> \"x\"^^<> .",
            "<http://ex.org/s> <http://ex.org/p> <#frag> .",
            "<http://[::1]/x> <http://ex.org/p> <http://ex.org/o> .",
            "<http://[::zz]/x> <http://ex.org/p> <http://ex.org/o> .",
            "<http://user:pw@host/> <http://ex.org/p> <http://ex.org/o> .",
            "<http://ex.org:80a/> <http://ex.org/p> <http://ex.org/o> .",
            "<http://ex.org/%zz> <http://ex.org/p> <http://ex.org/o> .",
            "<http://ex.org/%4> <http://ex.org/p> <http://ex.org/o> .",
            "<http://ex.org/é> <http://ex.org/p> <http://ex.org/o> .",
            "<http://ex.org/\\u00E9> <http://ex.org/p> <http://ex.org/o> .",
            "<http://ex.org/\\uD83D\\uDE00> <http://ex.org/p> <http://ex.org/o> .",
            "<http://ex.org/s> <http://ex.org/p> \"\\uD83D\\uDE00\" .",
            "<http://ex.org/s> <http://ex.org/p> \"\\U0001F600 😀\" .",
            "<http://ex.org/s> <http://ex.org/p> \"lone \\uDC00\" .",
            "<http://ex.org/{x}> <http://ex.org/p> <http://ex.org/o> .",
            "<http://ex.org/a|b^c`d> <http://ex.org/p> <http://ex.org/o> .",
            "<http://ex.org/a#b#c> <http://ex.org/p> <http://ex.org/o> .",
            "<http://ex.org/s> <http://ex.org/p> \"x\"@en-US .",
            "<http://ex.org/s> <http://ex.org/p> \"x\"@abcdefghi .",
            "<http://ex.org/s> <http://ex.org/p> \"x\"@en--us .",
            "<http://ex.org/s> <http://ex.org/p> \"x\"@x-private-tag .",
            "<http://ex.org/s> <http://ex.org/p> \"x\"^^<http://www.w3.org/1999/02/22-rdf-syntax-ns#langString> .",
            "<http://ex.org/s> <http://ex.org/p> \"x\"^^<http://www.w3.org/2001/XMLSchema#string> .",
            "<http://ex.org/s> <http://ex.org/p> \"x\"^^<not an iri> .",
            "<http://ex.org/s> <http://ex.org/p> \"raw\nnewline\" .",
            "<http://ex.org/s> <http://ex.org/p> \"raw\rreturn\" .",
            "<http://ex.org/s> <http://ex.org/p> \"escaped\\nnewline\\r\" .",
            "<http://ex.org/s> <http://ex.org/p> \"raw\n# looks like a comment\" .",
            "<http://ex.org/s> <http://ex.org/p> \"escaped\\nfirst\" .\n<http://ex.org/s> <http://ex.org/p> \"then\nraw\" .",
            "<http://ex.org/s> <http://ex.org/p> \"a\\nb\" . # a quote \" in a comment\n<http://ex.org/s> <http://ex.org/p> \"raw\nc\" .",
            "<http://ex.org/s#\"> <http://ex.org/p> \"a\\nb\" .",
            "<http://ex.org/s> <http://ex.org/p> \"a\\\"\\nb\\\\\" .",
            "<http://ex.org/s> <http://ex.org/p> \"a\\rb\"@en <http://ex.org/g> .",
            "<http://ex.org/s> <http://ex.org/p> _:b1 _:g .",
            "_:a <http://ex.org/p> \"x\" <http://ex.org/g b> .",
            "<http://ex.org/s> <http://ex.org/p> <http://ex.org/o> . <http://ex.org/s> <http://ex.org/p> <http://ex.org/o> .",
            "<http://ex.org/s> <http://ex.org/p> <http://ex.org/o>",
            "# only a comment",
            "",
            "\r\n\r\n",
            "<http://ex.org/s> <http://ex.org/p> <http://ex.org/o> .\r<http://ex.org/s> <http://ex.org/p> \"x\" .",
            // Lines the canonical path (fast.rs) takes or must leave alone.
            "<http://ex.org/s><http://ex.org/p><http://ex.org/o>.",
            "<http://ex.org/s> <http://ex.org/p> \"x\"@en.",
            "<http://ex.org/s> <http://ex.org/p> \"x\"@de-1996 <http://ex.org/g>\t.\t",
            "<http://ex.org/s> <http://ex.org/p> \"x\"@en-gb-oxendict .",
            "<http://ex.org/s> <http://ex.org/p> \"x\"@EN-gb .",
            "<http://ex.org/s> <http://ex.org/p> \"x\"@en-GB .",
            "<http://ex.org/s> <http://ex.org/p> \"x\"@1en .",
            "<http://ex.org/s> <http://ex.org/p> \"x\"@en-1-2 .",
            "<http://ex.org/s> <http://ex.org/p> \"x\"@en--ltr .",
            "<http://ex.org/s> <http://ex.org/p> \"x\"^^<http://ex.org/dt>@en .",
            "<http://ex.org/s> <http://ex.org/p> \"x\"^^<http://ex.org/dt><http://ex.org/g> .",
            "<http://ex.org/s> <http://ex.org/p> \"x\"^ <http://ex.org/dt> .",
            "<http://ex.org/s> <http://ex.org/p> \"raw\ttab and \u{0}nul\" .",
            "<http://ex.org/s> <http://ex.org/p> \"\\t is not a tab\\\\\" .",
            "<http://ex.org/s> <http://ex.org/p> \"\\u0041 and \\U0001F600\" .",
            "<http://ex.org/s> <http://ex.org/p> \"bad \\x escape\" .",
            "<http://ex.org/s> <http://ex.org/p> \"\" .",
            "<http://ex.org/s> <http://ex.org/p> \"\"\" .",
            "<http://ex.org/s> <http://ex.org/p> <http://ex.org/o> <http://ex.org/g> <http://ex.org/h> .",
            "<http://ex.org/s> <http://ex.org/p> <http://ex.org/o> _:g .",
            "<http://ex.org/s> <http://ex.org/p> <http://ex.org/o> \"g\" .",
            "<http://ex.org/s> \"p\" <http://ex.org/o> .",
            "  <http://ex.org/s> <http://ex.org/p> <http://ex.org/o> .",
            "<http://ex.org/s> <http://ex.org/p> <http://ex.org/o> .. ",
            "<http://ex.org/s> <http://ex.org/p> <<( <http://ex.org/a> <http://ex.org/b> <http://ex.org/c> )>> .",
            "<http://ex.org/s> <http://ex.org/p> <http://ex.org/o> .\n\u{feff}<http://ex.org/s> <http://ex.org/p> <http://ex.org/o> .",
        ];
        for case in cases {
            // Alone, and between valid lines with CRLF and LF endings.
            assert_same_as_strict(case.as_bytes(), InputFormat::NQuads, case);
            assert_same_as_strict(case.as_bytes(), InputFormat::NTriples, case);
            let around = format!("{ok}{ok}{case}\r\n{ok}# comment\n\n{ok}");
            assert_same_as_strict(around.as_bytes(), InputFormat::NQuads, case);
        }
    }

    /// One generated N-Quads line: mostly well-formed statements, in
    /// canonical spellings and in spellings the rendering changes (escapes,
    /// upper-case tags, `xsd:string`, blank nodes), sometimes malformed ones,
    /// so that many units hold only statements and the canonical path is
    /// compared, and some hold errors.
    fn statement() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        prop_oneof![8 => line(false), 1 => line(true)]
    }

    fn line(malformed: bool) -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        use proptest::sample::select;
        let pick = |good: Vec<&'static str>, bad: Vec<&'static str>| {
            select(if malformed { [good, bad].concat() } else { good })
        };
        let iri = [
            "<http://ex.org/a>",
            "<http://ex.org/a#b>",
            "<urn:x:1>",
            "<http://ex.org/é>",
            "<http://ex.org/\\u00E9>",
        ];
        let bad_iri = vec!["<http://ex.org/a b>", "<rel>", "<http://ex.org/a>b>", "<http://ex.org/\\q>"];
        let subject = pick([&iri[..], &["_:b1", "_:b2", "_:a.b-c", "_:é1"]].concat(), bad_iri.clone());
        let predicate = pick(iri.to_vec(), [bad_iri.clone(), vec!["_:p"]].concat());
        let object_iri = pick([&iri[..], &["_:b1", "_:o"]].concat(), bad_iri.clone());
        let value = prop::collection::vec(
            pick(
                vec![
                    "a",
                    " ",
                    "\t",
                    "é",
                    "😀",
                    "\\\"",
                    "\\\\",
                    "\\n",
                    "\\r",
                    "\\t",
                    "\\b",
                    "\\'",
                    "\\u00E9",
                    "\\U0001F600",
                    "\u{0}",
                    "\u{7f}",
                    "#",
                    "<",
                ],
                vec!["\\q", "\\uD83D\\uDE00", "\"", "\\"],
            ),
            0..5,
        )
        .prop_map(|parts| parts.concat());
        let suffix = pick(
            vec![
                "",
                "@en",
                "@en-gb",
                "@EN",
                "@de-1996",
                "^^<http://www.w3.org/2001/XMLSchema#integer>",
                "^^<http://www.w3.org/2001/XMLSchema#string>",
            ],
            vec![
                "@en-",
                "@abcdefghi",
                "@1en",
                "^^<http://www.w3.org/1999/02/22-rdf-syntax-ns#langString>",
                "^^<bad iri>",
                "^^_:b",
            ],
        );
        let literal = (value, suffix).prop_map(|(v, s)| format!("\"{v}\"{s}"));
        let object = prop_oneof![object_iri.prop_map(str::to_owned), literal];
        let graph = pick(
            vec!["", " <http://ex.org/g>", " _:g", "\t<http://ex.org/é>"],
            vec![" <http://ex.org/g h>", " \"g\"", "<http://ex.org/g>"],
        );
        let space = pick(vec![" ", "\t", "  "], vec![""]);
        let end = pick(vec![" .", ".", " .\t", " . # c"], vec!["", " . .", " ;"]);
        (subject, space.clone(), predicate, space, object, graph, end)
            .prop_map(|(s, a, p, b, o, g, e)| format!("{s}{a}{p}{b}{o}{g}{e}"))
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3_000))]
        /// Units of generated lines, canonical or not, give what a strict
        /// parse gives: keys, held statements, errors and where they are.
        #[test]
        fn units_of_generated_lines_equal_strict_parsing(
            lines in proptest::collection::vec(statement(), 1..6),
            crlf in proptest::bool::ANY,
        ) {
            let text = lines.join(if crlf { "\r\n" } else { "\n" }) + "\n";
            assert_same_as_strict(text.as_bytes(), InputFormat::NQuads, &text);
            assert_same_as_strict(text.as_bytes(), InputFormat::NTriples, &text);
        }
    }

    #[test]
    fn a_plain_unit_takes_the_lenient_path_and_a_suspect_one_does_not() {
        let mut worker = Worker::new(0);
        let text = b"<http://ex.org/s> <http://ex.org/p> \"x\"@en <http://ex.org/g> .\n";
        let mut batch = Batch::new(0);
        assert!(worker.fill(&mut batch, text, InputFormat::NQuads, None, true, false));
        let text = b"<http://ex.org/s> <http://ex.org/p> \"x\"@abcdefghi .\n";
        assert!(!worker.fill(&mut Batch::new(0), text, InputFormat::NQuads, None, true, false));
        let escaped = b"<http://ex.org/s> <http://ex.org/p> \"line\\nbreak\" .\n";
        assert!(worker.fill(&mut Batch::new(0), escaped, InputFormat::NQuads, None, true, false));
        let raw = b"<http://ex.org/s> <http://ex.org/p> \"line\nbreak\" .\n";
        assert!(!worker.fill(&mut Batch::new(0), raw, InputFormat::NQuads, None, true, false));
    }

    #[test]
    fn streamed_units_end_at_line_ends_and_lose_nothing() {
        let line = "<http://ex.org/s> <http://ex.org/p> \"a value of some length\" .\n";
        let text: String =
            line.repeat(3 * UNIT_BYTES / line.len()) + "<http://ex.org/s> <http://ex.org/p> \"no newline\" .";
        let mut reader: &[u8] = text.as_bytes();
        let mut carry = Vec::new();
        let mut joined = Vec::new();
        let mut units = 0;
        while let Some(unit) = read_unit(&mut reader, &mut carry).unwrap() {
            units += 1;
            let last = unit.last().copied();
            joined.extend_from_slice(&unit);
            if joined.len() < text.len() {
                assert_eq!(last, Some(b'\n'));
                assert!(unit.len() > UNIT_BYTES / 2, "unit {units}: {} bytes", unit.len());
            }
        }
        assert_eq!(joined, text.as_bytes());
        assert!(units >= 3);
    }
}
