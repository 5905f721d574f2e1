//! The copy of a base's footer kept beside it (`cottas-tui.footer`, codec in
//! `format::footer_copy`), and the one place that says what is wrong with a
//! base's length, magic and footer against what was recorded when it was
//! written.
//!
//! A footer is the one part of a version nothing else can rebuild. So every
//! writer of digests writes the copy too (import, compaction, `index`,
//! repairs), and when the footer no longer matches its digest this module
//! compares it with the copy byte by byte: the finding then names the first
//! changed byte and the field it belongs to, and `repair restore-footer`
//! has what it needs. `Base::open_checked`, `verify`, `dump` and the TUI's
//! decoder all ask [`check_recorded`], so they agree on every finding.

use std::path::Path;

use crate::format::footer_copy;
pub use crate::format::footer_copy::FooterCopy;
use crate::store::base::digests::{self, BaseDigests};
use crate::store::fsutil::write_whole;
use crate::store::StoreError;

pub const FOOTER_COPY: &str = "cottas-tui.footer";

/// Writes the copy of `base`'s bytes from `from` (the end of its last column
/// chunk) to its end, whole or not at all.
pub fn write(dir: &Path, base: &[u8], from: u64) -> Result<(), StoreError> {
    let copy = FooterCopy {
        base_len: base.len() as u64,
        offset: from,
        bytes: base.get(from as usize..).unwrap_or_default().to_vec(),
    };
    let path = dir.join(FOOTER_COPY);
    write_whole(&path, &footer_copy::encode(&copy)).map_err(|e| StoreError::write(&path, e))
}

/// The footer copy of the version in `dir`: `None` when there is none (a
/// version written before copies were kept, or by another producer); an
/// error naming the byte when it does not decode or its digests fail.
pub fn read(dir: &Path) -> Result<Option<FooterCopy>, StoreError> {
    let path = dir.join(FOOTER_COPY);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(StoreError::io(&path, e)),
    };
    footer_copy::decode(&bytes).result.map(Some).map_err(|e| StoreError::from_format(&path, &e))
}

/// The first byte where a base differs from its footer copy, and what the
/// byte belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    pub offset: u64,
    /// The footer field that holds the byte (`footer.row_groups[0].columns[2]
    /// .meta_data.data_page_offset`), as the copy lays it out.
    pub field: Option<String>,
    /// The field's value in the copy and in the file, where both decode.
    pub written: Option<String>,
    pub now: Option<String>,
    /// The file ends at `offset`, before the copy does.
    pub ends: bool,
}

impl Difference {
    /// "byte 2699123 differs from the footer copy: it is in <field> (the copy
    /// has 4, the file 260)".
    pub fn describe(&self) -> String {
        let mut s = if self.ends {
            format!("the file ends at byte {}, before the footer copy does", self.offset)
        } else {
            format!("byte {} differs from the footer copy", self.offset)
        };
        if let Some(field) = &self.field {
            s.push_str(&format!(": it is in {field}"));
            if let (Some(w), Some(n)) = (&self.written, &self.now) {
                s.push_str(&format!(" (the copy has {w}, the file {n})"));
            }
        }
        s
    }
}

/// Where `raw` (a whole base) first differs from `copy`, `None` when its
/// tail is the copy byte for byte.
pub fn compare(raw: &[u8], copy: &FooterCopy) -> Option<Difference> {
    let len = raw.len() as u64;
    let common_end = len.min(copy.base_len);
    let offset = (copy.offset..common_end)
        .find(|&at| raw.get(at as usize).copied() != copy.byte_at(at))
        .or((len != copy.base_len).then_some(common_end))?;
    let ends = offset == len && len < copy.base_len;
    let written = crate::format::parquet::tail_spans(&copy.bytes, copy.offset);
    let Some(field) = crate::format::span::span_at(&written, offset).filter(|_| offset < copy.base_len)
    else {
        return Some(Difference { offset, field: None, written: None, now: None, ends });
    };
    let now = match raw.get(copy.offset as usize..) {
        Some(tail) if len == copy.base_len => crate::format::parquet::tail_spans(tail, copy.offset),
        _ => Vec::new(),
    };
    let now_value =
        now.iter().find(|s| s.name == field.name && s.range == field.range).and_then(|s| s.value.clone());
    Some(Difference {
        offset,
        field: Some(field.name.clone()),
        written: field.value.clone().filter(|_| now_value.is_some()),
        now: now_value,
        ends,
    })
}

/// Which recorded region of a base does not match.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Region {
    Length,
    LeadingMagic,
    /// The page indexes or the footer: what the footer copy holds.
    Tail,
}

/// What is wrong with a base against its recorded digests.
#[derive(Clone, Debug)]
pub struct RegionDamage {
    pub region: Region,
    /// The first changed byte when the footer copy tells it, else where the
    /// region starts.
    pub offset: u64,
    pub message: String,
    /// Whether the version's footer copy can put the bytes back.
    pub restorable: bool,
}

impl RegionDamage {
    pub fn into_store_error(self, path: &Path) -> StoreError {
        StoreError::format(path, self.offset, self.message)
    }
}

/// The file's length, leading magic, page-index region and footer against
/// their recorded digests; on a mismatch, the footer copy beside the file
/// (if there is one) says which byte changed.
pub fn check_recorded(path: &Path, raw: &[u8], d: &BaseDigests) -> Result<(), RegionDamage> {
    let len = raw.len() as u64;
    let head_ok = digests::matches(&d.head, raw.get(..4).unwrap_or_default());
    let tail_ok = [Some(&d.footer), d.between.as_ref()].into_iter().flatten().all(|f| {
        let bytes = raw.get(f.offset as usize..(f.offset + f.len) as usize).unwrap_or_default();
        digests::matches(f, bytes)
    });
    if d.len == len && head_ok && tail_ok {
        return Ok(());
    }
    if !head_ok && d.len == len {
        return Err(RegionDamage {
            region: Region::LeadingMagic,
            offset: 0,
            message: "the leading magic (bytes 0..4) does not match its recorded digest: the file is damaged"
                .into(),
            restorable: false,
        });
    }
    let (region, mut offset, mut message) = if d.len != len {
        let what =
            format!("the file is {len} bytes, its digest file recorded {} (truncated or replaced)", d.len);
        (Region::Length, len.min(d.len), what)
    } else {
        let (start, end) = (d.between.as_ref().unwrap_or(&d.footer).offset, d.footer.offset + d.footer.len);
        let what = if d.between.is_some() { "page indexes and Parquet footer" } else { "Parquet footer" };
        let what = format!("the {what} (bytes {start}..{end}) does not match its recorded digest");
        (Region::Tail, start, what)
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let restorable = match read(dir) {
        Ok(Some(copy)) if copy.base_len == d.len && copy.offset > len => {
            let what = format!(
                "; the file ends at byte {len}, before the footer copy's part begins ({}): column chunks are lost too, which the copy cannot restore",
                copy.offset
            );
            message.push_str(&what);
            false
        }
        Ok(Some(copy)) if copy.base_len == d.len => {
            match compare(raw, &copy) {
                Some(diff) => {
                    offset = diff.offset;
                    message.push_str(&format!("; {}", diff.describe()));
                    head_ok
                }
                None => {
                    message.push_str(&format!("; its tail equals the footer copy ({FOOTER_COPY}), so the digest file is what changed"));
                    false
                }
            }
        }
        Ok(Some(_)) => {
            message.push_str(&format!("; the footer copy ({FOOTER_COPY}) belongs to another file"));
            false
        }
        Ok(None) => {
            message.push_str(&format!("; there is no footer copy ({FOOTER_COPY}) to restore it from"));
            false
        }
        Err(e) => {
            message.push_str(&format!("; the footer copy cannot be used: {e}"));
            false
        }
    };
    Err(RegionDamage { region, offset, message, restorable })
}

/// A healthy base's footer copy against the base: `Ok` when it is missing
/// (nothing to check) or equals the base's tail; else the copy's problem,
/// with its file and byte, for `verify`. Call it only for a base that
/// matched its recorded digests: the base is then the truth.
pub fn check_copy(dir: &Path, raw: &[u8]) -> Result<(), StoreError> {
    let path = dir.join(FOOTER_COPY);
    let Some(copy) = read(dir)? else { return Ok(()) };
    match compare(raw, &copy) {
        None => Ok(()),
        Some(diff) => Err(StoreError::format(
            &path,
            footer_copy::HEADER_LEN + diff.offset.saturating_sub(copy.offset),
            format!(
                "does not equal data.cottas's last {} bytes, which match their recorded digests: data.cottas's byte {} differs; the copy is what changed",
                copy.bytes.len(),
                diff.offset
            ),
        )),
    }
}
