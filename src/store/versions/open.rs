//! An opened store version: the base, its validated sidecars, and its marker.
//!
//! Opening reads the layout, the marker, the digest file and the base's
//! footer: nothing proportional to the data. Each sidecar is mapped, checked
//! against its recorded digest, decoded and checked against the base's
//! dimensions (row groups, rows) and the dictionaries (token counts) the
//! first time a read asks for it, once. One that fails is not used — the
//! read path then prunes less, never returns wrong rows — and the reason is
//! kept for `--explain` and `verify` (`SidecarSet::problems` loads them all).

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use crate::format::dict::Dict;
use crate::format::epoch::{self, EpochMarker};
use crate::format::p_offsets::POffsets;
use crate::format::po_presence::PoPresence;
use crate::format::presence::Presence;
use crate::format::s_offsets::SOffsets;
use crate::format::{dict, p_offsets, po_presence, presence, s_offsets};
use crate::store::base::digests::{self, Digests};
use crate::store::base::Base;
use crate::store::sidecars::{sidecar_path, COLUMNS};
use crate::store::versions::layout::{self, Layout};
use crate::store::StoreError;

/// The sidecars of a base, each loaded on first use: mapped, checked
/// against its digest, decoded and fitted to the base. A sidecar that is
/// missing or fails is `None`, with its reason in [`SidecarSet::problems`].
pub struct SidecarSet {
    base_path: PathBuf,
    digests: Option<Digests>,
    /// Row groups, rows, and the largest row group of the base.
    dims: (u32, u64, usize),
    dicts: [Slot<Dict>; 4],
    presence: [Slot<Presence>; 4],
    p_offsets: Slot<POffsets>,
    po_presence: Slot<PoPresence>,
    s_offsets: Slot<SOffsets>,
    /// Every sidecar this set hands out matched the digest recorded when it
    /// was built from this base (versions this program wrote). Only then does
    /// the read path take subject ids from `.s.offsets` without decoding the
    /// column.
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
            dims: (base.num_row_groups() as u32, base.num_rows(), base.rg_rows_max()),
            dicts: Default::default(),
            presence: Default::default(),
            p_offsets: OnceLock::new(),
            po_presence: OnceLock::new(),
            s_offsets: OnceLock::new(),
        }
    }

    /// The dictionary of column `c` (0 s, 1 p, 2 o, 3 g).
    pub fn dict(&self, c: usize) -> Option<&Dict> {
        let slot =
            self.dicts[c].get_or_init(|| self.load(&format!(".{}.dict", COLUMNS[c]), dict::decode_shared));
        slot.as_ref().ok()
    }

    /// All four dictionaries, when every one is usable.
    pub fn all_dicts(&self) -> Option<[&Dict; 4]> {
        Some([self.dict(0)?, self.dict(1)?, self.dict(2)?, self.dict(3)?])
    }

    pub fn presence(&self, c: usize) -> Option<&Presence> {
        let slot = self.presence[c].get_or_init(|| {
            let pr = self.load(&format!(".{}.presence", COLUMNS[c]), plain(presence::decode))?;
            let (rgs, tokens) = (self.dims.0, self.dict_len(c));
            if pr.num_rgs == rgs && Some(pr.num_tokens) == tokens {
                return Ok(pr);
            }
            Err(format!(
                ".{}.presence: {} row groups × {} tokens does not fit the base ({rgs} row groups) and .{}.dict ({tokens:?} tokens)",
                COLUMNS[c], pr.num_rgs, pr.num_tokens, COLUMNS[c]
            ))
        });
        slot.as_ref().ok()
    }

    pub fn p_offsets(&self) -> Option<&POffsets> {
        let slot = self.p_offsets.get_or_init(|| {
            let x = self.load(".p.offsets", plain(p_offsets::decode))?;
            let (rgs, _, rg_rows_max) = self.dims;
            let rows_fit = x.rows.iter().all(|&r| (r as usize) < rg_rows_max);
            if x.num_rgs == rgs && Some(x.num_preds) == self.dict_len(1) && rows_fit {
                return Ok(x);
            }
            Err(format!(
                ".p.offsets: {} row groups × {} predicates does not fit the base",
                x.num_rgs, x.num_preds
            ))
        });
        slot.as_ref().ok()
    }

    pub fn po_presence(&self) -> Option<&PoPresence> {
        let slot = self.po_presence.get_or_init(|| {
            let x = self.load(".po.presence", plain(po_presence::decode))?;
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

    pub fn s_offsets(&self) -> Option<&SOffsets> {
        let slot = self.s_offsets.get_or_init(|| {
            let x = self.load(".s.offsets", plain(s_offsets::decode))?;
            let rows = self.dims.1;
            if u64::from(x.num_rows_total) == rows && Some(x.ranges.len() as u32) == self.dict_len(0) {
                return Ok(x);
            }
            Err(format!(
                ".s.offsets: {} subjects over {} rows does not fit the base ({rows} rows)",
                x.ranges.len(),
                x.num_rows_total
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

    /// Maps, checks against the digest, decodes.
    fn load<T>(
        &self,
        suffix: &str,
        decode: impl Fn(SharedFile, bool) -> crate::format::Decoded<T>,
    ) -> Result<T, String> {
        let path = sidecar_path(&self.base_path, suffix);
        let file = match read_shared(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(format!("{}: missing", path.display()))
            }
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        let bytes: &[u8] = (*file).as_ref();
        let verified = match &self.digests {
            Some(d) => match d.sidecars.get(suffix) {
                Some(s) if digests::matches(s, bytes) => true,
                _ => {
                    let which = digests::DIGESTS;
                    return Err(format!(
                        "{}: does not match its recorded digest ({which}); not used",
                        path.display()
                    ));
                }
            },
            None => false,
        };
        decode(file.clone(), verified).result.map_err(|e| format!("{}: {e}", path.display()))
    }
}

pub struct Store {
    pub layout: Layout,
    pub base: Base,
    pub sidecars: SidecarSet,
    /// `None`: no marker file (never compacted).
    pub marker: Option<EpochMarker>,
}

impl Store {
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let layout = layout::resolve(path)?;
        let bare = layout.resolution == layout::Resolution::BareFile;
        let marker = if bare { None } else { read_marker(&layout.version_dir.join(layout::MARKER))? };
        // A bare data.cottas has no version dir whose digests would be its own.
        let digests = if bare { None } else { digests::read(&layout.version_dir)? };
        let base = Base::open_checked(&layout.base, digests.as_ref().map(|d| &d.base))?;
        let sidecars = SidecarSet::new(&layout.base, &base, digests);
        Ok(Store { layout, base, sidecars, marker })
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

/// A sidecar's bytes, mapped rather than read: versions are write-once and
/// every rewrite (`index`, `repair`) renames a new file into place, so a
/// mapping never sees its file change. The kernel then pages in only what a
/// query touches, and opening a store copies nothing.
pub type SharedFile = Arc<dyn AsRef<[u8]> + Send + Sync>;

fn read_shared(path: &Path) -> std::io::Result<SharedFile> {
    let file = std::fs::File::open(path)?;
    if file.metadata()?.len() == 0 {
        return Ok(Arc::new(Vec::<u8>::new()));
    }
    // SAFETY: see above; the file is never modified in place while mapped.
    let map = unsafe { memmap2::Mmap::map(&file)? };
    Ok(Arc::new(map))
}

/// Adapts a plain `&[u8]` decoder to [`SidecarSet::load`].
fn plain<T>(
    decode: fn(&[u8]) -> crate::format::Decoded<T>,
) -> impl Fn(SharedFile, bool) -> crate::format::Decoded<T> {
    move |file, _| decode((*file).as_ref())
}
