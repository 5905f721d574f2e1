//! Decoding one column chunk of `data.cottas` straight into dictionary ids.
//!
//! The read path caches columns as u32 ids of the store's `.dict` sidecars.
//! Going through the parquet crate materialises every cell as a reference-
//! counted byte string first and then looks each one up, which made the first
//! query on a store spend most of its time in allocation and hashing. Here a
//! dictionary page's values are looked up once each and the data pages'
//! RLE/bit-packed indices become ids directly; non-dictionary pages
//! (DELTA_LENGTH_BYTE_ARRAY, PLAIN) look up a value only when it differs from
//! the previous one, which for the sorted subject column is once per subject.
//!
//! This handles what cottas-tui, pycottas and DuckDB write: ZSTD or
//! uncompressed chunks, data pages v1 and v2, required or optional columns
//! without nulls. Anything else — another codec, a null, an encoding outside
//! that set, bytes that do not parse — returns `None`, and the caller decodes
//! the chunk through the parquet crate instead, which also produces the
//! precise error for damaged pages. So this is a fast path, never the only one.

use parquet::basic::Compression;

use crate::format::page_header::{DATA_PAGE, DATA_PAGE_V2, DICTIONARY_PAGE, INDEX_PAGE};
use crate::format::parquet::pages;

/// Encoding numbers of parquet.thrift.
const PLAIN: i32 = 0;
const PLAIN_DICTIONARY: i32 = 2;
const RLE: i32 = 3;
const DELTA_LENGTH_BYTE_ARRAY: i32 = 6;
const RLE_DICTIONARY: i32 = 8;

/// What the chunk decoder needs from the footer.
pub struct ChunkInfo<'a> {
    /// The chunk's bytes, from its first page header to its end.
    pub bytes: &'a [u8],
    pub codec: Compression,
    pub rows: usize,
    pub max_def_level: i16,
    pub max_rep_level: i16,
}

/// The chunk's cells as ids through `lookup`, or `None` when this fast path
/// does not apply (see the module comment) or a value is not in the
/// dictionary (the caller's slow path reports that one precisely).
pub fn decode_ids(info: &ChunkInfo, lookup: &mut dyn FnMut(&[u8]) -> Option<u32>) -> Option<Vec<u32>> {
    decode(info, None, lookup)
}

/// The ids of the cells at `rows` only (ascending, distinct local row
/// numbers), in that order. Pages are still decompressed up to the last
/// wanted row, but only the wanted cells are looked up, and no page after
/// the last one is read: a lookup that needs three rows of a row group
/// looks up three values, not the chunk's dictionary.
pub fn decode_ids_at(
    info: &ChunkInfo,
    rows: &[u32],
    lookup: &mut dyn FnMut(&[u8]) -> Option<u32>,
) -> Option<Vec<u32>> {
    if !rows.windows(2).all(|w| w[0] < w[1]) || rows.last().is_some_and(|&r| r as usize >= info.rows) {
        return None;
    }
    decode(info, Some(rows), lookup)
}

fn decode(
    info: &ChunkInfo,
    want: Option<&[u32]>,
    lookup: &mut dyn FnMut(&[u8]) -> Option<u32>,
) -> Option<Vec<u32>> {
    if info.max_rep_level != 0 || info.max_def_level > 1 {
        return None;
    }
    let mut sink = RowSink::new(want, info.rows, lookup);
    let mut dict: Option<DictPage> = None;
    let mut scratch = Vec::new();
    let mut walk = pages(info.bytes, 0, info.bytes.len() as u64);
    while !sink.done() {
        let page = walk.next()?.ok()?;
        let (header, page) = (page.header, page.data);
        let raw_len = usize::try_from(header.uncompressed_page_size).ok()?;
        match header.page_type {
            DICTIONARY_PAGE => {
                let h = header.dictionary_page?;
                if h.encoding != PLAIN && h.encoding != PLAIN_DICTIONARY {
                    return None;
                }
                let data = decompress(info.codec, page, raw_len, &mut scratch)?;
                let mut page = DictPage::new(data.to_vec(), usize::try_from(h.num_values).ok()?)?;
                if want.is_none() {
                    // Every value will be needed: resolve them in page order,
                    // which for a sorted page lets the lookup walk forward.
                    for k in 0..page.spans.len() {
                        page.id(k, sink.lookup)?;
                    }
                }
                dict = Some(page);
            }
            DATA_PAGE => {
                let h = header.data_page?;
                let n = usize::try_from(h.num_values).ok()?;
                if sink.passes_unwanted_page(n) {
                    continue;
                }
                let data = decompress(info.codec, page, raw_len, &mut scratch)?;
                let mut r = Reader::new(data);
                if info.max_def_level == 1 {
                    if h.definition_level_encoding != RLE {
                        return None;
                    }
                    let len = r.u32_le()? as usize;
                    if !all_defined(r.take(len)?, n)? {
                        return None;
                    }
                }
                values(h.encoding, r.rest(), n, dict.as_mut(), &mut sink)?;
            }
            DATA_PAGE_V2 => {
                let h = header.data_page_v2?;
                if h.num_nulls != 0 || h.repetition_levels_byte_length != 0 {
                    return None;
                }
                let n = usize::try_from(h.num_values).ok()?;
                if sink.passes_unwanted_page(n) {
                    continue;
                }
                // Levels stay uncompressed in front of the (maybe compressed) values.
                let levels = usize::try_from(h.definition_levels_byte_length).ok()?;
                if levels > page.len() {
                    return None;
                }
                let body = &page[levels..];
                let data = if h.is_compressed.unwrap_or(true) {
                    decompress(info.codec, body, raw_len.checked_sub(levels)?, &mut scratch)?
                } else {
                    body
                };
                values(h.encoding, data, n, dict.as_mut(), &mut sink)?;
            }
            INDEX_PAGE => {}
            _ => return None,
        }
    }
    sink.finish()
}

/// Where decoded cells go: every row, or only the wanted ones.
struct RowSink<'w, 'l> {
    want: Option<&'w [u32]>,
    /// The next wanted row's index in `want`.
    next_want: usize,
    /// The chunk's next row.
    row: usize,
    rows: usize,
    out: Vec<u32>,
    lookup: &'l mut dyn FnMut(&[u8]) -> Option<u32>,
}

impl<'w, 'l> RowSink<'w, 'l> {
    fn new(want: Option<&'w [u32]>, rows: usize, lookup: &'l mut dyn FnMut(&[u8]) -> Option<u32>) -> Self {
        let cap = want.map_or(rows, <[u32]>::len);
        RowSink { want, next_want: 0, row: 0, rows, out: Vec::with_capacity(cap), lookup }
    }

    /// Every row is decoded, or every wanted row.
    fn done(&self) -> bool {
        match self.want {
            Some(w) => self.next_want == w.len(),
            None => self.row >= self.rows,
        }
    }

    /// Moves past one row; true when its cell is wanted.
    fn take_row(&mut self) -> bool {
        let r = self.row;
        self.row += 1;
        match self.want {
            None => true,
            Some(w) if w.get(self.next_want) == Some(&(r as u32)) => {
                self.next_want += 1;
                true
            }
            Some(_) => false,
        }
    }

    /// Where among the next `len` rows the next wanted one is, if it is
    /// among them (never, when every row is wanted: that is not sparse).
    fn next_wanted_within(&self, len: usize) -> Option<usize> {
        let next = *self.want?.get(self.next_want)? as usize;
        (next < self.row + len).then(|| next - self.row)
    }

    /// On a sparse read, moves past a page of `len` rows none of which is
    /// wanted, so it is not decompressed; false when the page is to be read.
    fn passes_unwanted_page(&mut self, len: usize) -> bool {
        let unwanted = self.want.is_some() && self.next_wanted_within(len).is_none();
        if unwanted {
            self.pass(len);
        }
        unwanted
    }

    /// Moves past `len` rows whose wanted cells were taken already.
    fn pass(&mut self, len: usize) {
        self.row += len;
    }

    fn finish(self) -> Option<Vec<u32>> {
        let complete = match self.want {
            Some(w) => self.out.len() == w.len(),
            None => self.out.len() == self.rows && self.row == self.rows,
        };
        complete.then_some(self.out)
    }
}

/// A dictionary page's values, each looked up the first time a wanted cell
/// refers to it.
struct DictPage {
    data: Vec<u8>,
    /// `(start, end)` of each value in `data`.
    spans: Vec<(usize, usize)>,
    ids: Vec<Option<u32>>,
}

impl DictPage {
    fn new(data: Vec<u8>, n: usize) -> Option<Self> {
        let mut spans = Vec::with_capacity(n.min(data.len()));
        let mut r = Reader::new(&data);
        for _ in 0..n {
            let v = r.plain_value()?;
            let start = v.as_ptr() as usize - data.as_ptr() as usize;
            spans.push((start, start + v.len()));
        }
        let ids = vec![None; spans.len()];
        Some(DictPage { data, spans, ids })
    }

    fn id(&mut self, k: usize, lookup: &mut dyn FnMut(&[u8]) -> Option<u32>) -> Option<u32> {
        if let Some(id) = *self.ids.get(k)? {
            return Some(id);
        }
        let (a, b) = self.spans[k];
        let id = lookup(&self.data[a..b])?;
        self.ids[k] = Some(id);
        Some(id)
    }
}

fn decompress<'a>(
    codec: Compression,
    page: &'a [u8],
    raw_len: usize,
    scratch: &'a mut Vec<u8>,
) -> Option<&'a [u8]> {
    match codec {
        Compression::UNCOMPRESSED => Some(page),
        Compression::ZSTD(_) => {
            scratch.clear();
            scratch.reserve(raw_len);
            // Writes into the spare capacity: no zeroing of the page buffer.
            // One context per thread: making one per page was a tenth of a
            // path query's reads.
            thread_local! {
                static CONTEXT: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
                    const { std::cell::RefCell::new(None) };
            }
            let n = CONTEXT.with(|c| {
                let mut c = c.borrow_mut();
                if c.is_none() {
                    *c = zstd::bulk::Decompressor::new().ok();
                }
                c.as_mut()?.decompress_to_buffer(page, scratch).ok()
            })?;
            (n == raw_len).then_some(&scratch[..])
        }
        _ => None,
    }
}

/// One data page's `n` values, the wanted ones appended to the sink as ids.
fn values(
    encoding: i32,
    data: &[u8],
    n: usize,
    dict: Option<&mut DictPage>,
    sink: &mut RowSink,
) -> Option<()> {
    let mut last: Option<(&[u8], u32)> = None;
    match encoding {
        RLE_DICTIONARY | PLAIN_DICTIONARY if sink.want.is_some() => {
            let (&width, runs) = data.split_first()?;
            hybrid_wanted(runs, width, n, dict?, sink)
        }
        RLE_DICTIONARY | PLAIN_DICTIONARY => {
            let dict = dict?;
            let (&width, runs) = data.split_first()?;
            let mut count = 0;
            hybrid(runs, width, n, &mut |k| {
                count += 1;
                if sink.take_row() {
                    let id = dict.id(k as usize, sink.lookup)?;
                    sink.out.push(id);
                }
                Some(())
            })?;
            (count == n).then_some(())
        }
        PLAIN => {
            let mut r = Reader::new(data);
            for _ in 0..n {
                let v = r.plain_value()?;
                if sink.take_row() {
                    by_value(v, &mut last, sink)?;
                }
            }
            Some(())
        }
        DELTA_LENGTH_BYTE_ARRAY => {
            let mut r = Reader::new(data);
            let lengths = delta_binary_packed(&mut r, n)?;
            for len in lengths {
                let v = r.take(usize::try_from(len).ok()?)?;
                if sink.take_row() {
                    by_value(v, &mut last, sink)?;
                }
            }
            Some(())
        }
        _ => None,
    }
}

/// Appends the id of `v`, looking it up only when it differs from the last one.
fn by_value<'p>(v: &'p [u8], last: &mut Option<(&'p [u8], u32)>, sink: &mut RowSink) -> Option<()> {
    let id = match *last {
        Some((prev, id)) if prev == v => id,
        _ => (sink.lookup)(v)?,
    };
    *last = Some((v, id));
    sink.out.push(id);
    Some(())
}

/// True when all `n` definition levels (bit width 1) are 1: no nulls.
fn all_defined(levels: &[u8], n: usize) -> Option<bool> {
    let mut ok = true;
    let mut count = 0usize;
    hybrid(levels, 1, n, &mut |v| {
        ok &= v == 1;
        count += 1;
        Some(())
    })?;
    Some(ok && count == n)
}

/// The RLE / bit-packed hybrid encoding: calls `f` for each of `n` values.
fn hybrid(data: &[u8], width: u8, n: usize, f: &mut dyn FnMut(u32) -> Option<()>) -> Option<()> {
    runs(data, width, n, &mut |len, run| match run {
        Run::Repeat(v) => (0..len).try_for_each(|_| f(v)),
        Run::Packed(bytes) => unpack(bytes, width, len, f),
    })
}

/// The runs that make up `n` hybrid-encoded values, each with how many of
/// the `n` it holds.
fn runs<'a>(
    data: &'a [u8],
    width: u8,
    n: usize,
    f: &mut dyn FnMut(usize, Run<'a>) -> Option<()>,
) -> Option<()> {
    if width > 32 {
        return None;
    }
    let mut r = Reader::new(data);
    let mut done = 0usize;
    let value_bytes = usize::from(width).div_ceil(8);
    while done < n {
        let header = r.uleb()?;
        let (len, run) = if header & 1 == 0 {
            let mut v = 0u32;
            for (i, b) in r.take(value_bytes)?.iter().enumerate() {
                v |= u32::from(*b) << (8 * i);
            }
            (usize::try_from(header >> 1).ok()?.min(n - done), Run::Repeat(v))
        } else {
            let groups = usize::try_from(header >> 1).ok()?;
            let bytes = r.take(groups.checked_mul(usize::from(width))?)?;
            ((groups * 8).min(n - done), Run::Packed(bytes))
        };
        f(len, run)?;
        done += len;
    }
    Some(())
}

/// The wanted cells among a dictionary-encoded page's `n` rows, without
/// visiting the others: a run answers every wanted row in it at once, and a
/// bit-packed group is read at each wanted row's bit offset. A sparse
/// lookup at 100M quads walked 122,880 values a row group to take about 60.
fn hybrid_wanted(data: &[u8], width: u8, n: usize, dict: &mut DictPage, sink: &mut RowSink) -> Option<()> {
    runs(data, width, n, &mut |len, run| {
        while let Some(k) = sink.next_wanted_within(len) {
            sink.next_want += 1;
            let value = match run {
                Run::Repeat(v) => v,
                Run::Packed(bytes) => packed_value(bytes, width, k)?,
            };
            let id = dict.id(value as usize, sink.lookup)?;
            sink.out.push(id);
        }
        sink.pass(len);
        Some(())
    })
}

/// One run of the hybrid encoding: one value repeated, or bit-packed values.
#[derive(Clone, Copy)]
enum Run<'a> {
    Repeat(u32),
    Packed(&'a [u8]),
}

/// Value `k` of little-endian bit-packed values of `width` (≤ 32) bits.
fn packed_value(bytes: &[u8], width: u8, k: usize) -> Option<u32> {
    if width == 0 {
        return Some(0);
    }
    let bit = k.checked_mul(usize::from(width))?;
    let (first, shift) = (bit / 8, bit % 8);
    let mut acc = 0u64;
    for i in 0..(shift + usize::from(width)).div_ceil(8) {
        acc |= u64::from(*bytes.get(first + i)?) << (8 * i);
    }
    let mask = if width == 32 { u64::from(u32::MAX) } else { (1u64 << width) - 1 };
    Some(((acc >> shift) & mask) as u32)
}

/// `count` little-endian bit-packed values of `width` bits.
fn unpack(bytes: &[u8], width: u8, count: usize, f: &mut dyn FnMut(u32) -> Option<()>) -> Option<()> {
    if width == 0 {
        for _ in 0..count {
            f(0)?;
        }
        return Some(());
    }
    let mask = if width == 32 { u32::MAX as u64 } else { (1u64 << width) - 1 };
    let (mut acc, mut bits, mut at) = (0u64, 0u32, 0usize);
    for _ in 0..count {
        while bits < u32::from(width) {
            acc |= u64::from(*bytes.get(at)?) << bits;
            at += 1;
            bits += 8;
        }
        f((acc & mask) as u32)?;
        acc >>= width;
        bits -= u32::from(width);
    }
    Some(())
}

/// DELTA_BINARY_PACKED integers (here: the lengths of DELTA_LENGTH_BYTE_ARRAY).
fn delta_binary_packed(r: &mut Reader, n: usize) -> Option<Vec<i64>> {
    let block = usize::try_from(r.uleb()?).ok()?;
    let minis = usize::try_from(r.uleb()?).ok()?;
    let total = usize::try_from(r.uleb()?).ok()?;
    let mut value = zigzag(r.uleb()?);
    if total != n || minis == 0 || block == 0 || block % minis != 0 || (block / minis) % 8 != 0 {
        return None;
    }
    let per_mini = block / minis;
    let mut out = Vec::with_capacity(total);
    if total > 0 {
        out.push(value);
    }
    while out.len() < total {
        let min_delta = zigzag(r.uleb()?);
        let widths = r.take(minis)?.to_vec();
        for &w in &widths {
            if out.len() >= total {
                break;
            }
            if w > 32 {
                return None;
            }
            let bytes = r.take(per_mini * usize::from(w) / 8)?;
            unpack(bytes, w, per_mini, &mut |d| {
                if out.len() < total {
                    value = value.wrapping_add(min_delta).wrapping_add(i64::from(d));
                    out.push(value);
                }
                Some(())
            })?;
        }
    }
    Some(out)
}

fn zigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

struct Reader<'a> {
    b: &'a [u8],
}

impl<'a> Reader<'a> {
    fn new(b: &'a [u8]) -> Self {
        Reader { b }
    }
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.b.len() {
            return None;
        }
        let (h, t) = self.b.split_at(n);
        self.b = t;
        Some(h)
    }
    fn rest(&self) -> &'a [u8] {
        self.b
    }
    fn u32_le(&mut self) -> Option<u32> {
        let b = self.take(4)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn plain_value(&mut self) -> Option<&'a [u8]> {
        let len = self.u32_le()? as usize;
        self.take(len)
    }
    fn uleb(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self.take(1)?.first()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }
}

/// The decoders, for the writer's round-trip tests.
#[cfg(test)]
pub mod tests_support {
    pub fn hybrid_decode(data: &[u8], width: u8, n: usize) -> Option<Vec<u32>> {
        let mut out = Vec::new();
        super::hybrid(data, width, n, &mut |v| {
            out.push(v);
            Some(())
        })?;
        Some(out)
    }
    pub fn delta_decode(data: &[u8], n: usize) -> Option<Vec<i64>> {
        super::delta_binary_packed(&mut super::Reader::new(data), n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hybrid_runs_and_bit_packing() {
        // A run of 5 × 3 (width 2), then one bit-packed group of 8 values 0..=3,0..=3.
        let mut data = vec![5 << 1, 3];
        data.push((1 << 1) | 1);
        data.extend_from_slice(&[0b11_10_01_00, 0b11_10_01_00]);
        let mut got = Vec::new();
        hybrid(&data, 2, 13, &mut |v| {
            got.push(v);
            Some(())
        })
        .unwrap();
        assert_eq!(got, [3, 3, 3, 3, 3, 0, 1, 2, 3, 0, 1, 2, 3]);
    }

    /// A value read at its bit offset is the value the sequential unpacking
    /// gives, at every width.
    #[test]
    fn packed_values_read_at_an_offset_equal_the_unpacked_ones() {
        let bytes: Vec<u8> = (0..160u32).map(|i| (i.wrapping_mul(37) ^ 0x5a) as u8).collect();
        for width in 0..=32u8 {
            let count = (bytes.len() * 8 / usize::from(width.max(1))).min(40);
            let mut all = Vec::new();
            unpack(&bytes, width, count, &mut |v| {
                all.push(v);
                Some(())
            })
            .unwrap();
            for (k, &v) in all.iter().enumerate() {
                assert_eq!(packed_value(&bytes, width, k), Some(v), "width {width}, value {k}");
            }
        }
        assert_eq!(packed_value(&[0xff], 9, 0), None, "past the bytes is None, not a panic");
    }

    #[test]
    fn zigzag_decodes_signs() {
        assert_eq!([0, 1, 2, 3, 4].map(zigzag), [0, -1, 1, -2, 2]);
    }

    #[test]
    fn truncated_input_is_none_not_a_panic() {
        let mut r = Reader::new(&[0x80, 0x80]);
        assert_eq!(r.uleb(), None);
        assert!(hybrid(&[3], 4, 8, &mut |_| Some(())).is_none());
        let info = ChunkInfo {
            bytes: &[0x15, 0x00],
            codec: Compression::UNCOMPRESSED,
            rows: 3,
            max_def_level: 1,
            max_rep_level: 0,
        };
        assert!(decode_ids(&info, &mut |_| Some(0)).is_none());
    }
}
