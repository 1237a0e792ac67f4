//! The one rounding every operation of [`MpFloat`] ends with: an exact result, given as an
//! integer with a sticky bit for anything nonzero below it, rounded to nearest (ties to even)
//! at the result's precision, then checked against the exponent range.

use super::{EMAX, EMIN, Kind, MpFloat, limbs};

/// An exact (or sticky-marked) intermediate result: `(-1)^negative (int + f) 2^scale` where
/// `int` is the integer in `limbs` and `f`, in `[0, 1)`, is nonzero exactly when `sticky` is
/// set. When `sticky` is set, `int` must have at least `bits + 1` significant bits (so that the
/// rounding bit is one of its own, and `f` only breaks ties).
pub(super) struct Exact<'a> {
    pub negative: bool,
    pub limbs: &'a mut [u64],
    pub sticky: bool,
    pub scale: i64,
}

impl<const L: usize> MpFloat<L> {
    /// `x` rounded to nearest, ties to even, at `bits` bits.
    pub(super) fn round(x: Exact<'_>, bits: u32) -> MpFloat<L> {
        let n = x.limbs.len();
        let zeros = limbs::leading_zeros(x.limbs);
        if zeros == 64 * n as u32 {
            debug_assert!(!x.sticky, "a sticky fraction below a zero integer");
            return MpFloat::zero_with(x.negative, bits);
        }
        debug_assert!(!x.sticky || 64 * n as u32 - zeros > bits);
        // Normalise: top bit of the top limb set. Exponent in MPFR's convention: the value is
        // 0.1xxx * 2^exp.
        if zeros >= 64 {
            limbs::shl(x.limbs, zeros);
        } else if zeros > 0 {
            // Only the top L + 1 limbs take part in rounding; the ones below are a sticky bit.
            // Only the top L + 1 limbs take part in rounding; the ones below only in whether
            // any of them is nonzero, which shifting the next one alone preserves.
            let cut = n - (L + 1).min(n);
            limbs::shl(&mut x.limbs[cut..], zeros);
            if cut > 0 {
                x.limbs[cut] |= x.limbs[cut - 1] >> (64 - zeros);
                x.limbs[cut - 1] <<= zeros;
            }
        }
        let mut exp = x.scale + 64 * n as i64 - i64::from(zeros);
        if exp < i64::from(EMIN) {
            return Self::underflow(&x, exp, bits);
        }
        let mut sig = [0u64; L];
        if n <= L {
            // No more bits than the significand holds: the precision's bits are all there
            // is, or the rest are zeros below a value of fewer bits (exact).
            sig[L - n..].copy_from_slice(x.limbs);
            let below = 64 * L as u32 - bits;
            if !limbs::any_below(&sig, below) {
                return MpFloat::in_range(x.negative, sig, exp, bits);
            }
            return Self::round_sig(x.negative, sig, false, exp, bits);
        }
        let (low, top) = x.limbs.split_at(n - L);
        sig.copy_from_slice(top);
        // Whether anything below the significand's limbs is nonzero; only asked when the
        // rounding bit is set and the kept bits are even.
        let below = || x.sticky || low.iter().any(|&l| l != 0);
        let shift = 64 * L as u32 - bits;
        if shift == 0 {
            // The rounding bit is the top bit of the limbs below.
            let next = low[low.len() - 1];
            let round_bit = next >> 63 == 1;
            let rest = || {
                next << 1 != 0 || low[..low.len() - 1].iter().any(|&l| l != 0) || x.sticky
            };
            if round_bit && (sig[0] & 1 == 1 || rest()) && limbs::add_bit(&mut sig, 0) {
                sig[L - 1] = 1 << 63;
                exp += 1;
            }
            return MpFloat::in_range(x.negative, sig, exp, bits);
        }
        let sticky = limbs::bit(&sig, shift - 1) && below();
        Self::round_sig(x.negative, sig, sticky, exp, bits)
    }

    /// `0.hi guard... 2^exp` (normalised: the top bit of `hi` set), `sticky` for anything
    /// nonzero below `guard`, rounded to nearest, ties to even, at `bits` bits: the common case
    /// of every operation (`window.rs`). Out of the exponent range it takes the general path.
    #[inline(always)]
    pub(super) fn round_normalised(
        negative: bool,
        mut hi: [u64; L],
        guard: u64,
        sticky: bool,
        mut exp: i64,
        bits: u32,
    ) -> MpFloat<L> {
        debug_assert!(hi[L - 1] >> 63 == 1);
        if exp < i64::from(EMIN) {
            return Self::round_window(negative, hi, guard, sticky, exp, bits);
        }
        if bits < 64 * L as u32 {
            // The rounding bit is one of `hi`'s: `guard` only adds to the sticky bit.
            return Self::round_sig(negative, hi, sticky || guard != 0, exp, bits);
        }
        // The rounding bit is the top bit of `guard`.
        if guard >> 63 == 1
            && (hi[0] & 1 == 1 || guard << 1 != 0 || sticky)
            && limbs::add_bit(&mut hi, 0)
        {
            // 0.111..1 + ulp = 1.000..0: one bit up.
            hi[L - 1] = 1 << 63;
            exp += 1;
        }
        MpFloat::in_range(negative, hi, exp, bits)
    }

    /// `0.hi guard... 2^exp`, normalised or not, rounded by the general path (`round`).
    pub(super) fn round_window(
        negative: bool,
        hi: [u64; L],
        guard: u64,
        sticky: bool,
        exp: i64,
        bits: u32,
    ) -> MpFloat<L> {
        let mut wide = [[0u64; L]; 2];
        let limbs = &mut wide.as_flattened_mut()[..L + 1];
        limbs[0] = guard;
        limbs[1..].copy_from_slice(&hi);
        let scale = exp - 64 * (L as i64 + 1);
        Self::round(Exact { negative, limbs, sticky, scale }, bits)
    }

    /// `sig` (normalised, with bits below the precision) rounded at `bits` bits; `sticky`:
    /// something nonzero lies below `sig`'s limbs. Every limb takes the same steps with its
    /// own masks (the discarded bits, the rounding bit, the last kept bit), so the loops
    /// have a fixed length the compiler unrolls: the general helpers' variable-length
    /// `fill` was a `memset` call, and the whole rounding half of an mp:106 sum's time.
    #[inline(always)]
    fn round_sig(negative: bool, mut sig: [u64; L], sticky: bool, mut exp: i64, bits: u32) -> Self {
        let shift = 64 * L as u32 - bits; // position of the last kept bit, > 0
        debug_assert!(shift > 0 && shift < 64 * L as u32);
        // Limb `i`'s share of one bit of the whole (zero outside the bit's limb).
        let one_bit = |i: usize, k: u32| u64::from(k / 64 == i as u32) << (k % 64);
        let (mut round_bit, mut rest, mut odd) = (0u64, u64::from(sticky), 0u64);
        let mut ulp = [0u64; L];
        for i in 0..L {
            let half = one_bit(i, shift - 1);
            ulp[i] = one_bit(i, shift);
            // The bits below the last kept one: whole limbs below its limb, and in its limb the
            // ones under it (`ulp - 1`, or none of that limb when the bit lies in another).
            let whole = 0u64.wrapping_sub(u64::from((i as u32) < shift / 64));
            let dropped = whole | ulp[i].wrapping_sub(u64::from(ulp[i] != 0));
            round_bit |= sig[i] & half;
            rest |= sig[i] & dropped & !half;
            odd |= sig[i] & ulp[i];
            sig[i] &= !dropped;
        }
        if round_bit != 0 && (odd | rest) != 0 {
            // A fixed-length pass rather than `limbs::add_bit`'s loop that stops with the
            // carry (mp:106 CG 8% slower) or `limbs::add_assign_carry`'s runs of four (mp:200
            // and mp:300 CG 5-10% slower; alternated, one thread).
            let mut carry = false;
            for i in 0..L {
                let (s, c1) = sig[i].overflowing_add(ulp[i]);
                let (s, c2) = s.overflowing_add(u64::from(carry));
                sig[i] = s;
                carry = c1 | c2;
            }
            if carry {
                // 0.111..1 + ulp = 1.000..0: one bit up.
                sig[L - 1] = 1 << 63;
                exp += 1;
            }
        }
        MpFloat::in_range(negative, sig, exp, bits)
    }

    /// The exact value below the range, `0.1xxx 2^exp` with `exp < EMIN` (normalised
    /// `x`): in round-to-nearest, the smallest positive number `2^(EMIN-1)` when the value is
    /// above half of it, zero when at most half (MPFR's `mpfr_underflow` as its operations call
    /// it: decided on the exact value, not on one rounded first).
    fn underflow(x: &Exact<'_>, exp: i64, bits: u32) -> MpFloat<L> {
        let n = x.limbs.len();
        let half = x.limbs[n - 1] == 1 << 63 && x.limbs[..n - 1].iter().all(|&l| l == 0);
        if exp < i64::from(EMIN) - 1 || (half && !x.sticky) {
            return MpFloat::zero_with(x.negative, bits);
        }
        let mut min = [0u64; L];
        min[L - 1] = 1 << 63;
        MpFloat::normal(x.negative, min, EMIN, bits)
    }

    /// A rounded significand whose exponent is at least `EMIN` (rounding only raises it):
    /// above `EMAX` an infinity.
    #[inline(always)]
    fn in_range(negative: bool, sig: [u64; L], exp: i64, bits: u32) -> MpFloat<L> {
        if exp > i64::from(EMAX) {
            return MpFloat::special(Kind::Inf, negative, bits);
        }
        MpFloat::normal(negative, sig, exp as i32, bits)
    }
}
