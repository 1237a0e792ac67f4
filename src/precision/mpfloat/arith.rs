//! The correctly rounded operations of [`MpFloat`]: each forms its exact result (or enough of it
//! and a sticky bit) in integers, then rounds once (`round.rs`).

use super::round::Exact;
use super::{EMAX, EMIN, Kind, MpFloat, limbs, window};

/// From this many limbs `mul` rounds from the product's high columns where that decides the
/// rounding (`MpFloat::mul_short`). Measured on mp CG (`benches/results/mp-cpu.md`): 1.4x
/// faster at 32 limbs, even at 16, 18% slower at 8 (the whole product skips the operands'
/// zero limbs, and the short one pays for its check).
const SHORT_PRODUCT_LIMBS: usize = 32;

// The methods are the operators' bodies (and the `Precision` trait's), callable by name.
#[allow(clippy::should_implement_trait)]
impl<const L: usize> MpFloat<L> {
    /// The precision of a result: the larger of the operands'.
    fn bits_of(&self, b: &Self) -> u32 {
        u32::from(self.prec().max(b.prec()))
    }

    /// `-self`, exactly.
    pub fn neg(self) -> Self {
        let negative = self.negative();
        self.with_sign(!negative)
    }

    /// `|self|`, exactly.
    pub fn abs(self) -> Self {
        self.with_sign(false)
    }

    /// `self + b`, correctly rounded.
    pub fn add(self, b: Self) -> Self {
        Self::sum(&self, &b, b.negative())
    }

    /// `self - b`, correctly rounded.
    pub fn sub(self, b: Self) -> Self {
        Self::sum(&self, &b, !b.negative())
    }

    /// `a + (-1)^b_negative |b|`.
    #[inline]
    pub(super) fn sum(a: &Self, b: &Self, b_negative: bool) -> Self {
        if !a.is_normal() || !b.is_normal() {
            if a.is_zero() && b.is_normal() {
                // A row's or a lane's first step: `0 + b` is `b` (at the larger precision).
                return b.with_sign(b_negative).with_bits(a.bits_of(b));
            }
            return Self::sum_special(*a, *b, b_negative);
        }
        let bits = a.bits_of(b);
        let swap = match a.exp() == b.exp() {
            true => limbs::less(&a.sig, &b.sig),
            false => a.exp() < b.exp(),
        };
        // The signs travel beside the operands rather than in a copy of `b` with its sign
        // changed: at 16 and 32 limbs that copy was a `memmove` call a sum.
        let (x, y, x_negative, subtract) = match swap {
            true => (b, a, b_negative, a.negative() != b_negative),
            false => (a, b, a.negative(), a.negative() != b_negative),
        };
        let d = (i64::from(x.exp()) - i64::from(y.exp())) as u64;
        if d < 64
            && let Some(sum) = Self::sum_near(x, y, x_negative, subtract, d as u32, bits)
        {
            return sum;
        }
        Self::sum_normal(x, y, x_negative, subtract, bits)
    }

    /// [`sum`](Self::sum) where an operand is zero, infinite or NaN.
    #[inline(never)]
    fn sum_special(a: Self, b: Self, b_negative: bool) -> Self {
        let bits = a.bits_of(&b);
        match (a.kind(), b.kind()) {
            (Kind::Nan, _) | (_, Kind::Nan) => Self::nan(bits),
            (Kind::Inf, Kind::Inf) if a.negative() != b_negative => Self::nan(bits),
            (Kind::Inf, _) => Self::infinity(a.negative(), bits),
            (_, Kind::Inf) => Self::infinity(b_negative, bits),
            // Round to nearest: -0 only from two negative zeros.
            (Kind::Zero, Kind::Zero) => Self::zero(a.negative() && b_negative, bits),
            (Kind::Zero, _) => b.with_sign(b_negative).with_bits(bits),
            (_, Kind::Zero) => a.with_bits(bits),
            (Kind::Normal, Kind::Normal) => unreachable!("two normal values take the sum's own path"),
        }
    }

    /// `x ± y` (`x`'s sign `x_negative`, `y`'s the same unless `subtract`) for normal values
    /// with `|x| >= |y|` whose exponents differ by `d < 64`: most of a
    /// solve's sums (a row's products, a dot's terms), whose result each next sum waits for. So
    /// no branch on the data where a select does: `y`'s significand shifted right by `d` fits
    /// the window whole (nothing for a sticky bit), a difference is the sum of the two's
    /// complement, and the normalising shift is one bit right after a carry or less than a limb
    /// left after a cancellation. `None` where a whole limb cancelled: the general path then.
    #[inline(always)]
    fn sum_near(
        x: &Self,
        y: &Self,
        x_negative: bool,
        subtract: bool,
        d: u32,
        bits: u32,
    ) -> Option<Self> {
        debug_assert!(d < 64);
        let flip = 0u64.wrapping_sub(u64::from(subtract));
        // `(a << 1) << (63 - s)` is `a << (64 - s)`, and zero for `s = 0`.
        let up = |a: u64, s: u32| (a << 1) << (63 - s);
        let down = |a: u64, s: u32| (a >> 1) >> (63 - s);
        // The guard limb: x's is zero, y's holds the bits the shift moved out of its limbs.
        let (mut g, mut carry) = (up(y.sig[0], d) ^ flip).overflowing_add(u64::from(subtract));
        let mut h = x.sig;
        let v: [u64; L] = std::array::from_fn(|i| {
            let next = if i + 1 < L { y.sig[i + 1] } else { 0 };
            ((y.sig[i] >> d) | up(next, d)) ^ flip
        });
        carry = limbs::add_assign_carry(&mut h, &v, carry);
        // A sum's carry out of the top moves the window one bit right; a difference's carry is
        // the two's complement's and means nothing (the difference is not negative).
        let over = u32::from(carry && !subtract);
        let sticky = g & u64::from(over) != 0;
        g = (g >> over) | up(h[0], over);
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
        h[0] = (h[0] << z) | down(g, z);
        g <<= z;
        let exp = i64::from(x.exp()) + i64::from(over) - i64::from(z);
        Some(Self::round_normalised(x_negative, h, g, sticky, exp, bits))
    }

    /// `x ± y` (signs as for [`sum_near`](Self::sum_near)) for normal values with
    /// `|x| >= |y|`: `x`'s significand over a zero guard limb,
    /// `y`'s shifted right by the exponent difference (what leaves the guard limb only matters
    /// as a sticky bit, and then at most one bit cancels).
    fn sum_normal(x: &Self, y: &Self, x_negative: bool, subtract: bool, bits: u32) -> Self {
        let d = (i64::from(x.exp()) - i64::from(y.exp())) as u64;
        let (vh, vg, mut sticky) = window::shr(&y.sig, d);
        let (mut h, mut g) = (x.sig, 0u64);
        let mut exp = i64::from(x.exp());
        if !subtract {
            if window::add(&mut h, &mut g, &vh, vg) {
                sticky |= window::shr_carry(&mut h, &mut g);
                exp += 1;
            }
        } else {
            window::sub(&mut h, &mut g, &vh, vg);
            if sticky {
                // x - (v + f) = (x - v - 1) + (1 - f), 0 < 1 - f < 1
                window::decrement(&mut h, &mut g);
            }
            let zeros = window::leading_zeros(&h, g);
            if zeros == 64 * (L as u32 + 1) {
                return Self::zero(false, bits);
            }
            if zeros >= 64 {
                // A whole limb cancelled (no sticky part then): the general normalisation.
                return Self::round_window(x_negative, h, g, sticky, exp, bits);
            }
            window::shl_small(&mut h, &mut g, zeros);
            exp -= i64::from(zeros);
        }
        Self::round_normalised(x_negative, h, g, sticky, exp, bits)
    }

    /// `self * b`, correctly rounded.
    pub fn mul(self, b: Self) -> Self {
        if !self.is_normal() || !b.is_normal() {
            return Self::mul_special(self, b);
        }
        let bits = self.bits_of(&b);
        let negative = self.negative() != b.negative();
        let exp = i64::from(self.exp()) + i64::from(b.exp());
        if L >= SHORT_PRODUCT_LIMBS
            && let Some(product) = Self::mul_short(&self.sig, &b.sig, negative, exp, bits)
        {
            return product;
        }
        let [low, top] = if L <= limbs::FIXED_PRODUCT_LIMBS {
            limbs::mul_fixed(&self.sig, &b.sig)
        } else {
            let mut wide = [[0u64; L]; 2];
            // The operand with fewer nonzero limbs outside: its zero limbs are skipped.
            limbs::mul(&b.sig, &self.sig, wide.as_flattened_mut());
            wide
        };
        let (hi, guard, z) = Self::product_window(&low, top);
        let sticky = low[L - 2] << z != 0 || low[..L - 2].iter().any(|&l| l != 0);
        Self::round_normalised(negative, hi, guard, sticky, exp - i64::from(z), bits)
    }

    /// A product of two significands (its `low` and `top` limbs) normalised: two significands
    /// in `[1/2, 1)` put its top bit in one of its top two, so a shift by `z` (0 or 1) gives
    /// the significand limbs and the guard limb below them; what lies below the guard is the
    /// caller's sticky bit.
    #[inline(always)]
    fn product_window(low: &[u64; L], top: [u64; L]) -> ([u64; L], u64, u32) {
        let z = top[L - 1].leading_zeros();
        let (mut hi, mut guard) = (top, low[L - 1]);
        window::shl_small(&mut hi, &mut guard, z);
        let next = if z == 0 { 0 } else { low[L - 2] >> (64 - z) };
        (hi, guard | next, z)
    }

    /// The product of two significands rounded from its high columns alone (`limbs::mul_high`:
    /// 559 of the 1,024 limb products at 32 limbs), as MPFR's `mpfr_mulhigh_n` does:
    /// `None` where the omitted part, less than `L` units of the guard limb, could change the
    /// rounding (a guard near a half or a carry into the significand), and `mul` then forms
    /// the whole product.
    #[inline(always)]
    fn mul_short(x: &[u64; L], y: &[u64; L], negative: bool, exp: i64, bits: u32) -> Option<Self> {
        let mut wide = [[0u64; L]; 2];
        limbs::mul_high(y, x, wide.as_flattened_mut());
        let [low, top] = wide;
        let (hi, g, z) = Self::product_window(&low, top);
        if exp - i64::from(z) < i64::from(EMIN) {
            // Below the range the rounding asks whether the product is exactly half the
            // smallest number, which only the whole product says.
            return None;
        }
        // The guard limb after the normalising shift: the exact one lies in `[g, g + span]`
        // (the omitted products add less than `L` units of limb `L - 1`, and the bit shifted
        // in from below is not known either), and none of that range may carry into the
        // significand.
        let span = ((L as u64) << z) + 1;
        let half = 1u64 << 63;
        let decided = g.checked_add(span).is_some_and(|most| match bits == 64 * L as u32 {
            // The rounding bit is the guard's top bit: the same over the range, and no tie
            // (a guard above a half rounds up whatever lies below it).
            true => most < half || g > half,
            // The rounding bit is one of the significand's: the guard only says that something
            // nonzero lies below, which `g >= 1` makes sure of.
            false => g >= 1,
        });
        if !decided {
            return None;
        }
        Some(Self::round_normalised(negative, hi, g, true, exp - i64::from(z), bits))
    }

    /// [`mul`](Self::mul) where an operand is zero, infinite or NaN.
    #[inline(never)]
    fn mul_special(self, b: Self) -> Self {
        let bits = self.bits_of(&b);
        let negative = self.negative() != b.negative();
        match (self.kind(), b.kind()) {
            (Kind::Nan, _) | (_, Kind::Nan) => Self::nan(bits),
            (Kind::Inf, Kind::Zero) | (Kind::Zero, Kind::Inf) => Self::nan(bits),
            (Kind::Inf, _) | (_, Kind::Inf) => Self::infinity(negative, bits),
            (Kind::Zero, _) | (_, Kind::Zero) => Self::zero(negative, bits),
            (Kind::Normal, Kind::Normal) => unreachable!("two normal values take mul's own path"),
        }
    }

    /// `self * b` for a double `b`, correctly rounded at `self`'s precision: `L` limb products
    /// (the SpMV's inner step, the most frequent operation of a solve).
    pub fn mul_f64(self, b: f64) -> Self {
        let bits = self.bits();
        if !self.is_normal() || !b.is_finite() || b == 0.0 {
            return self.mul(Self::from_f64_bits(b, bits));
        }
        let (b_negative, m, e) = super::convert::decompose(b);
        if m.is_power_of_two() {
            // b = +-2^k (a stencil's or a graph's -1, a scaling by 2): the product is self's
            // significand at another exponent, exact, so no product and no rounding while
            // the exponent stays in range (beyond it, the rounding below decides).
            let exp = i64::from(self.exp()) + e + i64::from(m.trailing_zeros());
            if (i64::from(EMIN)..=i64::from(EMAX)).contains(&exp) {
                let negative = self.negative() != b_negative;
                return Self::normal(negative, self.sig, exp as i32, bits);
            }
        }
        let mut low = [0u64; L];
        let mut carry = 0u64;
        for (out, &a) in low.iter_mut().zip(&self.sig) {
            let t = u128::from(a) * u128::from(m) + u128::from(carry);
            *out = t as u64;
            carry = (t >> 64) as u64;
        }
        let negative = self.negative() != b_negative;
        // The product as L limbs (`carry` on top) and a guard limb: exact.
        let mut hi = [0u64; L];
        hi[..L - 1].copy_from_slice(&low[1..]);
        hi[L - 1] = carry;
        let mut guard = low[0];
        let exp = i64::from(self.exp()) + e + 64;
        if carry == 0 {
            // A subnormal b of a few bits: the general normalisation.
            return Self::round_window(negative, hi, guard, false, exp, bits);
        }
        let z = carry.leading_zeros();
        window::shl_small(&mut hi, &mut guard, z);
        Self::round_normalised(negative, hi, guard, false, exp - i64::from(z), bits)
    }

    /// `self / b`, correctly rounded: `self`'s significand over `b`'s with `L + 1` limbs more
    /// of quotient than either has, the remainder's being nonzero the sticky bit.
    pub fn div(self, b: Self) -> Self {
        let bits = self.bits_of(&b);
        let negative = self.negative() != b.negative();
        match (self.kind(), b.kind()) {
            (Kind::Nan, _) | (_, Kind::Nan) => Self::nan(bits),
            (Kind::Inf, Kind::Inf) | (Kind::Zero, Kind::Zero) => Self::nan(bits),
            (Kind::Inf, _) | (_, Kind::Zero) => Self::infinity(negative, bits),
            (Kind::Zero, _) | (_, Kind::Inf) => Self::zero(negative, bits),
            (Kind::Normal, Kind::Normal) => {
                let mut wide = [[0u64; L]; 4];
                let u = &mut wide.as_flattened_mut()[..2 * L + 1];
                u[L + 1..].copy_from_slice(&self.sig);
                let mut quotient = [[0u64; L]; 4];
                let q = &mut quotient.as_flattened_mut()[..L + 2];
                limbs::div_rem(u, &b.sig, q);
                let sticky = u.iter().any(|&l| l != 0);
                let scale = i64::from(self.exp()) - i64::from(b.exp()) - 64 * (L as i64 + 1);
                Self::round(
                    Exact {
                        negative,
                        limbs: q,
                        sticky,
                        scale,
                    },
                    bits,
                )
            }
        }
    }

    /// The square root, correctly rounded: the integer square root of the significand shifted
    /// up by `L + 2` limbs (and a bit, to make the exponent even), the root's square differing
    /// from it the sticky bit.
    pub fn sqrt(self) -> Self {
        let bits = self.bits();
        match self.kind() {
            Kind::Nan => Self::nan(bits),
            Kind::Zero => self,
            _ if self.negative() => Self::nan(bits),
            Kind::Inf => self,
            Kind::Normal => {
                let odd = self.exp() & 1 != 0;
                let mut wide = [[0u64; L]; 4];
                let n = &mut wide.as_flattened_mut()[..2 * L + 3];
                n[L + 2..2 * L + 2].copy_from_slice(&self.sig);
                if odd {
                    limbs::shl(n, 1);
                }
                let mut root = [[0u64; L]; 4];
                let r = &mut root.as_flattened_mut()[..L + 2];
                limbs::isqrt(n, r);
                let mut square = [[0u64; L]; 4];
                let s = &mut square.as_flattened_mut()[..2 * L + 4];
                limbs::mul(r, r, s);
                let sticky = s[..2 * L + 3] != *n;
                let shift = 64 * (L as i64 + 2) + i64::from(odd);
                let scale = (i64::from(self.exp()) - 64 * L as i64 - shift) / 2;
                Self::round(
                    Exact {
                        negative: false,
                        limbs: r,
                        sticky,
                        scale,
                    },
                    bits,
                )
            }
        }
    }
}

/// `+ - * /` and unary `-` as the correctly rounded methods of the same names.
macro_rules! operator {
    ($tr:ident, $f:ident) => {
        impl<const L: usize> std::ops::$tr for MpFloat<L> {
            type Output = Self;
            #[inline]
            fn $f(self, b: Self) -> Self {
                MpFloat::$f(self, b)
            }
        }
    };
}
operator!(Add, add);
operator!(Sub, sub);
operator!(Mul, mul);
operator!(Div, div);

impl<const L: usize> std::ops::Neg for MpFloat<L> {
    type Output = Self;
    #[inline]
    fn neg(self) -> Self {
        MpFloat::neg(self)
    }
}
