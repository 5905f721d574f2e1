//! Durable file-system steps: write + fsync, directory fsync, atomic symlink
//! replacement. Every on-disk change of the store goes through these so the
//! write → fsync → rename → fsync-dir order is written down once.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::Path;

/// Writes `bytes` to `path` (created or truncated) and fsyncs the file.
pub fn write_synced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = File::create(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

/// fsyncs a directory so renames and creations inside it are durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Points `dir/name` at `target` atomically: a temp symlink renamed over it.
pub fn replace_symlink(dir: &Path, name: &str, target: &str) -> io::Result<()> {
    let tmp = dir.join(format!(".{name}.tmp.{}", std::process::id()));
    let _ = fs::remove_file(&tmp);
    std::os::unix::fs::symlink(target, &tmp)?;
    fs::rename(&tmp, dir.join(name))?;
    sync_dir(dir)
}
