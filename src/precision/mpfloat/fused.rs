//! `s + a x` for a double `a` (a matrix entry) rounded once: the SpMV's inner step, as MPFR's
//! `mpfr_fma` with the double widened exactly. The product `a x` has at most `64 L + 53` bits,
//! so it is formed whole in `L + 1` limbs; the sum with `s` is exact in a window of `L + 2`
//! limbs when the exponents differ by less than a limb (a row's terms, most of a solve's
//! steps), and otherwise takes a wider window with a sticky bit. One rounding where
//! `add(mul_f64)` had two: the product's rounding was a third of an SpMV step's work, and the
//! result is the exact `s + a x` correctly rounded, as a user of `mpfr_fma` expects.

use super::convert::decompose;
use super::round::Exact;
use super::{Kind, MpFloat, limbs, window};

/// `(a << 1) << (63 - s)`: `a << (64 - s)`, and zero for `s = 0`.
#[inline(always)]
fn up(a: u64, s: u32) -> u64 {
    (a << 1) << (63 - s)
}

/// `(a >> 1) >> (63 - s)`: `a >> (64 - s)`, and zero for `s = 0`.
#[inline(always)]
fn down(a: u64, s: u32) -> u64 {
    (a >> 1) >> (63 - s)
}

/// An operand of the sum as a window of `L + 2` limbs, top first: `0.h g1 g0 * 2^exp`, `h`'s
/// top bit set.
#[derive(Clone, Copy)]
struct Wide<const L: usize> {
    h: [u64; L],
    g1: u64,
    g0: u64,
    exp: i64,
    negative: bool,
}

impl<const L: usize> Wide<L> {
    /// Whether `|self| < |other|`.
    #[inline(always)]
    fn less(&self, other: &Self) -> bool {
        if self.exp != other.exp {
            return self.exp < other.exp;
        }
        match limbs::cmp(&self.h, &other.h) {
            std::cmp::Ordering::Equal => (self.g1, self.g0) < (other.g1, other.g0),
            order => order.is_lt(),
        }
    }
}

impl<const L: usize> MpFloat<L> {
    /// `self + a x`, correctly rounded once at the larger precision of `self` and `x`
    /// (MPFR's `mpfr_fma(x, a, self)`).
    #[inline]
    pub fn add_mul_f64(self, a: f64, x: Self) -> Self {
        let bits = self.bits_of(&x);
        if !self.is_normal() || !x.is_normal() || !a.is_finite() || a == 0.0 {
            return Self::add_mul_special(self, a, x, bits);
        }
        let (a_negative, m, e) = decompose(a);
        // The product's integer, exact: `low` and `top` above it.
        let mut low = [0u64; L];
        let mut top = 0u64;
        for (out, &limb) in low.iter_mut().zip(&x.sig) {
            let t = u128::from(limb) * u128::from(m) + u128::from(top);
            *out = t as u64;
            top = (t >> 64) as u64;
        }
        let p_negative = x.negative() != a_negative;
        // 0.top low... * 2^exp, as `mul_f64`'s.
        let exp = i64::from(x.exp()) + e + 64;
        if top == 0 {
            // A subnormal `a` of one bit: the general path normalises.
            return Self::add_mul_general(&self, p_negative, top, &low, exp, bits);
        }
        let z = top.leading_zeros();
        let mut h = [0u64; L];
        h[..L - 1].copy_from_slice(&low[1..]);
        h[L - 1] = top;
        let mut g1 = low[0];
        window::shl_small(&mut h, &mut g1, z);
        let p = Wide {
            h,
            g1,
            g0: 0,
            exp: exp - i64::from(z),
            negative: p_negative,
        };
        let s = Wide {
            h: self.sig,
            g1: 0,
            g0: 0,
            exp: i64::from(self.exp()),
            negative: self.negative(),
        };
        let (big, small) = if s.less(&p) { (p, s) } else { (s, p) };
        let d = (big.exp - small.exp) as u64;
        if d < 64
            && let Some(sum) = Self::add_mul_near(&big, &small, d as u32, bits)
        {
            return sum;
        }
        Self::add_mul_general(&self, p_negative, top, &low, exp, bits)
    }

    /// `big ± small` (`|big| >= |small|`, exponents `d < 64` apart) in the `L + 2`-limb window,
    /// which holds it exactly: `small`'s lowest limb is zero, so its shift loses nothing. `None`
    /// where a whole limb cancelled.
    #[inline(always)]
    fn add_mul_near(big: &Wide<L>, small: &Wide<L>, d: u32, bits: u32) -> Option<Self> {
        let subtract = big.negative != small.negative;
        let flip = 0u64.wrapping_sub(u64::from(subtract));
        // `small >> d`, complemented for a difference (two's complement: the +1 as carry in).
        let v0 = up(small.g1, d) ^ flip;
        let v1 = ((small.g1 >> d) | up(small.h[0], d)) ^ flip;
        let v: [u64; L] = std::array::from_fn(|i| {
            let next = if i + 1 < L { small.h[i + 1] } else { 0 };
            ((small.h[i] >> d) | up(next, d)) ^ flip
        });
        let (mut g0, c0) = big.g0.overflowing_add(v0);
        let (g0s, c0s) = g0.overflowing_add(u64::from(subtract));
        g0 = g0s;
        let (mut g1, c1) = big.g1.overflowing_add(v1);
        let (g1s, c1s) = g1.overflowing_add(u64::from(c0 | c0s));
        g1 = g1s;
        let mut h = big.h;
        let carry = limbs::add_assign_carry(&mut h, &v, c1 | c1s);
        // A sum's carry out of the top moves the window one bit right; a difference's carry is
        // the two's complement's and means nothing (the difference is not negative).
        let over = u32::from(carry && !subtract);
        let mut sticky = g0 & u64::from(over) != 0;
        g0 = (g0 >> over) | up(g1, over);
        g1 = (g1 >> over) | up(h[0], over);
        for i in 0..L {
            let next = if i + 1 < L { h[i + 1] } else { u64::from(over) };
            h[i] = (h[i] >> over) | up(next, over);
        }
        if h[L - 1] == 0 {
            return None;
        }
        let z = h[L - 1].leading_zeros();
        for i in (1..L).rev() {
            h[i] = (h[i] << z) | down(h[i - 1], z);
        }
        h[0] = (h[0] << z) | down(g1, z);
        g1 = (g1 << z) | down(g0, z);
        g0 <<= z;
        sticky |= g0 != 0;
        let exp = big.exp + i64::from(over) - i64::from(z);
        Some(Self::round_normalised(big.negative, h, g1, sticky, exp, bits))
    }

    /// `s + p` for normal `s` and the product `p = (-1)^p_negative 0.top low... 2^exp`
    /// (nonzero, normalised or not), in a window of `L + 5` limbs: the larger operand one limb
    /// below its top (room for a carry), the smaller shifted right to its place, what leaves
    /// the bottom a sticky bit (only when it lies three limbs below the larger's last, so that
    /// at most one bit cancels and the rounding bit is one of the window's).
    fn add_mul_general(s: &Self, p_negative: bool, top: u64, low: &[u64; L], exp: i64, bits: u32) -> Self {
        const { assert!(L >= 2, "the window is taken from 4 L limbs") };
        let mut product = [[0u64; L]; 2];
        let p = &mut product.as_flattened_mut()[..L + 1];
        p[..L].copy_from_slice(low);
        p[L] = top;
        let z = limbs::leading_zeros(p);
        limbs::shl(p, z);
        let p_exp = exp - i64::from(z);
        let s_exp = i64::from(s.exp());
        let p_big = match p_exp.cmp(&s_exp) {
            std::cmp::Ordering::Equal => match limbs::cmp(&p[1..], &s.sig) {
                std::cmp::Ordering::Equal => p[0] != 0,
                order => order.is_gt(),
            },
            order => order.is_gt(),
        };
        let (big, big_exp, big_negative, small, small_exp): (&[u64], _, _, &[u64], _) = match p_big {
            true => (p, p_exp, p_negative, &s.sig, s_exp),
            false => (&s.sig, s_exp, s.negative(), p, p_exp),
        };
        let n = L + 5;
        let (mut wide, mut shifted) = ([[0u64; L]; 4], [[0u64; L]; 4]);
        let w = &mut wide.as_flattened_mut()[..n];
        let v = &mut shifted.as_flattened_mut()[..n];
        w[n - 1 - big.len()..n - 1].copy_from_slice(big);
        v[n - 1 - small.len()..n - 1].copy_from_slice(small);
        let sticky = limbs::shr(v, (big_exp - small_exp) as u64);
        let subtract = s.negative() != p_negative;
        if !subtract {
            limbs::add_assign(w, v);
        } else {
            limbs::sub_assign(w, v);
            if sticky {
                // big - (v + f) = (big - v - 1) + (1 - f), 0 < 1 - f < 1
                let mut borrow = true;
                for limb in w.iter_mut() {
                    (*limb, borrow) = limb.overflowing_sub(u64::from(borrow));
                }
            } else if w.iter().all(|&l| l == 0) {
                return Self::zero(false, bits);
            }
        }
        let scale = big_exp - 64 * (n as i64 - 1);
        Self::round(
            Exact {
                negative: big_negative,
                limbs: w,
                sticky,
                scale,
            },
            bits,
        )
    }

    /// [`add_mul_f64`](Self::add_mul_f64) where `s` or the product is zero, infinite or NaN.
    #[inline(never)]
    fn add_mul_special(s: Self, a: f64, x: Self, bits: u32) -> Self {
        if x.is_normal() && a.is_finite() && a != 0.0 {
            // A finite nonzero product: `s` is zero (the product rounded once), infinite or NaN.
            return match s.kind() {
                Kind::Zero => x.with_bits(bits).mul_f64(a),
                _ => s.with_bits(bits),
            };
        }
        // The product is exact (zero, infinite or NaN): the sum is the one rounding.
        let product = x.mul_f64(a);
        Self::sum(&s, &product, product.negative())
    }
}
