//! A sidecar's mapped bytes, handed out only once the blocks they lie in
//! have matched their digests.
//!
//! This is the one place that decides whether a sidecar byte may be answered
//! from. A version this program wrote carries a digest per 4 KiB block
//! (`cottas-tui.blocks`, docs/format.md §12.1.1): a read hashes the blocks it
//! touches, once each, and a block that does not match is an error naming the
//! file and the byte range — never a wrong answer. Sidecars without block
//! digests were checked whole when they were loaded (their whole-file digest,
//! or the decoder's full validation when no digest was recorded), so every
//! range of them is trusted.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::format::blocks::xxh64;
use crate::store::StoreError;

/// A file's bytes, mapped rather than read: versions are write-once and every
/// rewrite (`index`, `repair`) renames a new file into place, so a mapping
/// never sees its file change. The kernel pages in only what a read touches.
pub type SharedFile = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// Maps `path` (an empty file becomes an empty buffer: it cannot be mapped).
pub fn map_file(path: &Path) -> std::io::Result<SharedFile> {
    map_with_handle(path).map(|(bytes, _)| bytes)
}

/// Drops this process's page-table entries for `bytes`, which MUST be a
/// whole read-only shared mapping of a file (from [`map_with_handle`] or the
/// base's mapping): the pages stay in the page cache and the next read of
/// them faults them back in, unchanged (version files are never modified in
/// place). What it bounds is this process's resident set: a query that
/// walks a multi-GB dictionary otherwise keeps every page it touched mapped
/// (2.8 GB of `.s.dict`/`.o.dict` pages for 5M rows at 100M quads).
pub fn release_mapped_pages(bytes: &[u8]) {
    if bytes.is_empty() {
        return;
    }
    // SAFETY: a read-only shared file mapping: MADV_DONTNEED only unmaps its
    // pages from this process; their contents do not change, and a
    // concurrent reader faults them in again.
    unsafe {
        libc::madvise(bytes.as_ptr() as *mut libc::c_void, bytes.len(), libc::MADV_DONTNEED);
    }
}

/// What `/proc/self/statm` says is resident, in bytes.
#[derive(Clone, Copy, Debug)]
pub struct Resident {
    /// File-backed (and shared) pages: the mapped store among them.
    pub file: u64,
    /// The rest: the heap.
    pub anonymous: u64,
}

/// This process's resident pages, `None` where there is no such file.
pub fn resident_bytes() -> Option<Resident> {
    use std::os::unix::fs::FileExt;
    // Opened once and read again from offset 0: the kernel makes the text
    // afresh on each read, and opening the file was half of each measure.
    static STATM: std::sync::OnceLock<Option<std::fs::File>> = std::sync::OnceLock::new();
    let file = STATM.get_or_init(|| std::fs::File::open("/proc/self/statm").ok()).as_ref()?;
    let mut buf = [0u8; 256];
    let n = file.read_at(&mut buf, 0).ok()?;
    let text = std::str::from_utf8(&buf[..n]).ok()?;
    let mut fields = text.split_whitespace().skip(1);
    let resident: u64 = fields.next()?.parse().ok()?;
    let shared: u64 = fields.next()?.parse().ok()?;
    Some(Resident { file: shared * 4096, anonymous: resident.saturating_sub(shared) * 4096 })
}

/// Maps `path` and keeps the open file too, for [`CheckedFile::sparse_byte`]:
/// the same file as the mapping even if a rewrite renames another into place.
pub fn map_with_handle(path: &Path) -> std::io::Result<(SharedFile, std::fs::File)> {
    let file = std::fs::File::open(path)?;
    if file.metadata()?.len() == 0 {
        return Ok((Arc::new(Vec::<u8>::new()), file));
    }
    // SAFETY: see `SharedFile`; the file is never modified in place while mapped.
    let map = unsafe { memmap2::Mmap::map(&file)? };
    Ok((Arc::new(map), file))
}

pub struct CheckedFile {
    path: PathBuf,
    /// Keeps the mapping (or buffer) that `ptr..ptr+len` points into alive.
    _owner: SharedFile,
    ptr: *const u8,
    len: usize,
    check: Check,
    /// The open file, for reads that bypass the mapping ([`Self::sparse_byte`]).
    handle: Option<std::fs::File>,
    /// Whether `_owner` is a file mapping, whose pages [`Self::release_pages`]
    /// may give back. Bytes in memory (tests) never are: `MADV_DONTNEED`
    /// on heap pages zeroes them, and a page-aligned buffer's last page
    /// holds the allocator's own records (a unit test's dictionary built
    /// in memory crashed glibc's malloc that way, once in many runs).
    mapped: bool,
}

// SAFETY: `ptr..ptr+len` is a shared, never-mutated view into `_owner`,
// which is `Send + Sync` and lives as long as this value.
unsafe impl Send for CheckedFile {}
unsafe impl Sync for CheckedFile {}

enum Check {
    /// Every byte is trusted already.
    Whole,
    /// Block `k` is trusted once its digest, at `table[at + 8k..]`, matched.
    Blocks { size: u64, table: SharedFile, at: usize, done: Box<[AtomicU64]>, digests: TableDigests },
}

/// Where a sidecar's block digests are: the mapped `cottas-tui.blocks`, the
/// offset of this sidecar's table in it, and the block size.
pub struct BlockTable {
    pub file: SharedFile,
    pub offset: usize,
    pub block_size: u32,
    pub digests: TableDigests,
}

/// What tells a damaged table from a damaged sidecar. The table's own digest
/// is checked only when a block does not match its entry: hashing it when
/// the sidecar is opened cost 1/512 of the sidecar on every open (7 MB for
/// one bound-object lookup at 100M quads), and a damaged table can only
/// refuse good bytes, never pass bad ones.
#[derive(Clone, Copy, Debug)]
pub struct TableDigests {
    /// XXH64 of the table's bytes (`cottas-tui.blocks`).
    pub table: u64,
    /// XXH64 of the whole sidecar, as `cottas-tui.digests.json` records it.
    pub file: u64,
}

impl CheckedFile {
    /// Gives back this file's resident mapped pages ([`release_mapped_pages`]):
    /// they are read again from the page cache where next touched.
    pub fn release_pages(&self) {
        if !self.mapped {
            return;
        }
        // SAFETY: `ptr..ptr+len` is the live view `_owner` keeps (see above).
        release_mapped_pages(unsafe { std::slice::from_raw_parts(self.ptr, self.len) });
    }

    /// A mapped file's bytes ([`map_with_handle`]), already checked whole.
    pub fn whole(path: &Path, bytes: SharedFile) -> Self {
        CheckedFile { mapped: true, ..Self::new(path, bytes, Check::Whole) }
    }

    /// Bytes in memory, already checked whole; never released.
    pub fn whole_in_memory(path: &Path, bytes: SharedFile) -> Self {
        Self::new(path, bytes, Check::Whole)
    }

    fn new(path: &Path, owner: SharedFile, check: Check) -> Self {
        // Every read goes through `all()`: taking the slice once here saves a
        // dynamic call per number read in a binary search.
        let (ptr, len) = {
            let s: &[u8] = (*owner).as_ref();
            (s.as_ptr(), s.len())
        };
        CheckedFile { path: path.to_path_buf(), _owner: owner, ptr, len, check, handle: None, mapped: false }
    }

    /// Bytes checked block by block against `table` (whose own digest the
    /// caller has checked).
    /// `handle`, the file that is mapped, lets [`Self::sparse_byte`] read
    /// around the mapping.
    pub fn by_blocks(
        path: &Path,
        bytes: SharedFile,
        table: BlockTable,
        handle: Option<std::fs::File>,
    ) -> Self {
        let size = u64::from(table.block_size);
        let blocks = ((*bytes).as_ref().len() as u64).div_ceil(size);
        let done = (0..blocks.div_ceil(64)).map(|_| AtomicU64::new(0)).collect();
        let check = Check::Blocks { size, table: table.file, at: table.offset, done, digests: table.digests };
        // Only a mapped file comes with its handle; bytes in memory do not.
        CheckedFile { mapped: handle.is_some(), handle, ..Self::new(path, bytes, check) }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn len(&self) -> u64 {
        self.all().len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn all(&self) -> &[u8] {
        // SAFETY: see the `Send`/`Sync` impls: `_owner` keeps these bytes.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// `len` bytes from `start`, checked. Outside the file is a format error
    /// (a damaged offset), never a panic.
    #[inline]
    pub fn bytes(&self, start: u64, len: u64) -> Result<&[u8], StoreError> {
        let end = start.wrapping_add(len);
        if end < start || end > self.len as u64 {
            return Err(self.outside(start, len));
        }
        if len > 0 && !matches!(self.check, Check::Whole) {
            self.check(start, end)?;
        }
        Ok(&self.all()[start as usize..end as usize])
    }

    #[cold]
    fn outside(&self, start: u64, len: u64) -> StoreError {
        StoreError::format(
            &self.path,
            start,
            format!(
                "{} at {start} {} outside the file ({})",
                crate::text::plural(len, "byte", "bytes"),
                crate::text::noun(len, "lies", "lie"),
                crate::text::plural(self.len(), "byte", "bytes")
            ),
        )
    }

    /// The whole file, for a header decoder that reads only its first `n`
    /// bytes (checked here) and the file's length.
    pub fn for_header(&self, n: u64) -> Result<&[u8], StoreError> {
        self.bytes(0, n.min(self.len()))?;
        Ok(self.all())
    }

    /// The byte at `at`, checked, for reads that touch one byte in pages
    /// far apart (a `.presence` column: one bit per row group, a whole
    /// row-group stride apart). Read with `pread` rather than through the
    /// mapping: each first touch of a mapped page makes the kernel map the
    /// 64 KiB around it, and unmap them all at exit. One bound object at 100M
    /// quads touched 814 pages of `.o.presence` that way and left 72 MB
    /// mapped; the kernel's share was most of the query's time (`perf
    /// record`). Files checked whole were read whole already and stay on
    /// the mapping. A block read a second time (it matched its digest the
    /// first time) is read through the mapping after all: that happens in a
    /// long-lived process (`serve`), where the same blocks answer request
    /// after request and a `pread` each time cost the bound-object lookup
    /// 14% of its time.
    pub fn sparse_byte(&self, at: u64) -> Result<u8, StoreError> {
        let (Check::Blocks { size, done, .. }, Some(handle)) = (&self.check, &self.handle) else {
            return Ok(self.bytes(at, 1)?[0]);
        };
        if at >= self.len as u64 {
            return Err(self.outside(at, 1));
        }
        let block = at / size;
        if done[(block / 64) as usize].load(Ordering::Acquire) & (1u64 << (block % 64)) != 0 {
            return Ok(self.all()[at as usize]);
        }
        let from = block * size;
        let to = (from + size).min(self.len());
        let mut buf = vec![0u8; (to - from) as usize];
        std::os::unix::fs::FileExt::read_exact_at(handle, &mut buf, from)
            .map_err(|e| StoreError::io(&self.path, e))?;
        self.check_block(block, from, &buf)?;
        Ok(buf[(at - from) as usize])
    }

    pub fn u32_at(&self, at: u64) -> Result<u32, StoreError> {
        let b = self.bytes(at, 4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn u64_at(&self, at: u64) -> Result<u64, StoreError> {
        let b = self.bytes(at, 8)?;
        Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }

    /// How many blocks have been hashed so far (0 for a file checked whole).
    pub fn blocks_checked(&self) -> u64 {
        match &self.check {
            Check::Whole => 0,
            Check::Blocks { done, .. } => {
                done.iter().map(|w| u64::from(w.load(Ordering::Relaxed).count_ones())).sum()
            }
        }
    }

    /// Every block of `start..end` checked. A block that matched before
    /// costs one atomic load here: a dictionary search makes about thirty
    /// reads, each through this test.
    #[inline]
    fn check(&self, start: u64, end: u64) -> Result<(), StoreError> {
        let Check::Blocks { size, done, .. } = &self.check else { return Ok(()) };
        // Block sizes are powers of two (`format::blocks` checks it).
        let shift = size.trailing_zeros();
        for block in start >> shift..=(end - 1) >> shift {
            let (word, bit) = ((block / 64) as usize, 1u64 << (block % 64));
            if done[word].load(Ordering::Acquire) & bit == 0 {
                self.check_new_block(block, *size)?;
            }
        }
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn check_new_block(&self, block: u64, size: u64) -> Result<(), StoreError> {
        let from = block * size;
        let to = (from + size).min(self.len());
        self.check_block(block, from, &self.all()[from as usize..to as usize])
    }

    /// Block `block`, whose bytes (from offset `from`) are `bytes`, against
    /// its digest, unless it matched before.
    fn check_block(&self, block: u64, from: u64, bytes: &[u8]) -> Result<(), StoreError> {
        let Check::Blocks { table, at, done, .. } = &self.check else { return Ok(()) };
        let (word, bit) = ((block / 64) as usize, 1u64 << (block % 64));
        if done[word].load(Ordering::Acquire) & bit != 0 {
            return Ok(());
        }
        let slot = at + 8 * block as usize;
        let recorded =
            (**table).as_ref().get(slot..slot + 8).map(|b| u64::from_le_bytes(b.try_into().expect("8")));
        if recorded != Some(xxh64(bytes)) {
            return self.mismatch(from, from + bytes.len() as u64);
        }
        done[word].fetch_or(bit, Ordering::Release);
        Ok(())
    }

    /// A block did not match its table entry: either the sidecar or the table
    /// is damaged, and the table's digest says which. A damaged table sends
    /// the check to the whole file (once): if it matches its recorded digest,
    /// every block is trusted from then on.
    #[cold]
    fn mismatch(&self, from: u64, to: u64) -> Result<(), StoreError> {
        let Check::Blocks { table, at, done, digests, .. } = &self.check else { return Ok(()) };
        let table_bytes = (**table).as_ref().get(*at..*at + 8 * done_blocks(self.len, &self.check));
        let damage = if table_bytes.is_some_and(|t| xxh64(t) == digests.table) {
            "the sidecar is damaged"
        } else if xxh64(self.all()) == digests.file {
            done.iter().for_each(|w| w.store(u64::MAX, Ordering::Release));
            return Ok(());
        } else {
            "the sidecar does not match its whole-file digest either, and its table in cottas-tui.blocks is damaged too"
        };
        Err(StoreError::format(
            &self.path,
            from,
            format!(
                "bytes {from}..{to} do not match their block digest in cottas-tui.blocks: {damage}; `cottas-tui verify` reports it and `cottas-tui repair rebuild-sidecars` rebuilds it"
            ),
        ))
    }
}

/// How many blocks a file of `len` bytes has under `check` (0 when whole).
fn done_blocks(len: usize, check: &Check) -> usize {
    match check {
        Check::Whole => 0,
        Check::Blocks { size, .. } => (len as u64).div_ceil(*size) as usize,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `bytes` checked against `table`, whose recorded digests are those of
    /// `clean_table` and of the `clean` file.
    fn checked_with(bytes: Vec<u8>, table: Vec<u8>, clean: &[u8], clean_table: &[u8]) -> CheckedFile {
        let digests = TableDigests { table: xxh64(clean_table), file: xxh64(clean) };
        let table = BlockTable { file: Arc::new(table), offset: 0, block_size: 4096, digests };
        CheckedFile::by_blocks(Path::new("x.dict"), Arc::new(bytes), table, None)
    }

    fn checked(bytes: Vec<u8>, table: Vec<u8>) -> CheckedFile {
        let (clean, clean_table) = (bytes.clone(), table.clone());
        checked_with(bytes, table, &clean, &clean_table)
    }

    fn table_bytes(bytes: &[u8]) -> Vec<u8> {
        crate::format::blocks::table_of(bytes, 4096).iter().flat_map(|d| d.to_le_bytes()).collect()
    }

    /// Two whole pages of the heap, page-aligned: what `MADV_DONTNEED`
    /// would zero if it were given them.
    #[repr(align(4096))]
    struct Pages([u8; 8192]);

    impl AsRef<[u8]> for Pages {
        fn as_ref(&self) -> &[u8] {
            &self.0
        }
    }

    #[test]
    fn releasing_pages_leaves_bytes_in_memory_alone() {
        let bytes: SharedFile = Arc::new(Pages([0xab; 8192]));
        for file in [
            CheckedFile::whole_in_memory(Path::new("x.dict"), bytes.clone()),
            checked_with(
                vec![0xab; 8192],
                table_bytes(&[0xab; 8192]),
                &[0xab; 8192],
                &table_bytes(&[0xab; 8192]),
            ),
        ] {
            file.release_pages();
            assert!(file.all().iter().all(|&b| b == 0xab), "heap bytes were zeroed");
        }
    }

    #[test]
    fn reads_hash_only_the_blocks_they_touch() {
        let bytes: Vec<u8> = (0..5 * 4096u32).map(|i| (i % 251) as u8).collect();
        let f = checked(bytes.clone(), table_bytes(&bytes));
        assert_eq!(f.bytes(4095, 2).unwrap(), &bytes[4095..4097]);
        assert_eq!(f.blocks_checked(), 2);
        assert_eq!(
            f.u64_at(5 * 4096 - 8).unwrap(),
            u64::from_le_bytes(bytes[5 * 4096 - 8..].try_into().unwrap())
        );
        assert_eq!(f.blocks_checked(), 3);
        assert!(f.bytes(5 * 4096, 0).unwrap().is_empty());
        assert!(f.bytes(5 * 4096 - 1, 2).is_err(), "past the end");
        assert!(f.bytes(u64::MAX, 2).is_err(), "overflow");
    }

    #[test]
    fn a_damaged_block_is_an_error_naming_its_range_and_others_still_read() {
        let bytes: Vec<u8> = (0..3 * 4096u32).map(|i| (i % 13) as u8).collect();
        let table = table_bytes(&bytes);
        let mut bad = bytes.clone();
        bad[4096 + 17] ^= 1;
        let f = checked(bad, table);
        let e = f.bytes(4096 + 100, 1).unwrap_err().to_string();
        assert!(e.contains("x.dict") && e.contains("4096..8192"), "{e}");
        assert!(f.bytes(0, 4096).is_ok() && f.bytes(8192, 10).is_ok());
        assert!(f.bytes(4000, 200).is_err(), "a range overlapping the bad block");
    }

    #[test]
    fn a_damaged_table_falls_back_to_the_whole_file_digest() {
        let clean: Vec<u8> = (0..3 * 4096u32).map(|i| (i % 7) as u8).collect();
        let clean_table = table_bytes(&clean);
        let mut bad_table = clean_table.clone();
        bad_table[8 + 3] ^= 0x40; // block 1's entry
                                  // The sidecar is intact: the read answers, and every block is trusted.
        let f = checked_with(clean.clone(), bad_table.clone(), &clean, &clean_table);
        assert_eq!(f.bytes(4096, 4).unwrap(), &clean[4096..4100]);
        assert_eq!(f.blocks_checked(), 64, "all blocks (the whole word) trusted after the whole-file check");
        // Both damaged: an error that says so.
        let mut bad = clean.clone();
        bad[4096] ^= 1;
        let f = checked_with(bad, bad_table, &clean, &clean_table);
        let e = f.bytes(4096, 4).unwrap_err().to_string();
        assert!(e.contains("4096..8192") && e.contains("damaged too"), "{e}");
    }

    #[test]
    fn a_sparse_read_goes_around_the_mapping_and_is_checked_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.presence");
        let clean: Vec<u8> = (0..4 * 4096u32).map(|i| (i * 7 % 256) as u8).collect();
        let clean_table = table_bytes(&clean);
        let mut bad = clean.clone();
        bad[2 * 4096 + 5] ^= 0x10;
        std::fs::write(&path, &bad).unwrap();
        let (bytes, handle) = map_with_handle(&path).unwrap();
        let digests = TableDigests { table: xxh64(&clean_table), file: xxh64(&clean) };
        let table = BlockTable { file: Arc::new(clean_table), offset: 0, block_size: 4096, digests };
        let f = CheckedFile::by_blocks(&path, bytes, table, Some(handle));
        for at in [0u64, 4095, 4096, 3 * 4096 + 4095] {
            assert_eq!(f.sparse_byte(at).unwrap(), clean[at as usize], "byte {at}");
        }
        assert_eq!(f.blocks_checked(), 3);
        let e = f.sparse_byte(2 * 4096 + 100).unwrap_err().to_string();
        assert!(
            e.contains("x.presence") && e.contains("8192..12288") && e.contains("sidecar is damaged"),
            "{e}"
        );
        assert!(f.sparse_byte(4 * 4096).is_err(), "past the end");
    }
}
