//! One NVRTC compile, keeping the machine code NVRTC builds for the device's own architecture.
//!
//! Given a real architecture (`sm_90`, the device's, never a virtual `compute_90`), NVRTC runs
//! the whole compiler: its front end and optimiser to PTX, then the assembler to a CUBIN.
//! cudarc's `compile_ptx_with_opts` returns only the PTX, which the driver then assembles
//! again when the module loads: for an `mp:1024` module the assembler is most of the wait,
//! so that doubled it (`benches/results/mp-gpu.md`, "First use"). The CUBIN loads as it is.

use cudarc::nvrtc::{Ptx, result, sys};
use std::ffi::{CStr, CString};

/// What a compile leaves: the machine code, or the PTX where NVRTC built none.
pub(super) enum Code {
    Cubin(Vec<u8>),
    Ptx(String),
}

impl Code {
    /// The form the driver loads.
    pub(super) fn into_image(self) -> Ptx {
        match self {
            Code::Cubin(bytes) => Ptx::from_binary(bytes),
            Code::Ptx(text) => Ptx::from_src(text),
        }
    }
}

/// The CUBIN of `text` compiled with `options`, or its PTX where NVRTC built no CUBIN (a
/// virtual architecture). The error is NVRTC's log.
pub(super) fn compile(text: &str, options: &[String]) -> Result<Code, String> {
    let src = CString::new(text).map_err(|_| "the kernel source holds a NUL byte".to_string())?;
    let program = Program(result::create_program(&src, None).map_err(|e| format!("{e:?}"))?);
    // SAFETY: `program.0` is a live program (`Program` destroys it on drop, after every use).
    unsafe {
        if let Err(e) = result::compile_program(program.0, options) {
            let log = result::get_program_log(program.0)
                .map(|log| CStr::from_ptr(log.as_ptr()).to_string_lossy().into_owned())
                .unwrap_or_default();
            return Err(format!("{e:?}: {log}"));
        }
        let mut size = 0usize;
        sys::nvrtcGetCUBINSize(program.0, &mut size)
            .result()
            .map_err(|e| format!("{e:?}"))?;
        if size > 0 {
            let mut cubin = vec![0u8; size];
            sys::nvrtcGetCUBIN(program.0, cubin.as_mut_ptr().cast())
                .result()
                .map_err(|e| format!("{e:?}"))?;
            return Ok(Code::Cubin(cubin));
        }
        let ptx = result::get_ptx(program.0).map_err(|e| format!("{e:?}"))?;
        Ok(Code::Ptx(
            CStr::from_ptr(ptx.as_ptr()).to_string_lossy().into_owned(),
        ))
    }
}

/// An NVRTC program, destroyed when dropped.
struct Program(sys::nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: created by `create_program` and destroyed only here.
        let _ = unsafe { result::destroy_program(self.0) };
    }
}
