//! The one place where runtime choices (backend x precision x method) become generic calls.

use super::{BicgstabSteps, CgSteps, Monitor, NoMonitor, Params, SolveInfo, bicgstab, cg};
use crate::backend::cpu::CpuBackend;
use crate::backend::Backend;
use crate::distributed::{BlockBackend, CpuLayout, DistributedBackend};
use crate::error::Result;
use crate::precision::exact_values::ExactValues;
use crate::precision::Precision;
use crate::precond::ilu0::Ilu0Factors;
use crate::precond::{Identity, Ilu0, InDouble, Preconditioner, Preconditioning};
use crate::sparse::CsrMatrix;
use std::borrow::Cow;
use std::sync::Arc;
use std::time::Instant;

pub use super::choices::*;
pub use super::problem::{Problem, Solution, SolutionVector, exact_initial_guess};

/// What one solve runs: the method (resolved from `Auto` by the matrix), the working precision
/// and the preconditioner, prepared once per matrix and shared by every solve of it.
#[derive(Clone, Copy, Debug)]
pub struct Recipe<'a> {
    pub method: Method,
    pub precision: WorkingPrecision,
    pub precond: &'a Preconditioning,
}

/// Runs `$typed` with the type `$p` of `$precision` (a fixed-size precision, or `mp:<bits>`
/// inside its precision scope), its `x` handed back as a [`SolutionVector`]; a ladder runs
/// `$ladder` with `$l` bound to it. `$backend` is checked for the precision before an mp scope
/// is entered.
macro_rules! by_precision {
    ($precision:expr, $backend:expr, $p:ident => $typed:expr, $l:ident => $ladder:expr) => {{
        // One precision's solve, its `x` handed back as a `SolutionVector`.
        macro_rules! typed {
            ($t:ty) => {{
                type $p = $t;
                $typed.map(|(info, x)| $crate::solver::Solution {
                    info,
                    x: $crate::solver::problem::solution_vector(x),
                })
            }};
        }
        match $precision {
            $crate::solver::WorkingPrecision::F64 => typed!(f64),
            $crate::solver::WorkingPrecision::Dd => typed!($crate::precision::Dd),
            $crate::solver::WorkingPrecision::Qd => typed!($crate::precision::Qd),
            $crate::solver::WorkingPrecision::Td => typed!($crate::precision::Td),
            $crate::solver::WorkingPrecision::Mp(bits) => {
                // Checked before the scope below is entered: a refused solve must not hold it.
                $backend.resolve_for(&[$precision])?;
                // Every mp value this solve creates, in this thread or the CPU backend's
                // workers, has `bits` bits (`precision::mp`, "The precision scope").
                let _scope = crate::precision::mp::MpScope::enter(bits);
                crate::precision::mpfloat::with_limbs!(bits, L => {
                    typed!(crate::precision::MpFloat<L>)
                })
            }
            #[cfg(feature = "mpfr")]
            $crate::solver::WorkingPrecision::Mpfr(bits) => {
                $backend.resolve_for(&[$precision])?;
                let _scope = crate::precision::mp::MpScope::enter(bits);
                typed!(crate::precision::Mpfr)
            }
            #[cfg(not(feature = "mpfr"))]
            $crate::solver::WorkingPrecision::Mpfr(_) => Err(crate::error::Error::Config(
                $precision.unavailable().unwrap_or_default(),
            )),
            $crate::solver::WorkingPrecision::Ladder($l) => $ladder,
        }
    }};
}
pub(crate) use by_precision;

/// Solve `problem` with `method` (resolved if `Auto`) in one working precision. The backend is
/// resolved for that precision ([`BackendChoice::resolve_for`]): a precision without CUDA
/// kernels with `Cuda` is an error, with `Auto` it runs on the CPU.
pub fn solve(
    problem: &Problem,
    backend: BackendChoice,
    recipe: Recipe<'_>,
    params: &Params,
    monitor: &mut dyn Monitor,
) -> Result<Solution> {
    solve_on(&Lane::default(), problem, backend, recipe, params, monitor)
}

/// Where a solve's GPU work goes: the process's stream ([`Lane::default`]) or a stream of its
/// own ([`Lane::own`]), so that solves in several threads run on the GPU at the same time.
#[derive(Default)]
pub struct Lane {
    #[cfg(feature = "cuda")]
    cuda: Option<crate::backend::cuda::CudaBackend>,
}

impl Lane {
    /// A lane with a GPU stream of its own where `backend` may use a GPU and one is usable;
    /// otherwise the default lane (the CPU backend has no streams to separate).
    pub fn own(backend: BackendChoice) -> Result<Lane> {
        #[cfg(feature = "cuda")]
        if backend != BackendChoice::Cpu
            && let Ok(gpu) = cuda_backend()
        {
            let own = gpu.sibling()?;
            // Solves in flight are host threads that mostly wait: spinning, they took the
            // cores the host's ILU(0) solves and launches needed (benches/results/gpu-study.md).
            own.wait_by_yielding()?;
            static QUEUES_HINT: std::sync::Once = std::sync::Once::new();
            if std::env::var_os("CUDA_DEVICE_MAX_CONNECTIONS").is_none() {
                QUEUES_HINT.call_once(|| {
                    log::warn!(
                        "solves in flight share the driver's 8 hardware queues: set \
                         CUDA_DEVICE_MAX_CONNECTIONS=32 before the first CUDA call \
                         (backend::cuda::claim_stream_queues), or they wait behind each \
                         other's kernels"
                    )
                });
            }
            // A cooperative launch waits for the whole device, so beside other streams it
            // stalls them and itself (benches/results/gpu-study.md): small solves run as one
            // persistent block each, launched as any kernel (unless PRECSOLVE_PERSISTENT=0).
            use crate::backend::cuda::Persistent;
            own.set_persistent(match Persistent::from_env() {
                Persistent::Off => Persistent::Off,
                _ => Persistent::OneBlock,
            });
            return Ok(Lane { cuda: Some(own) });
        }
        let _ = backend;
        Ok(Lane::default())
    }

    /// Whether a solve of `a` fills the GPU by itself (rows at least the threads it keeps
    /// resident), so that a solve beside it would only slow both: such solves run alone.
    pub fn fills_device(&self, a: &CsrMatrix) -> bool {
        #[cfg(feature = "cuda")]
        if let Some(gpu) = &self.cuda {
            return gpu
                .resident_threads()
                .is_ok_and(|threads| a.nrows() >= threads);
        }
        let _ = a;
        false
    }

    #[cfg(feature = "cuda")]
    fn cuda(&self) -> Result<&crate::backend::cuda::CudaBackend> {
        match &self.cuda {
            Some(gpu) => Ok(gpu),
            None => cuda_backend(),
        }
    }
}

/// [`solve`] with its GPU work on `lane`.
pub fn solve_on(
    lane: &Lane,
    problem: &Problem,
    backend: BackendChoice,
    recipe: Recipe<'_>,
    params: &Params,
    monitor: &mut dyn Monitor,
) -> Result<Solution> {
    by_precision!(recipe.precision, backend,
        P => solve_typed::<P>(lane, problem, backend, recipe, params, monitor),
        ladder => super::escalation::solve_ladder(
            lane, problem, backend, recipe, ladder, params, monitor,
        ))
}

/// [`solve_on`] in the precision `P` (which must be `recipe.precision`'s type), handing back
/// `x` in `P`.
pub(crate) fn solve_typed<P: Precision>(
    lane: &Lane,
    problem: &Problem,
    backend: BackendChoice,
    recipe: Recipe<'_>,
    params: &Params,
    monitor: &mut dyn Monitor,
) -> Result<(SolveInfo, Vec<P>)> {
    let recipe = Recipe {
        method: recipe.method.resolve(&problem.a),
        ..recipe
    };
    let (resolved, why) = backend.resolve_for_problem(
        &problem.a,
        recipe.method,
        recipe.precond,
        &[recipe.precision],
    )?;
    if let Some(why) = why {
        log::info!("{why}");
    }
    #[cfg(not(feature = "cuda"))]
    let _ = lane;
    // ILU(0) factors of a row permutation `P A` (a matching) go with `P A x = P b`: the same
    // residual norm and solution
    let order = match recipe.precond {
        Preconditioning::Ilu0(f) => f.row_order(),
        _ => None,
    };
    let (a, b) = match order {
        Some(order) => (&order.matrix, Cow::Owned(order.permute(&problem.b))),
        None => (&problem.a, Cow::Borrowed(&problem.b[..])),
    };
    let x0 = problem.x0.as_ref();
    match resolved {
        ResolvedBackend::Cpu
            if let Some(comm) = crate::distributed::current()
                && crate::distributed::cpu_layout().resolve(a, comm.size()) == CpuLayout::Blocks =>
        {
            let link = crate::backend::cpu::CpuLink::new(comm.clone());
            let backend = BlockBackend::new(CpuBackend::new(), link, comm, a);
            run_ranks::<_, P>(&backend, a, &b, x0, recipe, params, monitor)
        }
        #[cfg(feature = "cuda")]
        ResolvedBackend::Cuda if let Some(group) = crate::distributed::devices::current() => {
            let on = |backend: &BlockBackend<_>, monitor: &mut dyn Monitor| {
                run_blocks::<_, P>(backend, a, &b, x0, recipe, params, monitor)
            };
            let (mut info, x) = group.run(a, |gpu| on(gpu, monitor), |gpu| on(gpu, &mut NoMonitor))?;
            info.devices = group.len();
            Ok((info, x))
        }
        // MPI ranks (or threads standing in for them), a GPU each, reached through the host.
        #[cfg(feature = "cuda")]
        ResolvedBackend::Cuda if let Some(comm) = crate::distributed::current() => {
            let gpu = lane.cuda()?.sibling()?;
            let link = crate::backend::cuda::GpuLink::host(comm.clone());
            let backend = BlockBackend::new(gpu, link, comm, a);
            run_ranks::<_, P>(&backend, a, &b, x0, recipe, params, monitor)
        }
        ResolvedBackend::Cpu if let Some(comm) = crate::distributed::current() => {
            let backend = DistributedBackend::new(comm, a);
            let matrix = |on: &DistributedBackend| on.matrix(a);
            let (mut info, x) = run::<_, P>(&backend, Some(a), matrix, &b, x0, recipe, params, monitor)?;
            info.ranks = backend.ranks();
            info.times.communication = backend.communication().as_secs_f64();
            Ok((info, x))
        }
        ResolvedBackend::Cpu => {
            let backend = CpuBackend::new();
            let matrix = |on: &CpuBackend| on.matrix(a);
            run::<_, P>(&backend, Some(a), matrix, &b, x0, recipe, params, monitor)
        }
        #[cfg(feature = "cuda")]
        ResolvedBackend::Cuda => {
            let backend = lane.cuda()?;
            let matrix = |on: &crate::backend::cuda::CudaBackend| on.matrix(a);
            run::<_, P>(backend, Some(a), matrix, &b, x0, recipe, params, monitor)
        }
    }
}

/// ILU(0) on `backend` where `precond` asks for it (ilu0's factors, or block Jacobi's blocks of
/// `whole`), timed: the preconditioner, its factors, its name, and its setup seconds (ilu0's
/// factoring, done before, included).
#[allow(clippy::type_complexity)]
fn ilu_for<B: Backend>(
    backend: &B,
    precond: &Preconditioning,
    whole: Option<&CsrMatrix>,
) -> Result<Option<(Ilu0<B>, Arc<Ilu0Factors>, &'static str, f64)>> {
    let t0 = Instant::now();
    let (ilu, factors, name, factored) = match precond {
        Preconditioning::Ilu0(factors) => {
            let ilu = Ilu0::new(backend, factors)?;
            (ilu, Arc::clone(factors), "ilu0", factors.setup_seconds())
        }
        Preconditioning::BlockJacobi(shift) => {
            let whole = whole.ok_or_else(super::matrix_free::no_ilu0)?;
            let (ilu, factors) = backend.block_jacobi(whole, *shift)?;
            (Ilu0::uploaded(ilu), factors, "bjacobi", 0.0)
        }
        Preconditioning::None | Preconditioning::User(_) => return Ok(None),
    };
    backend.synchronize()?;
    let setup = factored + t0.elapsed().as_secs_f64();
    Ok(Some((ilu, factors, name, setup)))
}

/// `info` of a solve preconditioned by ILU(0) factors (`name`: ilu0, or bjacobi's block),
/// with the preconditioner's times: `setup` seconds before the iterations.
fn with_ilu<B: Backend>(
    backend: &B,
    mut info: SolveInfo,
    name: &'static str,
    ilu: &Ilu0<B>,
    factors: &Ilu0Factors,
    setup: f64,
) -> Result<SolveInfo> {
    info.precond = name;
    info.ilu_shift = (factors.sigma() > 0.0).then(|| factors.sigma());
    info.ilu_remedy = factors.remedy().cloned();
    info.times.precond = ilu.seconds_on(backend)?;
    info.times.precond_setup = setup;
    info.times.setup += setup;
    info.times.total += setup;
    if let Some(t) = info.time_to_target.as_mut() {
        *t += setup;
    }
    Ok(info)
}

/// [`run`] on a rank of a block solve, with the communication time.
fn run_blocks<B: crate::distributed::BlockKernels, P: Precision>(
    backend: &BlockBackend<B>,
    a: &std::sync::Arc<CsrMatrix>,
    b: &[f64],
    x0: Option<&ExactValues>,
    recipe: Recipe<'_>,
    params: &Params,
    monitor: &mut dyn Monitor,
) -> Result<(SolveInfo, Vec<P>)> {
    let matrix = |on: &BlockBackend<B>| on.matrix(a);
    let (mut info, x) = run::<_, P>(backend, Some(a), matrix, b, x0, recipe, params, monitor)?;
    info.times.communication = backend.communication().as_secs_f64();
    Ok((info, x))
}

/// [`run_blocks`] on this process's rank of a group (MPI, or threads standing in for it): an
/// error on one rank fails every rank, and the report counts them.
fn run_ranks<B: crate::distributed::BlockKernels, P: Precision>(
    backend: &BlockBackend<B>,
    a: &std::sync::Arc<CsrMatrix>,
    b: &[f64],
    x0: Option<&ExactValues>,
    recipe: Recipe<'_>,
    params: &Params,
    monitor: &mut dyn Monitor,
) -> Result<(SolveInfo, Vec<P>)> {
    let run = run_blocks::<_, P>(backend, a, b, x0, recipe, params, monitor);
    let (mut info, x) = backend.fail_together(run)?;
    info.ranks = backend.ranks();
    Ok((info, x))
}

/// One solve on `backend` in `P`: the matrix made available by `matrix`, `b` and `x0` uploaded
/// (all timed as setup), then the method's loop with the recipe's preconditioner (block
/// Jacobi's blocks cut from `whole`, the matrix `matrix` makes available where it has one).
#[allow(clippy::too_many_arguments)]
pub(crate) fn run<B: CgSteps + BicgstabSteps, P: Precision>(
    backend: &B,
    whole: Option<&CsrMatrix>,
    matrix: impl FnOnce(&B) -> Result<B::Matrix>,
    b: &[f64],
    x0: Option<&ExactValues>,
    recipe: Recipe<'_>,
    params: &Params,
    monitor: &mut dyn Monitor,
) -> Result<(SolveInfo, Vec<P>)> {
    // Kernel compilation happens once per process, before the clock starts: charged to
    // whichever precision ran first, it would make that precision look slower
    // (benches/results/h200.md, "Kernels compiled before a solve's clock").
    backend.prepare::<P>()?;
    let start = Instant::now();
    let a = matrix(backend)?;
    let mut x = match x0 {
        Some(x0) => backend.upload::<P>(&x0.values::<P>())?,
        None => backend.zeros::<P>(b.len())?,
    };
    let b = backend.vector_from_f64::<f64>(b)?;
    backend.synchronize()?;
    let upload = start.elapsed().as_secs_f64();
    let ilu = ilu_for(backend, recipe.precond, whole)?;
    let mut info = match (recipe.precond, ilu) {
        (_, Some((ilu, factors, name, setup))) => {
            let info = iterate(
                backend,
                &a,
                &b,
                &mut x,
                recipe.method,
                &ilu,
                params,
                monitor,
            )?;
            with_ilu(backend, info, name, &ilu, &factors, setup)?
        }
        (Preconditioning::User(given), None) => {
            let user = InDouble::new(given.as_ref());
            let mut info = iterate(
                backend,
                &a,
                &b,
                &mut x,
                recipe.method,
                &user,
                params,
                monitor,
            )?;
            info.precond = given.name();
            info.times.precond = Preconditioner::<B>::seconds(&user);
            info
        }
        // no preconditioner
        (_, None) => iterate(
            backend,
            &a,
            &b,
            &mut x,
            recipe.method,
            &Identity,
            params,
            monitor,
        )?,
    };
    info.times.setup += upload;
    info.times.total += upload;
    if let Some(t) = info.time_to_target.as_mut() {
        *t += upload;
    }
    // `P::NAME` is the type's (`mp`); the report names the precision (`mp:256`).
    info.precision = recipe.precision.name();
    Ok((info, backend.to_host(&x)?))
}

#[allow(clippy::too_many_arguments)]
fn iterate<B: CgSteps + BicgstabSteps, P: Precision, M: Preconditioner<B>>(
    backend: &B,
    a: &B::Matrix,
    b: &B::Vector<f64>,
    x: &mut B::Vector<P>,
    method: Method,
    precond: &M,
    params: &Params,
    monitor: &mut dyn Monitor,
) -> Result<SolveInfo> {
    match method {
        Method::Cg => cg(backend, a, b, x, precond, params, monitor),
        Method::Bicgstab | Method::Auto => bicgstab(backend, a, b, x, precond, params, monitor),
        Method::Gmres => super::gmres(backend, a, b, x, precond, params, monitor),
        Method::BicgstabL => super::bicgstab_l(backend, a, b, x, precond, params, monitor),
    }
}
