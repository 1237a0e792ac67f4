//! The common case of every operation, on arrays of the compile-time size `L`: a significand
//! `hi` of `L` limbs and one guard limb below it (an `L + 1`-limb window), with a sticky bit
//! for anything nonzero further down. The sum and the products form their exact result here,
//! normalise it by a shift of less than a limb and round it (`MpFloat::round_normalised`);
//! the general slices of `limbs.rs` and `MpFloat::round` remain for the rare rest (a sum whose
//! cancellation takes a whole limb, a result outside the exponent range). Loops over `L`
//! have constant trip counts once monomorphised, where the slice code took its lengths at run
//! time and spent a third of an mp:256 solve in the general rounding.

/// `sig` with a zero guard limb below it, shifted right by `d` bits: the new significand
/// limbs, the guard limb, and whether a nonzero bit left the window.
#[inline(always)]
pub(super) fn shr<const L: usize>(sig: &[u64; L], d: u64) -> ([u64; L], u64, bool) {
    if d >= 64 * (L as u64 + 1) {
        return ([0; L], 0, sig.iter().any(|&l| l != 0));
    }
    let (q, r) = ((d / 64) as usize, (d % 64) as u32);
    // Limb i of the window before the shift: 0 the guard (zero), 1..=L the significand.
    let at = |i: usize| if i == 0 || i > L { 0 } else { sig[i - 1] };
    let limb = |i: usize| match r {
        0 => at(i + q),
        _ => (at(i + q) >> r) | (at(i + q + 1) << (64 - r)),
    };
    let lost = (r > 0 && at(q) << (64 - r) != 0) || (1..q).any(|i| at(i) != 0);
    (std::array::from_fn(|i| limb(i + 1)), limb(0), lost)
}

/// `(h, g) += (vh, vg)`; returns the carry out of the top.
#[inline(always)]
pub(super) fn add<const L: usize>(h: &mut [u64; L], g: &mut u64, vh: &[u64; L], vg: u64) -> bool {
    let (s, carry) = g.overflowing_add(vg);
    *g = s;
    super::limbs::add_assign_carry(h, vh, carry)
}

/// `(h, g) -= (vh, vg)`, which must not be larger.
#[inline(always)]
pub(super) fn sub<const L: usize>(h: &mut [u64; L], g: &mut u64, vh: &[u64; L], vg: u64) {
    let (d, mut borrow) = g.overflowing_sub(vg);
    *g = d;
    for (a, &b) in h.iter_mut().zip(vh) {
        let (d, b1) = a.overflowing_sub(b);
        let (d, b2) = d.overflowing_sub(u64::from(borrow));
        *a = d;
        borrow = b1 | b2;
    }
}

/// `(h, g) -= 1`, which must be nonzero.
#[inline(always)]
pub(super) fn decrement<const L: usize>(h: &mut [u64; L], g: &mut u64) {
    let (d, mut borrow) = g.overflowing_sub(1);
    *g = d;
    for a in h.iter_mut() {
        if !borrow {
            return;
        }
        (*a, borrow) = a.overflowing_sub(1);
    }
}

/// Leading zero bits of the window (`64 (L + 1)` for zero).
#[inline(always)]
pub(super) fn leading_zeros<const L: usize>(h: &[u64; L], g: u64) -> u32 {
    let mut zeros = 0;
    for &limb in h.iter().rev() {
        if limb != 0 {
            return zeros + limb.leading_zeros();
        }
        zeros += 64;
    }
    zeros + g.leading_zeros()
}

/// `(h, g) <<= z` for `z < 64`.
#[inline(always)]
pub(super) fn shl_small<const L: usize>(h: &mut [u64; L], g: &mut u64, z: u32) {
    if z == 0 {
        return;
    }
    for i in (1..L).rev() {
        h[i] = (h[i] << z) | (h[i - 1] >> (64 - z));
    }
    h[0] = (h[0] << z) | (*g >> (64 - z));
    *g <<= z;
}

/// `(carry, h, g) >>= 1` after a sum carried out of the top: the carry becomes the top bit.
/// Returns the bit shifted out of `g`.
#[inline(always)]
pub(super) fn shr_carry<const L: usize>(h: &mut [u64; L], g: &mut u64) -> bool {
    let out = *g & 1 == 1;
    *g = (*g >> 1) | (h[0] << 63);
    for i in 0..L - 1 {
        h[i] = (h[i] >> 1) | (h[i + 1] << 63);
    }
    h[L - 1] = (h[L - 1] >> 1) | (1 << 63);
    out
}
