//! Serial kernel bodies the CPU backend runs on each parallel chunk.
//!
//! Each body is compiled twice by [`fma_kernel!`]: once inside a `#[target_feature(enable = "fma")]`
//! function (so the double-double TwoProd's `mul_add` becomes one instruction) and once plain;
//! the FMA flavour runs when the CPU has FMA. Both give the same bits (see `precision::dd`).

use crate::precision::{Precision, fma_available};
use crate::sparse::CsrMatrix;

/// Elements per partial sum of a dot product. Part of the result's definition: changing it
/// changes the rounding of every dot product (and the GPU twin must use the same layout).
pub const DOT_CHUNK: usize = 4096;

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
    /// Sequential `<x, y>` over one chunk, starting from zero.
    fn dot_chunk<P>(x: &[P], y: &[P]) -> P {
        let mut sum = P::zero();
        for (xi, yi) in x.iter().zip(y) {
            sum = sum.add(&xi.mul(yi));
        }
        sum
    }
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
