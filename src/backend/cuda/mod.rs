//! CUDA backend: the same `Backend` as the CPU, with kernels from `kernels/` compiled by NVRTC.
//!
//! Vectors are arrays of doubles: one word per element for `f64`, two (`hi`, `lo`, a `double2`)
//! for `dd`, four for `qd`; `td` is a structure of arrays in one allocation, `n` doubles (`hi`)
//! then `n` 32-bit ints (the D+I `lo`), 12 bytes per element, passed to kernels as a pair of
//! pointers ([`TdPtr`]). Every kernel sums and rounds in the CPU backend's order, so results
//! match the CPU bit for bit (checked on the device by `tests/gpu.rs`).

mod bicgstab;
mod blocks;
mod bicgstab_kernels;
mod cg;
mod cg_kernels;
pub(crate) mod device;
mod kernel_cache;
mod nvrtc;
mod ilu;
mod ilu_host;
mod launch;
mod link;
mod mp_arithmetic;
mod persistent;
mod readback;
mod resident;
mod sell;
mod spmv_dot;
mod vectors;

pub use blocks::CudaPartials;
pub use link::{GpuLink, NcclComms};
pub use device::{claim_stream_queues, compile_kernel_sources, probe};
pub use ilu::{CudaIlu, DEFAULT_BLOCK as ILU_DEFAULT_BLOCK, IluConfig, IluPlacement, IluSchedule};
pub use persistent::Persistent;
pub use sell::{SELL_ROWS, SpmvLayout};

use super::{Backend, spmv_lanes};
use crate::backend::{Operand, OperandOf, TiledDots};
use crate::error::{Error, Result};
use crate::precision::{Dd, Precision, Qd, Td};
use crate::precond::ilu0::Ilu0Factors;
use crate::sparse::CsrMatrix;
use cudarc::driver::{
    CudaContext, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr, LaunchArgs,
    LaunchConfig, PushKernelArg,
};
use device::{KernelStore, alloc_words, driver_error};
use launch::FinalStage;
use std::any::Any;
use std::marker::PhantomData;
use std::sync::Arc;

const BLOCK: u32 = 256;
/// Must match DOT_CHUNK in kernels/common/reduce.cuh and the CPU backend's dot.
const DOT_CHUNK: usize = 256 * 32;

// SAFETY: Dd is #[repr(C)] { hi: f64, lo: f64 }, the layout of CUDA's double2.
unsafe impl DeviceRepr for Dd {}
// SAFETY: Qd is #[repr(C)] { x: [f64; 4] }, the layout of qd_elem in kernels/common/qd.cuh.
unsafe impl DeviceRepr for Qd {}

/// A td vector (or one element of it) as kernels take it: `td_ptr { double* hi; int* lo; }`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TdPtr {
    hi: u64,
    lo: u64,
}
// SAFETY: two device addresses, the layout of td_ptr in kernels/common/td.cuh.
unsafe impl DeviceRepr for TdPtr {}

/// An `mp:<bits>` vector (or one element of it) as kernels take it: `mp_ptr { u64* base; long
/// long stride; }` (kernels/xprec_mp.cu): limb `l` of element `i` at `base[l * stride + i]`,
/// the header word after the limbs.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct MpPtr {
    base: u64,
    stride: i64,
}
// SAFETY: a device address and an integer, the layout of mp_ptr.
unsafe impl DeviceRepr for MpPtr {}

/// An `mp:<bits>` scalar by value: its `N = L + 1` packed words (`mp_s`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct MpScalar<const N: usize>([u64; N]);
// SAFETY: N 64-bit words, the layout of mp_s for MP_LIMBS = N - 1.
unsafe impl<const N: usize> DeviceRepr for MpScalar<N> {}

/// A vector laid out as a structure of arrays, as kernels take it.
#[derive(Clone, Copy, Debug)]
enum Soa {
    Td(TdPtr),
    Mp(MpPtr),
}

/// How a precision's elements lie in device memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layout {
    /// `words` doubles per element, one after the other (f64: 1, dd: 2, qd: 4).
    Words(usize),
    /// td: `n` doubles, then `n` ints.
    TdSoa,
    /// mp:<bits> with this many limbs: limb-major, `limbs + 1` words an element.
    MpSoa(usize),
}

/// Doubles needed for `n` elements in `layout`.
fn words_for(layout: Layout, n: usize) -> usize {
    match layout {
        Layout::Words(w) => w * n,
        Layout::TdSoa => n + n.div_ceil(2),
        Layout::MpSoa(limbs) => (limbs + 1) * n,
    }
}

/// `value` as a `B` when `A` is `B` (a precision's own type behind a generic parameter).
fn cast<A: 'static, B: Clone + 'static>(value: &A) -> Option<B> {
    (value as &dyn Any).downcast_ref::<B>().cloned()
}

/// One element of a vector as a kernel argument: its address, or its pair of addresses (td).
enum Elem {
    Ptr(u64),
    Td(TdPtr),
    Mp(MpPtr),
}

fn push_elem<'a>(args: &mut LaunchArgs<'a>, e: &'a Elem) {
    match e {
        Elem::Ptr(p) => args.arg(p),
        Elem::Td(t) => args.arg(t),
        Elem::Mp(m) => args.arg(m),
    };
}

/// Pushing a vector as a kernel argument: its words, or its [`TdPtr`] for td.
trait PushVector<'a> {
    fn vec<P>(&mut self, v: &'a CudaVector<P>) -> &mut Self;
}

impl<'a> PushVector<'a> for LaunchArgs<'a> {
    fn vec<P>(&mut self, v: &'a CudaVector<P>) -> &mut Self {
        match &v.soa {
            Some(Soa::Td(p)) => self.arg(p),
            Some(Soa::Mp(p)) => self.arg(p),
            None => self.arg(&v.words),
        }
    }
}

pub struct CudaBackend {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    /// Shared with the siblings ([`CudaBackend::sibling`]): kernels compile once a process.
    kernels: Arc<KernelStore>,
    name: String,
    /// Launch setting given to new ILU(0) factors (`IluConfig::default()` unless set).
    ilu_config: std::sync::Mutex<IluConfig>,
    /// The SpMV layout matrices uploaded from now on get, where it applies (`None`: chosen
    /// by [`SpmvLayout::for_matrix`]).
    spmv_layout: std::sync::Mutex<Option<SpmvLayout>>,
    /// Whether full batches of device-resident iterations replay a CUDA graph
    /// (`PRECSOLVE_CUDA_GRAPHS=0` turns it off, to measure one against the other).
    graphs: std::sync::atomic::AtomicBool,
    /// Whether small solves run as one persistent kernel a batch (`persistent.rs`).
    persistent: std::sync::Mutex<Persistent>,
    /// This stream's page-locked buffer for small reads (`readback.rs`).
    readback: readback::Readback,
}

/// A device vector of `len` elements of `P`.
pub struct CudaVector<P> {
    pub(crate) words: CudaSlice<f64>,
    len: usize,
    /// For td: the addresses of the `hi` and `lo` arrays inside `words`; for mp, the base and
    /// stride of its limb arrays.
    soa: Option<Soa>,
    _precision: PhantomData<P>,
}

pub struct CudaMatrix {
    pub(crate) nrows: usize,
    pub(crate) ncols: usize,
    pub(crate) nnz: usize,
    /// CSR threads per row (`spmv_lanes`); the sliced layout has one.
    pub(crate) lanes: usize,
    /// Entries of the longest row (where the persistent kernels run, `persistent.rs`).
    pub(crate) longest_row: usize,
    pub(crate) row_ptr: CudaSlice<i32>,
    /// The sliced layout's slice offsets ([`SpmvLayout::Sell`]); `None` for CSR.
    pub(crate) slice_ptr: Option<CudaSlice<i32>>,
    /// The entries in the SpMV's layout: by row (CSR) or by slice.
    pub(crate) col_idx: CudaSlice<i32>,
    pub(crate) values: CudaSlice<f64>,
}

/// A scalar argument in the layout its kernel expects (`double`, `double2` for dd and td, or
/// `qd_elem`).
enum Scalar {
    F64(f64),
    Dd(Dd),
    Qd(Qd),
    Mp2(MpScalar<3>),
    Mp4(MpScalar<5>),
    Mp8(MpScalar<9>),
    Mp16(MpScalar<17>),
    Mp32(MpScalar<33>),
}

impl CudaBackend {
    /// Open GPU 0 and prepare (lazily) its kernels; errors say why no GPU can be used.
    pub fn new() -> Result<Self> {
        let ctx = probe().map_err(|message| Error::Backend {
            backend: "cuda",
            message,
        })?;
        Self::on_context(ctx)
    }

    /// A backend on the GPU of `ctx`, its kernels compiled for it at first use.
    fn on_context(ctx: Arc<CudaContext>) -> Result<Self> {
        // SAFETY: the backend uses one stream for every allocation, copy and launch.
        unsafe { ctx.disable_event_tracking() };
        // A stream of its own, not the legacy default one, which no graph can be captured on.
        let stream = ctx
            .new_stream()
            .map_err(driver_error("creating a stream"))?;
        let name = ctx.name().unwrap_or_else(|_| "unknown GPU".into());
        let kernels = Arc::new(KernelStore::new(ctx.clone())?);
        Ok(CudaBackend {
            ctx,
            stream,
            kernels,
            name,
            ilu_config: std::sync::Mutex::new(IluConfig::default()),
            spmv_layout: std::sync::Mutex::new(None),
            graphs: std::sync::atomic::AtomicBool::new(
                std::env::var("PRECSOLVE_CUDA_GRAPHS").map_or(true, |v| v != "0"),
            ),
            persistent: std::sync::Mutex::new(Persistent::from_env()),
            readback: Default::default(),
        })
    }

    /// A backend on the same GPU with a stream of its own, sharing the compiled kernels and
    /// this one's settings: solves on siblings run at the same time (a study's solves in
    /// flight, `batch::schedule`), each with the bits it has alone, since nothing of a solve
    /// leaves its stream.
    pub fn sibling(&self) -> Result<Self> {
        let stream = self
            .ctx
            .new_stream()
            .map_err(driver_error("creating a stream"))?;
        let lock = |e: std::sync::PoisonError<_>| e.into_inner();
        Ok(CudaBackend {
            ctx: self.ctx.clone(),
            stream,
            kernels: self.kernels.clone(),
            name: self.name.clone(),
            ilu_config: std::sync::Mutex::new(*self.ilu_config.lock().unwrap_or_else(lock)),
            spmv_layout: std::sync::Mutex::new(self.spmv_layout()),
            graphs: std::sync::atomic::AtomicBool::new(self.graphs_enabled()),
            persistent: std::sync::Mutex::new(self.persistent()),
            readback: Default::default(),
        })
    }

    /// From now on, host threads that wait on this GPU yield their cores while they wait
    /// (the driver spins by default): for solves in flight, which are host threads that
    /// mostly wait ([`device::wait_by_yielding`]).
    pub fn wait_by_yielding(&self) -> Result<()> {
        device::wait_by_yielding(&self.ctx)
    }

    /// Device name and architecture, for reports (`NVIDIA H200, sm_90`).
    pub fn device_description(&self) -> String {
        format!("{}, {}", self.name, self.kernels.arch())
    }

    /// Turn the CUDA graphs of device-resident iterations on or off (on by default).
    pub fn set_graphs(&self, on: bool) {
        self.graphs.store(on, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn graphs_enabled(&self) -> bool {
        self.graphs.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// A device attribute (never negative for the counts read here), `what` naming it in errors.
    fn attribute(
        &self,
        attribute: cudarc::driver::sys::CUdevice_attribute,
        what: &str,
    ) -> Result<usize> {
        let value = self.ctx.attribute(attribute).map_err(driver_error(what))?;
        Ok(value.max(0) as usize)
    }
}

impl Backend for CudaBackend {
    type Vector<P: Precision> = CudaVector<P>;
    type Matrix = CudaMatrix;
    type Ilu = CudaIlu;

    fn name(&self) -> &'static str {
        "cuda"
    }

    fn matrix(&self, a: &Arc<CsrMatrix>) -> Result<CudaMatrix> {
        let layout = match self.spmv_layout() {
            Some(SpmvLayout::Sell) if spmv_lanes(a) == 1 => SpmvLayout::Sell,
            Some(_) => SpmvLayout::Csr,
            None => SpmvLayout::for_matrix(a, self.resident_threads()?),
        };
        log::debug!(
            "GPU SpMV layout: {layout:?} ({} CSR threads per row)",
            spmv_lanes(a)
        );
        self.matrix_with_layout(a, layout)
    }

    fn ilu(&self, factors: &Arc<Ilu0Factors>) -> Result<CudaIlu> {
        self.ilu_upload(factors)
    }

    fn ilu_apply<P: Precision, Z: Precision>(
        &self,
        ilu: &mut CudaIlu,
        r: &CudaVector<P>,
        z: &mut CudaVector<Z>,
    ) -> Result<()> {
        self.ilu_solve(ilu, r, z)
    }

    fn ilu_times_itself(&self) -> bool {
        true
    }

    fn ilu_seconds(&self, ilu: &mut CudaIlu) -> Result<f64> {
        self.ilu_collect_seconds(ilu)
    }

    fn zeros<P: Precision>(&self, n: usize) -> Result<CudaVector<P>> {
        Self::suffix::<P>()?;
        if let Layout::MpSoa(_) = Self::layout::<P>() {
            // zeros at the solve's precision, as the CPU's (zeroed words are zeros of no
            // precision)
            return self.upload_values(&vec![P::zero(); n]);
        }
        self.alloc_vector::<P>(n)
    }

    fn vector_from_f64<P: Precision>(&self, values: &[f64]) -> Result<CudaVector<P>> {
        Self::suffix::<P>()?;
        let values: Vec<P> = values.iter().map(|&v| P::from_f64(v)).collect();
        self.upload_values(&values)
    }

    fn upload<P: Precision>(&self, values: &[P]) -> Result<CudaVector<P>> {
        Self::suffix::<P>()?;
        self.upload_values(values)
    }

    fn to_host<P: Precision>(&self, x: &CudaVector<P>) -> Result<Vec<P>> {
        self.decode(x)
    }

    fn len<P: Precision>(&self, x: &CudaVector<P>) -> usize {
        x.len
    }

    fn spmv<P: Precision>(
        &self,
        a: &CudaMatrix,
        x: &CudaVector<P>,
        y: &mut CudaVector<P>,
    ) -> Result<()> {
        self.spmv_like("spmv", a, x, y, None)
    }

    fn spmv_wide<P: Precision>(
        &self,
        a: &CudaMatrix,
        x: &CudaVector<f64>,
        y: &mut CudaVector<P>,
    ) -> Result<()> {
        self.spmv_like(Self::wide_op::<P>("spmv", "spmv_wide")?, a, x, y, None)
    }

    fn residual<P: Precision>(
        &self,
        a: &CudaMatrix,
        b: &CudaVector<f64>,
        x: &CudaVector<P>,
        r: &mut CudaVector<P>,
    ) -> Result<()> {
        assert_eq!(b.len, a.nrows, "residual: b length");
        self.spmv_like("spmv", a, x, r, Some(b))
    }

    fn spmv_dots_tiled<P: Precision>(
        &self,
        a: &CudaMatrix,
        x: OperandOf<'_, Self, P>,
        dots: TiledDots<'_, CudaVector<P>>,
        q: &mut CudaVector<P>,
    ) -> Result<(P, P)> {
        self.spmv_dots(a, x, dots, q, true)
    }

    fn dot<P: Precision>(&self, x: &CudaVector<P>, y: &CudaVector<P>) -> Result<P> {
        assert_eq!(x.len, y.len, "dot: lengths");
        let (mut partial, blocks) = self.partials::<P>(x.len)?;
        self.launch_dot_partial(x, y, &mut partial, blocks)?;
        self.finish_reduction(FinalStage::Dot, &partial, blocks)
    }

    fn dot_tiled<P: Precision>(&self, x: &CudaVector<P>, y: &CudaVector<P>) -> Result<P> {
        self.tiled_dot(x, y)
    }

    fn dot_wide<P: Precision>(&self, x: &CudaVector<P>, y: &CudaVector<f64>) -> Result<P> {
        assert_eq!(x.len, y.len, "dot: lengths");
        let (partial, blocks) = self.partials::<P>(x.len)?;
        let op = Self::wide_op::<P>("dot", "dot_wide")?;
        self.launch_dot_partial_op(op, x, y, &partial, blocks)?;
        self.finish_reduction(FinalStage::Dot, &partial, blocks)
    }

    fn xpay_wide<P: Precision>(
        &self,
        x: &CudaVector<f64>,
        beta: &P,
        y: &mut CudaVector<P>,
    ) -> Result<()> {
        self.launch_xpay(Self::wide_op::<P>("xpay", "xpay_wide")?, x, beta, y)
    }

    fn prepare<P: Precision>(&self) -> Result<()> {
        self.kernels
            .compile_for(matches!(P::KERNEL_SUFFIX, "td" | "qd"))?;
        if P::KERNEL_SUFFIX == "mp" {
            // mp:<bits>'s own sources, compiled for its precision at first use: here, before
            // a solve's clock starts
            self.kernels.compile_mp(Self::mp_bits()?)?;
        }
        Ok(())
    }

    fn axpy<P: Precision>(
        &self,
        alpha: &P,
        x: &CudaVector<P>,
        y: &mut CudaVector<P>,
    ) -> Result<()> {
        assert_eq!(x.len, y.len, "axpy: lengths");
        let alpha = Self::scalar(alpha);
        let n = x.len as i64;
        let (f, name) = self.kernel::<P>("axpy")?;
        let mut args = self.stream.launch_builder(&f);
        args.arg(&n);
        push_scalar(&mut args, &alpha);
        args.vec(x).vec(y);
        self.launch_elementwise(args, x.len, &name)
    }

    fn xpay<P: Precision>(&self, x: &CudaVector<P>, beta: &P, y: &mut CudaVector<P>) -> Result<()> {
        self.launch_xpay("xpay", x, beta, y)
    }

    fn axpyz<P: Precision>(
        &self,
        alpha: &P,
        x: &CudaVector<P>,
        y: &CudaVector<P>,
        z: &mut CudaVector<P>,
    ) -> Result<()> {
        assert!(x.len == y.len && y.len == z.len, "axpyz: lengths");
        let alpha = Self::scalar(alpha);
        let n = x.len as i64;
        let (f, name) = self.kernel::<P>("axpyz")?;
        let mut args = self.stream.launch_builder(&f);
        args.arg(&n);
        push_scalar(&mut args, &alpha);
        args.vec(x).vec(y).vec(z);
        self.launch_elementwise(args, x.len, &name)
    }

    fn copy<P: Precision>(&self, x: &CudaVector<P>, y: &mut CudaVector<P>) -> Result<()> {
        assert_eq!(x.len, y.len, "copy: lengths");
        if x.len == 0 {
            return Ok(());
        }
        self.stream
            .memcpy_dtod(&x.words, &mut y.words)
            .map_err(driver_error("copying a vector on the GPU"))
    }

    fn convert<P: Precision, Q: Precision>(
        &self,
        x: &CudaVector<P>,
        y: &mut CudaVector<Q>,
    ) -> Result<()> {
        assert_eq!(x.len, y.len, "convert: lengths");
        let (from, to) = (Self::suffix::<P>()?, Self::suffix::<Q>()?);
        if from == to {
            if x.len > 0 {
                self.stream
                    .memcpy_dtod(&x.words, &mut y.words)
                    .map_err(driver_error("copying a vector on the GPU"))?;
            }
            return Ok(());
        }
        let op = format!("convert_{from}_to");
        let name = format!("{op}_{to}");
        let f = self.kernels.function(&name)?;
        let n64 = x.len as i64;
        let mut args = self.stream.launch_builder(&f);
        args.arg(&n64).vec(x).vec(y);
        // SAFETY: convert_{from}_to_{to}(long long n, const S* x, T* y) in kernels/blas1.cu
        // (kernels/xprec.cu for td and qd, which take a td vector as a td_ptr).
        unsafe { args.launch(Self::elementwise(x.len)) }.map_err(driver_error(&name))?;
        Ok(())
    }

    fn synchronize(&self) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(driver_error("synchronizing the GPU"))
    }
}

fn push_scalar<'a>(args: &mut LaunchArgs<'a>, s: &'a Scalar) {
    match s {
        Scalar::F64(v) => args.arg(v),
        Scalar::Dd(v) => args.arg(v),
        Scalar::Qd(v) => args.arg(v),
        Scalar::Mp2(v) => args.arg(v),
        Scalar::Mp4(v) => args.arg(v),
        Scalar::Mp8(v) => args.arg(v),
        Scalar::Mp16(v) => args.arg(v),
        Scalar::Mp32(v) => args.arg(v),
    };
}
