//! Arbitrary precision through MPFR (the `rug` crate): the working precision `mp:<bits>`, on the
//! CPU only. The type `Mp` exists only with the cargo feature `mpfr`; the range of bits and the
//! name format are here unconditionally, so that a build without the feature can still parse
//! `mp:256` (and read study records that name it) and refuse to run it with a clear message.
//!
//! # Rounding
//!
//! Every operation is one MPFR call rounding to nearest, ties to even, to the precision of its
//! result: `add`, `sub`, `mul`, `div`, `sqrt`, `mul_f64` (MPFR `mul_d`) are correctly rounded,
//! i.e. relative error at most u = 2^-bits; `neg` and `abs` are exact. `add_mul_f64(a, b)` is
//! `self + (a b)` with two roundings (the product, then the sum), as for the other precisions.
//! A result has the larger precision of its operands; within a solve every value has the solve's
//! precision. MPFR's exponent range is far wider than a double's: values never overflow or
//! underflow where the double-based types would, but `Precision::to_f64` and
//! `Precision::to_dd` can (to an infinity or zero), as any rounding to double does.
//!
//! # The precision setting
//!
//! The trait's constructors (`Precision::zero`, `Precision::from_f64`, `Precision::from_dd`,
//! `Precision::one`) take no argument, so the precision of a new value comes from a
//! process-wide setting: an atomic read by every constructor, in whichever thread constructs
//! (the CPU kernels run on rayon's worker threads, so a thread-local setting would not reach
//! them). The setting is only changed through an `MpScope`: `MpScope::enter` takes a
//! process-wide mutex, then sets the bits; dropping the scope clears them and releases the mutex.
//! `dispatch::solve` holds a scope for the whole of an `mp` solve, so two `mp` solves in one
//! process (different bits or not) run one after the other, never interleaved, and no solve sees
//! another's precision. Outside a scope the setting is empty and constructing an `Mp` panics
//! (arithmetic on existing values still works: it takes the operands' precision).
//!
//! Consequences: do not enter a scope while holding one on the same thread (the mutex is not
//! reentrant: it would deadlock), which includes calling `dispatch::solve` for `mp` inside a
//! scope; and do not start `mp` solves from inside rayon's thread pool (a worker blocked on the
//! mutex can be the one the scope's holder waits for).

/// The smallest precision `mp:<bits>` accepts: a double's, so that `Precision::from_f64` is
/// exact (the matrix and right-hand side are doubles).
pub const MIN_BITS: u32 = 53;
/// The largest precision `mp:<bits>` accepts: 2^16 bits (about 19,700 decimal digits, 8 KiB per
/// element). MPFR allows far more; a Krylov solve in it would not finish.
pub const MAX_BITS: u32 = 65536;

/// The name of the working precision on the command line and in reports: `mp:256`.
pub fn name(bits: u32) -> String {
    format!("mp:{bits}")
}

/// Parse the bits of `mp:<bits>`: `Ok(None)` when `text` does not start with `mp` at all, an
/// error message for `mp`, `mp:`, `mp:x`, `mp:0`, or bits outside [`MIN_BITS`]`..=`[`MAX_BITS`].
pub fn parse_bits(text: &str) -> Result<Option<u32>, String> {
    let t = text.trim();
    if !t.get(..2).is_some_and(|p| p.eq_ignore_ascii_case("mp")) {
        return Ok(None);
    }
    let rest = &t[2..];
    let usage = format!("write mp:<bits> with bits from {MIN_BITS} to {MAX_BITS}, e.g. mp:256");
    let Some(digits) = rest.strip_prefix(':') else {
        return Err(format!("precision `{t}` needs its bits: {usage}"));
    };
    let digits = digits.trim();
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return Err(format!(
            "precision `{t}`: `{digits}` is not a number of bits ({usage})"
        ));
    }
    match digits.parse::<u32>() {
        Ok(bits) if (MIN_BITS..=MAX_BITS).contains(&bits) => Ok(Some(bits)),
        _ => Err(format!(
            "precision `{t}`: {digits} bits is outside {MIN_BITS}..={MAX_BITS} ({usage})"
        )),
    }
}

/// Unit roundoff of `mp:<bits>`: 2^-bits (round to nearest with a `bits`-bit significand).
pub fn unit_roundoff(bits: u32) -> f64 {
    2f64.powi(-(bits.min(1074) as i32))
}

/// Estimated bytes one element takes in a vector at `bits`: the `mpfr_t` in the vector (32
/// bytes on 64-bit targets: precision, sign, exponent, limb pointer) plus its limbs on the heap,
/// which MPFR allocates with one extra limb holding the size, rounded up to glibc malloc's
/// chunk (an 8-byte header, multiples of 16, at least 32). 64 bytes at 53..=64 bits, 64 at 106,
/// 80 at 256, 8,240 at 65,536. Memory traffic per element is about this too, scattered.
pub fn bytes_per_element(bits: u32) -> usize {
    let limbs = (bits as usize).div_ceil(64);
    let heap = 8 * (limbs + 1) + 8;
    32 + heap.next_multiple_of(16).max(32)
}

#[cfg(feature = "mpfr")]
pub use with_mpfr::{Mp, MpScope, current_bits};

#[cfg(feature = "mpfr")]
mod with_mpfr {
    use super::{MAX_BITS, MIN_BITS, bytes_per_element};
    use crate::precision::{Dd, Precision};
    use rug::Float;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::{Mutex, MutexGuard, PoisonError};

    /// The precision constructors use; 0 outside every [`MpScope`].
    static BITS: AtomicU32 = AtomicU32::new(0);
    /// Held by the one live [`MpScope`].
    static SCOPE: Mutex<()> = Mutex::new(());

    /// The precision setting of `mp` values, held for the duration of a solve (see the module
    /// docs): while it lives, every [`Mp`] constructed in any thread has `bits` bits.
    #[must_use = "the precision setting ends when the scope is dropped"]
    pub struct MpScope {
        bits: u32,
        _lock: MutexGuard<'static, ()>,
    }

    impl MpScope {
        /// Wait until no other scope is live, then set the precision to `bits`. Panics if
        /// `bits` is outside `MIN_BITS..=MAX_BITS` (the parser of `mp:<bits>` checks the same).
        pub fn enter(bits: u32) -> MpScope {
            assert!(
                (MIN_BITS..=MAX_BITS).contains(&bits),
                "mp precision {bits} bits outside {MIN_BITS}..={MAX_BITS}"
            );
            // A panic in another scope's holder (a test) leaves nothing to repair: the setting
            // is only ever written under the lock, and rewritten here.
            let lock = SCOPE.lock().unwrap_or_else(PoisonError::into_inner);
            BITS.store(bits, Ordering::Release);
            MpScope { bits, _lock: lock }
        }

        pub fn bits(&self) -> u32 {
            self.bits
        }
    }

    impl Drop for MpScope {
        fn drop(&mut self) {
            // Before the guard field drops, i.e. still under the lock.
            BITS.store(0, Ordering::Release);
        }
    }

    /// The precision of the live scope, if any.
    pub fn current_bits() -> Option<u32> {
        match BITS.load(Ordering::Acquire) {
            0 => None,
            bits => Some(bits),
        }
    }

    #[inline]
    fn bits_for_new_value() -> u32 {
        current_bits().unwrap_or_else(|| {
            panic!("an `Mp` value was constructed outside an `MpScope` (no precision is set)")
        })
    }

    /// An MPFR number (`rug::Float`) as a working precision; see the module docs for its
    /// rounding and for where the precision of new values comes from.
    ///
    /// Not `Copy`: each value owns its limbs on the heap. `PartialEq` compares values (NaN is
    /// unequal to itself; `+0 == -0`).
    #[derive(Clone, Debug, PartialEq)]
    pub struct Mp(pub Float);

    impl Mp {
        /// The MPFR value.
        pub fn as_float(&self) -> &Float {
            &self.0
        }

        /// The precision of this value in bits.
        pub fn prec(&self) -> u32 {
            self.0.prec()
        }

        /// Unit roundoff of the live scope, 2^-bits (the run-time value [`Precision::EPSILON`]
        /// can only bound); `None` outside every scope.
        pub fn epsilon() -> Option<f64> {
            current_bits().map(super::unit_roundoff)
        }

        /// Estimated bytes per vector element in the live scope (see
        /// [`bytes_per_element`](super::bytes_per_element)); `None` outside every scope.
        pub fn bytes() -> Option<usize> {
            current_bits().map(bytes_per_element)
        }

        #[inline]
        fn prec2(&self, b: &Mp) -> u32 {
            self.0.prec().max(b.0.prec())
        }
    }

    impl Precision for Mp {
        type Vector = Vec<Mp>;
        const NAME: &'static str = "mp";
        /// The CUDA backend has no kernels named so and refuses it (`dispatch` refuses `mp` on
        /// the GPU before any work).
        const KERNEL_SUFFIX: &'static str = "mp";
        /// 2^-53: the unit roundoff of the smallest precision accepted, so an upper bound on
        /// 2^-bits for every `mp:<bits>`. An associated constant cannot hold the run-time
        /// precision; [`Mp::epsilon`] gives 2^-bits of the live scope.
        const EPSILON: f64 = f64::EPSILON / 2.0;
        /// At 53..=106 bits (64 bytes); more at higher precisions, see [`Mp::bytes`].
        const BYTES: usize = 64;
        fn unit_roundoff() -> f64 {
            Mp::epsilon().unwrap_or(Self::EPSILON)
        }
        crate::precision::acc_is_self!();

        #[inline]
        fn zero() -> Self {
            Mp(Float::new(bits_for_new_value()))
        }
        #[inline]
        fn one() -> Self {
            Mp(Float::with_val(bits_for_new_value(), 1u32))
        }
        /// Exact (bits >= 53).
        #[inline]
        fn from_f64(x: f64) -> Self {
            Mp(Float::with_val(bits_for_new_value(), x))
        }
        /// Nearest double (MPFR `get_d`, ties to even, subnormals rounded correctly).
        #[inline]
        fn to_f64(&self) -> f64 {
            self.0.to_f64()
        }
        /// `hi` = the nearest double, `lo` = the nearest double to the remainder `self - hi`,
        /// which is computed exactly (it fits in `self`'s precision: `|self - hi| <= ulp(hi)/2`,
        /// and its last bit is no lower than `self`'s). The pair is a normalised DD. If `hi` is
        /// not finite (an infinity, NaN, or a finite value beyond the double range), `lo` is 0.
        fn to_dd(&self) -> Dd {
            let hi = self.0.to_f64();
            if !hi.is_finite() {
                return Dd { hi, lo: 0.0 };
            }
            let rem = Float::with_val(self.0.prec(), &self.0 - hi);
            Dd {
                hi,
                lo: rem.to_f64(),
            }
        }
        /// `hi + lo` rounded once to the precision (MPFR `add_d` on `hi` held exactly), so exact
        /// whenever the sum fits in `bits` bits: from 107 bits on for every normalised DD whose
        /// `lo` has its exponent within 54 of `hi`'s (the DD arithmetic's full-precision results;
        /// 53 + 1 + 53 bits), and for every `f64` and every DD with `lo == 0` from 53 bits on. A
        /// DD whose `lo` lies further down (a gap of zeros between the parts) spans more bits
        /// than its 106 significant ones and is rounded like any other value.
        fn from_dd(x: Dd) -> Self {
            let bits = bits_for_new_value();
            let hi = Float::with_val(53, x.hi);
            Mp(Float::with_val(bits, &hi + x.lo))
        }

        #[inline]
        fn add(&self, b: &Self) -> Self {
            Mp(Float::with_val(self.prec2(b), &self.0 + &b.0))
        }
        #[inline]
        fn sub(&self, b: &Self) -> Self {
            Mp(Float::with_val(self.prec2(b), &self.0 - &b.0))
        }
        #[inline]
        fn mul(&self, b: &Self) -> Self {
            Mp(Float::with_val(self.prec2(b), &self.0 * &b.0))
        }
        #[inline]
        fn div(&self, b: &Self) -> Self {
            Mp(Float::with_val(self.prec2(b), &self.0 / &b.0))
        }
        #[inline]
        fn neg(&self) -> Self {
            Mp(Float::with_val(self.0.prec(), -&self.0))
        }
        #[inline]
        fn sqrt(&self) -> Self {
            Mp(Float::with_val(self.0.prec(), self.0.sqrt_ref()))
        }
        #[inline]
        fn abs(&self) -> Self {
            Mp(Float::with_val(self.0.prec(), self.0.abs_ref()))
        }
        #[inline]
        fn mul_f64(&self, b: f64) -> Self {
            Mp(Float::with_val(self.0.prec(), &self.0 * b))
        }
        /// `self + fl(a b)`: the product rounded to `b`'s precision, then the sum rounded (one
        /// allocation instead of the default's two).
        #[inline]
        fn add_mul_f64(&self, a: f64, b: &Self) -> Self {
            let mut t = Float::with_val(b.0.prec(), &b.0 * a);
            if self.0.prec() > t.prec() {
                t.set_prec(self.0.prec()); // exact: the precision only grows
            }
            t += &self.0;
            Mp(t)
        }
        #[inline]
        fn is_finite(&self) -> bool {
            self.0.is_finite()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_bits_accepts_the_range_and_explains_the_rest() {
        assert_eq!(parse_bits("mp:256"), Ok(Some(256)));
        assert_eq!(parse_bits(" MP:53 "), Ok(Some(53)));
        assert_eq!(parse_bits("mp:65536"), Ok(Some(65536)));
        assert_eq!(parse_bits("dd"), Ok(None));
        assert_eq!(parse_bits("m"), Ok(None));
        for bad in [
            "mp",
            "mp:",
            "mp:x",
            "mp:0",
            "mp:52",
            "mp:65537",
            "mp:-3",
            "mp:99999999999",
        ] {
            let e = parse_bits(bad).unwrap_err();
            assert!(e.contains("mp:<bits>"), "{bad}: {e}");
        }
    }

    #[test]
    fn bytes_estimate() {
        assert_eq!(bytes_per_element(53), 64);
        assert_eq!(bytes_per_element(106), 64);
        assert_eq!(bytes_per_element(256), 80);
        assert_eq!(bytes_per_element(65536), 32 + 8 * 1025 + 8);
    }
}
