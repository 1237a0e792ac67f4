//! `mp:<bits>`'s device arithmetic against the CPU's `MpFloat` (itself checked against MPFR by
//! `tests/mpfloat_oracle.rs`), bit for bit: every limb count, precisions that fill their limbs
//! and ones that do not, operands shaped to break rounding code (carries through every limb,
//! cancellation, exact ties, the ends of the exponent range, doubles' subnormal range,
//! specials).

use precsolve::MpFloat;
use precsolve::backend::cuda::CudaBackend;
use precsolve::precision::mpfloat::{EMAX, EMIN};

const CASES: usize = 20_000;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo) as u64) as i64
    }
}

fn operand<const L: usize>(rng: &mut Rng, bits: u32) -> MpFloat<L> {
    let shape = rng.below(8);
    let mut digits = [0u64; L];
    for (i, d) in digits.iter_mut().enumerate() {
        *d = match shape {
            0 => u64::MAX,
            1 => u64::from(i == L - 1) << 63 | u64::from(i == 0),
            2 => rng.next() & rng.next() & rng.next(),
            3 => !(rng.next() & rng.next()),
            _ => rng.next(),
        };
    }
    digits[L - 1] |= 1 << 63;
    let exp = match rng.below(10) {
        0 => rng.range(i64::from(EMIN), i64::from(EMIN) + 300),
        1 => rng.range(i64::from(EMAX) - 300, i64::from(EMAX) + 1),
        2 => rng.range(-1100, -1000),
        3 | 4 => rng.range(-3000, 3000),
        _ => rng.range(-8, 8),
    };
    let x = MpFloat::from_integer_exp(rng.below(2) == 1, &digits, exp - 64 * L as i64, bits);
    if x.is_finite() {
        x
    } else {
        MpFloat::from_f64_bits(1.5, bits)
    }
}

fn partner<const L: usize>(rng: &mut Rng, a: &MpFloat<L>, bits: u32) -> MpFloat<L> {
    match rng.below(12) {
        0 => {
            // a (1 + k 2^-j): most bits shared, so a - b cancels
            let j = rng.range(1, i64::from(bits) + 8) as i32;
            let k = rng.range(-3, 4) as f64;
            a.add(a.mul_f64(k * 2f64.powi(-j)))
        }
        1 => a.neg(),
        2 => match a.to_integer_exp() {
            // half an ulp of a: a + b is a tie
            Some((_, _, e)) if !a.is_zero() => {
                let exp = e + 64 * L as i64 - i64::from(bits) - 1;
                MpFloat::from_integer_exp(rng.below(2) == 1, &[1], exp, bits)
            }
            _ => operand(rng, bits),
        },
        3 => match rng.below(5) {
            0 => MpFloat::zero(rng.below(2) == 1, bits),
            1 => MpFloat::infinity(rng.below(2) == 1, bits),
            2 => MpFloat::nan(bits),
            _ => MpFloat::from_f64_bits(rng.range(-4, 5) as f64, bits),
        },
        _ => operand(rng, bits),
    }
}

fn check_class<const L: usize>(gpu: &CudaBackend, bits: u32) -> Result<(), String> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ u64::from(bits));
    let (mut a, mut b, mut d) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..CASES {
        let x: MpFloat<L> = operand(&mut rng, bits);
        b.push(partner(&mut rng, &x, bits));
        a.push(x);
        d.push(match rng.below(5) {
            0 => f64::from_bits(rng.range(1, 1 << 52) as u64),
            1 => f64::from_bits(rng.next() & !(0x7ff << 52) | (rng.range(1, 2046) as u64) << 52),
            // +-2^k, subnormal ones included (mul_f64's exact shortcut and its way out)
            2 => {
                let sign = rng.below(2) << 63;
                match rng.range(-1074, 1024) {
                    k if k < -1022 => f64::from_bits(sign | 1 << (k + 1074)),
                    k => f64::from_bits(sign | ((k + 1023) as u64) << 52),
                }
            }
            _ => rng.range(-10_000, 10_000) as f64 / 1024.0,
        });
    }
    let (got, doubles) = gpu.mp_ops_check(&a, &b, &d).map_err(|e| e.to_string())?;
    let names = ["add", "sub", "mul", "div", "sqrt|a|", "mul_f64", "from_f64"];
    let mut failures = Vec::new();
    for i in 0..CASES {
        let (x, y) = (a[i], b[i]);
        let want = [
            x.add(y),
            x.sub(y),
            x.mul(y),
            x.div(y),
            x.abs().sqrt(),
            x.mul_f64(d[i]),
            MpFloat::from_f64_bits(d[i], bits),
        ];
        for (k, w) in want.iter().enumerate() {
            let g = got[7 * i + k];
            if g.to_packed() != w.to_packed() && failures.len() < 8 {
                failures.push(format!(
                    "{}({x:?}, {y:?}, {:e}): GPU {g:?}, CPU {w:?}",
                    names[k], d[i]
                ));
            }
        }
        if doubles[i].to_bits() != x.to_f64().to_bits() && failures.len() < 8 {
            failures.push(format!(
                "to_f64({x:?}): GPU {:e}, CPU {:e}",
                doubles[i],
                x.to_f64()
            ));
        }
    }
    match failures.is_empty() {
        true => Ok(()),
        false => Err(format!("mp:{bits} ({L} limbs):\n{}", failures.join("\n"))),
    }
}

pub fn mp_arithmetic(gpu: &CudaBackend) -> Result<(), String> {
    check_class::<2>(gpu, 53)?;
    check_class::<2>(gpu, 106)?;
    check_class::<2>(gpu, 128)?;
    check_class::<4>(gpu, 200)?;
    check_class::<4>(gpu, 256)?;
    check_class::<8>(gpu, 300)?;
    check_class::<8>(gpu, 512)?;
    check_class::<16>(gpu, 1024)?;
    check_class::<32>(gpu, 1500)?;
    check_class::<32>(gpu, 2048)
}

/// Whole `mp:<bits>` solves on the GPU against the CPU's: CG and BiCGStab at 128, 256 and
/// 1,024 bits, with and without ILU(0) (applied on the host for mp), the same iterations, stop
/// reason, residual bits and solution values.
pub fn mp_solves(_gpu: &CudaBackend) -> Result<(), String> {
    use precsolve::{BackendChoice, Method, Solver, WorkingPrecision};
    let err = |e: precsolve::Error| e.to_string();
    let dir = std::env::var("PRECSOLVE_MATRICES")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/matrices").into());
    let shared = |name: &str| format!("{dir}/{name}.mtx");
    let cases = [
        ("poisson3d:12".to_string(), Method::Cg, false, 80),
        ("poisson3d:12".to_string(), Method::Bicgstab, true, 40),
        (shared("bcsstk01"), Method::Cg, false, 200),
        (shared("cage8"), Method::Bicgstab, false, 40),
        (shared("sherman1"), Method::Bicgstab, true, 30),
    ];
    for (spec, method, ilu0, max_iter) in cases {
        let a = precsolve::load_matrix(&spec).map_err(err)?;
        let b = vec![1.0; a.nrows()];
        for bits in [106, 128, 256, 1024, 2048] {
            let run = |backend| {
                let mut solver = Solver::with_method(method)
                    .tol(1e-300)
                    .max_iter(max_iter)
                    .backend(backend);
                if ilu0 {
                    solver = solver.ilu0();
                }
                solver
                    .solve_in(WorkingPrecision::Mp(bits), &a, &b)
                    .map_err(err)
            };
            let (g, c) = (run(BackendChoice::Cuda)?, run(BackendChoice::Cpu)?);
            let label = format!("{spec} {method:?} mp:{bits} ilu0 {ilu0}");
            let (gi, ci) = (&g.info, &c.info);
            let same = |a: f64, b: f64| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
            if gi.backend != "cuda"
                || gi.iterations != ci.iterations
                || gi.stop_reason != ci.stop_reason
                || !same(gi.recurrence_residual, ci.recurrence_residual)
                || !same(gi.true_residual, ci.true_residual)
                || g.x != c.x
            {
                return Err(format!(
                    "{label}: GPU ({}) {} iterations, {}, {:e}, {:e}; CPU {}, {}, {:e}, {:e}; x same: {}",
                    gi.backend,
                    gi.iterations,
                    gi.stop_reason,
                    gi.recurrence_residual,
                    gi.true_residual,
                    ci.iterations,
                    ci.stop_reason,
                    ci.recurrence_residual,
                    ci.true_residual,
                    g.x == c.x
                ));
            }
            println!(
                "    {label:>48}: {:>4} iterations, true residual {:.3e}, {:.1} us/it GPU, {:.1} us/it CPU, identical",
                gi.iterations,
                gi.true_residual,
                gi.time_per_iteration() * 1e6,
                ci.time_per_iteration() * 1e6
            );
        }
    }
    Ok(())
}
