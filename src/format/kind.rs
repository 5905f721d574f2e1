//! Which file kind a path holds: by magic first (a renamed file is still
//! recognised), then by file name (so a file whose magic is damaged is still
//! decoded as what it should be, and reported as damaged).

use super::{deltalog, dict, epoch, p_offsets, po_presence, presence, s_offsets};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FileKind {
    Dict,
    Presence,
    POffsets,
    PoPresence,
    SOffsets,
    DeltaLog,
    EpochMarker,
    Parquet,
}

impl FileKind {
    pub const ALL: [FileKind; 8] = [
        FileKind::Dict,
        FileKind::Presence,
        FileKind::POffsets,
        FileKind::PoPresence,
        FileKind::SOffsets,
        FileKind::DeltaLog,
        FileKind::EpochMarker,
        FileKind::Parquet,
    ];

    /// Stable identifier used in JSON output.
    pub fn id(self) -> &'static str {
        match self {
            FileKind::Dict => "dict",
            FileKind::Presence => "presence",
            FileKind::POffsets => "p-offsets",
            FileKind::PoPresence => "po-presence",
            FileKind::SOffsets => "s-offsets",
            FileKind::DeltaLog => "deltalog",
            FileKind::EpochMarker => "compacted-epoch",
            FileKind::Parquet => "cottas-parquet",
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            FileKind::Dict => "COTD sorted token dictionary",
            FileKind::Presence => "COTP per-row-group presence bitmap",
            FileKind::POffsets => "COTO per-(row group, predicate) row positions",
            FileKind::PoPresence => "COPO per-row-group (predicate, object) pairs",
            FileKind::SOffsets => "COTS per-subject global row ranges",
            FileKind::DeltaLog => "DLOG delta log",
            FileKind::EpochMarker => "CEP1 compacted-epoch marker",
            FileKind::Parquet => "COTTAS base (Parquet)",
        }
    }

    pub fn magic(self) -> [u8; 4] {
        match self {
            FileKind::Dict => dict::MAGIC,
            FileKind::Presence => presence::MAGIC,
            FileKind::POffsets => p_offsets::MAGIC,
            FileKind::PoPresence => po_presence::MAGIC,
            FileKind::SOffsets => s_offsets::MAGIC,
            FileKind::DeltaLog => deltalog::MAGIC,
            FileKind::EpochMarker => epoch::MAGIC,
            FileKind::Parquet => *b"PAR1",
        }
    }
}

/// The kind the file name says, if it follows the store's naming.
pub fn kind_from_name(name: &str) -> Option<FileKind> {
    let name = name.rsplit('/').next().unwrap_or(name);
    let suffixes: [(&str, FileKind); 12] = [
        (".po.presence", FileKind::PoPresence),
        (".presence", FileKind::Presence),
        (".p.offsets", FileKind::POffsets),
        (".s.offsets", FileKind::SOffsets),
        (".dict", FileKind::Dict),
        ("data.deltalog", FileKind::DeltaLog),
        (".deltalog", FileKind::DeltaLog),
        ("data.compacted-epoch", FileKind::EpochMarker),
        (".compacted-epoch", FileKind::EpochMarker),
        (".cottas", FileKind::Parquet),
        (".parquet", FileKind::Parquet),
        ("compacted-epoch", FileKind::EpochMarker),
    ];
    suffixes.iter().find(|(s, _)| name.ends_with(s)).map(|&(_, k)| k)
}

/// Detects the kind from the first bytes, falling back to the name.
pub fn detect(name: &str, head: &[u8]) -> Option<FileKind> {
    if head.len() >= 4 {
        let m = [head[0], head[1], head[2], head[3]];
        if m == dict::LEGACY_MAGIC {
            return Some(FileKind::Dict);
        }
        if let Some(k) = FileKind::ALL.iter().find(|k| k.magic() == m) {
            return Some(*k);
        }
    }
    kind_from_name(name)
}
