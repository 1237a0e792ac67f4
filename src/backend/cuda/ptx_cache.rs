//! NVRTC's output kept on disk between processes. An `mp:1024` or `mp:2048` module takes NVRTC
//! minutes, and every process that solves in that precision would pay them again: the driver
//! caches the machine code it builds from PTX (`~/.nv/ComputeCache`), not NVRTC's PTX. CuPy and
//! Triton keep such a cache for the same reason.
//!
//! An entry's name holds a hash of everything the PTX depends on (the whole source text, the
//! architecture, the options, NVRTC's version): an entry is used only when all are the same,
//! and a missing, unreadable or unwritable one only costs the compile. The hash is std's
//! `DefaultHasher` (its algorithm may change between Rust releases: then the entries of older
//! builds are just not found).
//!
//! Where: `$PRECSOLVE_KERNEL_CACHE` (`off` for none), else `$XDG_CACHE_HOME/precsolve/kernels`,
//! else `$HOME/.cache/precsolve/kernels`.

use cudarc::nvrtc::{CompileOptions, Ptx};
use std::hash::{Hash, Hasher};
use std::path::PathBuf;

/// One source's entry: where it would be, if there is a cache.
pub(super) struct Entry {
    path: Option<PathBuf>,
}

impl Entry {
    pub(super) fn new(source_name: &str, text: &str, options: &CompileOptions) -> Entry {
        Self::in_dir(dir(), source_name, text, options)
    }

    fn in_dir(
        dir: Option<PathBuf>,
        source_name: &str,
        text: &str,
        options: &CompileOptions,
    ) -> Entry {
        let path = dir.map(|dir| {
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            (text, options, nvrtc_version()).hash(&mut hasher);
            dir.join(format!("{source_name}-{:016x}.ptx", hasher.finish()))
        });
        Entry { path }
    }

    /// The PTX kept by an earlier process, if any.
    pub(super) fn load(&self) -> Option<Ptx> {
        let path = self.path.as_ref()?;
        let ptx = std::fs::read_to_string(path).ok()?;
        log::info!("kernels from the cache: {}", path.display());
        Some(Ptx::from_src(ptx))
    }

    /// Keep `ptx` for later processes (written aside, then renamed, so that a process never
    /// reads a half-written entry).
    pub(super) fn store(&self, ptx: &Ptx) {
        let Some(path) = &self.path else { return };
        let aside = path.with_extension(format!("{}.part", std::process::id()));
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&aside, ptx.to_src()))
            .and_then(|()| std::fs::rename(&aside, path));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&aside);
            log::debug!("kernel cache {}: {e}", path.display());
        }
    }
}

fn dir() -> Option<PathBuf> {
    let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    match var("PRECSOLVE_KERNEL_CACHE") {
        Some(v) if v == "off" => None,
        Some(v) => Some(PathBuf::from(v)),
        None => var("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".cache")))
            .map(|base| base.join("precsolve").join("kernels")),
    }
}

/// NVRTC's `(major, minor)`, `(0, 0)` if it does not say.
fn nvrtc_version() -> (i32, i32) {
    use cudarc::nvrtc::sys;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: only tries to dlopen libnvrtc, then (loaded) nvrtcVersion writes two ints.
    let ok = unsafe {
        sys::is_culib_present() && sys::nvrtcVersion(&mut major, &mut minor) == sys::nvrtcResult::NVRTC_SUCCESS
    };
    if ok {
        (major, minor)
    } else {
        (0, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_found_only_for_the_same_text_and_options() {
        let dir = std::env::temp_dir().join(format!("precsolve-ptx-cache-{}", std::process::id()));
        let at = |text: &str, fmad| {
            let options = CompileOptions {
                fmad: Some(fmad),
                ..Default::default()
            };
            Entry::in_dir(Some(dir.clone()), "mp256", text, &options)
        };
        assert!(at("source", false).load().is_none());
        at("source", false).store(&Ptx::from_src("// ptx of source"));
        let found = at("source", false).load().map(|p| p.to_src());
        assert_eq!(found.as_deref(), Some("// ptx of source"));
        assert!(at("source 2", false).load().is_none());
        assert!(at("source", true).load().is_none());
        // No directory: nothing kept, nothing found.
        let none = Entry::in_dir(None, "mp256", "source", &CompileOptions::default());
        none.store(&Ptx::from_src("x"));
        assert!(none.load().is_none());
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
