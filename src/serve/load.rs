//! Which `LOAD` requests the endpoint lets through: none, unless
//! `--allow-load DIR`, and then only files under DIR.
//!
//! A path is judged twice: as written (absolute, no `..`, under DIR), so a
//! request cannot learn whether a file outside DIR exists; and resolved
//! (symlinks followed), so a link inside DIR cannot lead out of it. Both
//! refusals are the same 403. The check runs just before the update, under
//! no lock; someone who can rename files inside DIR between the check and
//! the read could still swap a file for a link (the operator's own
//! directory: documented in docs/serve.md).

use std::path::{Component, Path, PathBuf};

use crate::sparql::update::load_path;

#[derive(Debug, PartialEq, Eq)]
pub enum LoadRefusal {
    /// No `--allow-load`, a non-file IRI, or a file outside the directory.
    Forbidden(String),
    /// Under the directory as written, but it cannot be resolved (missing).
    Unreadable(String),
}

/// Checks one LOAD source against the allowed directory (canonical).
pub fn check(source: &str, allowed: Option<&Path>) -> Result<(), LoadRefusal> {
    let Some(dir) = allowed else {
        return Err(LoadRefusal::Forbidden(
            "LOAD is refused: this endpoint reads no files and makes no outbound requests \
             (start it with --allow-load DIR to permit files under DIR, or use `cottas-tui update` locally)"
                .into(),
        ));
    };
    let outside = || {
        LoadRefusal::Forbidden(format!(
            "LOAD <{source}> is refused: only file: IRIs of files under {} may be loaded",
            dir.display()
        ))
    };
    let path = load_path(source).ok_or_else(outside)?;
    let plain = path.is_absolute() && path.components().all(|c| !matches!(c, Component::ParentDir));
    if !plain || !path.starts_with(dir) {
        return Err(outside());
    }
    let resolved: PathBuf = path
        .canonicalize()
        .map_err(|e| LoadRefusal::Unreadable(format!("LOAD <{source}>: {}: {e}", path.display())))?;
    if !resolved.starts_with(dir) {
        return Err(outside());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_files_under_the_directory_pass_and_outside_is_one_answer() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("allowed")).unwrap();
        let dir = root.path().join("allowed").canonicalize().unwrap();
        std::fs::write(dir.join("ok.nt"), "").unwrap();
        std::fs::write(root.path().join("secret.nt"), "").unwrap();
        std::os::unix::fs::symlink(root.path().join("secret.nt"), dir.join("link.nt")).unwrap();
        let iri = |p: &Path| format!("file://{}", p.display());
        assert_eq!(check(&iri(&dir.join("ok.nt")), Some(&dir)), Ok(()));
        assert!(matches!(check(&iri(&dir.join("ok.nt")), None), Err(LoadRefusal::Forbidden(_))));
        let forbidden = [
            iri(&root.path().join("secret.nt")),
            iri(&dir.join("../secret.nt")),
            iri(&dir.join("link.nt")),
            "file:///etc/passwd".into(),
            "file://localhost/etc/passwd".into(),
            "http://example.org/data.nt".into(),
            iri(&root.path().join("missing.nt")),
        ];
        for source in forbidden {
            assert!(matches!(check(&source, Some(&dir)), Err(LoadRefusal::Forbidden(_))), "{source}");
        }
        let missing = check(&iri(&dir.join("missing.nt")), Some(&dir));
        assert!(matches!(missing, Err(LoadRefusal::Unreadable(_))), "{missing:?}");
        // Percent-encoding is read as the load will read it.
        std::fs::write(dir.join("a b.nt"), "").unwrap();
        assert_eq!(check(&format!("file://{}/a%20b.nt", dir.display()), Some(&dir)), Ok(()));
    }
}
