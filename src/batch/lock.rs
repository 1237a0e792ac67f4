//! One writer per study directory: an OS advisory lock on `DIR/.lock`, held for the life of
//! the study and released by the kernel however the process ends (kill -9 included), so a
//! second `solver batch` on the same directory fails at once while a stale lock file from a
//! killed process never blocks a resume.

use crate::error::{Error, Result};
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read as _, Seek as _, Write as _};
use std::path::{Path, PathBuf};

/// Name of the lock file inside the study directory.
pub const LOCK_FILE: &str = ".lock";

/// The held lock; dropping it releases the directory.
#[derive(Debug)]
pub struct StudyLock {
    _file: File,
}

impl StudyLock {
    /// Creates `dir` if needed and takes its lock, or fails naming the process that holds it.
    pub fn acquire(dir: &Path) -> Result<Self> {
        let io = |path: PathBuf| move |source| Error::Io { path, source };
        if dir.exists() && !dir.is_dir() {
            return Err(Error::InvalidInput(format!(
                "{}: a file, not a directory; a study needs a directory of its own",
                dir.display()
            )));
        }
        std::fs::create_dir_all(dir).map_err(io(dir.to_path_buf()))?;
        let path = dir.join(LOCK_FILE);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io(path.clone()))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                let who = if holder.is_empty() {
                    "another process".to_string()
                } else {
                    format!("process {}", crate::escape::escape(holder))
                };
                return Err(Error::InUse(format!(
                    "{} is in use by another `solver batch` ({who}); wait for it to finish, or \
                     give another --out",
                    dir.display()
                )));
            }
            Err(TryLockError::Error(source)) => return Err(io(path)(source)),
        }
        // The holder's pid, for the message above; the lock itself is the kernel's.
        let pid = std::process::id().to_string();
        let write = file
            .set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| file.write_all(pid.as_bytes()));
        write.map_err(io(path))?;
        Ok(StudyLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_one_directory_fails_until_the_first_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let first = StudyLock::acquire(dir.path()).unwrap();
        let e = StudyLock::acquire(dir.path()).expect_err("held");
        let message = e.to_string();
        assert!(message.contains("in use"), "{message}");
        assert!(
            message.contains(&std::process::id().to_string()),
            "names the holder's pid: {message}"
        );
        drop(first);
        StudyLock::acquire(dir.path()).expect("released on drop");
    }
}
