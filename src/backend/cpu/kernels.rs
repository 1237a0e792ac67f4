//! Serial kernel bodies the CPU backend runs on each parallel chunk.
//!
//! Each body is compiled twice by [`fma_kernel!`]: once inside a `#[target_feature(enable = "fma")]`
//! function (so the double-double TwoProd's `mul_add` becomes one instruction) and once plain;
//! the FMA flavour runs when the CPU has FMA. Both give the same bits (see `precision::dd`).

use crate::precision::{Precision, fma_available};
use crate::sparse::CsrMatrix;

/// Dot products follow the GPU's reduction (kernels/common/reduce.cuh), which is part of the
/// result's definition: a chunk of `DOT_CHUNK` elements is summed by `DOT_THREADS` lanes, lane
/// `t` taking elements `t, t + DOT_THREADS, ...` in order from zero; the lanes then combine by
/// the halving tree `s[t] = s[t] + s[t + off]`, `off = DOT_THREADS/2, ..., 1`. Chunk results are
/// reduced the same way (strided lane sums, then the tree).
pub const DOT_THREADS: usize = 256;
pub const DOT_PER_THREAD: usize = 32;
pub const DOT_CHUNK: usize = DOT_THREADS * DOT_PER_THREAD;

/// The halving tree over `DOT_THREADS` lane sums; the result is in lane 0.
#[inline(always)]
fn tree_reduce<P: Precision>(lanes: &mut [P]) -> P {
    let mut off = lanes.len() / 2;
    while off > 0 {
        for t in 0..off {
            lanes[t] = lanes[t].add(&lanes[t + off]);
        }
        off /= 2;
    }
    lanes[0].clone()
}

/// Define `fn $name<P: Precision>(...)` that runs `$body` compiled with FMA when available.
macro_rules! fma_kernel {
    ($(#[$meta:meta])* fn $name:ident<$P:ident>($($arg:ident : $ty:ty),* $(,)?) $(-> $ret:ty)? $body:block) => {
        $(#[$meta])*
        #[inline]
        pub fn $name<$P: Precision>($($arg: $ty),*) $(-> $ret)? {
            #[inline(always)]
            fn body<$P: Precision>($($arg: $ty),*) $(-> $ret)? $body

            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "fma")]
                unsafe fn with_fma<$P: Precision>($($arg: $ty),*) $(-> $ret)? {
                    body::<$P>($($arg),*)
                }
                if fma_available() {
                    // SAFETY: `fma_available()` confirmed the CPU executes FMA instructions.
                    return unsafe { with_fma::<$P>($($arg),*) };
                }
            }
            body::<$P>($($arg),*)
        }
    };
}

fma_kernel! {
    /// Rows `first..first + out.len()` of `A x` (or of `b - A x` when `b` is given).
    ///
    /// Each row is summed as the CSR-vector GPU kernel with `lanes` threads per row does it:
    /// lane `l` accumulates entries `l, l + lanes, ...` from zero, then the lanes are combined by
    /// the shuffle-down tree (`s[l] += s[l + off]` for `off = lanes/2, ..., 1`). Besides matching
    /// the GPU bit for bit, the independent lanes break the dependency chain of the DD adds.
    fn spmv_rows<P>(a: &CsrMatrix, lanes: usize, x: &[P], first: usize, out: &mut [P], b: Option<&[f64]>) {
        let row_ptr = a.row_ptr();
        let cols = a.col_idx();
        let vals = a.values();
        let mut lane_sums: [P; 32] = std::array::from_fn(|_| P::zero());
        for (i, y) in out.iter_mut().enumerate() {
            let row = first + i;
            let (start, end) = (row_ptr[row], row_ptr[row + 1]);
            for s in lane_sums[..lanes].iter_mut() {
                *s = P::zero();
            }
            let mut k = start;
            while k < end {
                let stop = (k + lanes).min(end);
                for (lane, kk) in (k..stop).enumerate() {
                    lane_sums[lane] = lane_sums[lane].add_mul_f64(vals[kk], &x[cols[kk] as usize]);
                }
                k = stop;
            }
            let mut off = lanes / 2;
            while off > 0 {
                for l in 0..off {
                    lane_sums[l] = lane_sums[l].add(&lane_sums[l + off]);
                }
                off /= 2;
            }
            *y = match b {
                Some(b) => P::from_f64(b[i]).sub(&lane_sums[0]),
                None => lane_sums[0].clone(),
            };
        }
    }
}

fma_kernel! {
    /// `<x, y>` over one chunk of at most `DOT_CHUNK` elements, in the GPU block's order.
    fn dot_chunk<P>(x: &[P], y: &[P]) -> P {
        let mut lanes: [P; DOT_THREADS] = std::array::from_fn(|_| P::zero());
        for (x, y) in x.chunks(DOT_THREADS).zip(y.chunks(DOT_THREADS)) {
            for ((lane, xi), yi) in lanes.iter_mut().zip(x).zip(y) {
                *lane = lane.add(&xi.mul(yi));
            }
        }
        tree_reduce(&mut lanes)
    }
}

/// Sum of the chunk results, in the order of the GPU's final one-block stage.
pub fn sum_partials<P: Precision>(partials: &[P]) -> P {
    let mut lanes: [P; DOT_THREADS] = std::array::from_fn(|_| P::zero());
    for row in partials.chunks(DOT_THREADS) {
        for (lane, p) in lanes.iter_mut().zip(row) {
            *lane = lane.add(p);
        }
    }
    tree_reduce(&mut lanes)
}

fma_kernel! {
    /// `y <- alpha x + y`.
    fn axpy_chunk<P>(alpha: &P, x: &[P], y: &mut [P]) {
        for (yi, xi) in y.iter_mut().zip(x) {
            *yi = alpha.mul(xi).add(yi);
        }
    }
}

fma_kernel! {
    /// `y <- x + beta y`.
    fn xpay_chunk<P>(x: &[P], beta: &P, y: &mut [P]) {
        for (yi, xi) in y.iter_mut().zip(x) {
            *yi = xi.add(&beta.mul(yi));
        }
    }
}

fma_kernel! {
    /// `z <- alpha x + y`.
    fn axpyz_chunk<P>(alpha: &P, x: &[P], y: &[P], z: &mut [P]) {
        for ((zi, xi), yi) in z.iter_mut().zip(x).zip(y) {
            *zi = alpha.mul(xi).add(yi);
        }
    }
}

fma_kernel! {
    /// `p <- r + beta (p - omega v)`, in the same operation order as the unfused
    /// `axpy(-omega, v, p); xpay(r, beta, p)`, so fusing changes no bits.
    fn bicgstab_direction_chunk<P>(r: &[P], beta: &P, omega: &P, v: &[P], p: &mut [P]) {
        let minus_omega = omega.neg();
        for ((pi, ri), vi) in p.iter_mut().zip(r).zip(v) {
            let t = minus_omega.mul(vi).add(pi);
            *pi = ri.add(&beta.mul(&t));
        }
    }
}
