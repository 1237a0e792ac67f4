//! `MpFloat<L>`: the project's own multiple-precision binary floating point, the working
//! precision `mp:<bits>` in the default build.
//!
//! # The format
//!
//! A sign, an exponent and a significand of `L` 64-bit limbs, with the precision `bits`
//! (53 to `64 L`) carried by every value, so that a vector or a solve carries its precision and
//! no setting is shared between solves. A finite nonzero value is `0.1xxx... * 2^exp` in MPFR's
//! convention, its significand's top bit set and every bit below the `bits`-th zero. The
//! exponent range is MPFR's default, `[1 - 2^30, 2^30 - 1]`, far beyond a double's, so a
//! solve never underflows where the double-based types would (and matches MPFR's results at
//! the range's ends, where it overflows to infinity or underflows to zero).
//!
//! # Rounding
//!
//! `add`, `sub`, `mul`, `div`, `sqrt`, `mul_f64` and the conversions from `Dd` are correctly
//! rounded: the exact result rounded to nearest, ties to even, at the larger precision of the
//! operands (`round.rs`). So each result is unique, the same as MPFR's at that precision
//! (`tests/mpfloat_oracle.rs` checks it against `rug` on random and edge cases), and a solve
//! that runs the same operations in the same order gives MPFR's bits. `neg` and `abs` are exact;
//! `to_f64` is the nearest double (ties to even, subnormals included). Special values follow
//! IEEE 754 (and MPFR): signed zeros, infinities, NaN.
//!
//! # Where the precision of new values comes from
//!
//! Arithmetic takes its operands' precision. The constructors of the `Precision` trait
//! (`zero`, `from_f64`, ...) have no operand, so they take the precision of the calling
//! thread's [`MpScope`](super::mp::MpScope), which a solve enters for its duration and the CPU
//! backend carries into the threads that run the solve's kernels.
//!
//! # Limb counts
//!
//! The solver is compiled for the limb counts [`LIMB_COUNTS`]; `mp:<bits>` runs on the
//! smallest that holds `bits`. Every value still rounds at its own `bits`, so `mp:300` rounds
//! at 300 bits in 8 limbs' room.

mod addmul;
mod arith;
mod convert;
mod limb_counts;
mod limbs;
mod round;
mod window;

pub(crate) use limb_counts::{with_limbs, with_mp_vector};
pub use limb_counts::MpVector;

use super::mp;

/// The largest exponent (MPFR's default `emax`): values up to about `2^(2^30)`.
pub const EMAX: i32 = (1 << 30) - 1;
/// The smallest exponent (MPFR's default `emin`).
pub const EMIN: i32 = 1 - (1 << 30);

/// The limb counts the solver is compiled for (128 to 2,048 bits).
pub const LIMB_COUNTS: [usize; 5] = [2, 4, 8, 16, 32];
/// The largest precision `MpFloat` holds.
pub const MAX_BITS: u32 = 64 * 32;

/// The limb count `mp:<bits>` runs in (the smallest of [`LIMB_COUNTS`] holding `bits`).
pub fn limbs_for(bits: u32) -> Option<usize> {
    LIMB_COUNTS
        .into_iter()
        .find(|&l| bits as usize <= 64 * l)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Kind {
    Zero,
    Normal,
    Inf,
    Nan,
}

/// A binary floating-point number of at most `64 L` bits; see the module docs.
#[derive(Clone, Copy)]
pub struct MpFloat<const L: usize> {
    /// Little-endian: the top bit of `sig[L - 1]` is the leading bit of a normal value.
    sig: [u64; L],
    /// Exponent, precision, sign and kind in one word, laid out as [`MpFloat::to_packed`]'s
    /// header: written and read whole, where four narrow fields were four stores that the
    /// next operation's wider load could not take from the store buffer (a stall on every
    /// operation of a dependent chain, such as a row's sum).
    head: u64,
}

/// Bit positions of the fields of `MpFloat::head`.
const PREC_SHIFT: u32 = 32;
const SIGN_SHIFT: u32 = 48;
const SIGN_BIT: u64 = 1 << SIGN_SHIFT;
const KIND_SHIFT: u32 = 56;

/// `head` of a value with these fields.
#[inline(always)]
const fn head(exp: i32, bits: u16, negative: bool, kind: Kind) -> u64 {
    exp as u32 as u64
        | (bits as u64) << PREC_SHIFT
        | (negative as u64) << SIGN_SHIFT
        | (kind as u64) << KIND_SHIFT
}

impl<const L: usize> MpFloat<L> {
    fn check_bits(bits: u32) -> u16 {
        assert!(
            (mp::MIN_BITS..=64 * L as u32).contains(&bits),
            "{bits} bits outside {}..={} for {L} limbs",
            mp::MIN_BITS,
            64 * L
        );
        bits as u16
    }

    fn special(kind: Kind, negative: bool, bits: u32) -> MpFloat<L> {
        MpFloat {
            sig: [0; L],
            head: head(0, Self::check_bits(bits), negative, kind),
        }
    }

    /// The exponent (MPFR's convention: a normal value is `0.1xxx * 2^exp`).
    #[inline(always)]
    fn exp(&self) -> i32 {
        self.head as u32 as i32
    }

    /// The precision as stored.
    #[inline(always)]
    fn prec(&self) -> u16 {
        (self.head >> PREC_SHIFT) as u16
    }

    #[inline(always)]
    fn negative(&self) -> bool {
        self.head & SIGN_BIT != 0
    }

    #[inline(always)]
    fn kind(&self) -> Kind {
        match self.head >> KIND_SHIFT {
            0 => Kind::Zero,
            1 => Kind::Normal,
            2 => Kind::Inf,
            _ => Kind::Nan,
        }
    }

    /// Whether the value is normal (finite and nonzero): one comparison of the head word.
    #[inline(always)]
    fn is_normal(&self) -> bool {
        self.head >> KIND_SHIFT == Kind::Normal as u64
    }

    /// This value with the given sign.
    #[inline(always)]
    fn with_sign(&self, negative: bool) -> Self {
        MpFloat {
            head: (self.head & !SIGN_BIT) | (negative as u64) << SIGN_SHIFT,
            ..*self
        }
    }

    fn zero_with(negative: bool, bits: u32) -> MpFloat<L> {
        Self::special(Kind::Zero, negative, bits)
    }

    /// A normal value; `bits` is an operand's (checked where that was made).
    #[inline(always)]
    fn normal(negative: bool, sig: [u64; L], exp: i32, bits: u32) -> MpFloat<L> {
        debug_assert!(sig[L - 1] >> 63 == 1);
        debug_assert!((mp::MIN_BITS..=64 * L as u32).contains(&bits));
        MpFloat {
            sig,
            head: head(exp, bits as u16, negative, Kind::Normal),
        }
    }

    /// Not a number, at `bits` bits.
    pub fn nan(bits: u32) -> MpFloat<L> {
        Self::special(Kind::Nan, false, bits)
    }

    /// An infinity of the given sign.
    pub fn infinity(negative: bool, bits: u32) -> MpFloat<L> {
        Self::special(Kind::Inf, negative, bits)
    }

    /// A zero of the given sign.
    pub fn zero(negative: bool, bits: u32) -> MpFloat<L> {
        Self::zero_with(negative, bits)
    }

    /// The precision in bits.
    pub fn bits(&self) -> u32 {
        u32::from(self.prec())
    }

    /// Whether the sign bit is set (`-0` included).
    pub fn is_sign_negative(&self) -> bool {
        self.negative()
    }

    /// Whether the value is NaN.
    pub fn is_nan(&self) -> bool {
        self.kind() == Kind::Nan
    }

    /// Whether the value is neither infinite nor NaN.
    pub fn is_finite(&self) -> bool {
        matches!(self.kind(), Kind::Zero | Kind::Normal)
    }

    /// Whether the value is a zero of either sign.
    pub fn is_zero(&self) -> bool {
        self.kind() == Kind::Zero
    }

    /// A finite value as `(negative, significand, exponent)` with the value
    /// `(-1)^negative * significand * 2^exponent`, the significand an integer of `64 L` bits
    /// (little-endian limbs, zero for a zero); `None` for an infinity or NaN.
    pub fn to_integer_exp(&self) -> Option<(bool, [u64; L], i64)> {
        match self.kind() {
            Kind::Zero => Some((self.negative(), [0; L], 0)),
            Kind::Normal => Some((
                self.negative(),
                self.sig,
                i64::from(self.exp()) - 64 * L as i64,
            )),
            _ => None,
        }
    }

    /// `(-1)^negative * integer * 2^exponent` (the integer as little-endian limbs, any
    /// length) rounded to nearest, ties to even, at `bits` bits.
    pub fn from_integer_exp(negative: bool, integer: &[u64], exponent: i64, bits: u32) -> Self {
        let mut work = [0u64; limbs::MAX_NUM];
        let used = integer.len() - integer.iter().rev().take_while(|&&l| l == 0).count();
        if used == 0 {
            return Self::zero_with(negative, bits);
        }
        // Keep the top limbs that can matter (L + 1 and a sticky bit for the rest).
        let keep = used.min(L + 1);
        let dropped = used - keep;
        let sticky = integer[..dropped].iter().any(|&l| l != 0);
        let limbs = &mut work[..keep];
        limbs.copy_from_slice(&integer[dropped..used]);
        Self::round(
            round::Exact {
                negative,
                limbs,
                sticky,
                scale: exponent + 64 * dropped as i64,
            },
            bits,
        )
    }

    /// The packed form the GPU kernels read and write (`kernels/common/mp.cuh`): the limbs,
    /// and one header word: exponent in bits 0-31, precision in 32-47, sign in bit 48, kind
    /// (0 zero, 1 normal, 2 infinity, 3 NaN) in 56-63.
    #[doc(hidden)]
    pub fn to_packed(&self) -> ([u64; L], u64) {
        (self.sig, self.head)
    }

    /// A value from its packed form ([`to_packed`](Self::to_packed)).
    #[doc(hidden)]
    pub fn from_packed(sig: [u64; L], header: u64) -> Self {
        // Rebuilt from its fields, so that unused bits are zero and kinds above 3 read NaN.
        let raw = MpFloat { sig, head: header };
        MpFloat {
            sig,
            head: head(raw.exp(), raw.prec(), raw.negative(), raw.kind()),
        }
    }

    /// This value rounded to `bits` bits (exact when `bits` is at least its own).
    pub fn with_bits(&self, bits: u32) -> Self {
        if bits >= self.bits() {
            // Exact: the bits below the new precision are already zero. (A sum with a zero
            // takes this path, as every row of an SpMV starts with one.)
            Self::check_bits(bits);
            let head = (self.head & !(0xffff << PREC_SHIFT)) | u64::from(bits) << PREC_SHIFT;
            return MpFloat { head, ..*self };
        }
        match self.kind() {
            Kind::Normal => {
                let mut sig = self.sig;
                Self::round(
                    round::Exact {
                        negative: self.negative(),
                        limbs: &mut sig,
                        sticky: false,
                        scale: i64::from(self.exp()) - 64 * L as i64,
                    },
                    bits,
                )
            }
            kind => Self::special(kind, self.negative(), bits),
        }
    }
}

impl<const L: usize> PartialEq for MpFloat<L> {
    /// Equal values (whatever their precisions): NaN equals nothing, `+0 == -0`.
    fn eq(&self, other: &Self) -> bool {
        match (self.kind(), other.kind()) {
            (Kind::Nan, _) | (_, Kind::Nan) => false,
            (Kind::Zero, Kind::Zero) => true,
            (a, b) if a != b => false,
            (Kind::Inf, _) => self.negative() == other.negative(),
            _ => {
                self.negative() == other.negative()
                    && self.exp() == other.exp()
                    && self.sig == other.sig
            }
        }
    }
}

impl<const L: usize> std::fmt::Debug for MpFloat<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sign = if self.negative() { "-" } else { "" };
        let bits = self.bits();
        match self.kind() {
            Kind::Nan => write!(f, "NaN[{bits}]"),
            Kind::Inf => write!(f, "{sign}inf[{bits}]"),
            Kind::Zero => write!(f, "{sign}0[{bits}]"),
            Kind::Normal => {
                write!(f, "{sign}0x0.")?;
                for limb in self.sig.iter().rev() {
                    write!(f, "{limb:016x}")?;
                }
                write!(f, "p{}[{bits}] (~{:e})", self.exp(), self.to_f64())
            }
        }
    }
}

impl<const L: usize> super::Precision for MpFloat<L> {
    type Vector = Vec<Self>;
    const NAME: &'static str = "mp";
    /// The CUDA backend has no kernels named so and refuses it before any work.
    const KERNEL_SUFFIX: &'static str = "mp";
    /// 2^-53: the unit roundoff of the smallest precision accepted, so a bound on 2^-bits for
    /// every `mp:<bits>`; [`Precision::unit_roundoff`](super::Precision::unit_roundoff) gives
    /// the live scope's.
    const EPSILON: f64 = f64::EPSILON / 2.0;
    const BYTES: usize = size_of::<Self>();
    fn unit_roundoff() -> f64 {
        mp::current_bits().map_or(Self::EPSILON, mp::unit_roundoff)
    }
    /// [`to_packed`](MpFloat::to_packed)'s header, then the `L` limbs.
    fn write_words(&self, out: &mut Vec<u64>) {
        let (sig, header) = self.to_packed();
        out.push(header);
        out.extend(sig);
    }
    fn read_words(words: &mut &[u64]) -> Self {
        let w = super::take_words(words, L + 1);
        MpFloat::from_packed(std::array::from_fn(|i| w[i + 1]), w[0])
    }
    super::acc_is_self!();

    #[inline]
    fn zero() -> Self {
        Self::zero_with(false, mp::bits_for_new_value())
    }
    /// Exact (bits >= 53).
    #[inline]
    fn from_f64(x: f64) -> Self {
        Self::from_f64_bits(x, mp::bits_for_new_value())
    }
    #[inline]
    fn to_f64(&self) -> f64 {
        MpFloat::to_f64(self)
    }
    fn to_dd(&self) -> super::Dd {
        MpFloat::to_dd(self)
    }
    fn from_dd(x: super::Dd) -> Self {
        Self::from_dd_bits(x, mp::bits_for_new_value())
    }
    #[inline]
    fn add(&self, b: &Self) -> Self {
        MpFloat::sum(self, b, b.negative())
    }
    #[inline]
    fn sub(&self, b: &Self) -> Self {
        MpFloat::sum(self, b, !b.negative())
    }
    #[inline]
    fn mul(&self, b: &Self) -> Self {
        MpFloat::mul(*self, *b)
    }
    #[inline]
    fn div(&self, b: &Self) -> Self {
        MpFloat::div(*self, *b)
    }
    #[inline]
    fn neg(&self) -> Self {
        MpFloat::neg(*self)
    }
    fn sqrt(&self) -> Self {
        MpFloat::sqrt(*self)
    }
    #[inline]
    fn abs(&self) -> Self {
        MpFloat::abs(*self)
    }
    #[inline]
    fn mul_f64(&self, b: f64) -> Self {
        MpFloat::mul_f64(*self, b)
    }
    #[inline]
    fn is_finite(&self) -> bool {
        MpFloat::is_finite(self)
    }
}
