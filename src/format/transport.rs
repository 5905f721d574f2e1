//! The two on-disk transports of the delta-log family (reference §0.5).
//!
//! `Raw` is the format as specified: logical bytes on disk. `LegacyCodePoints`
//! is what pre-#445 factoidal builds wrote: every logical byte (and every
//! character of a string field) as one Unicode code point, UTF-8 encoded, with
//! string lengths and checksums counting code points. We write only `Raw` in
//! normal operation; the legacy encoder exists so tests can produce the
//! reference's legacy examples and prove the reader detects them.

/// Which transport a delta log or epoch marker was found in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    Raw,
    LegacyCodePoints,
}

impl Transport {
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Raw => "raw",
            Transport::LegacyCodePoints => "legacy-code-points",
        }
    }
}

/// Builds a logical symbol stream in either transport.
pub(crate) struct Sink {
    transport: Transport,
    /// Logical symbols (bytes for raw, code points for legacy).
    syms: Vec<u32>,
}

impl Sink {
    pub fn new(transport: Transport) -> Self {
        Sink { transport, syms: Vec::new() }
    }
    pub fn len(&self) -> usize {
        self.syms.len()
    }
    pub fn byte(&mut self, b: u8) {
        self.syms.push(u32::from(b));
    }
    pub fn bytes(&mut self, b: &[u8]) {
        self.syms.extend(b.iter().map(|&x| u32::from(x)));
    }
    pub fn u32(&mut self, v: u32) {
        self.bytes(&v.to_le_bytes());
    }
    pub fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }
    /// Overwrites the u32 at symbol index `at`.
    pub fn patch_u32(&mut self, at: usize, v: u32) {
        for (k, b) in v.to_le_bytes().into_iter().enumerate() {
            self.syms[at + k] = u32::from(b);
        }
    }
    /// `u32 length` + contents: bytes for raw, code points for legacy.
    pub fn lstring(&mut self, s: &str) {
        match self.transport {
            Transport::Raw => {
                self.u32(s.len() as u32);
                self.bytes(s.as_bytes());
            }
            Transport::LegacyCodePoints => {
                self.u32(s.chars().count() as u32);
                self.syms.extend(s.chars().map(u32::from));
            }
        }
    }
    pub fn checksum(&self, from: usize, to: usize) -> u32 {
        super::checksum::code_point_checksum(self.syms[from..to].iter().copied())
    }
    /// The file bytes.
    pub fn finish(self) -> Vec<u8> {
        match self.transport {
            Transport::Raw => self.syms.into_iter().map(|s| s as u8).collect(),
            Transport::LegacyCodePoints => self
                .syms
                .into_iter()
                .map(|s| char::from_u32(s).unwrap_or('\u{fffd}'))
                .collect::<String>()
                .into_bytes(),
        }
    }
}
