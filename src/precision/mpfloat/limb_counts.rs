//! The limb counts the solver is compiled for, written once: [`LIMB_COUNTS`](super::LIMB_COUNTS),
//! the macro that turns a run-time precision into one of them, and the vector of any of them.

use super::MpFloat;

/// Runs `$body` with the constant `$l` bound to the limb count of `mp:<bits>`
/// ([`limbs_for`](super::limbs_for)); `$bits` must be a precision `mp:<bits>` accepts.
macro_rules! with_limbs {
    ($bits:expr, $l:ident => $body:expr) => {
        match $crate::precision::mpfloat::limbs_for($bits) {
            Some(2) => {
                const $l: usize = 2;
                $body
            }
            Some(4) => {
                const $l: usize = 4;
                $body
            }
            Some(8) => {
                const $l: usize = 8;
                $body
            }
            Some(16) => {
                const $l: usize = 16;
                $body
            }
            Some(32) => {
                const $l: usize = 32;
                $body
            }
            _ => unreachable!("mp:{} is checked when its name is parsed", $bits),
        }
    };
}
pub(crate) use with_limbs;

/// A vector of `MpFloat` in any of the limb counts.
#[derive(Clone, Debug, PartialEq)]
pub enum MpVector {
    /// 53 to 128 bits.
    L2(Vec<MpFloat<2>>),
    /// 129 to 256 bits.
    L4(Vec<MpFloat<4>>),
    /// 257 to 512 bits.
    L8(Vec<MpFloat<8>>),
    /// 513 to 1,024 bits.
    L16(Vec<MpFloat<16>>),
    /// 1,025 to 2,048 bits.
    L32(Vec<MpFloat<32>>),
}

/// Runs `$body` with `$x` bound to the `Vec<MpFloat<L>>` inside an [`MpVector`].
macro_rules! with_mp_vector {
    ($v:expr, $x:ident => $body:expr) => {
        match $v {
            $crate::precision::mpfloat::MpVector::L2($x) => $body,
            $crate::precision::mpfloat::MpVector::L4($x) => $body,
            $crate::precision::mpfloat::MpVector::L8($x) => $body,
            $crate::precision::mpfloat::MpVector::L16($x) => $body,
            $crate::precision::mpfloat::MpVector::L32($x) => $body,
        }
    };
}
pub(crate) use with_mp_vector;

impl MpVector {
    /// `v` in its variant; `None` if `T` is no `MpFloat` the solver is compiled for.
    pub fn of<T: 'static>(v: Vec<T>) -> Result<MpVector, Vec<T>> {
        use std::any::Any;
        let mut v = Some(v);
        let any: &mut dyn Any = &mut v;
        macro_rules! take {
            ($l:literal, $variant:ident) => {
                if let Some(x) = any.downcast_mut::<Option<Vec<MpFloat<$l>>>>() {
                    return Ok(MpVector::$variant(x.take().expect("present")));
                }
            };
        }
        take!(2, L2);
        take!(4, L4);
        take!(8, L8);
        take!(16, L16);
        take!(32, L32);
        Err(v.expect("not taken"))
    }

    /// Entries.
    pub fn len(&self) -> usize {
        with_mp_vector!(self, x => x.len())
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The precision of the entries (`None` for an empty vector).
    pub fn bits(&self) -> Option<u32> {
        with_mp_vector!(self, x => x.first().map(MpFloat::bits))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_limb_count_has_its_variant_and_its_arm() {
        for l in super::super::LIMB_COUNTS {
            let bits = 64 * l as u32;
            let got = with_limbs!(bits, L => {
                let v = vec![MpFloat::<L>::from_f64_bits(1.0, bits)];
                MpVector::of(v).expect("a variant").bits()
            });
            assert_eq!(got, Some(bits));
        }
        assert!(MpVector::of(vec![1.0f64]).is_err());
    }
}
