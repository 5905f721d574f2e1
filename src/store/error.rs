//! Store-level errors: always the file, and where known the byte offset.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
    /// has none). `source` is the codec's own error, where one found it.
    Format { path: PathBuf, offset: Option<u64>, detail: String, source: Option<Box<FormatError>> },
    /// The Parquet layer refused the base (`source`: the parquet crate's
    /// error, or what our writer found).
    Parquet { path: PathBuf, context: String, source: Arc<dyn std::error::Error + Send + Sync> },
    /// The path is not a store, or not the kind of store the command works
    /// on (a version dir or a bare file where a chunk dir is needed).
    NotAStore { path: PathBuf, detail: String },
    /// A version, or the `current` link, that is not whole: a version dir
    /// without its base, `current` pointing at one.
    Incomplete { path: PathBuf, detail: String },
    /// A change refused to keep committed data safe until the user acts
    /// (compact first, cut the damage, or pass `--force`).
    Refused { path: PathBuf, detail: String },
    /// Another process changed the store while this one worked; nothing
    /// was swapped, and running again is safe.
    Raced { path: PathBuf, detail: String },
    /// A log entry the log cannot hold (entry `index` of the batch).
    BadEntry { path: PathBuf, index: usize, detail: String },
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
        StoreError::Format {
            path: path.to_path_buf(),
            offset: Some(offset),
            detail: detail.into(),
            source: None,
        }
    }
    /// A fault of the file as a whole, at no one byte.
    pub fn format_anywhere(path: &Path, detail: impl Into<String>) -> Self {
        StoreError::Format { path: path.to_path_buf(), offset: None, detail: detail.into(), source: None }
    }
    pub fn from_format(path: &Path, e: &FormatError) -> Self {
        StoreError::Format {
            path: path.to_path_buf(),
            offset: Some(e.offset),
            detail: e.to_string(),
            source: Some(Box::new(e.clone())),
        }
    }
    pub fn incomplete(path: &Path, detail: impl Into<String>) -> Self {
        StoreError::Incomplete { path: path.to_path_buf(), detail: detail.into() }
    }
    pub fn refused(path: &Path, detail: impl Into<String>) -> Self {
        StoreError::Refused { path: path.to_path_buf(), detail: detail.into() }
    }
    pub fn raced(path: &Path, detail: impl Into<String>) -> Self {
        StoreError::Raced { path: path.to_path_buf(), detail: detail.into() }
    }
    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            StoreError::Io { path, .. }
            | StoreError::Write { path, .. }
            | StoreError::Format { path, .. }
            | StoreError::Parquet { path, .. }
            | StoreError::NotAStore { path, .. }
            | StoreError::Incomplete { path, .. }
            | StoreError::Refused { path, .. }
            | StoreError::Raced { path, .. }
            | StoreError::BadEntry { path, .. }
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
    pub fn parquet(
        path: &Path,
        context: impl Into<String>,
        e: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        StoreError::Parquet { path: path.to_path_buf(), context: context.into(), source: Arc::from(e.into()) }
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
            StoreError::Format { path, offset, detail, .. } => match offset {
                // FormatError texts already start with "at byte …".
                Some(offset) if !detail.starts_with("at byte") => {
                    write!(f, "{}: at byte {offset} ({offset:#x}): {detail}", path.display())
                }
                _ => write!(f, "{}: {detail}", path.display()),
            },
            StoreError::Parquet { path, context, source } => {
                write!(f, "{}: {context}: {source}", path.display())
            }
            StoreError::NotAStore { path, detail }
            | StoreError::Incomplete { path, detail }
            | StoreError::Refused { path, detail }
            | StoreError::Raced { path, detail } => write!(f, "{}: {detail}", path.display()),
            StoreError::BadEntry { path, index, detail } => {
                write!(f, "{}: entry {index} {detail}", path.display())
            }
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
            StoreError::Format { source: Some(source), .. } => Some(source.as_ref()),
            StoreError::Parquet { source, .. } => Some(source.as_ref()),
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error;

    /// The codec's and the parquet crate's errors stay reachable as the
    /// source, and the message says each once.
    #[test]
    fn format_and_parquet_errors_keep_their_source() {
        let codec = FormatError::structure(12, "num_tokens", "expected 3, found 4");
        let e = StoreError::from_format(Path::new("x.dict"), &codec);
        let source = e.source().and_then(|s| s.downcast_ref::<FormatError>());
        assert_eq!(source, Some(&codec));
        assert_eq!(e.offset(), Some(12));

        let e = StoreError::parquet(Path::new("data.cottas"), "row group 3", "the footer lies");
        assert_eq!(e.source().map(|s| s.to_string()).as_deref(), Some("the footer lies"));
        assert_eq!(e.to_string(), "data.cottas: row group 3: the footer lies");
    }

    #[test]
    fn each_kind_names_its_file() {
        let p = Path::new("chunk/data.deltalog");
        for e in [
            StoreError::refused(p, "holds 2 batches"),
            StoreError::raced(p, "changed meanwhile"),
            StoreError::incomplete(p, "no base"),
            StoreError::BadEntry { path: p.into(), index: 3, detail: "(add) cannot be logged: why".into() },
        ] {
            assert_eq!(e.path(), p);
            assert!(e.to_string().starts_with("chunk/data.deltalog: "), "{e}");
        }
    }
}
