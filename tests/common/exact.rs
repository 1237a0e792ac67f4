//! Exact-rational test oracle (num-bigint / num-rational, dev-dependencies only).
//!
//! Every finite double is a dyadic rational `m * 2^e`, so sums and products of doubles,
//! double-doubles and quad-doubles are exact dyadics: [`Dyadic`] computes them without the gcd
//! normalisation that makes `BigRational` slow, and [`Dyadic::to_rational`] /
//! [`f64_to_rational`] / [`dd_to_rational`] give `BigRational`s where a true quotient is needed
//! (decimal strings).
//! Nothing here shares code with the arithmetic under test.
#![allow(dead_code)] // each test binary uses a different part

use num_bigint::{BigInt, Sign};
use num_rational::BigRational;
use num_traits::{One, Signed, Zero};
use precsolve::{Dd, Qd};
use std::cmp::Ordering;

/// Exact `m * 2^e`, kept with `m` odd (or zero, then `e == 0`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dyadic {
    m: BigInt,
    e: i64,
}

impl Dyadic {
    pub fn zero() -> Dyadic {
        Dyadic {
            m: BigInt::zero(),
            e: 0,
        }
    }

    fn normalized(m: BigInt, e: i64) -> Dyadic {
        match m.trailing_zeros() {
            None => Dyadic::zero(),
            Some(0) => Dyadic { m, e },
            Some(tz) => Dyadic {
                m: m >> tz,
                e: e + tz as i64,
            },
        }
    }

    /// Exact value of a finite double (subnormals included). Panics on inf/NaN.
    pub fn from_f64(x: f64) -> Dyadic {
        assert!(x.is_finite(), "oracle given a non-finite double {x}");
        let bits = x.to_bits();
        let biased = ((bits >> 52) & 0x7ff) as i64;
        let frac = bits & ((1u64 << 52) - 1);
        let (mag, e) = if biased == 0 {
            (frac, -1074)
        } else {
            (frac | (1u64 << 52), biased - 1075)
        };
        let m = BigInt::from(mag);
        Dyadic::normalized(if x < 0.0 { -m } else { m }, e)
    }

    /// Exact value `hi + lo` of a double-double (normalised or not).
    pub fn from_dd(x: Dd) -> Dyadic {
        Dyadic::from_f64(x.hi).add(&Dyadic::from_f64(x.lo))
    }

    /// Exact value `x[0] + x[1] + x[2] + x[3]` of a quad-double (renormalised or not).
    pub fn from_qd(x: Qd) -> Dyadic {
        x.x.iter()
            .fold(Dyadic::zero(), |acc, &c| acc.add(&Dyadic::from_f64(c)))
    }

    pub fn from_bigint(m: BigInt) -> Dyadic {
        Dyadic::normalized(m, 0)
    }

    /// `self * 10^k` (exact: `10^k = 5^k 2^k`).
    pub fn mul_pow10(&self, k: u64) -> Dyadic {
        let five = num_traits::pow(BigInt::from(5), k as usize);
        Dyadic::normalized(&self.m * five, self.e + k as i64)
    }

    /// `2^k`.
    pub fn pow2(k: i64) -> Dyadic {
        Dyadic {
            m: BigInt::one(),
            e: k,
        }
    }

    pub fn is_zero(&self) -> bool {
        self.m.is_zero()
    }

    pub fn signum(&self) -> i32 {
        match self.m.sign() {
            Sign::Minus => -1,
            Sign::NoSign => 0,
            Sign::Plus => 1,
        }
    }

    pub fn add(&self, o: &Dyadic) -> Dyadic {
        if self.is_zero() {
            return o.clone();
        }
        if o.is_zero() {
            return self.clone();
        }
        let e = self.e.min(o.e);
        let a = &self.m << (self.e - e) as u64;
        let b = &o.m << (o.e - e) as u64;
        Dyadic::normalized(a + b, e)
    }

    pub fn neg(&self) -> Dyadic {
        Dyadic {
            m: -&self.m,
            e: self.e,
        }
    }

    pub fn sub(&self, o: &Dyadic) -> Dyadic {
        self.add(&o.neg())
    }

    pub fn mul(&self, o: &Dyadic) -> Dyadic {
        if self.is_zero() || o.is_zero() {
            return Dyadic::zero();
        }
        // odd * odd is odd: no renormalisation needed
        Dyadic {
            m: &self.m * &o.m,
            e: self.e + o.e,
        }
    }

    pub fn abs(&self) -> Dyadic {
        Dyadic {
            m: self.m.abs(),
            e: self.e,
        }
    }

    /// Compares |self| with |o|.
    pub fn cmp_abs(&self, o: &Dyadic) -> Ordering {
        match (self.is_zero(), o.is_zero()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Less,
            (false, true) => return Ordering::Greater,
            _ => {}
        }
        // position of the leading bit decides unless equal
        let ta = self.m.bits() as i64 + self.e;
        let tb = o.m.bits() as i64 + o.e;
        if ta != tb {
            return ta.cmp(&tb);
        }
        let e = self.e.min(o.e);
        let a = self.m.magnitude() << (self.e - e) as u64;
        let b = o.m.magnitude() << (o.e - e) as u64;
        a.cmp(&b)
    }

    /// `floor(log2|self|)`; `None` for zero.
    pub fn ilog2(&self) -> Option<i64> {
        (!self.is_zero()).then(|| self.m.bits() as i64 - 1 + self.e)
    }

    /// Approximate `|self| / |o|` as a double, for reporting only (exponents may lie far outside
    /// the double range individually).
    pub fn ratio_f64(&self, o: &Dyadic) -> f64 {
        if self.is_zero() {
            return 0.0;
        }
        if o.is_zero() {
            return f64::INFINITY;
        }
        let (fa, ea) = top_bits(self);
        let (fb, eb) = top_bits(o);
        let k = (ea - eb).clamp(-2000, 2000) as i32;
        // split the power so that neither factor overflows on the way
        (fa / fb) * 2f64.powi(k / 2) * 2f64.powi(k - k / 2)
    }

    pub fn to_rational(&self) -> BigRational {
        if self.e >= 0 {
            BigRational::from_integer(&self.m << self.e as u64)
        } else {
            BigRational::new(self.m.clone(), BigInt::one() << (-self.e) as u64)
        }
    }
}

/// `|x| ~ f * 2^e` with `f` a double holding the top 64 bits of the mantissa.
fn top_bits(x: &Dyadic) -> (f64, i64) {
    let mag = x.m.magnitude();
    let n = mag.bits() as i64;
    let shift = (n - 64).max(0);
    let top = mag >> shift as u64;
    let f = top.iter_u64_digits().next().unwrap_or(0) as f64;
    (f, x.e + shift)
}

/// Exact value of a finite double as a rational.
pub fn f64_to_rational(x: f64) -> BigRational {
    Dyadic::from_f64(x).to_rational()
}

/// Exact value `hi + lo` of a double-double as a rational.
pub fn dd_to_rational(x: Dd) -> BigRational {
    Dyadic::from_dd(x).to_rational()
}

/// A decimal literal's exact value `m * 10^e10`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decimal {
    pub m: BigInt,
    pub e10: i64,
}

impl Decimal {
    /// Parses `[+-]digits[.digits][(e|E)[+-]digits]`. Panics on anything else.
    pub fn parse(s: &str) -> Decimal {
        let s = s.trim();
        let (neg, body) = match s.as_bytes().first() {
            Some(b'-') => (true, &s[1..]),
            Some(b'+') => (false, &s[1..]),
            _ => (false, s),
        };
        let (mant, exp) = match body.find(['e', 'E']) {
            Some(i) => (&body[..i], body[i + 1..].parse::<i64>().expect("exponent")),
            None => (body, 0),
        };
        let (int_part, frac_part) = mant.split_once('.').unwrap_or((mant, ""));
        let digits = format!("{int_part}{frac_part}");
        assert!(
            !digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit()),
            "not a decimal literal: {s:?}"
        );
        let m: BigInt = digits.parse().expect("digits");
        Decimal {
            m: if neg { -m } else { m },
            e10: exp - frac_part.len() as i64,
        }
    }

    /// `10^scale * value` as an exact dyadic, with `scale = max(0, -e10)` so that it is an
    /// integer: compare it with `x.mul_pow10(scale)` to compare `x` with the decimal, no division.
    pub fn scaled(&self) -> (Dyadic, u64) {
        let scale = (-self.e10).max(0) as u64;
        let v = Dyadic::from_bigint(self.m.clone()).mul_pow10((self.e10 + scale as i64) as u64);
        (v, scale)
    }

    pub fn to_rational(&self) -> BigRational {
        let p = num_traits::pow(BigInt::from(10), self.e10.unsigned_abs() as usize);
        if self.e10 >= 0 {
            BigRational::from_integer(&self.m * p)
        } else {
            BigRational::new(self.m.clone(), p)
        }
    }
}

/// Exact value of a decimal literal `[+-]digits[.digits][(e|E)[+-]digits]`. Panics on others.
pub fn decimal_to_rational(s: &str) -> BigRational {
    Decimal::parse(s).to_rational()
}

/// The exact solution of `a x = b` (`a` square and nonsingular) by Gauss-Jordan elimination
/// over the rationals: the oracle for the Krylov solvers' extended-precision solutions.
pub fn exact_solution(a: &precsolve::CsrMatrix, b: &[f64]) -> Vec<BigRational> {
    let n = a.nrows();
    let mut m = vec![vec![BigRational::zero(); n + 1]; n];
    for (i, row) in m.iter_mut().enumerate() {
        for k in a.row_ptr()[i]..a.row_ptr()[i + 1] {
            row[a.col_idx()[k] as usize] = f64_to_rational(a.values()[k]);
        }
        row[n] = f64_to_rational(b[i]);
    }
    for c in 0..n {
        let p = (c..n).find(|&r| !m[r][c].is_zero()).expect("nonsingular");
        m.swap(c, p);
        let pivot = m[c].clone();
        for (r, row) in m.iter_mut().enumerate() {
            if r != c && !row[c].is_zero() {
                let f = &row[c] / &pivot[c];
                for (entry, p) in row.iter_mut().zip(&pivot).skip(c) {
                    *entry -= &f * p;
                }
            }
        }
    }
    (0..n).map(|i| &m[i][n] / &m[i][i]).collect()
}

/// The `n x n` matrix whose entry `(i, j)` is `entry(i, j)` where that is `Some`.
pub fn csr_from_fn(n: usize, entry: impl Fn(usize, usize) -> Option<f64>) -> precsolve::CsrMatrix {
    let (mut row_ptr, mut cols, mut vals) = (vec![0], Vec::new(), Vec::new());
    for i in 0..n {
        for j in 0..n {
            if let Some(v) = entry(i, j) {
                cols.push(j);
                vals.push(v);
            }
        }
        row_ptr.push(cols.len());
    }
    precsolve::CsrMatrix::from_slices(n, n, &row_ptr, &cols, &vals).unwrap()
}

/// The largest relative error of a dd vector against exact values.
pub fn worst_relative_error(x: &[Dd], exact: &[BigRational]) -> f64 {
    use num_traits::ToPrimitive;
    x.iter()
        .zip(exact)
        .map(|(xi, ei)| {
            ((dd_to_rational(*xi) - ei).abs() / ei.abs())
                .to_f64()
                .unwrap()
        })
        .fold(0.0, f64::max)
}
