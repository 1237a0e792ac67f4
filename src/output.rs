//! Output files that never cost what was computed: a target is checked before any work starts
//! (by creating the temporary file beside it that will later hold its content), then written
//! whole, synced and renamed into place, so a reader never sees half a file and a bad path
//! (`--history results/`, `--write-x /proc/x`) fails in the first millisecond, not after a
//! long solve.

use crate::error::{Error, Result};
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// A file to be written later, already known to be writable.
#[derive(Debug)]
pub struct OutputFile {
    path: PathBuf,
    tmp: tempfile::NamedTempFile,
}

impl OutputFile {
    /// Checks that `path` can be written: it is not a directory, and its directory exists and
    /// takes a new file (the temporary file made for the check, `.NAME.XXXXXX.tmp`, is removed
    /// again if the output is dropped unwritten).
    pub fn prepare(path: &Path) -> Result<Self> {
        let io = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        if path.is_dir() {
            return Err(io(std::io::Error::new(
                std::io::ErrorKind::IsADirectory,
                "is a directory; give a file name",
            )));
        }
        let name = path.file_name().ok_or_else(|| {
            io(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "names no file",
            ))
        })?;
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let mut prefix = std::ffi::OsString::from(".");
        prefix.push(name);
        prefix.push(".");
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(".tmp");
        // 0666 less the umask, as a file made by open() gets (tempfile's own default is 0600).
        #[cfg(unix)]
        builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
        let tmp = builder.tempfile_in(dir).map_err(|e| {
            io(std::io::Error::new(
                e.kind(),
                format!("cannot be written ({e})"),
            ))
        })?;
        Ok(OutputFile {
            path: path.to_path_buf(),
            tmp,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `bytes` and renames the file into place. Should that fail now (the disk filled
    /// up since `prepare`), the bytes are saved in the system's temporary directory instead and
    /// the error says where.
    pub fn commit(mut self, bytes: &[u8]) -> Result<()> {
        let written = self
            .tmp
            .write_all(bytes)
            .and_then(|()| self.tmp.as_file().sync_data());
        let result = match written {
            Ok(()) => self.tmp.persist(&self.path).map(drop).map_err(|e| e.error),
            Err(e) => Err(e),
        };
        result.map_err(|source| rescue(&self.path, bytes, source))
    }
}

/// Writes `bytes` to `path` through [`OutputFile`]: checked, whole, renamed into place.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    OutputFile::prepare(path)?.commit(bytes)
}

/// The write to `path` failed late: keep the bytes somewhere and say where.
#[cold]
fn rescue(path: &Path, bytes: &[u8], source: std::io::Error) -> Error {
    let name = path
        .file_name()
        .map_or("output".into(), |n| n.to_string_lossy().into_owned());
    let fallback = std::env::temp_dir().join(format!("solver-{}-{name}", std::process::id()));
    let saved = std::fs::write(&fallback, bytes).is_ok();
    let message = if saved {
        format!("{source}; the content was saved to {}", fallback.display())
    } else {
        format!("{source}; it could not be saved elsewhere either")
    };
    Error::Io {
        path: path.to_path_buf(),
        source: std::io::Error::new(source.kind(), message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_or_a_missing_folder_fails_at_prepare() {
        let dir = tempfile::tempdir().unwrap();
        let e = OutputFile::prepare(dir.path()).expect_err("a directory");
        assert!(e.to_string().contains("is a directory"), "{e}");
        let e = OutputFile::prepare(&dir.path().join("no/such/x.csv")).expect_err("no folder");
        assert!(e.to_string().contains("no/such/x.csv"), "{e}");
    }

    #[test]
    fn prepared_files_are_written_whole_and_leave_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.txt");
        std::fs::write(&path, "old").unwrap();
        let out = OutputFile::prepare(&path).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
        out.commit(b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        drop(OutputFile::prepare(&dir.path().join("unused.txt")).unwrap());
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("x.txt")]);
    }
}
