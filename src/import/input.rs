//! Opening import inputs: files or stdin, plain, gzip or zstd (recognised by
//! their magic bytes, not their names), in one of the four Turtle-family syntaxes.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum InputFormat {
    #[value(name = "nquads", alias = "nq")]
    NQuads,
    #[value(name = "ntriples", alias = "nt")]
    NTriples,
    #[value(name = "turtle", alias = "ttl")]
    Turtle,
    #[value(name = "trig")]
    TriG,
}

impl InputFormat {
    /// From the file name, ignoring a trailing `.gz`, `.zst` or `.zstd`.
    pub fn from_name(name: &str) -> Option<Self> {
        let lower = name.to_ascii_lowercase();
        let stem = [".gz", ".zst", ".zstd"].iter().find_map(|s| lower.strip_suffix(s)).unwrap_or(&lower);
        let ext = stem.rsplit('.').next()?;
        match ext {
            "nq" | "nquads" => Some(InputFormat::NQuads),
            "nt" | "ntriples" => Some(InputFormat::NTriples),
            "ttl" | "turtle" => Some(InputFormat::Turtle),
            "trig" => Some(InputFormat::TriG),
            _ => None,
        }
    }

    pub fn has_graphs(self) -> bool {
        matches!(self, InputFormat::NQuads | InputFormat::TriG)
    }

    pub fn media_type(self) -> &'static str {
        match self {
            InputFormat::NQuads => "application/n-quads",
            InputFormat::NTriples => "application/n-triples",
            InputFormat::Turtle => "text/turtle",
            InputFormat::TriG => "application/trig",
        }
    }
}

/// A decompressing reader over a file or stdin.
pub fn open(path: &Path) -> io::Result<Box<dyn Read + Send>> {
    let raw: Box<dyn Read + Send> =
        if path.as_os_str() == "-" { Box::new(io::stdin()) } else { Box::new(File::open(path)?) };
    let mut buf = BufReader::with_capacity(1 << 20, raw);
    let head = buf.fill_buf()?;
    Ok(if head.starts_with(&[0x1f, 0x8b]) {
        Box::new(BufReader::with_capacity(1 << 20, flate2::read::MultiGzDecoder::new(buf)))
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Box::new(BufReader::with_capacity(1 << 20, zstd::stream::read::Decoder::with_buffer(buf)?))
    } else {
        Box::new(buf)
    })
}
