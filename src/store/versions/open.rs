//! An opened store version: the base, its validated sidecars, and its marker.
//!
//! Sidecars are checked on open against the base's dimensions (row groups,
//! rows) and against each other (token counts). One that fails is not used —
//! the read path then prunes less, never returns wrong rows — and the reason is
//! kept for `--explain` and `verify`.

use std::path::Path;
use std::sync::Arc;

use crate::format::dict::Dict;
use crate::format::epoch::{self, EpochMarker};
use crate::format::p_offsets::POffsets;
use crate::format::po_presence::PoPresence;
use crate::format::presence::Presence;
use crate::format::s_offsets::SOffsets;
use crate::format::{dict, p_offsets, po_presence, presence, s_offsets};
use crate::store::base::digests::{self, Digests};
use crate::store::base::Base;
use crate::store::sidecars::sidecar_path;
use crate::store::versions::layout::{self, Layout};
use crate::store::StoreError;

/// The sidecars that decoded and fit the base; `None` where not usable.
#[derive(Default)]
pub struct SidecarSet {
    pub dicts: [Option<Dict>; 4],
    pub presence: [Option<Presence>; 4],
    pub p_offsets: Option<POffsets>,
    pub po_presence: Option<PoPresence>,
    pub s_offsets: Option<SOffsets>,
    /// Every sidecar kept here matched the digest recorded when it was built
    /// from this base (versions this program wrote). Only then does the read
    /// path take subject ids from `.s.offsets` without decoding the column.
    pub verified: bool,
    /// Why each missing or rejected sidecar is not used.
    pub problems: Vec<String>,
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
        let sidecars = load_sidecars(&layout.base, &base, digests.as_ref());
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

fn load<T>(
    base_path: &Path,
    suffix: &str,
    problems: &mut Vec<String>,
    digests: Option<&Digests>,
    decode: impl Fn(SharedFile, bool) -> crate::format::Decoded<T>,
) -> Option<T> {
    let path = sidecar_path(base_path, suffix);
    match read_shared(&path) {
        Ok(file) => {
            let bytes: &[u8] = (*file).as_ref();
            let verified = match digests {
                Some(d) => match d.sidecars.get(suffix) {
                    Some(s) if digests::matches(s, bytes) => true,
                    _ => {
                        problems.push(format!(
                            "{}: does not match its recorded digest ({}); not used",
                            path.display(),
                            digests::DIGESTS
                        ));
                        return None;
                    }
                },
                None => false,
            };
            match decode(file.clone(), verified).result {
                Ok(v) => Some(v),
                Err(e) => {
                    problems.push(format!("{}: {e}", path.display()));
                    None
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            problems.push(format!("{}: missing", path.display()));
            None
        }
        Err(e) => {
            problems.push(format!("{}: {e}", path.display()));
            None
        }
    }
}

/// Adapts a plain `&[u8]` decoder to [`load`].
fn plain<T>(
    decode: fn(&[u8]) -> crate::format::Decoded<T>,
) -> impl Fn(SharedFile, bool) -> crate::format::Decoded<T> {
    move |file, _| decode((*file).as_ref())
}

fn load_sidecars(base_path: &Path, base: &Base, digests: Option<&Digests>) -> SidecarSet {
    let mut set = SidecarSet { verified: digests.is_some(), ..SidecarSet::default() };
    let p = &mut set.problems;
    let cols = ["s", "p", "o", "g"];
    let dicts: [Option<Dict>; 4] = std::array::from_fn(|c| {
        load(base_path, &format!(".{}.dict", cols[c]), p, digests, dict::decode_shared)
    });
    let pres: [Option<Presence>; 4] = std::array::from_fn(|c| {
        load(base_path, &format!(".{}.presence", cols[c]), p, digests, plain(presence::decode))
    });
    let rgs = base.num_row_groups() as u32;
    let len = |c: usize| dicts[c].as_ref().map(|d| d.len() as u32);
    for (c, pr) in pres.into_iter().enumerate() {
        set.presence[c] = pr.filter(|pr| {
            let fits = pr.num_rgs == rgs && Some(pr.num_tokens) == len(c);
            if !fits {
                p.push(format!(
                    ".{}.presence: {} row groups × {} tokens does not fit the base ({rgs} row groups) and .{}.dict ({:?} tokens)",
                    cols[c], pr.num_rgs, pr.num_tokens, cols[c], len(c)
                ));
            }
            fits
        });
    }
    let po = load(base_path, ".p.offsets", p, digests, plain(p_offsets::decode));
    let rg_rows_max = base.rg_rows_max();
    set.p_offsets = po.filter(|x| {
        let ok = x.num_rgs == rgs
            && Some(x.num_preds) == len(1)
            && x.rows.iter().all(|&r| (r as usize) < rg_rows_max);
        if !ok {
            p.push(format!(
                ".p.offsets: {} row groups × {} predicates does not fit the base",
                x.num_rgs, x.num_preds
            ));
        }
        ok
    });
    let pp = load(base_path, ".po.presence", p, digests, plain(po_presence::decode));
    set.po_presence = pp.filter(|x| {
        let ok = x.num_rgs == rgs && Some(x.pred_dict_size) == len(1) && Some(x.obj_dict_size) == len(2);
        if !ok {
            p.push(format!(
                ".po.presence: dimensions {}×{}×{} do not fit the base and dictionaries",
                x.num_rgs, x.pred_dict_size, x.obj_dict_size
            ));
        }
        ok
    });
    let so = load(base_path, ".s.offsets", p, digests, plain(s_offsets::decode));
    set.s_offsets = so.filter(|x| {
        let ok = u64::from(x.num_rows_total) == base.num_rows() && Some(x.ranges.len() as u32) == len(0);
        if !ok {
            p.push(format!(
                ".s.offsets: {} subjects over {} rows does not fit the base ({} rows)",
                x.ranges.len(),
                x.num_rows_total,
                base.num_rows()
            ));
        }
        ok
    });
    set.dicts = dicts;
    set
}
