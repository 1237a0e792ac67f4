//! Turning the study's inputs (directories, globs, matrix files, generated matrices, list files)
//! into the ordered list of matrices it runs, each with the key that identifies it on resume.

use crate::error::{Error, Result};
use crate::sparse::GeneratedMatrix;
use std::path::{Path, PathBuf};

/// One matrix of a study.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatrixInput {
    /// What `load_matrix` is given, and the matrix part of every run key: the canonical
    /// absolute path of a file (so `../shared/matrices` and its absolute form are one study),
    /// or a generator spec as `poisson2d:32`.
    pub key: String,
    /// Short name for tables and plot files: the file name without `.mtx`/`.mtx.gz`.
    pub name: String,
}

/// Expand every input in order, dropping repeats of a matrix. Directories are searched
/// recursively for `.mtx` and `.mtx.gz`, sorted by path. A file with another extension is a
/// list: one input per line (`#` comments and blank lines skipped), relative paths taken from
/// the list's own directory so a list travels with its matrices. A listed path that does not
/// exist is kept: the study records it as a load failure rather than refusing to start.
pub fn expand_inputs(inputs: &[String]) -> Result<Vec<MatrixInput>> {
    let mut out: Vec<MatrixInput> = Vec::new();
    for input in inputs {
        let mut found = Vec::new();
        expand_one(input, Path::new("."), false, &mut found)?;
        if found.is_empty() {
            return Err(Error::InvalidInput(format!(
                "input '{input}' names no matrix (.mtx or .mtx.gz)"
            )));
        }
        for m in found {
            if !out.iter().any(|o| o.key == m.key) {
                out.push(m);
            }
        }
    }
    Ok(out)
}

fn expand_one(input: &str, base: &Path, in_list: bool, out: &mut Vec<MatrixInput>) -> Result<()> {
    match GeneratedMatrix::parse(input) {
        Ok(Some(g)) => {
            out.push(generated(g));
            return Ok(());
        }
        // A mistyped spec on the command line stops the study before it starts; in a list it
        // becomes that matrix's recorded load failure, like an unreadable file.
        Err(e) if !in_list => return Err(e),
        Err(_) => {
            out.push(MatrixInput {
                key: input.to_string(),
                name: input.to_string(),
            });
            return Ok(());
        }
        Ok(None) => {}
    }
    let path = base.join(input);
    if path.is_dir() {
        return walk(&path, out);
    }
    if path.is_file() {
        if is_matrix_file(&path) {
            out.push(file_input(&path));
            return Ok(());
        }
        if in_list {
            // No nested lists: a listed file is a matrix whatever its name.
            out.push(file_input(&path));
            return Ok(());
        }
        return read_list(&path, out);
    }
    if input.contains(['*', '?', '[']) {
        let pattern = path.to_string_lossy().into_owned();
        let paths = glob::glob(&pattern)
            .map_err(|e| Error::InvalidInput(format!("glob '{input}': {e}")))?;
        for entry in paths {
            let p = entry.map_err(|e| Error::Io {
                path: e.path().to_path_buf(),
                source: std::io::Error::other(e.to_string()),
            })?;
            if p.is_dir() {
                walk(&p, out)?;
            } else if is_matrix_file(&p) {
                out.push(file_input(&p));
            }
        }
        return Ok(());
    }
    if in_list {
        out.push(file_input(&path));
        return Ok(());
    }
    Err(Error::InvalidInput(format!(
        "input '{input}' is not a directory, glob, matrix file, list file or generated matrix"
    )))
}

fn read_list(path: &Path, out: &mut Vec<MatrixInput>) -> Result<()> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let base = path.parent().unwrap_or(Path::new("."));
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        expand_one(line, base, true, out)?;
    }
    Ok(())
}

/// Recursive search, sorted so a study's order does not depend on the file system. Symbolic
/// links to directories are not followed (no cycles); links to files are.
fn walk(dir: &Path, out: &mut Vec<MatrixInput>) -> Result<()> {
    let io = |source| Error::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut entries: Vec<(PathBuf, bool)> = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let is_dir = entry.file_type().map_err(io)?.is_dir();
        entries.push((entry.path(), is_dir));
    }
    entries.sort();
    for (path, is_dir) in entries {
        if is_dir {
            walk(&path, out)?;
        } else if is_matrix_file(&path) && path.is_file() {
            out.push(file_input(&path));
        }
    }
    Ok(())
}

fn is_matrix_file(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    name.ends_with(".mtx") || name.ends_with(".mtx.gz")
}

fn file_input(path: &Path) -> MatrixInput {
    let canonical = std::fs::canonicalize(path)
        .or_else(|_| std::path::absolute(path))
        .unwrap_or_else(|_| path.to_path_buf());
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_string_lossy().into_owned());
    MatrixInput {
        key: canonical.to_string_lossy().into_owned(),
        name: matrix_name(&file_name),
    }
}

/// `bcsstk01.mtx.gz` -> `bcsstk01`.
pub fn matrix_name(file_name: &str) -> String {
    let lower = file_name.to_ascii_lowercase();
    for ext in [".mtx.gz", ".mtx"] {
        if lower.ends_with(ext) && lower.len() > ext.len() {
            return file_name[..file_name.len() - ext.len()].to_string();
        }
    }
    file_name.to_string()
}

fn generated(g: GeneratedMatrix) -> MatrixInput {
    let spec = match g {
        GeneratedMatrix::Poisson2d(n) => format!("poisson2d:{n}"),
        GeneratedMatrix::Poisson3d(n) => format!("poisson3d:{n}"),
    };
    MatrixInput {
        key: spec.clone(),
        name: spec,
    }
}
