//! Triple-precision *storage* in the D+I ("Double+Int") format of the thesis, section 2.3.4
//! (`../shared/seeds/003_51c1448e0c287af5.txt`, Fig. 2.5, Listings 2.1 and 2.2): a double-double
//! `hi + lo` is stored as `hi` (a double) and the top 32 bits of `lo`'s IEEE encoding (an `i32`:
//! sign, the 11 exponent bits, the 20 leading fraction bits). Arithmetic is done in double-double
//! (thesis §2.3.3: load, widen to DD, compute in DD, round on store); vectors are meant to be
//! stored as a structure of arrays, one `f64` array and one `i32` array (12 bytes per element).
//!
//! # Conversion
//!
//! [`pack`] is Listing 2.1: take the upper 32 bits of `lo`'s encoding and round the dropped lower
//! 32 bits to nearest, ties to even, by incrementing the integer (the encoding of a double's
//! magnitude is monotonic, so a carry out of the fraction correctly bumps the exponent, and the
//! sign bit is untouched: this rounds |lo| to nearest-even on a 21-bit significand). Two things
//! are added to the thesis' listing:
//!
//! * Canonical form. Rounding `lo` up can make it exactly `ulp(hi)/2` with `hi` odd; then
//!   `(hi, lo)` is no longer normalised (`fl(hi + lo) != hi`, the tie goes to the even neighbour)
//!   and [`Dd`]'s lexicographic order would be wrong for it. `pack` therefore renormalises the
//!   rounded pair with QuickTwoSum (exact; it moves `hi` one ulp and flips `lo` to `-ulp/2` in that
//!   case, both still representable) and stores that. If that renormalisation would overflow
//!   (`hi` = the largest odd double near `f64::MAX`), the unrenormalised pair is stored.
//! * Non-finite input. If `hi` or `lo` is not finite, `pack` stores `(hi + lo, 0)`: the value
//!   [`Dd::to_f64`] gives (an infinity stays an infinity when `lo` is finite, NaN stays NaN),
//!   never a NaN `lo` that the rounding increment could turn into `-0.0` or an infinity.
//!
//! [`unpack`] is Listing 2.2: `lo` = the stored 32 bits followed by 32 zero bits. It is exact.
//!
//! # Error bound (derived from the format)
//!
//! Let `x = hi + lo` be a normalised DD (`|lo| <= ulp(hi)/2 = 2^(E-53)`, `E` the exponent of
//! `hi`). Only `lo` is rounded, to 21 significant bits (the implicit bit and the 20 kept):
//!
//! * `lo` normal with exponent `e`: the error is at most half its 21-bit ulp, `2^(e-21)`. If
//!   `|lo| = 2^(E-53)` exactly it is a power of two and exact; otherwise `e <= E-54`, so the error
//!   is at most `2^(E-75)`.
//! * `lo` subnormal: the kept bits are the top 20 of the 52-bit fraction, a fixed grid of
//!   `2^32 * 2^-1074 = 2^-1042` (the same spacing as a normal `lo` with exponent -1022), so the
//!   error is at most `2^-1043` absolute.
//!
//! Hence `|pack-unpack(x) - x| <= max(2^(E-75), 2^-1043)`, and since `|x| > 2^E (1 - 2^-53)`,
//! the relative error is at most `2^-75 / (1 - 2^-53)` whenever `E >= -968` (i.e. `|x|` at least
//! about 2^-968, where `lo` itself is normal: the same range as the DD bounds). That is
//! [`UNIT_ROUNDOFF`] = 2^-75: 53 bits of `hi`, 21 of `lo`, and one more from `lo`'s sign (`lo`
//! rounds toward `hi`'s nearest neighbour from either side). The thesis counts "52 + 20 = 72
//! bits (73 with the implicit bit)"; as a rounding, the format behaves like 75 bits. Rounding
//! toward zero (skipping Listing 2.1's lines 14-23) would double the bound to 2^-74.
//!
//! Special cases: zeros (either sign) are exact, `-0.0` as `lo` is kept (`i32::MIN` stored);
//! a subnormal `hi` (then `lo == 0` in a normalised DD) is exact; infinities and NaN as above.
//! Idempotence: `unpack(pack(x))` is a fixed point of `pack` followed by `unpack`, bit for bit
//! (its `lo` has no low bits to round and is already canonical), NaN aside (any NaN stays NaN).
//!
//! A CUDA twin must reproduce `pack` bit for bit: the integer rounding, then the same
//! QuickTwoSum and finiteness test; `unpack` is a shift.

use super::Dd;
use super::dd::quick_two_sum;

/// Relative rounding error bound of [`pack`] / [`unpack`] for |x| >= ~2^-968: 2^-75.
pub const UNIT_ROUNDOFF: f64 = f64::from_bits((1023 - 75) << 52);

/// Bytes per element in the structure-of-arrays layout (an `f64` and an `i32`).
pub const BYTES: usize = 12;

/// Listing 2.1's rounding: the upper 32 bits of `lo`'s encoding rounded to nearest-even on the
/// dropped lower 32 bits. `lo` must be finite; for the `lo` of a normalised DD (at most 2^971)
/// the increment cannot reach the inf/NaN encodings.
#[inline(always)]
fn round_lo_bits(lo: f64) -> u32 {
    let bits = lo.to_bits();
    let upper = (bits >> 32) as u32;
    let lower = bits as u32; // the 32 bits dropped
    const BORDER: u32 = 0x8000_0000;
    if lower > BORDER || (lower == BORDER && upper & 1 == 1) {
        upper + 1
    } else {
        upper
    }
}

#[inline(always)]
fn lo_from_bits(lo_bits: u32) -> f64 {
    f64::from_bits(u64::from(lo_bits) << 32)
}

/// DD to D+I (thesis Listing 2.1, round to nearest even), renormalised; see the module docs for
/// the special cases and the error bound (relative 2^-75). The input should be a normalised DD
/// (`|lo| <= ulp(hi)/2`), as every `Dd` operation returns.
#[inline]
pub fn pack(x: Dd) -> (f64, i32) {
    if !(x.hi.is_finite() && x.lo.is_finite()) {
        return (x.hi + x.lo, 0);
    }
    let lo_bits = round_lo_bits(x.lo);
    let (hi, lo) = quick_two_sum(x.hi, lo_from_bits(lo_bits));
    if hi.is_finite() {
        // `lo` is exact: either the rounded lo itself or it minus one ulp of the old hi, a power
        // of two; its lower 32 bits are zero.
        (hi, (lo.to_bits() >> 32) as u32 as i32)
    } else {
        (x.hi, lo_bits as i32)
    }
}

/// D+I to DD (thesis Listing 2.2): `lo` is `lo_bits` followed by 32 zero bits. Exact.
#[inline(always)]
pub fn unpack(hi: f64, lo_bits: i32) -> Dd {
    Dd::from_parts(hi, lo_from_bits(lo_bits as u32))
}

/// `unpack(pack(x))`: `x` rounded to the values D+I can store, as a DD (what a triple-precision
/// vector element holds after a store).
#[inline]
pub fn round(x: Dd) -> Dd {
    let (hi, lo) = pack(x);
    unpack(hi, lo)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants() {
        assert_eq!(UNIT_ROUNDOFF, 2f64.powi(-75));
        assert_eq!(
            BYTES,
            std::mem::size_of::<f64>() + std::mem::size_of::<i32>()
        );
    }

    #[test]
    fn listing_examples() {
        // lo with nothing below the kept 20 fraction bits: exact
        let x = Dd::new(1.0, 2f64.powi(-60) * 1.5);
        assert_eq!(round(x), x);
        // lo = 2^-60 (1 + 2^-21): a tie (first dropped bit only), kept part even: stays
        let x = Dd::new(1.0, 2f64.powi(-60) * (1.0 + 2f64.powi(-21)));
        assert_eq!(round(x), Dd::new(1.0, 2f64.powi(-60)));
        // lo = 2^-60 (1 + 2^-20 + 2^-21): a tie, kept part odd: rounds up to even
        let x = Dd::new(
            1.0,
            2f64.powi(-60) * (1.0 + 2f64.powi(-20) + 2f64.powi(-21)),
        );
        assert_eq!(
            round(x),
            Dd::new(1.0, 2f64.powi(-60) * (1.0 + 2f64.powi(-19)))
        );
        // zero and negative zero
        assert_eq!(pack(Dd::ZERO), (0.0, 0));
        let (h, l) = pack(Dd::from_parts(-0.0, -0.0));
        assert_eq!((h.to_bits(), l), ((-0.0f64).to_bits(), i32::MIN));
        // non-finite
        assert_eq!(pack(Dd::from_f64(f64::INFINITY)), (f64::INFINITY, 0));
        assert!(pack(Dd::from_parts(f64::INFINITY, f64::NAN)).0.is_nan());
    }
}
