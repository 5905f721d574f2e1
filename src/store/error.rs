//! Store-level errors: always the file, and where known the byte offset.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::format::FormatError;

#[derive(Debug)]
pub enum StoreError {
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A store file that does not decode; `offset` is in that file.
    Format {
        path: PathBuf,
        offset: u64,
        detail: String,
    },
    /// The Parquet layer refused the base.
    Parquet {
        path: PathBuf,
        context: String,
        detail: String,
    },
    /// The arguments or the directory are not a store.
    NotAStore {
        path: PathBuf,
        detail: String,
    },
    /// Another process holds the writer lock (`holder` is what it wrote there).
    Locked {
        path: PathBuf,
        holder: String,
    },
}

impl StoreError {
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        StoreError::Io { path: path.to_path_buf(), source }
    }
    pub fn format(path: &Path, offset: u64, detail: impl Into<String>) -> Self {
        StoreError::Format { path: path.to_path_buf(), offset, detail: detail.into() }
    }
    pub fn from_format(path: &Path, e: &FormatError) -> Self {
        StoreError::Format { path: path.to_path_buf(), offset: e.offset, detail: e.to_string() }
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
            StoreError::Format { path, offset, detail } => {
                // FormatError texts already start with "at byte …".
                if detail.starts_with("at byte") {
                    write!(f, "{}: {detail}", path.display())
                } else {
                    write!(f, "{}: at byte {offset} ({offset:#x}): {detail}", path.display())
                }
            }
            StoreError::Parquet { path, context, detail } => {
                write!(f, "{}: {context}: {detail}", path.display())
            }
            StoreError::NotAStore { path, detail } => write!(f, "{}: {detail}", path.display()),
            StoreError::Locked { path, holder } => write!(
                f,
                "{}: store is locked by {holder}; retry later or pass --wait SECONDS",
                path.display()
            ),
        }
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
