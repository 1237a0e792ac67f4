//! Nanoseconds per element of double-double add, mul, mul_f64 and an axpy (`y += alpha * x`, all
//! double-double) over 1 M elements, with three ways of getting TwoProd:
//!
//! * `fma_target`: the loop is compiled with `#[target_feature(enable = "fma")]` (called after
//!   run-time detection), so `f64::mul_add` in the inlined DD routines is a `vfmadd` instruction;
//! * `fma_call`: no target feature: the same `mul_add` is an out-of-line call to libm's `fma`;
//! * `dekker`: FMA detection overridden, Dekker's split (the fallback, same bits).
//!
//! `cargo bench --bench dd_ops`; check the instruction with
//! `objdump -d --no-show-raw-insn target/release/deps/dd_ops-* | grep -c vfmadd`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use precsolve::Dd;
use precsolve::precision::set_fma_fallback_for_tests;
use std::hint::black_box;
use std::time::Duration;

const N: usize = 1 << 20;

// Loop bodies, instantiated once per variant below so each gets its own codegen.
#[inline(always)]
fn add_body(x: &[Dd], y: &[Dd], z: &mut [Dd]) {
    for ((z, x), y) in z.iter_mut().zip(x).zip(y) {
        *z = *x + *y;
    }
}

#[inline(always)]
fn mul_body(x: &[Dd], y: &[Dd], z: &mut [Dd]) {
    for ((z, x), y) in z.iter_mut().zip(x).zip(y) {
        *z = *x * *y;
    }
}

#[inline(always)]
fn mul_f64_body(x: &[Dd], f: &[f64], z: &mut [Dd]) {
    for ((z, x), f) in z.iter_mut().zip(x).zip(f) {
        *z = *x * *f;
    }
}

#[inline(always)]
fn axpy_body(alpha: Dd, x: &[Dd], y: &mut [Dd]) {
    for (y, x) in y.iter_mut().zip(x) {
        *y += alpha * *x;
    }
}

#[inline(never)]
fn add_plain(x: &[Dd], y: &[Dd], z: &mut [Dd]) {
    add_body(x, y, z)
}
#[inline(never)]
fn mul_plain(x: &[Dd], y: &[Dd], z: &mut [Dd]) {
    mul_body(x, y, z)
}
#[inline(never)]
fn mul_f64_plain(x: &[Dd], f: &[f64], z: &mut [Dd]) {
    mul_f64_body(x, f, z)
}
#[inline(never)]
fn axpy_plain(alpha: Dd, x: &[Dd], y: &mut [Dd]) {
    axpy_body(alpha, x, y)
}

/// # Safety
/// The CPU must support FMA (`is_x86_feature_detected!("fma")`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
#[inline(never)]
unsafe fn add_fma(x: &[Dd], y: &[Dd], z: &mut [Dd]) {
    add_body(x, y, z)
}
/// # Safety
/// The CPU must support FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
#[inline(never)]
unsafe fn mul_fma(x: &[Dd], y: &[Dd], z: &mut [Dd]) {
    mul_body(x, y, z)
}
/// # Safety
/// The CPU must support FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
#[inline(never)]
unsafe fn mul_f64_fma(x: &[Dd], f: &[f64], z: &mut [Dd]) {
    mul_f64_body(x, f, z)
}
/// # Safety
/// The CPU must support FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
#[inline(never)]
unsafe fn axpy_fma(alpha: Dd, x: &[Dd], y: &mut [Dd]) {
    axpy_body(alpha, x, y)
}

fn data() -> (Vec<Dd>, Vec<Dd>, Vec<f64>) {
    // deterministic, well-scaled values; the timing does not depend on them
    let x = (0..N)
        .map(|i| Dd::new(1.0 + i as f64 / N as f64, 1e-17 * (i % 7) as f64))
        .collect();
    let y = (0..N)
        .map(|i| Dd::new(0.5 - i as f64 / (3 * N) as f64, -1e-18 * (i % 5) as f64))
        .collect();
    let f = (0..N).map(|i| 1.0 + (i % 11) as f64 / 16.0).collect();
    (x, y, f)
}

/// Which TwoProd a benchmark runs with.
#[derive(Clone, Copy, PartialEq)]
enum Variant {
    FmaTarget,
    FmaCall,
    Dekker,
}

impl Variant {
    fn name(self) -> &'static str {
        match self {
            Variant::FmaTarget => "fma_target",
            Variant::FmaCall => "fma_call",
            Variant::Dekker => "dekker",
        }
    }
}

fn bench(c: &mut Criterion) {
    #[cfg(target_arch = "x86_64")]
    let has_fma = std::arch::is_x86_feature_detected!("fma");
    #[cfg(not(target_arch = "x86_64"))]
    let has_fma = false;
    let (x, y, f) = data();
    let mut z = vec![Dd::ZERO; N];
    let alpha = Dd::new(0.999_999, 1e-23);

    let mut variants = vec![Variant::FmaCall, Variant::Dekker];
    if has_fma {
        variants.insert(0, Variant::FmaTarget);
    } else {
        eprintln!("no FMA on this CPU: fma_target skipped, fma_call is Dekker too");
    }

    let mut g = c.benchmark_group("dd_ops");
    g.throughput(Throughput::Elements(N as u64));
    g.sample_size(20);
    g.warm_up_time(Duration::from_millis(500));
    g.measurement_time(Duration::from_secs(2));
    // Variants of one kernel run back to back, so machine noise hits them alike.
    for kernel in ["add", "mul", "mul_f64", "axpy"] {
        if kernel == "axpy" {
            // y += alpha x in place; the values drift but stay finite, all the timing needs
            z.copy_from_slice(&y);
        }
        for &v in &variants {
            set_fma_fallback_for_tests(v == Variant::Dekker);
            let fma = v == Variant::FmaTarget;
            g.bench_function(format!("{kernel}/{}", v.name()), |b| {
                b.iter(|| {
                    let (x, y, f) = (black_box(&x[..]), black_box(&y[..]), black_box(&f[..]));
                    #[cfg(target_arch = "x86_64")]
                    if fma {
                        // SAFETY: FMA was detected above
                        unsafe {
                            match kernel {
                                "add" => add_fma(x, y, &mut z),
                                "mul" => mul_fma(x, y, &mut z),
                                "mul_f64" => mul_f64_fma(x, f, &mut z),
                                _ => axpy_fma(black_box(alpha), x, &mut z),
                            }
                        }
                        return;
                    }
                    let _ = fma;
                    match kernel {
                        "add" => add_plain(x, y, &mut z),
                        "mul" => mul_plain(x, y, &mut z),
                        "mul_f64" => mul_f64_plain(x, f, &mut z),
                        _ => axpy_plain(black_box(alpha), x, &mut z),
                    }
                })
            });
        }
        black_box(&z);
    }
    set_fma_fallback_for_tests(false);
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
