//! One row of a schoolbook product, `out += a * y`: the inner loop of every significand product
//! ([`limbs::mul`](super::limbs::mul), [`limbs::mul_high`](super::limbs::mul_high)).
//!
//! Portable Rust forms each limb product with a `u128` and carries through one chain, about two
//! cycles a limb product. On x86-64 with BMI2 and ADX (Intel since Broadwell, AMD since Zen),
//! `mulx` leaves the flags alone and `adcx`/`adox` carry through two independent flags, so the
//! product's low half joining the previous high half (carry flag) and the row below (overflow
//! flag) run side by side: GMP's `mul_basecase` for these cores does the same. Written here as
//! GMP's `mpn_addmul_1` is not in the default build (no GMP without the `mpfr` feature), and no
//! Rust crate offers it on fixed-size stack limbs. Both paths give the same integer, so the
//! choice changes no bit of any result; the processor is asked once a process.

/// Whether rows of `n` limbs go through [`addmul_row`]'s `mulx`/`adcx`/`adox` path: where the
/// processor has it and the row is long enough to repay the call (below 4 limbs the portable
/// row, inlined, is as fast). Asked once a product, not once a row.
#[inline(always)]
pub(super) fn fast_rows(n: usize) -> bool {
    n >= 4 && has_adx()
}

/// `out += a * y` (`out.len() == y.len()`); returns the limb above `out` (the row's top: the
/// sum fits in `out.len() + 1` limbs). `fast`: [`fast_rows`]'s answer for this product.
#[inline(always)]
pub(super) fn addmul_row(out: &mut [u64], y: &[u64], a: u64, fast: bool) -> u64 {
    assert_eq!(out.len(), y.len());
    #[cfg(target_arch = "x86_64")]
    if fast && !y.is_empty() {
        // SAFETY: `fast` says the processor has BMI2 and ADX (`fast_rows`), and `out` and `y`
        // hold `y.len()` limbs each.
        return unsafe { addmul_row_adx(out.as_mut_ptr(), y.as_ptr(), y.len(), a) };
    }
    addmul_row_portable(out, y, a)
}

/// The portable row: one `u128` a limb product.
#[inline(always)]
pub(super) fn addmul_row_portable(out: &mut [u64], y: &[u64], a: u64) -> u64 {
    let mut carry = 0u64;
    for (o, &b) in out.iter_mut().zip(y) {
        let t = u128::from(a) * u128::from(b) + u128::from(*o) + u128::from(carry);
        *o = t as u64;
        carry = (t >> 64) as u64;
    }
    carry
}

/// Whether this processor runs `mulx`, `adcx` and `adox` (asked once; the answer is cached).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn has_adx() -> bool {
    static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HAS.get_or_init(|| is_x86_feature_detected!("bmi2") && is_x86_feature_detected!("adx"))
}

#[cfg(not(target_arch = "x86_64"))]
fn has_adx() -> bool {
    false
}

/// The row on `mulx`/`adcx`/`adox`: first `n % 4` single limb products, then four a pass.
/// The loop counts down in `rcx` with `lea` and `jrcxz`, which leave both carry flags alone.
///
/// # Safety
/// BMI2 and ADX present; `out` and `y` valid for `n >= 1` limbs.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn addmul_row_adx(out: *mut u64, y: *const u64, n: usize, a: u64) -> u64 {
    let top: u64;
    // SAFETY: the caller's contract; the asm reads `y[..n]`, reads and writes `out[..n]`.
    unsafe {
        std::arch::asm!(
            // hp: the previous product's high half; xor also clears CF and OF.
            "xor {hp:e}, {hp:e}",
            "jrcxz 4f",
            "2:",
            "mulx {hi}, {lo}, qword ptr [{y}]",
            "adcx {lo}, {hp}",
            "adox {lo}, qword ptr [{out}]",
            "mov qword ptr [{out}], {lo}",
            "mov {hp}, {hi}",
            "lea {y}, [{y} + 8]",
            "lea {out}, [{out} + 8]",
            "lea rcx, [rcx - 1]",
            "jrcxz 4f",
            "jmp 2b",
            "4:",
            "mov rcx, {blocks}",
            "jrcxz 5f",
            "3:",
            "mulx {hi}, {lo}, qword ptr [{y}]",
            "adcx {lo}, {hp}",
            "adox {lo}, qword ptr [{out}]",
            "mov qword ptr [{out}], {lo}",
            "mulx {hp}, {lo}, qword ptr [{y} + 8]",
            "adcx {lo}, {hi}",
            "adox {lo}, qword ptr [{out} + 8]",
            "mov qword ptr [{out} + 8], {lo}",
            "mulx {hi}, {lo}, qword ptr [{y} + 16]",
            "adcx {lo}, {hp}",
            "adox {lo}, qword ptr [{out} + 16]",
            "mov qword ptr [{out} + 16], {lo}",
            "mulx {hp}, {lo}, qword ptr [{y} + 24]",
            "adcx {lo}, {hi}",
            "adox {lo}, qword ptr [{out} + 24]",
            "mov qword ptr [{out} + 24], {lo}",
            "lea {y}, [{y} + 32]",
            "lea {out}, [{out} + 32]",
            "lea rcx, [rcx - 1]",
            "jrcxz 5f",
            "jmp 3b",
            "5:",
            // the top: the last high half and both pending carries (no carry out of it)
            "mov {lo:e}, 0",
            "adcx {hp}, {lo}",
            "adox {hp}, {lo}",
            hp = out(reg) top,
            hi = out(reg) _,
            lo = out(reg) _,
            y = inout(reg) y => _,
            out = inout(reg) out => _,
            blocks = in(reg) n / 4,
            inout("rcx") n % 4 => _,
            in("rdx") a,
            options(nostack),
        );
    }
    top
}

#[cfg(test)]
mod tests {
    use super::super::limbs::tests::{hard_limb, xorshift};
    use super::*;

    #[test]
    fn both_rows_give_the_same_limbs_at_every_length() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        for n in 0..=35 {
            for case in 0..400 {
                let limb = |k: u64| hard_limb(case, k);
                let y: Vec<u64> = (0..n).map(|_| limb(next())).collect();
                let start: Vec<u64> = (0..n).map(|_| limb(next())).collect();
                let a = limb(next());
                let (mut fast, mut portable) = (start.clone(), start.clone());
                let top = addmul_row(&mut fast, &y, a, has_adx());
                let top_portable = addmul_row_portable(&mut portable, &y, a);
                assert_eq!((fast, top), (portable.clone(), top_portable), "n {n}");
                // and against u128 arithmetic where it reaches
                if n <= 1 {
                    let s = u128::from(start.first().copied().unwrap_or(0))
                        + u128::from(a) * u128::from(y.first().copied().unwrap_or(0));
                    assert_eq!(u128::from(top_portable) << 64 | u128::from(portable.first().copied().unwrap_or(0)), s);
                }
            }
        }
    }
}
