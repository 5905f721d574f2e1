//! An opened store version: the base, its validated sidecars, and its marker.
//!
//! Opening reads the layout, the marker, the digest file and the base's
//! footer: nothing proportional to the data. Each sidecar is mapped, checked
//! against its recorded digest, decoded and checked against the base's
//! dimensions (row groups, rows) and the dictionaries (token counts) the
//! first time a read asks for it, once. One that fails is not used — the
//! read path then prunes less, never returns wrong rows — and the reason is
//! kept for `--explain` and `verify` (`SidecarSet::problems` loads them all).

use crate::text::plural;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::format::blocks::{self, Blocks};
use crate::format::epoch::{self, EpochMarker};
use crate::format::{dict, p_offsets, po_presence, presence, s_offsets};
use crate::store::base::digests::{self, Digests};
use crate::store::base::Base;
use crate::store::sidecars::checked::{
    map_file, map_with_handle, release_mapped_pages, resident_bytes, BlockTable, CheckedFile, SharedFile,
    TableDigests,
};
use crate::store::sidecars::mapped::{DictMap, POffsetsMap, PoPresenceMap, PresenceMap, SOffsetsMap};
use crate::store::sidecars::{sidecar_path, COLUMNS, SUFFIXES};
use crate::store::versions::layout::{self, Layout};
use crate::store::StoreError;

/// The sidecars of a base, each loaded on first use: mapped, its header
/// decoded and fitted to the base, and its bytes checked as reads touch
/// them ([`CheckedFile`]). A sidecar that is missing or fails is `None`,
/// with its reason in [`SidecarSet::problems`].
pub struct SidecarSet {
    base_path: PathBuf,
    digests: Option<Digests>,
    /// `cottas-tui.blocks`, mapped, once asked for; `None` when absent or
    /// damaged (sidecars are then checked whole).
    blocks: OnceLock<Option<(SharedFile, Blocks)>>,
    /// Row groups and rows of the base.
    dims: (u32, u64),
    dicts: [Slot<DictMap>; 4],
    presence: [Slot<PresenceMap>; 4],
    p_offsets: Slot<POffsetsMap>,
    po_presence: Slot<PoPresenceMap>,
    s_offsets: Slot<SOffsetsMap>,
    /// Every sidecar mapping made so far, for [`SidecarSet::release_pages`].
    mappings: std::sync::Mutex<Vec<SharedFile>>,
    /// Every sidecar this set hands out is checked against digests recorded
    /// when it was built from this base (versions this program wrote). Only
    /// then does the read path take subject ids from `.s.offsets` without
    /// decoding the column.
    pub verified: bool,
}

/// One sidecar: not looked at yet, or loaded (`Err`: why it is not used).
type Slot<T> = OnceLock<Result<T, String>>;

impl SidecarSet {
    fn new(base_path: &Path, base: &Base, digests: Option<Digests>) -> Self {
        SidecarSet {
            base_path: base_path.to_path_buf(),
            verified: digests.is_some(),
            digests,
            blocks: OnceLock::new(),
            dims: (base.num_row_groups() as u32, base.num_rows()),
            dicts: Default::default(),
            presence: Default::default(),
            p_offsets: OnceLock::new(),
            po_presence: OnceLock::new(),
            s_offsets: OnceLock::new(),
            mappings: Default::default(),
        }
    }

    /// Every sidecar mapping made so far (each a whole file).
    fn mapped(&self) -> Vec<SharedFile> {
        self.mappings.lock().map(|m| m.clone()).unwrap_or_default()
    }

    /// The dictionary of column `c` (0 s, 1 p, 2 o, 3 g).
    pub fn dict(&self, c: usize) -> Option<&DictMap> {
        let slot = self.dicts[c].get_or_init(|| self.load(c, DictMap::open, |b| check(dict::decode(b))));
        slot.as_ref().ok()
    }

    /// All four dictionaries, when every one is usable.
    pub fn all_dicts(&self) -> Option<[&DictMap; 4]> {
        Some([self.dict(0)?, self.dict(1)?, self.dict(2)?, self.dict(3)?])
    }

    pub fn presence(&self, c: usize) -> Option<&PresenceMap> {
        let slot = self.presence[c].get_or_init(|| {
            let pr = self.load(4 + c, PresenceMap::open, |b| check(presence::decode(b)))?;
            let (rgs, tokens) = (self.dims.0, self.dict_len(c));
            if pr.num_rgs == rgs && Some(pr.num_tokens) == tokens {
                return Ok(pr);
            }
            let dict = tokens.map_or("unreadable".to_string(), |t| plural(u64::from(t), "token", "tokens"));
            Err(format!(
                ".{}.presence: {} row groups × {} tokens does not fit the base ({rgs} row groups) and .{}.dict ({dict})",
                COLUMNS[c], pr.num_rgs, pr.num_tokens, COLUMNS[c]
            ))
        });
        slot.as_ref().ok()
    }

    pub fn p_offsets(&self) -> Option<&POffsetsMap> {
        let slot = self.p_offsets.get_or_init(|| {
            let x = self.load(8, POffsetsMap::open, |b| check(p_offsets::decode(b)))?;
            if x.num_rgs == self.dims.0 && Some(x.num_preds) == self.dict_len(1) {
                return Ok(x);
            }
            Err(format!(
                ".p.offsets: {} row groups × {} predicates does not fit the base",
                x.num_rgs, x.num_preds
            ))
        });
        slot.as_ref().ok()
    }

    pub fn po_presence(&self) -> Option<&PoPresenceMap> {
        let slot = self.po_presence.get_or_init(|| {
            let x = self.load(9, PoPresenceMap::open, |b| check(po_presence::decode(b)))?;
            let fits = x.num_rgs == self.dims.0
                && Some(x.pred_dict_size) == self.dict_len(1)
                && Some(x.obj_dict_size) == self.dict_len(2);
            if fits {
                return Ok(x);
            }
            Err(format!(
                ".po.presence: dimensions {}×{}×{} do not fit the base and dictionaries",
                x.num_rgs, x.pred_dict_size, x.obj_dict_size
            ))
        });
        slot.as_ref().ok()
    }

    pub fn s_offsets(&self) -> Option<&SOffsetsMap> {
        let slot = self.s_offsets.get_or_init(|| {
            let x = self.load(10, SOffsetsMap::open, |b| check(s_offsets::decode(b)))?;
            let rows = self.dims.1;
            if x.num_rows_total() == rows && Some(x.num_subjects() as u32) == self.dict_len(0) {
                return Ok(x);
            }
            Err(format!(
                ".s.offsets: {} subjects over {} rows does not fit the base ({rows} rows)",
                x.num_subjects(),
                x.num_rows_total()
            ))
        });
        slot.as_ref().ok()
    }

    /// Why each missing or rejected sidecar is not used, in a fixed order.
    /// Loads every sidecar not loaded yet (`--explain`, `verify`, tests).
    pub fn problems(&self) -> Vec<String> {
        for c in 0..4 {
            self.dict(c);
            self.presence(c);
        }
        self.p_offsets();
        self.po_presence();
        self.s_offsets();
        let dicts = self.dicts.iter().map(Self::problem);
        let presence = self.presence.iter().map(Self::problem);
        let rest = [
            Self::problem(&self.p_offsets),
            Self::problem(&self.po_presence),
            Self::problem(&self.s_offsets),
        ];
        dicts.chain(presence).chain(rest).flatten().collect()
    }

    /// How many of the 11 sidecars have been loaded so far.
    pub fn loaded(&self) -> usize {
        let dicts = self.dicts.iter().filter(|s| s.get().is_some()).count();
        let presence = self.presence.iter().filter(|s| s.get().is_some()).count();
        let rest = [
            self.p_offsets.get().is_some(),
            self.po_presence.get().is_some(),
            self.s_offsets.get().is_some(),
        ];
        dicts + presence + rest.iter().filter(|b| **b).count()
    }

    fn problem<T>(slot: &Slot<T>) -> Option<String> {
        slot.get().and_then(|r| r.as_ref().err().cloned())
    }

    fn dict_len(&self, c: usize) -> Option<u32> {
        self.dict(c).map(|d| d.len() as u32)
    }

    /// Maps sidecar `SUFFIXES[i]`, decides how its bytes are checked, and
    /// opens it. With digests: block by block when `cottas-tui.blocks` holds
    /// a table made for the recorded file, else the whole file now. Without
    /// digests (another producer's version): `validate` decodes it whole,
    /// as the only check there is.
    fn load<T>(
        &self,
        i: usize,
        open: impl FnOnce(CheckedFile) -> Result<T, StoreError>,
        validate: impl FnOnce(&[u8]) -> Result<(), String>,
    ) -> Result<T, String> {
        let path = sidecar_path(&self.base_path, SUFFIXES[i]);
        let (file, handle) = match map_with_handle(&path) {
            Ok(mapped) => {
                if let Ok(mut maps) = self.mappings.lock() {
                    maps.push(mapped.0.clone());
                }
                mapped
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(format!("{}: missing", path.display()))
            }
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        let checked = match &self.digests {
            Some(d) => self.checked_against(d, i, &path, file, handle)?,
            None => {
                validate((*file).as_ref()).map_err(|e| format!("{}: {e}", path.display()))?;
                CheckedFile::whole(&path, file)
            }
        };
        open(checked).map_err(|e| e.to_string())
    }

    fn checked_against(
        &self,
        d: &Digests,
        i: usize,
        path: &Path,
        file: SharedFile,
        handle: std::fs::File,
    ) -> Result<CheckedFile, String> {
        let bytes: &[u8] = (*file).as_ref();
        let refused = || {
            format!("{}: does not match its recorded digest ({}); not used", path.display(), digests::DIGESTS)
        };
        let recorded = d.sidecars.get(SUFFIXES[i]).ok_or_else(refused)?;
        if let Some(table) = self.block_table(i, recorded, bytes.len() as u64) {
            return Ok(CheckedFile::by_blocks(path, file, table, Some(handle)));
        }
        if !digests::matches(recorded, bytes) {
            return Err(refused());
        }
        Ok(CheckedFile::whole(path, file))
    }

    /// The block table of sidecar `i`, when `cottas-tui.blocks` has one made
    /// for the file `recorded` describes and the table's own digest holds.
    fn block_table(&self, i: usize, recorded: &digests::Span, len: u64) -> Option<BlockTable> {
        let (file, b) = self.blocks.get_or_init(|| self.load_blocks()).as_ref()?;
        let e = b.entries.iter().find(|e| e.sidecar as usize == i)?;
        let same_file = e.file_len == len
            && recorded.len == len
            && u64::from_str_radix(&recorded.xxh64, 16).ok() == Some(e.file_xxh64);
        let bytes: &[u8] = (**file).as_ref();
        // The table must lie in the file and have one entry per block; its
        // digest is checked only if a block does not match (`CheckedFile`).
        let table_len = bytes.len().checked_sub(e.table_offset as usize)?;
        let whole_blocks = len.div_ceil(u64::from(b.block_size.max(1)));
        (same_file && e.num_blocks == whole_blocks && table_len >= 8 * e.num_blocks as usize).then(|| {
            BlockTable {
                file: file.clone(),
                offset: e.table_offset as usize,
                block_size: b.block_size,
                digests: TableDigests { table: e.table_xxh64, file: e.file_xxh64 },
            }
        })
    }

    fn load_blocks(&self) -> Option<(SharedFile, Blocks)> {
        let dir = self.base_path.parent()?;
        let file = map_file(&dir.join(digests::BLOCKS)).ok()?;
        let header = blocks::decode_header((*file).as_ref()).ok()?;
        Some((file, header))
    }
}

/// A full decode's verdict, for a sidecar with no digest to check.
fn check<T>(d: crate::format::Decoded<T>) -> Result<(), String> {
    d.result.map(|_| ()).map_err(|e| e.to_string())
}

pub struct Store {
    pub layout: Layout,
    pub base: Base,
    pub sidecars: SidecarSet,
    /// `None`: no marker file (never compacted).
    pub marker: Option<EpochMarker>,
    /// Resident bytes of mapped store files this process keeps before it
    /// releases them (0: no limit). See [`Store::limit_mapped_pages`].
    mapped_budget: std::sync::atomic::AtomicU64,
    /// When the resident pages were last measured ([`MAPPED_CHECK_EVERY`]),
    /// in nanoseconds on [`clock`]; 0 before the first measure.
    mapped_checked: std::sync::atomic::AtomicU64,
}

/// How often a scan measures this process's resident mapped pages. A
/// measure reads `/proc/self/statm` (a few microseconds), and a join calls
/// [`Store::keep_mapped_pages_within_budget`] once per inner lookup: for a
/// 228,000-lookup join on 10M quads that was half of its 15.5 s. Between two
/// measures a scan maps at most what it reads in this time.
const MAPPED_CHECK_EVERY: std::time::Duration = std::time::Duration::from_millis(1);

/// Nanoseconds since the first call, on a monotonic clock.
fn clock() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let start = *START.get_or_init(std::time::Instant::now);
    u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX).max(1)
}

impl Store {
    /// Which log batches this version sees (its marker's rule).
    pub fn visibility(&self) -> crate::store::log::Visibility {
        crate::store::log::Visibility::over(self.marker.map(|m| m.epoch))
    }

    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let layout = layout::resolve(path)?;
        let bare = layout.resolution == layout::Resolution::BareFile;
        let marker = if bare { None } else { read_marker(&layout.version_dir.join(layout::MARKER))? };
        // A bare data.cottas has no version dir whose digests would be its own.
        let digests = if bare { None } else { digests::read(&layout.version_dir)? };
        let base = Base::open_checked(&layout.base, digests.as_ref().map(|d| &d.base))?;
        let sidecars = SidecarSet::new(&layout.base, &base, digests);
        Ok(Store {
            layout,
            base,
            sidecars,
            marker,
            mapped_budget: Default::default(),
            mapped_checked: Default::default(),
        })
    }

    /// Keeps at most about `bytes` of mapped store-file pages resident in
    /// this process: [`Store::keep_mapped_pages_within_budget`], which scans
    /// call between row groups, releases them all when there are more.
    /// The pages stay in the page cache, so what is read again costs a minor
    /// fault, not a disk read. `query --memory-limit` gives it half.
    pub fn limit_mapped_pages(&self, bytes: u64) {
        self.mapped_budget.store(bytes, std::sync::atomic::Ordering::Relaxed);
    }

    /// Releases every mapped page of the base and the sidecars when this
    /// process holds more file pages than the budget (a read of
    /// `/proc/self/statm`: a few microseconds, next to a row group's
    /// decoding). Everything goes at once: choosing mappings by their
    /// resident pages needs `/proc/self/smaps`, whose cost grows with the
    /// mapped size (it made listing 5M members at 100M quads three times
    /// slower).
    pub fn keep_mapped_pages_within_budget(&self) {
        use std::sync::atomic::Ordering::Relaxed;
        let budget = self.mapped_budget.load(Relaxed);
        if budget == 0 {
            return;
        }
        let (now, last) = (clock(), self.mapped_checked.load(Relaxed));
        let every = MAPPED_CHECK_EVERY.as_nanos() as u64;
        if last != 0 && now.saturating_sub(last) < every {
            return;
        }
        self.mapped_checked.store(now, Relaxed);
        let Some(resident) = resident_bytes() else { return };
        crate::store::read::held::keep_freed_heap_within_budget(resident.anonymous);
        if resident.file <= budget {
            return;
        }
        for m in self.sidecars.mapped() {
            release_mapped_pages((*m).as_ref());
        }
        release_mapped_pages(self.base.mapped_bytes());
    }
}

/// A marker that exists but does not decode is an error, never "absent".
pub fn read_marker(path: &Path) -> Result<Option<EpochMarker>, StoreError> {
    match std::fs::read(path) {
        Ok(bytes) => match epoch::decode(&bytes).result {
            Ok(m) => Ok(Some(m)),
            Err(e) => Err(StoreError::from_format(path, &e)),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(StoreError::io(path, e)),
    }
}
