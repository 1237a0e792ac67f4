//! NVRTC's output kept on disk between processes: the CUBIN it builds for the device's
//! architecture (or the PTX, for a virtual one). An `mp:1024` or `mp:2048` module takes NVRTC
//! a minute or more, and every process that solves in that precision would pay it again. CuPy
//! and Triton keep such a cache for the same reason.
//!
//! An entry's name holds a hash of everything the code depends on (the whole source text, the
//! options with the architecture, NVRTC's version): an entry is used only when all are the
//! same, and a missing, unreadable or unwritable one only costs the compile. The hash is std's
//! `DefaultHasher` (its algorithm may change between Rust releases: then the entries of older
//! builds are just not found).
//!
//! Where: `$PRECSOLVE_KERNEL_CACHE` (`off` for none), else `$XDG_CACHE_HOME/precsolve/kernels`,
//! else `$HOME/.cache/precsolve/kernels`.

use super::nvrtc::Code;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;

/// One source's entry: where it would be, if there is a cache (without its extension, which
/// says what it holds: `.cubin` or `.ptx`).
pub(super) struct Entry {
    path: Option<PathBuf>,
}

impl Entry {
    pub(super) fn new(source_name: &str, text: &str, options: &[String]) -> Entry {
        Self::in_dir(dir(), source_name, text, options)
    }

    fn in_dir(dir: Option<PathBuf>, source_name: &str, text: &str, options: &[String]) -> Entry {
        let path = dir.map(|dir| {
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            (text, options, nvrtc_version()).hash(&mut hasher);
            dir.join(format!("{source_name}-{:016x}", hasher.finish()))
        });
        Entry { path }
    }

    /// Where a compile's code will be kept, for a message to the user who waits for it.
    pub(super) fn kept_where(&self) -> String {
        match self.path.as_ref().and_then(|p| p.parent()) {
            Some(dir) => format!("kept in {} for later runs", dir.display()),
            None => "not kept: PRECSOLVE_KERNEL_CACHE is off".into(),
        }
    }

    /// The code kept by an earlier process, if any.
    pub(super) fn load(&self) -> Option<Code> {
        let path = self.path.as_ref()?;
        let (found, code) = match std::fs::read(path.with_extension("cubin")) {
            Ok(bytes) => (path.with_extension("cubin"), Code::Cubin(bytes)),
            Err(_) => {
                let ptx = std::fs::read_to_string(path.with_extension("ptx")).ok()?;
                (path.with_extension("ptx"), Code::Ptx(ptx))
            }
        };
        log::info!("kernels from the cache: {}", found.display());
        Some(code)
    }

    /// Keep `code` for later processes (written aside, then renamed, so that a process never
    /// reads a half-written entry).
    pub(super) fn store(&self, code: &Code) {
        let Some(path) = &self.path else { return };
        let (path, bytes) = match code {
            Code::Cubin(bytes) => (path.with_extension("cubin"), bytes.as_slice()),
            Code::Ptx(text) => (path.with_extension("ptx"), text.as_bytes()),
        };
        let aside = path.with_extension(format!("{}.part", std::process::id()));
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&aside, bytes))
            .and_then(|()| std::fs::rename(&aside, &path));
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

    fn bytes(code: Option<Code>) -> Option<(&'static str, Vec<u8>)> {
        code.map(|code| match code {
            Code::Cubin(b) => ("cubin", b),
            Code::Ptx(t) => ("ptx", t.into_bytes()),
        })
    }

    #[test]
    fn an_entry_is_found_only_for_the_same_text_and_options() {
        let dir = std::env::temp_dir().join(format!("precsolve-kernel-cache-{}", std::process::id()));
        let at = |text: &str, fmad: &str| {
            let options = ["--gpu-architecture=sm_90".to_string(), format!("--fmad={fmad}")];
            Entry::in_dir(Some(dir.clone()), "mp256", text, &options)
        };
        assert!(at("source", "false").load().is_none());
        at("source", "false").store(&Code::Cubin(vec![0x7f, b'E', b'L', b'F', 0]));
        let found = bytes(at("source", "false").load());
        assert_eq!(found, Some(("cubin", vec![0x7f, b'E', b'L', b'F', 0])));
        assert!(at("source 2", "false").load().is_none());
        assert!(at("source", "true").load().is_none());
        // PTX (a virtual architecture's) is kept and found as text.
        at("source 3", "false").store(&Code::Ptx("// ptx of source 3".into()));
        let found = bytes(at("source 3", "false").load());
        assert_eq!(found, Some(("ptx", b"// ptx of source 3".to_vec())));
        // No directory: nothing kept, nothing found.
        let none = Entry::in_dir(None, "mp256", "source", &[]);
        none.store(&Code::Ptx("x".into()));
        assert!(none.load().is_none());
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
