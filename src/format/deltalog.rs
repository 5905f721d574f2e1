//! `data.deltalog`: the store's append-only write log (reference §11).
//!
//! An 8-byte DLOG header, then DLB1 batch frames back to back; each batch holds
//! DLE1 entry frames (ADD, REMOVE, CLEAR, DROP, CREATE). Readers take the
//! longest prefix of whole, checksum-valid batches and describe the rest as a
//! [`Leftover`] — a crash mid-append leaves a torn frame there. Every consumer
//! (replay, verify, `log`, the writer's tail repair, the TUI) uses this module.

use super::cursor::{CodePointSource, Cursor, Decoded, RawSource, Source};
use super::error::{ErrorKind, FormatError, Result};
use super::span::{Role, Span};
use super::term::{Literal, Term, RDF_DIR_LANG_STRING, RDF_LANG_STRING};
use super::transport::{Sink, Transport};

pub const MAGIC: [u8; 4] = *b"DLOG";
pub const BATCH_MAGIC: [u8; 4] = *b"DLB1";
pub const ENTRY_MAGIC: [u8; 4] = *b"DLE1";
pub const HEADER_LEN: u64 = 8;
/// magic + version + length before a frame's body, checksum after it.
pub const FRAME_OVERHEAD: u64 = 16;
/// Writer bound on any one string (the F* round-trip proof's bound).
pub const MAX_STRING_LEN: usize = (1 << 28) - 1;

pub const TAG_ADD: u8 = 0;
pub const TAG_REMOVE: u8 = 1;
pub const TAG_CLEAR: u8 = 2;
pub const TAG_DROP: u8 = 3;
pub const TAG_CREATE: u8 = 4;

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Subject {
    Iri(String),
    Blank(String),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Object {
    Iri(String),
    Blank(String),
    /// `datatype` is always explicit (xsd:string / rdf:langString included).
    Literal {
        lexical: String,
        datatype: String,
        language: Option<String>,
    },
}

/// A quad as the log stores it: IRIs bare, labels without `_:`, lexical forms
/// unescaped; `graph: None` is the default graph.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Quad {
    pub subject: Subject,
    pub predicate: String,
    pub object: Object,
    pub graph: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    Add(Quad),
    Remove(Quad),
    /// `None` clears the default graph.
    Clear(Option<String>),
    Drop(String),
    Create(String),
}

impl Entry {
    pub fn add(q: Quad) -> Self {
        Entry::Add(q)
    }
    pub fn remove(q: Quad) -> Self {
        Entry::Remove(q)
    }
    pub fn clear(graph: Option<String>) -> Self {
        Entry::Clear(graph)
    }
    pub fn drop_graph(graph: impl Into<String>) -> Self {
        Entry::Drop(graph.into())
    }
    pub fn create(graph: impl Into<String>) -> Self {
        Entry::Create(graph.into())
    }
    pub fn tag(&self) -> u8 {
        match self {
            Entry::Add(_) => TAG_ADD,
            Entry::Remove(_) => TAG_REMOVE,
            Entry::Clear(_) => TAG_CLEAR,
            Entry::Drop(_) => TAG_DROP,
            Entry::Create(_) => TAG_CREATE,
        }
    }
    pub fn kind_name(&self) -> &'static str {
        tag_name(self.tag())
    }
    /// The reader's validity rules (reference §11.4); a writer must not emit an
    /// entry that fails them, since one invalid entry hides every later batch.
    pub fn validate(&self) -> std::result::Result<(), String> {
        match self {
            Entry::Add(q) | Entry::Remove(q) => validate_quad(q),
            Entry::Clear(g) => g.as_deref().map_or(Ok(()), check_len),
            Entry::Drop(g) | Entry::Create(g) => check_len(g),
        }
    }
}

pub fn tag_name(tag: u8) -> &'static str {
    match tag {
        TAG_ADD => "ADD",
        TAG_REMOVE => "REMOVE",
        TAG_CLEAR => "CLEAR",
        TAG_DROP => "DROP",
        TAG_CREATE => "CREATE",
        _ => "?",
    }
}

fn check_len(s: &str) -> std::result::Result<(), String> {
    if s.len() > MAX_STRING_LEN {
        return Err(format!("a string of {} bytes exceeds the 2^28 byte bound", s.len()));
    }
    Ok(())
}

fn check_iri(what: &str, iri: &str) -> std::result::Result<(), String> {
    check_len(iri)?;
    if iri.is_empty() || !iri.contains(':') {
        return Err(format!("{what} IRI {iri:?} must be non-empty and contain ':'"));
    }
    Ok(())
}

fn validate_quad(q: &Quad) -> std::result::Result<(), String> {
    match &q.subject {
        Subject::Iri(i) => check_iri("subject", i)?,
        Subject::Blank(b) => check_len(b)?,
    }
    check_iri("predicate", &q.predicate)?;
    match &q.object {
        Object::Iri(i) => check_iri("object", i)?,
        Object::Blank(b) => check_len(b)?,
        Object::Literal { lexical, datatype, language } => {
            check_len(lexical)?;
            check_iri("datatype", datatype)?;
            match language {
                Some(tag) => {
                    check_len(tag)?;
                    if datatype != RDF_LANG_STRING {
                        return Err(format!(
                            "a language-tagged literal must have datatype rdf:langString, not {datatype}"
                        ));
                    }
                }
                None if datatype == RDF_LANG_STRING || datatype == RDF_DIR_LANG_STRING => {
                    return Err(format!("datatype {datatype} requires a language tag"));
                }
                None => {}
            }
        }
    }
    q.graph.as_deref().map_or(Ok(()), check_len)
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Batch {
    pub seq: u64,
    pub epoch: u64,
    pub entries: Vec<Entry>,
}

/// A committed batch and where its frame sits in the file (byte offsets).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchFrame {
    pub offset: u64,
    pub len: u64,
    pub batch: Batch,
}

/// Why reading stopped at the leftover.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// The file ends exactly after the last batch: nothing is left over.
    CleanEnd,
    /// The last frame is cut short (a crash mid-append, or a length field that
    /// claims more bytes than exist).
    TornFrame,
    /// Bytes that are not a DLB1 frame (bad magic or version).
    BadFrame,
    /// A whole frame whose batch or entry checksum does not match.
    BadChecksum,
    /// A checksum-valid frame whose contents break the format's rules.
    InvalidEntry,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::CleanEnd => "clean-end",
            StopReason::TornFrame => "torn-frame",
            StopReason::BadFrame => "bad-frame",
            StopReason::BadChecksum => "bad-checksum",
            StopReason::InvalidEntry => "invalid-entry",
        }
    }
}

/// What follows the committed prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leftover {
    pub offset: u64,
    pub len: u64,
    pub reason: StopReason,
    /// The decode error that stopped reading (none for a clean end).
    pub error: Option<FormatError>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeltaLog {
    pub transport: Transport,
    pub batches: Vec<BatchFrame>,
    pub leftover: Leftover,
    /// The leftover bytes themselves, so a decoded log re-encodes exactly.
    pub leftover_bytes: Vec<u8>,
}

impl DeltaLog {
    /// Byte offset where the committed prefix ends (where an append must go).
    pub fn committed_len(&self) -> u64 {
        self.leftover.offset
    }
}

/// How many spans to record: none (fast replay), frames only, or every field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detail {
    None,
    Frames,
    Full,
}

// ---------------------------------------------------------------- encoding

pub fn encode_header() -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&1u32.to_le_bytes());
    out
}

fn put_subject(s: &mut Sink, subj: &Subject) {
    match subj {
        Subject::Iri(i) => {
            s.byte(0);
            s.lstring(i);
        }
        Subject::Blank(b) => {
            s.byte(1);
            s.lstring(b);
        }
    }
}

fn put_object(s: &mut Sink, o: &Object) {
    match o {
        Object::Iri(i) => {
            s.byte(0);
            s.lstring(i);
        }
        Object::Blank(b) => {
            s.byte(1);
            s.lstring(b);
        }
        Object::Literal { lexical, datatype, language } => {
            s.byte(2);
            s.lstring(lexical);
            s.lstring(datatype);
            match language {
                None => s.byte(0),
                Some(tag) => {
                    s.byte(1);
                    s.lstring(tag);
                }
            }
        }
    }
}

fn put_graph(s: &mut Sink, g: &Option<String>) {
    match g {
        None => s.byte(0),
        Some(iri) => {
            s.byte(1);
            s.lstring(iri);
        }
    }
}

fn put_quad(s: &mut Sink, q: &Quad) {
    put_subject(s, &q.subject);
    s.lstring(&q.predicate);
    put_object(s, &q.object);
    put_graph(s, &q.graph);
}

/// Writes magic, version, a length placeholder; returns (length slot, body start).
fn open_frame(s: &mut Sink, magic: &[u8; 4]) -> (usize, usize) {
    s.bytes(magic);
    s.u32(1);
    let slot = s.len();
    s.u32(0);
    (slot, s.len())
}

fn close_frame(s: &mut Sink, slot: usize, body: usize) {
    let len = (s.len() - body) as u32;
    s.patch_u32(slot, len);
    let sum = s.checksum(body, s.len());
    s.u32(sum);
}

fn put_entry(s: &mut Sink, e: &Entry) {
    let (slot, body) = open_frame(s, &ENTRY_MAGIC);
    s.byte(e.tag());
    match e {
        Entry::Add(q) | Entry::Remove(q) => put_quad(s, q),
        Entry::Clear(g) => put_graph(s, g),
        Entry::Drop(g) | Entry::Create(g) => s.lstring(g),
    }
    close_frame(s, slot, body);
}

/// One DLB1 frame, ready to append.
pub fn encode_batch(b: &Batch, transport: Transport) -> Vec<u8> {
    let mut s = Sink::new(transport);
    let (slot, body) = open_frame(&mut s, &BATCH_MAGIC);
    s.u64(b.seq);
    s.u64(b.epoch);
    s.u32(b.entries.len() as u32);
    for e in &b.entries {
        put_entry(&mut s, e);
    }
    close_frame(&mut s, slot, body);
    s.finish()
}

/// A whole log file: header, batches, and any leftover bytes verbatim.
pub fn encode(log: &DeltaLog) -> Vec<u8> {
    let mut out = encode_header();
    for f in &log.batches {
        out.extend_from_slice(&encode_batch(&f.batch, log.transport));
    }
    out.extend_from_slice(&log.leftover_bytes);
    out
}

/// A log of `batches` with nothing left over.
pub fn encode_batches(batches: &[Batch], transport: Transport) -> Vec<u8> {
    let mut out = encode_header();
    for b in batches {
        out.extend_from_slice(&encode_batch(b, transport));
    }
    out
}

// ---------------------------------------------------------------- decoding

struct Stop {
    reason: StopReason,
    error: FormatError,
}

fn stop(reason: StopReason) -> impl FnOnce(FormatError) -> Stop {
    move |error| Stop { reason, error }
}

/// Decodes a whole log with every field's span.
pub fn decode(bytes: &[u8]) -> Decoded<DeltaLog> {
    decode_with(bytes, Detail::Full)
}

/// Decodes a whole log, choosing the transport that explains more of the file.
pub fn decode_with(bytes: &[u8], detail: Detail) -> Decoded<DeltaLog> {
    let raw = decode_source(&RawSource(bytes), bytes, Transport::Raw, detail);
    let raw_stopped_early = match &raw.result {
        Ok(log) => log.leftover.reason != StopReason::CleanEnd,
        Err(_) => false,
    };
    if raw_stopped_early && bytes.iter().any(|&b| b >= 0x80) {
        let (src, _) = CodePointSource::new(bytes);
        let legacy = decode_source(&src, bytes, Transport::LegacyCodePoints, detail);
        let better = match (&legacy.result, &raw.result) {
            (Ok(l), Ok(r)) => l.committed_len() > r.committed_len(),
            _ => false,
        };
        if better {
            return legacy;
        }
    }
    raw
}

fn decode_source<S: Source>(
    src: &S,
    bytes: &[u8],
    transport: Transport,
    detail: Detail,
) -> Decoded<DeltaLog> {
    let mut c = Cursor::new(src, detail != Detail::None);
    let mut batches = Vec::new();
    let result = decode_log(&mut c, bytes, transport, detail, &mut |f| batches.push(f));
    let result = result.map(|log| DeltaLog { batches, ..log });
    let mut spans = c.spans;
    spans.sort_by(|a, b| a.range.start.cmp(&b.range.start).then(b.range.end.cmp(&a.range.end)));
    Decoded { result, spans }
}

/// Decodes a raw-transport log a batch at a time, handing each committed
/// batch to `visit` instead of keeping it, so memory stays one batch however
/// long the log is. The same parser and stop rule as [`decode_with`]; the
/// log returned has no batches. A log that stops early and holds bytes above
/// 0x7f may be a legacy-transport log: [`decode_with`] decides that.
pub fn scan_raw(bytes: &[u8], visit: &mut dyn FnMut(BatchFrame)) -> Result<DeltaLog> {
    let src = RawSource(bytes);
    let mut c = Cursor::new(&src, false);
    decode_log(&mut c, bytes, Transport::Raw, Detail::None, visit)
}

/// Walks the frames, giving each committed batch to `visit`; the log
/// returned carries the transport and what follows the batches, no batches.
fn decode_log<S: Source>(
    c: &mut Cursor<S>,
    bytes: &[u8],
    transport: Transport,
    detail: Detail,
    visit: &mut dyn FnMut(BatchFrame),
) -> Result<DeltaLog> {
    c.magic(MAGIC, &[])?;
    c.version()?;
    let batches = Vec::new();
    let mut count = 0usize;
    loop {
        let start = c.pos();
        if c.remaining() == 0 {
            let offset = c.here();
            if offset == bytes.len() as u64 {
                let leftover = Leftover { offset, len: 0, reason: StopReason::CleanEnd, error: None };
                return Ok(DeltaLog { transport, batches, leftover, leftover_bytes: Vec::new() });
            }
            // The legacy reading ends where the file stops being valid UTF-8.
            let len = bytes.len() as u64 - offset;
            let error = FormatError::structure(
                offset,
                "legacy transport",
                "bytes that are not valid UTF-8 cannot be code points of a legacy log",
            );
            if c.recording() {
                c.spans.push(Span {
                    name: "leftover".into(),
                    range: offset..bytes.len() as u64,
                    role: Role::Tail,
                    value: None,
                    reason: Some(error.to_string()),
                });
            }
            let leftover = Leftover { offset, len, reason: StopReason::BadFrame, error: Some(error) };
            return Ok(DeltaLog {
                transport,
                batches,
                leftover,
                leftover_bytes: bytes[offset as usize..].to_vec(),
            });
        }
        // Span names only when spans are recorded (a million-batch scan
        // formats no names).
        let prefix = if c.recording() { c.set_prefix(format!("batch[{count}].")) } else { String::new() };
        let parsed = parse_batch(c, detail);
        if c.recording() {
            c.set_prefix(prefix);
        }
        match parsed {
            Ok(batch) => {
                let offset = c.byte_offset(start);
                count += 1;
                visit(BatchFrame { offset, len: c.here() - offset, batch });
            }
            Err(Stop { reason, error }) => {
                let offset = c.byte_offset(start);
                let len = bytes.len() as u64 - offset;
                c.set_record(detail != Detail::None);
                c.bad_span("leftover", start, c.limit(), Role::Tail, format!("{}: {error}", reason.as_str()));
                if c.recording() && c.byte_offset(c.limit()) < bytes.len() as u64 {
                    // Bytes past the legacy reading's valid UTF-8 prefix.
                    let from = c.byte_offset(c.limit());
                    c.spans.push(Span {
                        name: "leftover.raw".into(),
                        range: from..bytes.len() as u64,
                        role: Role::Tail,
                        value: None,
                        reason: Some("not valid UTF-8 in the legacy transport".into()),
                    });
                }
                let leftover = Leftover { offset, len, reason, error: Some(error) };
                let leftover_bytes = bytes[offset as usize..].to_vec();
                return Ok(DeltaLog { transport, batches, leftover, leftover_bytes });
            }
        }
    }
}

fn parse_batch<S: Source>(c: &mut Cursor<S>, detail: Detail) -> std::result::Result<Batch, Stop> {
    // Frame header: a short read here is a torn frame, anything else a bad frame.
    let magic_ok = c.magic(BATCH_MAGIC, &[]);
    if let Err(e) = magic_ok {
        let reason = if matches!(e.kind, ErrorKind::Truncated { .. }) {
            StopReason::TornFrame
        } else {
            StopReason::BadFrame
        };
        return Err(Stop { reason, error: e });
    }
    c.version().map_err(|e| {
        let reason = if matches!(e.kind, ErrorKind::Truncated { .. }) {
            StopReason::TornFrame
        } else {
            StopReason::BadFrame
        };
        Stop { reason, error: e }
    })?;
    let len = c.u32("length", Role::Length).map_err(stop(StopReason::TornFrame))?;
    c.need(u64::from(len) + 4, "body and checksum", Role::Payload).map_err(stop(StopReason::TornFrame))?;
    let body = c.pos();
    let body_end = body + len as usize;
    let computed = c.source().checksum(body, body_end);
    let stored = peek_u32(c, body_end);
    if stored != Some(computed) {
        let stored = stored.unwrap_or(u32::MAX);
        let at = c.byte_offset(body_end);
        c.bad_span(
            "checksum",
            body_end,
            body_end + 4,
            Role::Checksum,
            format!("stored {stored:#010x}, computed {computed:#010x}"),
        );
        // Say which entry is damaged too, when the body still parses that far.
        let outer = c.set_limit(body_end);
        let located = match parse_body(c, detail) {
            Err(inner) => format!("; inside it: {}", inner.error),
            Ok(_) => String::new(),
        };
        c.set_limit(outer);
        let field = format!("batch checksum at {at}{located}");
        let error = FormatError::new(at, ErrorKind::Checksum { field, stored, computed });
        return Err(Stop { reason: StopReason::BadChecksum, error });
    }
    let outer = c.set_limit(body_end);
    let parsed = parse_body(c, detail);
    c.set_limit(outer);
    let batch = parsed?;
    c.u32("checksum", Role::Checksum).map_err(stop(StopReason::TornFrame))?;
    Ok(batch)
}

/// The stored checksum at symbol `at`, or `None` when a symbol there is not a
/// byte value (legacy transport only); the caller has checked the length.
fn peek_u32<S: Source>(c: &Cursor<S>, at: usize) -> Option<u32> {
    let src = c.source();
    (0..4).try_fold(0u32, |v, k| {
        let b = src.symbol(at + k);
        (b <= 255).then_some(v | (b << (8 * k)))
    })
}

fn parse_body<S: Source>(c: &mut Cursor<S>, detail: Detail) -> std::result::Result<Batch, Stop> {
    let invalid = stop(StopReason::InvalidEntry);
    let seq = c.u64("db_seq", Role::Value).map_err(invalid)?;
    let epoch = c.u64("db_epoch", Role::Value).map_err(stop(StopReason::InvalidEntry))?;
    let count = c.u32("op_count", Role::Count).map_err(stop(StopReason::InvalidEntry))?;
    let entries_start = c.pos();
    // Each entry frame is at least 17 bytes, so `count` cannot exceed this.
    let mut entries = Vec::with_capacity((count as usize).min(c.remaining() / 17));
    let was = c.set_record(c.recording() && detail == Detail::Full);
    let named = c.recording();
    for i in 0..count {
        let prefix = if named { c.set_prefix(format!("{}entry[{i}].", c.prefix())) } else { String::new() };
        let e = parse_entry(c);
        if named {
            c.set_prefix(prefix);
        }
        match e {
            Ok(e) => entries.push(e),
            Err(s) => {
                c.set_record(was);
                return Err(s);
            }
        }
    }
    c.set_record(was);
    if detail == Detail::Frames {
        c.span("entries", entries_start, c.pos(), Role::Payload);
    }
    if c.remaining() != 0 {
        let error = FormatError::structure(
            c.here(),
            "batch body",
            format!(
                "{} {} the {} the batch declares",
                crate::text::plural(c.remaining(), "byte", "bytes"),
                crate::text::noun(c.remaining(), "follows", "follow"),
                crate::text::plural(count, "entry", "entries")
            ),
        );
        c.bad_span("unread", c.pos(), c.limit(), Role::Payload, error.to_string());
        return Err(Stop { reason: StopReason::InvalidEntry, error });
    }
    Ok(Batch { seq, epoch, entries })
}

fn parse_entry<S: Source>(c: &mut Cursor<S>) -> std::result::Result<Entry, Stop> {
    let inv = |e| Stop { reason: StopReason::InvalidEntry, error: e };
    c.magic(ENTRY_MAGIC, &[]).map_err(inv)?;
    c.version().map_err(inv)?;
    let len = c.u32("length", Role::Length).map_err(inv)?;
    c.need(u64::from(len) + 4, "payload and checksum", Role::Payload).map_err(inv)?;
    let body = c.pos();
    let end = body + len as usize;
    let computed = c.source().checksum(body, end);
    let stored = peek_u32(c, end);
    if stored != Some(computed) {
        let stored = stored.unwrap_or(u32::MAX);
        let at = c.byte_offset(end);
        c.bad_span(
            "checksum",
            end,
            end + 4,
            Role::Checksum,
            format!("stored {stored:#010x}, computed {computed:#010x}"),
        );
        let error = FormatError::new(
            at,
            ErrorKind::Checksum { field: format!("entry checksum at {at}"), stored, computed },
        );
        return Err(Stop { reason: StopReason::BadChecksum, error });
    }
    let outer = c.set_limit(end);
    let parsed = parse_payload(c);
    let leftover = c.remaining();
    c.set_limit(outer);
    let entry = parsed.map_err(inv)?;
    if leftover != 0 {
        let error = FormatError::structure(
            c.here(),
            "entry payload",
            format!(
                "{} {} the entry's last field",
                crate::text::plural(leftover, "byte", "bytes"),
                crate::text::noun(leftover, "follows", "follow")
            ),
        );
        return Err(inv(error));
    }
    if let Err(detail) = entry.validate() {
        return Err(inv(FormatError::structure(c.byte_offset(body), "entry", detail)));
    }
    c.u32("checksum", Role::Checksum).map_err(inv)?;
    Ok(entry)
}

fn parse_payload<S: Source>(c: &mut Cursor<S>) -> Result<Entry> {
    let at = c.here();
    let tag = c.u8("tag", Role::Value)?;
    Ok(match tag {
        TAG_ADD => Entry::Add(parse_quad(c)?),
        TAG_REMOVE => Entry::Remove(parse_quad(c)?),
        TAG_CLEAR => Entry::Clear(parse_graph(c)?),
        TAG_DROP => Entry::Drop(c.lstring("graph")?),
        TAG_CREATE => Entry::Create(c.lstring("graph")?),
        t => {
            let e = FormatError::structure(
                at,
                "tag",
                format!("entry tag {t} is none of 0 ADD, 1 REMOVE, 2 CLEAR, 3 DROP, 4 CREATE"),
            );
            return Err(c.fail(e));
        }
    })
}

fn parse_quad<S: Source>(c: &mut Cursor<S>) -> Result<Quad> {
    let at = c.here();
    let subject = match c.u8("subject.tag", Role::Value)? {
        0 => Subject::Iri(c.lstring("subject")?),
        1 => Subject::Blank(c.lstring("subject")?),
        t => {
            return Err(c.fail(FormatError::structure(
                at,
                "subject.tag",
                format!("subject tag {t} is neither 0 (IRI) nor 1 (blank node)"),
            )))
        }
    };
    let predicate = c.lstring("predicate")?;
    let at = c.here();
    let object = match c.u8("object.tag", Role::Value)? {
        0 => Object::Iri(c.lstring("object")?),
        1 => Object::Blank(c.lstring("object")?),
        2 => {
            let lexical = c.lstring("object.lexical")?;
            let datatype = c.lstring("object.datatype")?;
            let at = c.here();
            let language = match c.u8("object.lang_flag", Role::Value)? {
                0 => None,
                1 => Some(c.lstring("object.language")?),
                f => {
                    return Err(c.fail(FormatError::structure(
                        at,
                        "object.lang_flag",
                        format!("language flag {f} is neither 0 nor 1"),
                    )))
                }
            };
            Object::Literal { lexical, datatype, language }
        }
        3 => {
            return Err(c.fail(FormatError::structure(
                at,
                "object.tag",
                "tag 3 (RDF 1.2 triple term) is not readable by any implementation",
            )))
        }
        t => {
            return Err(c.fail(FormatError::structure(
                at,
                "object.tag",
                format!("object tag {t} is none of 0 IRI, 1 blank node, 2 literal"),
            )))
        }
    };
    let graph = parse_graph(c)?;
    Ok(Quad { subject, predicate, object, graph })
}

fn parse_graph<S: Source>(c: &mut Cursor<S>) -> Result<Option<String>> {
    let at = c.here();
    match c.u8("graph.option", Role::Value)? {
        0 => Ok(None),
        1 => Ok(Some(c.lstring("graph")?)),
        f => Err(c.fail(FormatError::structure(
            at,
            "graph.option",
            format!("graph option {f} is neither 0 (default) nor 1 (named)"),
        ))),
    }
}

/// Decodes the single raw batch frame at `offset` (for views that page through
/// a large log without decoding all of it).
pub fn decode_batch_at(bytes: &[u8], offset: usize) -> Decoded<BatchFrame> {
    let src = RawSource(bytes);
    let mut c = Cursor::new(&src, true);
    if offset > bytes.len() {
        let e = FormatError::new(
            offset as u64,
            ErrorKind::Truncated { field: "batch".into(), needed: 16, file_len: bytes.len() as u64 },
        );
        return Decoded { result: Err(e), spans: vec![] };
    }
    c.set_pos(offset);
    let result = parse_batch(&mut c, Detail::Full)
        .map(|batch| BatchFrame { offset: offset as u64, len: (c.pos() - offset) as u64, batch })
        .map_err(|s| s.error);
    Decoded { result, spans: c.spans }
}

impl Entry {
    /// One line for people: the kind, then the quad in N-Quads or the graph.
    pub fn describe(&self) -> String {
        match self {
            Entry::Add(q) => format!("ADD    {}", q.to_nquads()),
            Entry::Remove(q) => format!("REMOVE {}", q.to_nquads()),
            Entry::Clear(None) => "CLEAR  DEFAULT".into(),
            Entry::Clear(Some(g)) => format!("CLEAR  <{g}>"),
            Entry::Drop(g) => format!("DROP   <{g}>"),
            Entry::Create(g) => format!("CREATE <{g}>"),
        }
    }
}

impl Quad {
    /// The quad as term values; the default graph is [`Term::DefaultGraph`].
    pub fn to_terms(&self) -> [Term; 4] {
        self.clone().into_terms()
    }

    /// [`Quad::to_terms`], moving the strings instead of copying them (a
    /// fold of a large log renders every quad once).
    pub fn into_terms(self) -> [Term; 4] {
        let s = match self.subject {
            Subject::Iri(i) => Term::Iri(i),
            Subject::Blank(b) => Term::Blank(b),
        };
        let o = match self.object {
            Object::Iri(i) => Term::Iri(i),
            Object::Blank(b) => Term::Blank(b),
            Object::Literal { lexical, datatype, language: Some(tag) } if datatype == RDF_LANG_STRING => {
                Term::Literal(Literal::lang(lexical, &tag))
            }
            Object::Literal { lexical, datatype, .. } => Term::Literal(Literal::typed(lexical, datatype)),
        };
        let g = self.graph.map_or(Term::DefaultGraph, Term::Iri);
        [s, Term::Iri(self.predicate), o, g]
    }

    /// One N-Quads statement (no graph term for the default graph).
    pub fn to_nquads(&self) -> String {
        let [s, p, o, g] = self.to_terms();
        let mut out = format!("{s} {p} {o}");
        if g != Term::DefaultGraph {
            out.push(' ');
            out.push_str(&g.to_string());
        }
        out.push_str(" .");
        out
    }
}

/// Offsets after `from` where a whole, valid batch frame starts: committed
/// writes a reader cannot reach because damage sits before them.
pub fn hidden_batches(bytes: &[u8], from: usize) -> Vec<u64> {
    let mut out = Vec::new();
    let mut at = from.saturating_add(1);
    while let Some(i) = bytes.get(at..).and_then(|rest| rest.windows(4).position(|w| w == BATCH_MAGIC)) {
        let off = at + i;
        if decode_batch_at(bytes, off).result.is_ok() {
            out.push(off as u64);
        }
        at = off + 1;
    }
    out
}
