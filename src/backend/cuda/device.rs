//! Finding a usable GPU, and the process-wide store of NVRTC-compiled kernels.

use crate::error::{Error, Result};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream, DriverError};
use cudarc::nvrtc::Ptx;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Kernel sources, embedded at build time and compiled by NVRTC at first use (never by build.rs).
/// NVRTC takes no headers from cudarc, so the common headers are prepended to each source.
const COMMON: &[&str] = &[
    include_str!("../../../kernels/common/dd.cuh"),
    include_str!("../../../kernels/common/reduce.cuh"),
    include_str!("../../../kernels/common/launch.cuh"),
    include_str!("../../../kernels/common/td.cuh"),
    include_str!("../../../kernels/common/qd.cuh"),
    include_str!("../../../kernels/common/ilu.cuh"),
    include_str!("../../../kernels/common/ops.cuh"),
    include_str!("../../../kernels/common/states.cuh"),
    include_str!("../../../kernels/common/persistent.cuh"),
];
/// `mp:<bits>`'s device arithmetic, compiled once per limb count (`mp_l{L}`), with `MP_LIMBS`
/// defined before it.
const MP_SOURCE: &str = include_str!("../../../kernels/common/mp.cuh");
/// The vector kernels of `mp:<bits>`: xprec.cu's templates instantiated for its operations,
/// compiled once per precision (`mp{bits}`) after the common headers and `MP_SOURCE`.
const MP_VECTOR_SOURCES: [&str; 2] = [
    include_str!("../../../kernels/xprec.cu"),
    include_str!("../../../kernels/xprec_mp.cu"),
];
const SOURCES: &[(&str, &str)] = &[
    ("spmv_csr", include_str!("../../../kernels/spmv_csr.cu")),
    ("blas1", include_str!("../../../kernels/blas1.cu")),
    ("bicgstab", include_str!("../../../kernels/bicgstab.cu")),
    ("ilu0", include_str!("../../../kernels/ilu0.cu")),
    ("ilu0_parts", include_str!("../../../kernels/ilu0_parts.cu")),
    ("ilu0_block", include_str!("../../../kernels/ilu0_block.cu")),
    (
        "xprec",
        concat!(
            include_str!("../../../kernels/xprec.cu"),
            include_str!("../../../kernels/xprec_td_qd.cu")
        ),
    ),
    ("cg", include_str!("../../../kernels/cg.cu")),
    (
        "cg_persistent",
        include_str!("../../../kernels/cg_persistent.cu"),
    ),
    (
        "bicgstab_persistent",
        include_str!("../../../kernels/bicgstab_persistent.cu"),
    ),
    (
        "ilu_block_solvers",
        concat!(
            include_str!("../../../kernels/ilu0_block.cu"),
            include_str!("../../../kernels/ilu_block_solve.cu"),
            include_str!("../../../kernels/bicgstab_persistent.cu"),
            include_str!("../../../kernels/bicgstab_ilu_block.cu"),
            include_str!("../../../kernels/cg_ilu_block.cu")
        ),
    ),
];

pub(crate) fn cuda_error(context: &str, e: impl std::fmt::Debug) -> Error {
    Error::Backend {
        backend: "cuda",
        message: format!("{context}: {e:?}"),
    }
}

pub(crate) fn driver_error(context: &str) -> impl FnOnce(DriverError) -> Error + '_ {
    move |e| cuda_error(context, e)
}

/// The driver's hardware work queues for this process: `CUDA_DEVICE_MAX_CONNECTIONS`, unless the
/// user set it. The driver's default, 8, maps a study's 32 streams onto 8 queues, so a solve's
/// small copy or launch waits behind another stream's long one-block kernel on its queue; 32
/// (the most the driver takes) halved the shared matrices' study on an H200
/// (`benches/results/gpu-study.md`). The driver reads it when it creates the context.
///
/// # Safety
/// It sets an environment variable: call it before any other thread runs (the start of
/// `main`), and before the first CUDA call.
pub unsafe fn claim_stream_queues() {
    if std::env::var_os("CUDA_DEVICE_MAX_CONNECTIONS").is_none() {
        // SAFETY: as the caller promises, no other thread reads the environment now.
        unsafe { std::env::set_var("CUDA_DEVICE_MAX_CONNECTIONS", "32") };
    }
}

/// Let the host threads that wait on `ctx`'s GPU yield their cores while they wait, where the
/// driver can be told (12.1 and later); otherwise they spin, the driver's default with one
/// context. Solves in flight are host threads that mostly wait: spinning, 32 of them took the
/// 16 cores of an H200's host that the host's ILU(0) solves and launches needed.
pub(crate) fn wait_by_yielding(ctx: &CudaContext) -> Result<()> {
    let mut version = 0;
    // SAFETY: writes the version into `version`; libcuda is loaded (the context exists).
    unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut version) };
    if version < 12010 {
        return Ok(());
    }
    ctx.set_flags(cudarc::driver::sys::CUctx_flags::CU_CTX_SCHED_YIELD)
        .map_err(driver_error("letting waiting host threads yield"))
}

/// Why no GPU can be used, checked without letting cudarc panic: with `dynamic-loading` it
/// panics when libcuda or libnvrtc is missing, so their presence is checked first.
pub fn probe() -> std::result::Result<Arc<CudaContext>, String> {
    // SAFETY: these only try to dlopen the libraries; no CUDA call is made.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err("no CUDA driver found (libcuda could not be loaded)".into());
    }
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err("no NVRTC library found (libnvrtc could not be loaded; add the CUDA toolkit's lib64 to LD_LIBRARY_PATH)".into());
    }
    match CudaContext::device_count() {
        Ok(n) if n > 0 => {}
        Ok(_) => return Err("the CUDA driver reports no GPU".into()),
        Err(e) => return Err(format!("the CUDA driver could not count devices: {e:?}")),
    }
    CudaContext::new(0).map_err(|e| format!("could not create a CUDA context on GPU 0: {e:?}"))
}

/// Kernels by name (`{op}_{precision}`), compiled once per process for the device's architecture.
pub(crate) struct KernelStore {
    ctx: Arc<CudaContext>,
    arch: &'static str,
    modules: Mutex<HashMap<&'static str, Arc<CudaModule>>>,
    functions: Mutex<HashMap<String, CudaFunction>>,
    /// Kernels allowed the device's whole opt-in shared memory ([`Self::function_opted_in`]).
    opted_in: Mutex<std::collections::HashSet<String>>,
}

impl KernelStore {
    pub fn new(ctx: Arc<CudaContext>) -> Result<Self> {
        let (major, minor) = ctx
            .compute_capability()
            .map_err(driver_error("reading the compute capability"))?;
        // NVRTC wants a &'static str; a handful of leaked bytes once per process.
        let arch: &'static str = Box::leak(format!("sm_{major}{minor}").into_boxed_str());
        Ok(KernelStore {
            ctx,
            arch,
            modules: Mutex::new(HashMap::new()),
            functions: Mutex::new(HashMap::new()),
            opted_in: Mutex::new(std::collections::HashSet::new()),
        })
    }

    pub fn arch(&self) -> &'static str {
        self.arch
    }

    /// The kernel `name`, compiling its source file on first use.
    pub fn function(&self, name: &str) -> Result<CudaFunction> {
        if let Some(f) = self.functions.lock().expect("kernel cache lock").get(name) {
            return Ok(f.clone());
        }
        let source = if let Some(limbs) = mp_limbs_of(name) {
            mp_source_name(limbs)
        } else if let Some(bits) = mp_bits_of(name) {
            mp_piece_source_name(bits, mp_piece_of(name))
        } else if name.starts_with("cgs_") {
            "cg"
        } else if name.starts_with("cgp_") {
            "cg_persistent"
        } else if name.starts_with("bgp_") {
            "bicgstab_persistent"
        } else if name.starts_with("bgi_") || name.starts_with("cgi_") {
            "ilu_block_solvers"
        } else if name.starts_with("ilu0p_") {
            "ilu0_parts"
        } else if name.starts_with("ilu0b_") {
            "ilu0_block"
        } else if name.starts_with("ilu0_") {
            "ilu0"
        } else if name.contains("_td") || name.contains("_qd") {
            // every other td and qd kernel, conversions included (kernels/xprec.cu)
            "xprec"
        } else if name.starts_with("spmv_") {
            "spmv_csr"
        } else if name.starts_with("bicg_") || name.starts_with("bgs_") {
            "bicgstab"
        } else {
            "blas1"
        };
        let module = self.module(source)?;
        let f = module
            .load_function(name)
            .map_err(driver_error(&format!("loading kernel {name}")))?;
        self.functions
            .lock()
            .expect("kernel cache lock")
            .insert(name.to_string(), f.clone());
        Ok(f)
    }

    /// [`Self::function`], allowed `bytes` of dynamic shared memory (the device's opt-in
    /// most) the first time: once per process, since a function is shared by every stream,
    /// and a per-launch call to the driver cost solves beside others on the GPU.
    pub fn function_opted_in(&self, name: &str, bytes: usize) -> Result<CudaFunction> {
        let f = self.function(name)?;
        let mut opted_in = self.opted_in.lock().expect("kernel cache lock");
        if !opted_in.contains(name) {
            f.set_attribute(
                cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                bytes as i32,
            )
            .map_err(driver_error(name))?;
            opted_in.insert(name.to_string());
        }
        Ok(f)
    }

    /// Compile the kernel sources that solves in double and double-double use, and with
    /// `extended` also td's and qd's (`xprec`, much the slowest to compile), each in a thread of
    /// its own (NVRTC compiles in parallel), so that no later launch waits on the compiler:
    /// `Backend::prepare`, which solves call before their clocks start.
    /// Once they are compiled (every solve after the first), it only looks them up: no thread
    /// is started for a source already in the cache.
    pub fn compile_for(&self, extended: bool) -> Result<()> {
        let names = SOURCES
            .iter()
            .map(|&(name, _)| name)
            .filter(|name| extended || *name != "xprec");
        self.compile_in_parallel(names.collect())
    }

    /// Compile `mp:<bits>`'s vector kernels, its three groups (`MP_PIECES`) in parallel.
    pub fn compile_mp(&self, bits: u32) -> Result<()> {
        let names = (0..MP_PIECES.len()).map(|piece| mp_piece_source_name(bits, piece));
        self.compile_in_parallel(names.collect())
    }

    /// The modules of `names` not compiled yet, each compiled in a thread of its own.
    fn compile_in_parallel(&self, names: Vec<&'static str>) -> Result<()> {
        let missing: Vec<&'static str> = {
            let modules = self.modules.lock().expect("module cache lock");
            names
                .into_iter()
                .filter(|name| !modules.contains_key(name))
                .collect()
        };
        if missing.is_empty() {
            return Ok(());
        }
        std::thread::scope(|scope| {
            let threads: Vec<_> = missing
                .into_iter()
                .map(|name| scope.spawn(move || self.module(name).map(drop)))
                .collect();
            // (the scope joins any thread left when an error returns early)
            threads
                .into_iter()
                .try_for_each(|t| t.join().expect("a kernel compilation thread panicked"))
        })
    }

    /// The compiled module of `source_name`. The cache is not locked while NVRTC runs, so that
    /// sources compile in parallel; of two threads compiling one source, the first to finish
    /// stores its module and both use it.
    fn module(&self, source_name: &'static str) -> Result<Arc<CudaModule>> {
        if let Some(m) = self
            .modules
            .lock()
            .expect("module cache lock")
            .get(source_name)
        {
            return Ok(m.clone());
        }
        let start = std::time::Instant::now();
        let image = compile_source(source_name, self.arch)?;
        let module = self
            .ctx
            .load_module(image)
            .map_err(driver_error(&format!("loading kernels/{source_name}.cu")))?;
        log::info!(
            "compiled kernels/{source_name}.cu for {} in {:.0} ms",
            self.arch,
            start.elapsed().as_secs_f64() * 1e3
        );
        let mut modules = self.modules.lock().expect("module cache lock");
        Ok(modules.entry(source_name).or_insert(module).clone())
    }
}

/// The limb count of an `mp` kernel's name (`mp_ops_check_l4`: 4).
fn mp_limbs_of(name: &str) -> Option<usize> {
    let (_, limbs) = name.strip_prefix("mp_")?.rsplit_once("_l")?;
    limbs.parse().ok()
}

/// The precision of an `mp:<bits>` vector kernel's name (`axpy_mp256`, `dot_mp256_partial`,
/// `convert_f64_to_mp256`: 256).
pub(crate) fn mp_bits_of(name: &str) -> Option<u32> {
    name.split('_').find_map(|part| {
        let digits = part.strip_prefix("mp")?;
        (!digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit()))
            .then(|| digits.parse().ok())
            .flatten()
    })
}

/// `mp{bits}`: the suffix of `mp:<bits>`'s kernel names (`axpy_mp256`), and the source name of
/// its first group of kernels.
pub(crate) fn mp_suffix(bits: u32) -> &'static str {
    mp_piece_source_name(bits, 0)
}

/// The three groups of an `mp:<bits>` precision's vector kernels, each its own module so that
/// they compile in parallel (`MP_PIECE` in `kernels/xprec_mp.cu`: a third of the wait each).
pub(crate) const MP_PIECES: [&str; 3] = ["", "_bicg", "_spmv"];

/// Which group of `MP_PIECES` holds the `mp` vector kernel `name`: the SpMVs, BiCGStab's
/// steps (`X_KERNELS_BICG` in `kernels/xprec.cu`), or the rest (dots, CG's steps, conversions).
fn mp_piece_of(name: &str) -> usize {
    if name.starts_with("spmv") {
        2
    } else if ["axpyz_", "bicg", "x_update_"]
        .iter()
        .any(|p| name.starts_with(p))
    {
        1
    } else {
        0
    }
}

/// The source name of one group of `mp:<bits>`'s vector kernels (`mp256`, `mp256_bicg`,
/// `mp256_spmv`), one leaked string per name a process uses.
pub(crate) fn mp_piece_source_name(bits: u32, piece: usize) -> &'static str {
    static NAMES: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    let name = format!("mp{bits}{}", MP_PIECES[piece]);
    let mut names = NAMES.lock().expect("mp source names");
    match names.iter().find(|n| **n == name) {
        Some(n) => n,
        None => {
            let leaked: &'static str = Box::leak(name.into_boxed_str());
            names.push(leaked);
            leaked
        }
    }
}

/// The source name of `mp`'s kernels for `limbs` limbs (`mp_l4`), one leaked string per limb
/// count.
fn mp_source_name(limbs: usize) -> &'static str {
    use std::sync::OnceLock;
    static NAMES: OnceLock<Vec<&'static str>> = OnceLock::new();
    let names = NAMES.get_or_init(|| {
        crate::precision::mpfloat::LIMB_COUNTS
            .iter()
            .map(|l| &*Box::leak(format!("mp_l{l}").into_boxed_str()))
            .collect()
    });
    names
        .iter()
        .find(|n| n[4..].parse() == Ok(limbs))
        .copied()
        .unwrap_or("mp_l_unknown")
}

/// NVRTC's machine code for the kernel source `source_name` (a name in `SOURCES`, or `mp_l{L}`)
/// for `arch` (`sm_90`), from the kernel cache where an earlier process kept it.
fn compile_source(source_name: &str, arch: &'static str) -> Result<Ptx> {
    // `mp{bits}{piece}`: an mp precision's group of vector kernels
    let mp_piece = source_name.strip_prefix("mp").and_then(|rest| {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let bits = rest[..digits].parse::<u32>().ok()?;
        let piece = MP_PIECES.iter().position(|p| *p == &rest[digits..])?;
        Some((bits, piece))
    });
    let text = match (source_name.strip_prefix("mp_l").map(str::parse::<usize>), mp_piece) {
        (Some(Ok(limbs)), _) => format!("#define MP_LIMBS {limbs}\n{MP_SOURCE}"),
        (_, Some((bits, piece))) => {
            let limbs = crate::precision::mpfloat::limbs_for(bits)
                .ok_or_else(|| cuda_error("kernel source", source_name))?;
            let mut text = COMMON.join("\n");
            text.push_str(&format!(
                "\n#define MP_LIMBS {limbs}\n#define MP_BITS {bits}\n#define MP_SUFFIX mp{bits}\n\
                 #define MP_PIECE {piece}\n"
            ));
            text.push_str(MP_SOURCE);
            for body in MP_VECTOR_SOURCES {
                text.push('\n');
                text.push_str(body);
            }
            text
        }
        _ => {
            let (_, body) = SOURCES
                .iter()
                .find(|(n, _)| *n == source_name)
                .ok_or_else(|| cuda_error("kernel source", source_name))?;
            let mut text = COMMON.join("\n");
            text.push('\n');
            text.push_str(body);
            text
        }
    };
    let text = with_measurement_defines(text);
    let mut options = vec![
        format!("--gpu-architecture={arch}"),
        // DD needs IEEE rounding at every step: no contraction, no flush to zero, IEEE div/sqrt.
        "--fmad=false".to_string(),
        "--ftz=false".to_string(),
        "--prec-div=true".to_string(),
        "--prec-sqrt=true".to_string(),
    ];
    options.extend(measurement_options());
    let cached = super::kernel_cache::Entry::new(source_name, &text, &options);
    if let Some(code) = cached.load() {
        return Ok(code.into_image());
    }
    if let Some((bits, 0)) = mp_piece {
        // Tens of seconds to minutes (`benches/results/mp-gpu.md`) with nothing on the screen:
        // say why, once a precision (a process compiles each module once).
        log::warn!(
            "compiling the GPU kernels of mp:{bits}, their first use: this takes from tens of \
             seconds to a few minutes ({})",
            cached.kept_where()
        );
    }
    let code = super::nvrtc::compile(&text, &options)
        .map_err(|e| cuda_error(&format!("compiling kernels/{source_name}.cu"), e))?;
    cached.store(&code);
    Ok(code.into_image())
}

/// `text` after the `#define`s that `PRECSOLVE_KERNEL_DEFINES` names (space-separated `NAME` or
/// `NAME=VALUE`), for measuring kernel variants in one build: `PHASE_TIMES` makes the
/// persistent solver kernels print where an iteration's time goes (`kernels/common/persistent.cuh`).
/// Unset (the product's way), the text is unchanged; the kernel cache keys on the text, so a
/// variant never reuses another's code.
fn with_measurement_defines(text: String) -> String {
    let Ok(defines) = std::env::var("PRECSOLVE_KERNEL_DEFINES") else {
        return text;
    };
    let mut head: String = defines
        .split_whitespace()
        .map(|d| format!("#define {}\n", d.replacen('=', " ", 1)))
        .collect();
    head.push_str(&text);
    head
}

/// NVRTC options that `PRECSOLVE_NVRTC_OPTIONS` names (space-separated), for measuring how
/// long the compiles take with them; unset, none. Part of the kernel cache's key.
fn measurement_options() -> Vec<String> {
    std::env::var("PRECSOLVE_NVRTC_OPTIONS")
        .map(|o| o.split_whitespace().map(String::from).collect())
        .unwrap_or_default()
}

/// Compile every kernel source for `arch` with NVRTC alone: no GPU or driver is needed, so the
/// kernels' CUDA C is checked where no GPU is (`tests/kernel_sources.rs`, run by `.ci/run`).
/// Returns the names of the sources compiled; an error holds NVRTC's log.
pub fn compile_kernel_sources(arch: &'static str) -> Result<Vec<&'static str>> {
    // SAFETY: only tries to dlopen libnvrtc.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err(cuda_error(
            "compiling the kernels",
            "libnvrtc could not be loaded",
        ));
    }
    let mp = crate::precision::mpfloat::LIMB_COUNTS.map(mp_source_name);
    let mp_vectors = [0, 1, 2].map(|piece| mp_piece_source_name(256, piece));
    SOURCES
        .iter()
        .map(|&(name, _)| name)
        .chain(mp)
        .chain(mp_vectors)
        .map(|name| compile_source(name, arch).map(|_| name))
        .collect()
}

/// Allocate `words` zeroed doubles, naming the size on failure (out of memory is common).
pub(crate) fn alloc_words(
    stream: &Arc<CudaStream>,
    words: usize,
) -> Result<cudarc::driver::CudaSlice<f64>> {
    stream
        .alloc_zeros::<f64>(words.max(1))
        .map_err(|e| Error::Backend {
            backend: "cuda",
            message: format!(
                "could not allocate {:.1} MiB on the GPU: {e:?}",
                (words * 8) as f64 / (1024.0 * 1024.0)
            ),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel names a macro of `kernels/xprec.cu` defines, for `mp256` (and lane count 1).
    fn kernels_of_macro(macro_name: &str) -> Vec<String> {
        let text = MP_VECTOR_SOURCES[0];
        let start = text
            .find(&format!("#define {macro_name}("))
            .unwrap_or_else(|| panic!("{macro_name} is not in kernels/xprec.cu"));
        let body = &text[start..];
        let end = body[1..].find("\n#define ").map_or(body.len(), |e| e + 1);
        body[..end]
            .split("void ")
            .skip(1)
            .filter_map(|rest| {
                // `void __launch_bounds__(N) name(`: the name after the bounds
                let rest = match rest.strip_prefix("__launch_bounds__(") {
                    Some(bounded) => bounded.split_once(')')?.1,
                    None => rest,
                };
                let name: String = rest
                    .trim_start_matches(|c: char| c.is_whitespace() || c == '\\')
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '#')
                    .collect();
                name.contains("##P")
                    .then(|| name.replace("##P##", "mp256").replace("##P", "mp256").replace("##NT", "1"))
            })
            .collect()
    }

    #[test]
    fn every_mp_kernel_is_looked_up_in_the_group_that_defines_it() {
        let groups = [
            ("X_KERNELS_CORE", 0, 12),
            ("X_KERNELS_BICG", 1, 12),
            ("X_SPMV", 2, 2),
            ("X_SPMV_SELL", 2, 2),
        ];
        for (macro_name, piece, at_least) in groups {
            let names = kernels_of_macro(macro_name);
            assert!(names.len() >= at_least, "{macro_name}: {names:?}");
            for name in names {
                assert_eq!(mp_piece_of(&name), piece, "{name} of {macro_name}");
                assert_eq!(mp_bits_of(&name), Some(256), "{name}");
            }
        }
        // X_KERNELS_SPMV is made of the two SpMV macros; the conversions are in the first group
        assert!(MP_VECTOR_SOURCES[0].contains("#define X_KERNELS_SPMV(P, O)"));
        assert_eq!(mp_piece_of("convert_mp256_to_dd"), 0);
        assert_eq!(mp_piece_source_name(256, 1), "mp256_bicg");
        assert_eq!(mp_suffix(1024), "mp1024");
    }
}
