//! Natural numbers as little-endian slices of 64-bit limbs: the integer arithmetic under
//! [`MpFloat`](super::MpFloat)'s significands. Written here because the operations must run on
//! fixed-size stack arrays without allocation (a solve makes billions of them), which the
//! big-integer crates (`num-bigint`, `rug::Integer`) do not offer; the algorithms are the
//! schoolbook ones of Knuth, TAOCP vol. 2, 4.3.1 (division: Algorithm D).

use super::addmul::{addmul_row, fast_rows};

/// `x <<= s` within its limbs (bits shifted out of the top are lost), `s < 64 * len`.
pub(super) fn shl(x: &mut [u64], s: u32) {
    let (limbs, bits) = ((s / 64) as usize, s % 64);
    let n = x.len();
    if limbs > 0 {
        x.copy_within(0..n - limbs, limbs);
        x[..limbs].fill(0);
    }
    if bits > 0 {
        for i in (limbs + 1..n).rev() {
            x[i] = (x[i] << bits) | (x[i - 1] >> (64 - bits));
        }
        x[limbs] <<= bits;
    }
}

/// `x >>= s` within its limbs; returns whether a nonzero bit was shifted out. Any `s`.
pub(super) fn shr(x: &mut [u64], s: u64) -> bool {
    let n = x.len();
    if s >= 64 * n as u64 {
        let lost = x.iter().any(|&l| l != 0);
        x.fill(0);
        return lost;
    }
    let (limbs, bits) = ((s / 64) as usize, (s % 64) as u32);
    let mut lost = x[..limbs].iter().any(|&l| l != 0);
    if limbs > 0 {
        x.copy_within(limbs..n, 0);
        x[n - limbs..].fill(0);
    }
    if bits > 0 {
        lost |= x[0] << (64 - bits) != 0;
        for i in 0..n - 1 {
            x[i] = (x[i] >> bits) | (x[i + 1] << (64 - bits));
        }
        x[n - 1] >>= bits;
    }
    lost
}

/// `x += y` (same length); returns the carry out.
pub(super) fn add_assign(x: &mut [u64], y: &[u64]) -> bool {
    let mut carry = false;
    for (a, &b) in x.iter_mut().zip(y) {
        let (s, c1) = a.overflowing_add(b);
        let (s, c2) = s.overflowing_add(u64::from(carry));
        *a = s;
        carry = c1 | c2;
    }
    carry
}

/// `x -= y` (same length); returns the borrow out.
pub(super) fn sub_assign(x: &mut [u64], y: &[u64]) -> bool {
    let mut borrow = false;
    for (a, &b) in x.iter_mut().zip(y) {
        let (d, b1) = a.overflowing_sub(b);
        let (d, b2) = d.overflowing_sub(u64::from(borrow));
        *a = d;
        borrow = b1 | b2;
    }
    borrow
}

/// `x += 1 << bit`; returns the carry out of the top.
pub(super) fn add_bit(x: &mut [u64], bit: u32) -> bool {
    let (mut i, mut add) = ((bit / 64) as usize, 1u64 << (bit % 64));
    while i < x.len() {
        let (s, c) = x[i].overflowing_add(add);
        x[i] = s;
        if !c {
            return false;
        }
        add = 1;
        i += 1;
    }
    true
}

/// Leading zero bits of `x` (`64 * len` for zero).
pub(super) fn leading_zeros(x: &[u64]) -> u32 {
    let mut zeros = 0;
    for &limb in x.iter().rev() {
        if limb != 0 {
            return zeros + limb.leading_zeros();
        }
        zeros += 64;
    }
    zeros
}

/// Whether any of the lowest `count` bits of `x` is set.
pub(super) fn any_below(x: &[u64], count: u32) -> bool {
    let (limbs, bits) = ((count / 64) as usize, count % 64);
    x[..limbs].iter().any(|&l| l != 0) || (bits > 0 && x[limbs] & ((1u64 << bits) - 1) != 0)
}

/// Bit `i` of `x`.
pub(super) fn bit(x: &[u64], i: u32) -> bool {
    x[(i / 64) as usize] >> (i % 64) & 1 == 1
}

/// `out = x * y`, `out.len() == x.len() + y.len()`.
pub(super) fn mul(x: &[u64], y: &[u64], out: &mut [u64]) {
    out.fill(0);
    let fast = fast_rows(y.len());
    for (i, &a) in x.iter().enumerate() {
        if a == 0 {
            continue;
        }
        out[i + y.len()] = addmul_row(&mut out[i..i + y.len()], y, a, fast);
    }
}

/// `x * y` of two `L`-limb numbers as `[low, top]`, on arrays of a fixed length: no `memset`
/// call to clear the product and no slice bounds, so that for the short significands (up to
/// [`FIXED_PRODUCT_LIMBS`]) the compiler unrolls it into the limb products alone.
#[inline(always)]
pub(super) fn mul_fixed<const L: usize>(x: &[u64; L], y: &[u64; L]) -> [[u64; L]; 2] {
    let mut wide = [[0u64; L]; 2];
    let out = wide.as_flattened_mut();
    for (i, &a) in x.iter().enumerate() {
        out[i + L] = super::addmul::addmul_row_portable(&mut out[i..i + L], y, a);
    }
    wide
}

/// Up to this many limbs `MpFloat::mul` forms its product with [`mul_fixed`], from there
/// with [`mul`]'s rows (`mulx`/`adcx`/`adox` where the processor has them).
pub(super) const FIXED_PRODUCT_LIMBS: usize = 4;

/// The columns `n - 2` and up of `x * y` (`n` limbs each, `out.len() == 2 n`): the partial
/// products `x_i y_j` with `i + j >= n - 2`, summed exactly; the lower columns are left zero.
/// The exact product exceeds this by less than `n` units of limb `n - 1` (the omitted products
/// are each below `2^128` at columns up to `n - 3`, at most `n - 2` of them a column), which
/// [`MpFloat::mul`](super::MpFloat::mul) checks cannot change its rounding.
pub(super) fn mul_high(x: &[u64], y: &[u64], out: &mut [u64]) {
    let n = y.len();
    debug_assert!(x.len() == n && out.len() == 2 * n && n >= 2);
    out.fill(0);
    let fast = fast_rows(n);
    for (i, &a) in x.iter().enumerate() {
        if a == 0 {
            continue;
        }
        let first = (n - 2).saturating_sub(i);
        out[i + n] = addmul_row(&mut out[i + first..i + n], &y[first..], a, fast);
    }
}

/// `x += y + carry`; the carry out. In runs of four limbs: within a run the compiler keeps the
/// carry in the flags (an `adc` chain), where a loop it does not unroll (16 and 32 limbs)
/// stored and reloaded it at every limb.
#[inline(always)]
pub(super) fn add_assign_carry<const L: usize>(x: &mut [u64; L], y: &[u64; L], carry: bool) -> bool {
    let mut carry = carry;
    let mut step = |a: &mut u64, b: u64| {
        let (t, c1) = a.overflowing_add(b);
        let (t, c2) = t.overflowing_add(u64::from(carry));
        *a = t;
        carry = c1 | c2;
    };
    if L.is_multiple_of(4) {
        for (xs, ys) in x.chunks_exact_mut(4).zip(y.chunks_exact(4)) {
            for j in 0..4 {
                step(&mut xs[j], ys[j]);
            }
        }
    } else {
        for (a, &b) in x.iter_mut().zip(y) {
            step(a, b);
        }
    }
    carry
}

/// `x < y` for two numbers of the same length: the borrow out of `x - y`, one pass without
/// branches (a sum asks it whenever its operands' exponents are equal, and the answer is a
/// coin toss on a solve's data).
#[inline(always)]
pub(super) fn less<const L: usize>(x: &[u64; L], y: &[u64; L]) -> bool {
    let mut borrow = false;
    for (a, b) in x.iter().zip(y) {
        let (d, b1) = a.overflowing_sub(*b);
        let (_, b2) = d.overflowing_sub(u64::from(borrow));
        borrow = b1 | b2;
    }
    borrow
}

/// Compare two numbers of the same length.
pub(super) fn cmp(x: &[u64], y: &[u64]) -> std::cmp::Ordering {
    x.iter().rev().cmp(y.iter().rev())
}

/// The most limbs [`div_rem`] takes in a numerator (a square root's `N` at 2,048 bits: 2 x 32
/// limbs and 3 more, and room to spare).
pub(super) const MAX_NUM: usize = 80;

/// `q = floor(u / v)`, `u = u mod v` (the remainder is left in the low `v.len()` limbs of `u`,
/// the rest zero). `v`'s top limb must be nonzero, `q.len() >= u.len() - v.len() + 1`,
/// `u.len() < MAX_NUM`. Knuth's Algorithm D.
pub(super) fn div_rem(u: &mut [u64], v: &[u64], q: &mut [u64]) {
    let n = v.len();
    let m = u.len() - n;
    debug_assert!(v[n - 1] != 0 && q.len() > m && u.len() < MAX_NUM);
    q.fill(0);
    if n == 1 {
        let d = u128::from(v[0]);
        let mut r = 0u128;
        for i in (0..u.len()).rev() {
            let t = (r << 64) | u128::from(u[i]);
            q[i] = (t / d) as u64;
            r = t % d;
            u[i] = 0;
        }
        u[0] = r as u64;
        return;
    }
    // D1: normalise so that v's top bit is set; u gains a limb on top.
    let s = v[n - 1].leading_zeros();
    let mut vn = [0u64; MAX_NUM];
    let vn = &mut vn[..n];
    vn.copy_from_slice(v);
    shl(vn, s);
    let mut un = [0u64; MAX_NUM];
    let un = &mut un[..u.len() + 1];
    un[..u.len()].copy_from_slice(u);
    shl(un, s);
    if s > 0 {
        un[u.len()] = u[u.len() - 1] >> (64 - s);
    }
    let b = 1u128 << 64;
    let (vtop, vnext) = (u128::from(vn[n - 1]), u128::from(vn[n - 2]));
    for j in (0..=m).rev() {
        // D3: estimate q^ from the top two limbs, corrected at most twice.
        let top = (u128::from(un[j + n]) << 64) | u128::from(un[j + n - 1]);
        let mut qhat = top / vtop;
        let mut rhat = top % vtop;
        while qhat >= b || qhat * vnext > ((rhat << 64) | u128::from(un[j + n - 2])) {
            qhat -= 1;
            rhat += vtop;
            if rhat >= b {
                break;
            }
        }
        // D4: multiply and subtract.
        let mut borrow = 0u128;
        let mut carry = 0u128;
        for i in 0..n {
            let p = qhat * u128::from(vn[i]) + carry;
            carry = p >> 64;
            let t = u128::from(un[i + j])
                .wrapping_sub(p & 0xffff_ffff_ffff_ffff)
                .wrapping_sub(borrow);
            un[i + j] = t as u64;
            borrow = (t >> 64) & 1;
        }
        let t = u128::from(un[j + n])
            .wrapping_sub(carry)
            .wrapping_sub(borrow);
        un[j + n] = t as u64;
        // D5, D6: negative: q^ was one too large; add back.
        if (t >> 64) != 0 {
            qhat -= 1;
            let carry = add_assign(&mut un[j..j + n], vn);
            un[j + n] = un[j + n].wrapping_add(u64::from(carry));
        }
        q[j] = qhat as u64;
    }
    // D8: unnormalise the remainder.
    shr(&mut un[..n + 1], u64::from(s));
    u.fill(0);
    u[..n].copy_from_slice(&un[..n]);
}

/// `floor(sqrt(x))` into `root` (Newton's iteration on integers from a power of two above the
/// root: it decreases monotonically to the floor). `x.len() < MAX_NUM`, `root.len() >=
/// x.len() / 2 + 1`.
pub(super) fn isqrt(x: &[u64], root: &mut [u64]) {
    let len = x.len();
    let bits = 64 * len as u32 - leading_zeros(x);
    root.fill(0);
    if bits == 0 {
        return;
    }
    // 2^ceil(bits / 2) > sqrt(x)
    let start = bits.div_ceil(2);
    root[(start / 64) as usize] = 1 << (start % 64);
    let rl = root.len();
    let mut num = [0u64; MAX_NUM];
    let mut quot = [0u64; MAX_NUM];
    let mut next = [0u64; MAX_NUM];
    loop {
        // next = (root + x / root) / 2
        let rlen = rl - root.iter().rev().take_while(|&&l| l == 0).count();
        let num = &mut num[..len.max(rlen)];
        num.fill(0);
        num[..len].copy_from_slice(x);
        let quot = &mut quot[..num.len() - rlen + 1];
        div_rem(num, &root[..rlen], quot);
        let next = &mut next[..rl + 1];
        next.fill(0);
        let qn = quot.len().min(rl + 1);
        next[..qn].copy_from_slice(&quot[..qn]);
        let carry = add_assign(&mut next[..rl], root);
        next[rl] += u64::from(carry);
        shr(next, 1);
        if cmp(&next[..rl], root) != std::cmp::Ordering::Less {
            return;
        }
        root.copy_from_slice(&next[..rl]);
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    fn to_u128(x: &[u64]) -> u128 {
        u128::from(x[0]) | (u128::from(*x.get(1).unwrap_or(&0)) << 64)
    }

    /// A xorshift generator: reproducible operands without a dependency.
    pub(in super::super) fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        }
    }

    #[test]
    fn division_and_root_of_small_numbers_agree_with_u128() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        for _ in 0..20000 {
            let a = u128::from(next()) << 64 | u128::from(next());
            let b = match next() % 3 {
                0 => u128::from(next() >> (next() % 64)).max(1),
                _ => (u128::from(next()) << 64 | u128::from(next())) >> (next() % 120),
            }
            .max(1);
            let mut u = [a as u64, (a >> 64) as u64];
            let v = [b as u64, (b >> 64) as u64];
            let vlen = if v[1] == 0 { 1 } else { 2 };
            let mut q = [0u64; 3];
            div_rem(&mut u, &v[..vlen], &mut q[..3 - vlen]);
            assert_eq!(to_u128(&q), a / b, "{a} / {b}");
            assert_eq!(to_u128(&u), a % b, "{a} % {b}");

            let mut r = [0u64; 2];
            isqrt(&[a as u64, (a >> 64) as u64], &mut r);
            let r = to_u128(&r);
            assert!(r * r <= a && (r + 1).checked_mul(r + 1).is_none_or(|s| s > a), "{a}");
        }
    }

    /// Case `case`'s limb from the random `k`: all ones (the longest carries, the largest
    /// omitted part of a short product), random, and random with half of them zero.
    pub(in super::super) fn hard_limb(case: usize, k: u64) -> u64 {
        match case % 3 {
            0 => u64::MAX,
            1 => k,
            _ => k & 0u64.wrapping_sub(k >> 63),
        }
    }

    #[test]
    fn high_columns_fall_short_of_the_product_by_less_than_n_units_of_limb_n_minus_1() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        for n in [2usize, 3, 8, 32] {
            for case in 0..2000 {
                let limb = |k: u64| hard_limb(case, k);
                let x: Vec<u64> = (0..n).map(|_| limb(next())).collect();
                let y: Vec<u64> = (0..n).map(|_| limb(next())).collect();
                let (mut full, mut high) = (vec![0u64; 2 * n], vec![0u64; 2 * n]);
                mul(&x, &y, &mut full);
                mul_high(&x, &y, &mut high);
                assert!(high[..n - 2].iter().all(|&l| l == 0));
                // full - high, from limb n - 1 up: below n (and nothing above limb n - 1)
                let mut diff = full.clone();
                assert!(!sub_assign(&mut diff, &high), "the high columns exceed the product");
                assert!(diff[n..].iter().all(|&l| l == 0) && diff[n - 1] < n as u64, "{n}");
            }
        }
    }
}
