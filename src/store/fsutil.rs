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

/// Copies `from` to `to` so that a file at `to` is always whole: the bytes
/// go to `to` + `.partial`, are fsynced, then renamed, and the directory is
/// fsynced. A kill part way leaves only the `.partial` file. Backups are
/// made this way: one under its own name can be trusted.
pub fn copy_whole(from: &Path, to: &Path) -> io::Result<()> {
    let partial = partial_of(to);
    fs::copy(from, &partial)?;
    File::open(&partial)?.sync_all()?;
    publish(&partial, to)
}

/// Writes `bytes` to `to` so that a reader finds the old file or the new
/// one, whole, never a part: as [`copy_whole`], from memory.
pub fn write_whole(to: &Path, bytes: &[u8]) -> io::Result<()> {
    let partial = partial_of(to);
    write_synced(&partial, bytes)?;
    publish(&partial, to)
}

fn partial_of(to: &Path) -> std::path::PathBuf {
    let mut partial = to.as_os_str().to_owned();
    partial.push(".partial");
    std::path::PathBuf::from(partial)
}

/// Renames the fsynced `partial` to `to` and fsyncs the directory.
fn publish(partial: &Path, to: &Path) -> io::Result<()> {
    fs::rename(partial, to)?;
    sync_dir(to.parent().unwrap_or(Path::new(".")))
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

/// Seconds since the Unix epoch, now.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// `secs` since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ` (UTC), for file
/// names and messages a person reads at 3 a.m.
pub fn utc_timestamp(secs: u64) -> String {
    let rem = secs % 86_400;
    let (year, month, day) = civil_date((secs / 86_400) as i64);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem / 60 % 60, rem % 60)
}

/// Year, month (1-12) and day of a count of days since 1970-01-01
/// (Howard Hinnant's civil-from-days: 400-year eras of 146,097 days,
/// counted from 0000-03-01 so that the leap day ends the year).
pub fn civil_date(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * shifted_month + 2) / 5 + 1) as u32;
    let month = if shifted_month < 10 { shifted_month + 3 } else { shifted_month - 9 } as u32;
    (year_of_era + era * 400 + i64::from(month <= 2), month, day)
}

#[cfg(test)]
mod tests {
    #[test]
    fn utc_timestamps() {
        assert_eq!(super::utc_timestamp(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::utc_timestamp(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(super::utc_timestamp(1_796_000_000), "2026-11-30T00:53:20Z");
    }
}
