//! Store-level errors: always the file, and where known the byte offset.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::format::FormatError;

#[derive(Debug)]
pub enum StoreError {
    /// Reading or opening failed.
    Io { path: PathBuf, source: std::io::Error },
    /// Writing something new failed (a full disk, a read-only mount): the
    /// file named is the one being written, and nothing says it is damaged.
    Write { path: PathBuf, source: std::io::Error },
    /// A store file that does not decode; `offset` is in that file, when
    /// the fault has one place (a count that disagrees with another file's
    /// has none).
    Format { path: PathBuf, offset: Option<u64>, detail: String },
    /// The Parquet layer refused the base.
    Parquet { path: PathBuf, context: String, detail: String },
    /// The arguments or the directory are not a store.
    NotAStore { path: PathBuf, detail: String },
    /// Another process holds the writer lock (`holder` is what it wrote there).
    Locked { path: PathBuf, holder: String },
    /// Stopped on request before anything was changed at `path`.
    Cancelled { path: PathBuf },
}

impl StoreError {
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        StoreError::Io { path: path.to_path_buf(), source }
    }
    pub fn write(path: &Path, source: std::io::Error) -> Self {
        StoreError::Write { path: path.to_path_buf(), source }
    }
    pub fn format(path: &Path, offset: u64, detail: impl Into<String>) -> Self {
        StoreError::Format { path: path.to_path_buf(), offset: Some(offset), detail: detail.into() }
    }
    /// A fault of the file as a whole, at no one byte.
    pub fn format_anywhere(path: &Path, detail: impl Into<String>) -> Self {
        StoreError::Format { path: path.to_path_buf(), offset: None, detail: detail.into() }
    }
    pub fn from_format(path: &Path, e: &FormatError) -> Self {
        StoreError::Format { path: path.to_path_buf(), offset: Some(e.offset), detail: e.to_string() }
    }
    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            StoreError::Io { path, .. }
            | StoreError::Write { path, .. }
            | StoreError::Format { path, .. }
            | StoreError::Parquet { path, .. }
            | StoreError::NotAStore { path, .. }
            | StoreError::Locked { path, .. }
            | StoreError::Cancelled { path } => path,
        }
    }
    /// The byte offset in [`Self::path`], where the fault has one.
    pub fn offset(&self) -> Option<u64> {
        match self {
            StoreError::Format { offset, .. } => *offset,
            _ => None,
        }
    }
    pub fn parquet(path: &Path, context: impl Into<String>, e: impl fmt::Display) -> Self {
        StoreError::Parquet { path: path.to_path_buf(), context: context.into(), detail: e.to_string() }
    }
    pub fn not_a_store(path: &Path, detail: impl Into<String>) -> Self {
        StoreError::NotAStore { path: path.to_path_buf(), detail: detail.into() }
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            StoreError::Write { path, source } => write!(f, "{}: writing failed: {source}", path.display()),
            StoreError::Format { path, offset, detail } => match offset {
                // FormatError texts already start with "at byte …".
                Some(offset) if !detail.starts_with("at byte") => {
                    write!(f, "{}: at byte {offset} ({offset:#x}): {detail}", path.display())
                }
                _ => write!(f, "{}: {detail}", path.display()),
            },
            StoreError::Parquet { path, context, detail } => {
                write!(f, "{}: {context}: {detail}", path.display())
            }
            StoreError::NotAStore { path, detail } => write!(f, "{}: {detail}", path.display()),
            StoreError::Locked { path, holder } => write!(
                f,
                "{}: store is locked by {holder}; retry later or pass --wait SECONDS",
                path.display()
            ),
            StoreError::Cancelled { path } => write!(f, "{}: cancelled; nothing was changed", path.display()),
        }
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreError::Io { source, .. } | StoreError::Write { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl crate::exit::Classify for StoreError {
    /// A held lock can be retried; everything else is the store or the
    /// environment.
    fn exit_class(&self) -> crate::exit::ExitClass {
        match self {
            StoreError::Locked { .. } => crate::exit::ExitClass::Locked,
            _ => crate::exit::ExitClass::Failure,
        }
    }
}
