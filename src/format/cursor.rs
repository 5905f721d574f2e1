//! A bounds-checked reader that records a [`Span`] for every field it reads.
//!
//! Decoders never index the input directly: every read goes through here, so a
//! length field that claims more than the file holds becomes a `Truncated`
//! error before anything is allocated, and every error names its byte offset.
//!
//! The cursor reads *symbols* from a [`Source`]. For sidecars a symbol is a byte.
//! For the delta log and epoch marker, old factoidal builds wrote each logical
//! byte as one Unicode code point (reference §0.5, the "legacy transport"); the
//! same parsing code then runs over code points, and spans still report file
//! byte offsets.

use super::error::{ErrorKind, FormatError, Result, SUPPORTED_VERSION};
use super::span::{Role, Span};

/// A sequence of logical symbols with a map back to file byte offsets.
pub trait Source {
    /// Number of symbols.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Symbol `i` (a byte value for raw input, a code point for legacy input).
    fn symbol(&self, i: usize) -> u32;
    /// File byte offset of symbol `i`; `i == len()` gives the end of the data.
    fn byte_offset(&self, i: usize) -> u64;
    /// Symbols `[start, start+n)` as a string field, or `None` if they are not one.
    fn string(&self, start: usize, n: usize) -> Option<String>;
    /// Sum of the symbols `[start, end)`, the format's checksum over them.
    fn checksum(&self, start: usize, end: usize) -> u32;
    /// The underlying bytes when symbols are bytes (fast paths for arrays).
    fn raw(&self) -> Option<&[u8]> {
        None
    }
}

/// Raw bytes: the layout the format specifies.
pub struct RawSource<'a>(pub &'a [u8]);

impl Source for RawSource<'_> {
    fn len(&self) -> usize {
        self.0.len()
    }
    fn symbol(&self, i: usize) -> u32 {
        u32::from(self.0[i])
    }
    fn byte_offset(&self, i: usize) -> u64 {
        i as u64
    }
    fn string(&self, start: usize, n: usize) -> Option<String> {
        std::str::from_utf8(&self.0[start..start + n]).ok().map(str::to_owned)
    }
    fn checksum(&self, start: usize, end: usize) -> u32 {
        super::checksum::simple_checksum(&self.0[start..end])
    }
    fn raw(&self) -> Option<&[u8]> {
        Some(self.0)
    }
}

/// The legacy code-point transport: the file is UTF-8 text whose code points
/// are the logical bytes (framing) or characters (inside strings).
pub struct CodePointSource {
    chars: Vec<char>,
    /// `offsets[i]` = byte offset of `chars[i]`; one extra entry for the end.
    offsets: Vec<u64>,
}

impl CodePointSource {
    /// Decodes the longest valid UTF-8 prefix of `bytes`. Returns the source and
    /// the byte length of that prefix (bytes after it are left over as raw bytes).
    pub fn new(bytes: &[u8]) -> (Self, usize) {
        let valid = match std::str::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or(""),
        };
        let mut chars = Vec::with_capacity(valid.len());
        let mut offsets = Vec::with_capacity(valid.len() + 1);
        for (off, ch) in valid.char_indices() {
            chars.push(ch);
            offsets.push(off as u64);
        }
        offsets.push(valid.len() as u64);
        (CodePointSource { chars, offsets }, valid.len())
    }
}

impl Source for CodePointSource {
    fn len(&self) -> usize {
        self.chars.len()
    }
    fn symbol(&self, i: usize) -> u32 {
        u32::from(self.chars[i])
    }
    fn byte_offset(&self, i: usize) -> u64 {
        self.offsets[i]
    }
    fn string(&self, start: usize, n: usize) -> Option<String> {
        Some(self.chars[start..start + n].iter().collect())
    }
    fn checksum(&self, start: usize, end: usize) -> u32 {
        super::checksum::code_point_checksum(self.chars[start..end].iter().map(|&c| u32::from(c)))
    }
}

pub struct Cursor<'a, S: Source> {
    src: &'a S,
    pos: usize,
    /// Reads may not go past this symbol index (the end of the enclosing frame).
    limit: usize,
    record: bool,
    prefix: String,
    pub spans: Vec<Span>,
}

impl<'a, S: Source> Cursor<'a, S> {
    pub fn new(src: &'a S, record: bool) -> Self {
        Cursor { src, pos: 0, limit: src.len(), record, prefix: String::new(), spans: Vec::new() }
    }

    pub fn pos(&self) -> usize {
        self.pos
    }
    pub fn set_pos(&mut self, pos: usize) {
        self.pos = pos;
    }
    pub fn limit(&self) -> usize {
        self.limit
    }
    /// Restricts reads to `[pos, limit)`; returns the previous limit.
    pub fn set_limit(&mut self, limit: usize) -> usize {
        std::mem::replace(&mut self.limit, limit)
    }
    pub fn remaining(&self) -> usize {
        self.limit - self.pos
    }
    pub fn source(&self) -> &'a S {
        self.src
    }
    pub fn byte_offset(&self, i: usize) -> u64 {
        self.src.byte_offset(i)
    }
    pub fn here(&self) -> u64 {
        self.src.byte_offset(self.pos)
    }
    /// Byte length of the whole file, for error messages.
    pub fn file_len(&self) -> u64 {
        self.src.byte_offset(self.src.len())
    }
    pub fn set_record(&mut self, on: bool) -> bool {
        std::mem::replace(&mut self.record, on)
    }
    pub fn recording(&self) -> bool {
        self.record
    }
    pub fn prefix(&self) -> &str {
        &self.prefix
    }
    /// Names of spans recorded from now on are prefixed (e.g. `batch[3].`).
    pub fn set_prefix(&mut self, prefix: String) -> String {
        std::mem::replace(&mut self.prefix, prefix)
    }

    /// Records a span over symbols `[start, end)`.
    pub fn span(&mut self, name: &str, start: usize, end: usize, role: Role) {
        self.span_value(name, start, end, role, None)
    }

    /// Records a span with its decoded value (built only when recording).
    pub fn span_value(&mut self, name: &str, start: usize, end: usize, role: Role, value: Option<String>) {
        if self.record {
            let range = self.src.byte_offset(start)..self.src.byte_offset(end);
            let name = format!("{}{name}", self.prefix);
            self.spans.push(Span { name, range, role, value, reason: None });
        }
    }

    /// Records a span that was found bad.
    pub fn bad_span(&mut self, name: &str, start: usize, end: usize, role: Role, reason: String) {
        if self.record {
            let range = self.src.byte_offset(start)..self.src.byte_offset(end);
            self.spans.push(Span {
                name: format!("{}{name}", self.prefix),
                range,
                role,
                value: None,
                reason: Some(reason),
            });
        }
    }

    /// Marks the most recently recorded span bad and returns `err` for chaining.
    pub fn fail(&mut self, err: FormatError) -> FormatError {
        if let Some(last) = self.spans.last_mut() {
            last.reason = Some(err.to_string());
        }
        err
    }

    /// Ensures `n` more symbols exist, else a `Truncated` error (and a bad span
    /// over whatever is left) naming the field.
    pub fn need(&mut self, n: u64, field: &str, role: Role) -> Result<()> {
        if (self.remaining() as u64) < n {
            let err = FormatError::new(
                self.here(),
                ErrorKind::Truncated {
                    field: format!("{}{field}", self.prefix),
                    needed: n,
                    file_len: self.file_len(),
                },
            );
            self.bad_span(field, self.pos, self.limit, role, err.to_string());
            return Err(err);
        }
        Ok(())
    }

    fn byte_at(&self, i: usize) -> Result<u8> {
        let s = self.src.symbol(i);
        u8::try_from(s).map_err(|_| {
            FormatError::structure(
                self.src.byte_offset(i),
                "transport",
                format!("code point U+{s:04X} where a byte value was expected"),
            )
        })
    }

    fn raw_le(&mut self, n: usize, field: &str, role: Role) -> Result<u64> {
        self.need(n as u64, field, role)?;
        let start = self.pos;
        let mut v: u64 = 0;
        for k in 0..n {
            v |= u64::from(self.byte_at(start + k)?) << (8 * k);
        }
        self.pos += n;
        let shown = self.record.then(|| match role {
            Role::Checksum => format!("{v:#010x}"),
            _ => v.to_string(),
        });
        self.span_value(field, start, self.pos, role, shown);
        Ok(v)
    }

    pub fn u8(&mut self, field: &str, role: Role) -> Result<u8> {
        Ok(self.raw_le(1, field, role)? as u8)
    }
    pub fn u32(&mut self, field: &str, role: Role) -> Result<u32> {
        Ok(self.raw_le(4, field, role)? as u32)
    }
    pub fn u64(&mut self, field: &str, role: Role) -> Result<u64> {
        self.raw_le(8, field, role)
    }

    /// Reads a 4-byte magic. `legacy` lists (magic, advice) pairs that older
    /// writers produced, reported as such rather than as unknown.
    pub fn magic(&mut self, expected: [u8; 4], legacy: &[([u8; 4], &'static str)]) -> Result<()> {
        let start = self.pos;
        let avail = self.remaining().min(4);
        let mut found = Vec::with_capacity(4);
        for k in 0..avail {
            found.push(self.src.symbol(start + k).min(255) as u8);
        }
        if avail < 4 {
            // A short file whose prefix matches is truncated; otherwise it is not this kind.
            if found[..] != expected[..avail] {
                let err = FormatError::new(self.here(), ErrorKind::UnknownMagic { expected, found });
                self.bad_span("magic", start, start + avail, Role::Magic, err.to_string());
                return Err(err);
            }
            self.need(4, "magic", Role::Magic)?;
        }
        self.pos += 4;
        let shown = self.record.then(|| format!("{:?}", String::from_utf8_lossy(&found)));
        self.span_value("magic", start, self.pos, Role::Magic, shown);
        if found[..] == expected {
            return Ok(());
        }
        let kind = match legacy.iter().find(|(m, _)| found[..] == m[..]) {
            Some(&(m, advice)) => ErrorKind::LegacyMagic { found: m, advice },
            None => ErrorKind::UnknownMagic { expected, found },
        };
        let err = FormatError::new(self.byte_offset(start), kind);
        Err(self.fail(err))
    }

    /// Reads the u32 version that follows every magic and accepts only version 1.
    pub fn version(&mut self) -> Result<u32> {
        let start = self.here();
        let v = self.u32("version", Role::Version)?;
        match v.cmp(&SUPPORTED_VERSION) {
            std::cmp::Ordering::Equal => Ok(v),
            std::cmp::Ordering::Less => Err(self.fail(FormatError::new(
                start,
                ErrorKind::VersionTooOld { found: v, supported: SUPPORTED_VERSION },
            ))),
            std::cmp::Ordering::Greater => Err(self.fail(FormatError::new(
                start,
                ErrorKind::VersionTooNew { found: v, supported: SUPPORTED_VERSION },
            ))),
        }
    }

    /// Reads `u32 n` + n symbols as a string (the delta log's "lstring").
    pub fn lstring(&mut self, field: &str) -> Result<String> {
        // The length's name is only needed for a span or a short read; a
        // million-batch scan records neither and should not format it.
        let n = if self.record || self.remaining() < 4 {
            self.u32(&format!("{field}.len"), Role::Length)?
        } else {
            self.u32(field, Role::Length)?
        } as usize;
        self.need(n as u64, field, Role::Payload)?;
        let start = self.pos;
        let s = self.src.string(start, n).ok_or_else(|| {
            FormatError::structure(self.src.byte_offset(start), field, "string is not valid UTF-8")
        });
        self.pos += n;
        let shown = match (&s, self.record) {
            (Ok(text), true) => Some(format!("{:?}", short(text))),
            _ => None,
        };
        self.span_value(field, start, self.pos, Role::Payload, shown);
        s.map_err(|e| self.fail(e))
    }

    /// Reads `n` little-endian u32s as one span; the length is checked first so a
    /// huge `n` is an error, never an allocation.
    pub fn u32_array(&mut self, n: u64, field: &str, role: Role) -> Result<Vec<u32>> {
        self.need(n.saturating_mul(4), field, role)?;
        let (start, end) = (self.pos, self.pos + n as usize * 4);
        let out = match self.src.raw() {
            Some(b) => {
                b[start..end].chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
            }
            None => (0..n as usize)
                .map(|k| {
                    let mut v = 0u32;
                    for j in 0..4 {
                        v |= u32::from(self.byte_at(start + 4 * k + j)?) << (8 * j);
                    }
                    Ok(v)
                })
                .collect::<Result<Vec<u32>>>()?,
        };
        self.pos = end;
        self.span(field, start, end, role);
        Ok(out)
    }

    /// Reads `n` little-endian u64s as one span (see [`Cursor::u32_array`]).
    pub fn u64_array(&mut self, n: u64, field: &str, role: Role) -> Result<Vec<u64>> {
        self.need(n.saturating_mul(8), field, role)?;
        let (start, end) = (self.pos, self.pos + n as usize * 8);
        let b = self.src.raw().ok_or_else(|| {
            FormatError::structure(self.here(), field, "u64 arrays exist only in raw files")
        })?;
        let out = b[start..end]
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect();
        self.pos = end;
        self.span(field, start, end, role);
        Ok(out)
    }

    /// The raw bytes `[start, end)` (raw sources only).
    pub fn raw_bytes(&self, start: usize, end: usize) -> &'a [u8] {
        match self.src.raw() {
            Some(b) => &b[start..end],
            None => &[],
        }
    }

    /// Skips `n` symbols recording them as one span.
    pub fn skip(&mut self, n: usize, field: &str, role: Role) -> Result<(usize, usize)> {
        self.need(n as u64, field, role)?;
        let start = self.pos;
        self.pos += n;
        self.span(field, start, self.pos, role);
        Ok((start, self.pos))
    }

    /// Everything after the last field must be absent in fixed-layout files.
    pub fn expect_end(&mut self) -> Result<()> {
        if self.pos < self.limit {
            let count = (self.limit - self.pos) as u64;
            let err = FormatError::new(self.here(), ErrorKind::TrailingBytes { count });
            self.bad_span("trailing", self.pos, self.limit, Role::Tail, err.to_string());
            return Err(err);
        }
        Ok(())
    }
}

/// Checks a table of absolute file offsets into an array of `elem`-byte
/// elements that starts at `base` and ends at the end of the file, and turns it
/// into element indices. `table_at` is the byte offset of the table itself.
pub fn offsets_to_indices(
    c: &mut Cursor<RawSource>,
    field: &str,
    table_at: u64,
    offsets: &[u64],
    base: u64,
    elem: u64,
) -> Result<Vec<usize>> {
    let file_len = c.file_len();
    let mut out = Vec::with_capacity(offsets.len());
    for (k, &off) in offsets.iter().enumerate() {
        let prev = if k == 0 { base } else { offsets[k - 1] };
        let problem = if k == 0 && off != base {
            Some(format!("expected {base} (the end of {field}), found {off}"))
        } else if off < prev {
            Some(format!("offsets must be non-decreasing: {off} follows {prev}"))
        } else if !(off - base).is_multiple_of(elem) {
            Some(format!("{off} is not on a {elem}-byte element boundary"))
        } else if off > file_len {
            Some(format!(
                "{off} is past the end of the file ({})",
                crate::text::plural(file_len, "byte", "bytes")
            ))
        } else if k == offsets.len() - 1 && off != file_len {
            Some(format!("the last offset must equal the file length {file_len}, found {off}"))
        } else {
            None
        };
        if let Some(detail) = problem {
            let name = format!("{}[{k}]", field.trim_end_matches("[]"));
            return Err(c.fail(FormatError::structure(table_at + 8 * k as u64, name, detail)));
        }
        out.push(((off - base) / elem) as usize);
    }
    Ok(out)
}

/// At most 60 characters of `s`, for span values.
fn short(s: &str) -> String {
    match s.char_indices().nth(60) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

/// A decoder's answer: the value (or the first problem) plus the spans read.
#[derive(Debug)]
pub struct Decoded<T> {
    pub result: Result<T>,
    pub spans: Vec<Span>,
}

impl<T> Decoded<T> {
    pub fn ok(&self) -> bool {
        self.result.is_ok()
    }
    pub fn value(&self) -> Option<&T> {
        self.result.as_ref().ok()
    }
}

/// A whole decode of `bytes` by `read`, with the spans it recorded: the
/// `decode` of every fixed-layout sidecar format.
pub fn decode_with<T>(bytes: &[u8], read: impl FnOnce(&mut Cursor<RawSource>) -> Result<T>) -> Decoded<T> {
    let src = RawSource(bytes);
    let mut c = Cursor::new(&src, true);
    let result = read(&mut c);
    Decoded { result, spans: c.spans }
}

/// `read` over `bytes` without recording spans: a sidecar's header check
/// for a reader that leaves the arrays in place (a mapped file).
pub fn read_unspanned<T>(bytes: &[u8], read: impl FnOnce(&mut Cursor<RawSource>) -> Result<T>) -> Result<T> {
    let src = RawSource(bytes);
    let mut c = Cursor::new(&src, false);
    read(&mut c)
}

/// The spans `read` records from the start of `bytes`, whatever it returns:
/// the header spans the decoder view shows for a file too large to decode
/// whole (each fixed-layout format passes its own header reader).
pub fn spans_of<T>(bytes: &[u8], read: impl FnOnce(&mut Cursor<RawSource>) -> Result<T>) -> Vec<Span> {
    let src = RawSource(bytes);
    let mut c = Cursor::new(&src, true);
    let _ = read(&mut c);
    c.spans
}
