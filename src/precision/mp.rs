//! The working precision `mp:<bits>`: its names, its range of bits, and the precision scope
//! that gives new values their precision.
//!
//! `mp:<bits>` (53 to 2,048 bits) computes in the project's own correctly rounded type,
//! [`MpFloat`](super::MpFloat), in every build. `mp-mpfr:<bits>` (53 to 65,536 bits) computes
//! in MPFR through `rug` ([`Mpfr`](super::Mpfr)), only in a build with the cargo feature
//! `mpfr`: the oracle the own type is tested against, and the way to more than 2,048 bits. Both
//! round every operation to nearest, ties to even, at the solve's precision, so a solve gives
//! the same bits in both. The names parse in every build, so that a build without the feature
//! can read study records that name `mp-mpfr:<bits>` and refuse to run it with a clear message.
//!
//! # The precision scope
//!
//! Arithmetic takes its operands' precision, but the trait's constructors
//! (`Precision::zero`, `from_f64`, `from_dd`, `one`) take no argument: a new value takes the
//! precision of the calling thread's [`MpScope`]. A solve enters one for its duration (in
//! `dispatch`), and the CPU backend carries it into the threads that run the solve's kernels
//! ([`carried`]), so solves in different threads (a study's workers) run at different
//! precisions at the same time. Outside a scope, constructing an mp value panics. Scopes nest:
//! dropping one restores the precision before it.

/// The smallest precision `mp:<bits>` accepts: a double's, so that `Precision::from_f64` is
/// exact (the matrix and right-hand side are doubles).
pub const MIN_BITS: u32 = 53;
/// The largest precision `mp-mpfr:<bits>` accepts: 2^16 bits (about 19,700 decimal digits, 8 KiB
/// per element). MPFR allows far more; a Krylov solve in it would not finish.
pub const MAX_MPFR_BITS: u32 = 65536;
/// The largest precision `mp:<bits>` accepts: what [`MpFloat`](super::MpFloat)'s largest limb
/// count holds.
pub const MAX_BITS: u32 = super::mpfloat::MAX_BITS;

use std::cell::Cell;
use std::marker::PhantomData;

thread_local! {
    /// The precision of new mp values in this thread; 0 outside every scope.
    static BITS: Cell<u32> = const { Cell::new(0) };
}

/// The precision new mp values take in this thread while the scope lives (see the module
/// docs). Not `Send`: it belongs to the thread that entered it.
#[must_use = "the precision setting ends when the scope is dropped"]
pub struct MpScope {
    bits: u32,
    previous: u32,
    _thread: PhantomData<*const ()>,
}

impl MpScope {
    /// Set this thread's precision of new values to `bits` until the scope drops. Panics if
    /// `bits` is outside `MIN_BITS..=MAX_MPFR_BITS` (the parsers of the names check the same).
    pub fn enter(bits: u32) -> MpScope {
        assert!(
            (MIN_BITS..=MAX_MPFR_BITS).contains(&bits),
            "mp precision {bits} bits outside {MIN_BITS}..={MAX_MPFR_BITS}"
        );
        MpScope {
            bits,
            previous: BITS.replace(bits),
            _thread: PhantomData,
        }
    }

    pub fn bits(&self) -> u32 {
        self.bits
    }
}

impl Drop for MpScope {
    fn drop(&mut self) {
        BITS.set(self.previous);
    }
}

/// The precision of new mp values in this thread, if a scope is live.
pub fn current_bits() -> Option<u32> {
    match BITS.get() {
        0 => None,
        bits => Some(bits),
    }
}

/// `f()` with this thread's precision of new values set to `bits` (a solve's, taken with
/// [`current_bits`] in the thread that runs it): how the CPU backend hands a solve's precision
/// to the threads that run its kernels.
#[inline]
pub fn carried<R>(bits: Option<u32>, f: impl FnOnce() -> R) -> R {
    match bits {
        None => f(),
        Some(bits) => {
            let _scope = MpScope::enter(bits);
            f()
        }
    }
}

/// The precision of a new mp value: the live scope's. Panics outside every scope.
#[inline]
pub(crate) fn bits_for_new_value() -> u32 {
    current_bits().unwrap_or_else(|| {
        panic!("an mp value was constructed outside an `MpScope` (no precision is set)")
    })
}

/// The name of the working precision on the command line and in reports: `mp:256`.
pub fn name(bits: u32) -> String {
    format!("mp:{bits}")
}

/// The name of the MPFR working precision: `mp-mpfr:256`.
pub fn mpfr_name(bits: u32) -> String {
    format!("mp-mpfr:{bits}")
}

/// Parse the bits of `mp:<bits>`: `Ok(None)` when `text` does not start with `mp` at all, an
/// error message for `mp`, `mp:`, `mp:x`, `mp:0`, or bits outside [`MIN_BITS`]`..=`[`MAX_BITS`].
pub fn parse_bits(text: &str) -> Result<Option<u32>, String> {
    parse_named(text, "mp", MAX_BITS)
}

/// Parse the bits of `mp-mpfr:<bits>` as [`parse_bits`] does those of `mp:<bits>`.
pub fn parse_mpfr_bits(text: &str) -> Result<Option<u32>, String> {
    parse_named(text, "mp-mpfr", MAX_MPFR_BITS)
}

fn parse_named(text: &str, prefix: &str, max: u32) -> Result<Option<u32>, String> {
    let t = text.trim();
    let starts = t.get(..prefix.len()).is_some_and(|p| p.eq_ignore_ascii_case(prefix));
    // `mp` is a prefix of `mp-mpfr`: the longer name is its own.
    if !starts || (prefix == "mp" && t.get(2..3) == Some("-")) {
        return Ok(None);
    }
    let rest = &t[prefix.len()..];
    let mut usage =
        format!("write {prefix}:<bits> with bits from {MIN_BITS} to {max}, e.g. {prefix}:256");
    if prefix == "mp" {
        usage += &format!(
            "; more bits with MPFR: mp-mpfr:<bits> up to {MAX_MPFR_BITS} (feature `mpfr`)"
        );
    }
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
        Ok(bits) if (MIN_BITS..=max).contains(&bits) => Ok(Some(bits)),
        _ => Err(format!(
            "precision `{t}`: {digits} bits is outside {MIN_BITS}..={max} ({usage})"
        )),
    }
}

/// Unit roundoff of `mp:<bits>`: 2^-bits (round to nearest with a `bits`-bit significand).
pub fn unit_roundoff(bits: u32) -> f64 {
    2f64.powi(-(bits.min(1074) as i32))
}

/// Bytes one element of `mp:<bits>` takes in a vector: its limbs and 8 bytes of sign, exponent
/// and precision ([`MpFloat`](super::MpFloat) in the limb count that holds `bits`).
pub fn bytes_per_element(bits: u32) -> usize {
    8 * super::mpfloat::limbs_for(bits).unwrap_or(bits.div_ceil(64) as usize) + 8
}

/// Estimated bytes one element of `mp-mpfr:<bits>` takes in a vector: the `mpfr_t` in the vector (32
/// bytes on 64-bit targets: precision, sign, exponent, limb pointer) plus its limbs on the heap,
/// which MPFR allocates with one extra limb holding the size, rounded up to glibc malloc's
/// chunk (an 8-byte header, multiples of 16, at least 32). 64 bytes at 53..=64 bits, 64 at 106,
/// 80 at 256, 8,240 at 65,536. Memory traffic per element is about this too, scattered.
pub fn mpfr_bytes_per_element(bits: u32) -> usize {
    let limbs = (bits as usize).div_ceil(64);
    let heap = 8 * (limbs + 1) + 8;
    32 + heap.next_multiple_of(16).max(32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_bits_accepts_the_range_and_explains_the_rest() {
        assert_eq!(parse_bits("mp:256"), Ok(Some(256)));
        assert_eq!(parse_bits(" MP:53 "), Ok(Some(53)));
        assert_eq!(parse_bits("mp:2048"), Ok(Some(2048)));
        assert_eq!(parse_bits("mp-mpfr:256"), Ok(None));
        assert_eq!(parse_mpfr_bits("mp-mpfr:65536"), Ok(Some(65536)));
        assert_eq!(parse_mpfr_bits("mp:256"), Ok(None));
        assert!(parse_mpfr_bits("mp-mpfr:65537").unwrap_err().contains("mp-mpfr:<bits>"));
        assert!(parse_bits("mp:4096").unwrap_err().contains("mp-mpfr:<bits>"));
        assert_eq!(parse_bits("dd"), Ok(None));
        assert_eq!(parse_bits("m"), Ok(None));
        for bad in [
            "mp",
            "mp:",
            "mp:x",
            "mp:0",
            "mp:52",
            "mp:2049",
            "mp:-3",
            "mp:99999999999",
        ] {
            let e = parse_bits(bad).unwrap_err();
            assert!(e.contains("mp:<bits>"), "{bad}: {e}");
        }
    }

    #[test]
    fn bytes_estimate() {
        assert_eq!(bytes_per_element(53), 24);
        assert_eq!(bytes_per_element(256), 40);
        assert_eq!(bytes_per_element(300), 72);
        assert_eq!(mpfr_bytes_per_element(53), 64);
        assert_eq!(mpfr_bytes_per_element(106), 64);
        assert_eq!(mpfr_bytes_per_element(256), 80);
        assert_eq!(mpfr_bytes_per_element(65536), 32 + 8 * 1025 + 8);
    }
}
