//! Decimal output and input for [`Dd`], for reports and for embedding constants.
//!
//! Both work in double-double arithmetic (no big integers in the library): scale by a power of ten,
//! then peel or accumulate one digit at a time. Powers of ten up to 10^32 are exact in double-double;
//! larger ones come from repeated squaring and carry a few u² each (u² = 2^-106 ~ 1.2e-32).
//! Composing the QuadMul bounds gives roughly 80u² at worst over the normal range; against exact
//! rationals (`tests/dd_exact.rs`, which asserts 128u² = 1.6e-30) random values reach about 17u²
//! (2e-31) both ways: 30-31 correct significant digits. Not correctly rounded conversion.

use super::Dd;
use std::fmt;
use std::str::FromStr;

/// Significant digits printed by `Display` when no precision is given: 106 bits is 31.9 digits.
const DISPLAY_DIGITS: usize = 32;

/// Digits of the mantissa that parsing accumulates; later ones change the value by < 1e-35
/// relative, far below u² = 1.2e-32, and are dropped (only their position counts).
const PARSE_DIGITS: usize = 36;

/// Largest power of ten taken in one scaling step (10^308 is still finite).
const MAX_POW10_STEP: u32 = 300;

/// 10^k for `k <= MAX_POW10_STEP`, by binary powering. 10, 100, ..., 10^16 are exact doubles and
/// 10^32 = (10^16)^2 is exact in double-double (TwoProd); from 10^64 on each squaring rounds.
fn pow10(k: u32) -> Dd {
    debug_assert!(k <= MAX_POW10_STEP);
    let mut result = Dd::ONE;
    let mut base = Dd::from_f64(10.0);
    let mut k = k;
    while k > 0 {
        if k & 1 == 1 {
            result = result.mul(base);
        }
        k >>= 1;
        if k > 0 {
            base = base.mul(base);
        }
    }
    result
}

/// `x * 10^k` for any `k`, in steps that keep the power of ten finite. Negative powers divide
/// (10^-k is not exact, 10^k up to 10^32 is).
fn scale_pow10(x: Dd, k: i64) -> Dd {
    let mut x = x;
    let mut k = k;
    while k != 0 {
        let step = k.unsigned_abs().min(u64::from(MAX_POW10_STEP)) as u32;
        let p = pow10(step);
        if k > 0 {
            // TwoProd's error term is NaN once the product overflows; overflow means inf.
            let approx = x.hi * p.hi;
            if approx.is_infinite() {
                return Dd::from_f64(approx);
            }
            x = x.mul(p);
            k -= i64::from(step);
        } else {
            x = x.div(p);
            k += i64::from(step);
        }
        if x.hi == 0.0 || !x.hi.is_finite() {
            break;
        }
    }
    x
}

/// Decimal digits of a finite positive `x`: `(d, e)` with `x ~ 0.d[0] d[1] ... * 10^(e+1)`, i.e.
/// `d[0]` is the digit of 10^e. Returns `n` digits rounded half up.
fn to_digits(x: Dd, n: usize) -> (Vec<u8>, i64) {
    let mut e = x.hi.log10().floor() as i64;
    let mut r = scale_pow10(x, -e);
    // log10 of `hi` can be one off near a power of ten; fix on the double-double value.
    let ten = Dd::from_f64(10.0);
    for _ in 0..2 {
        if r >= ten {
            r = r.div(ten);
            e += 1;
        } else if r < Dd::ONE {
            r = r.mul_f64(10.0);
            e -= 1;
        }
    }

    // Peel digits: d = floor(r.hi) may be one too large or small when r sits just beside an
    // integer (r.lo has the other sign); the carry pass below repairs that.
    let m = n + 3;
    let mut d: Vec<i64> = Vec::with_capacity(m);
    for _ in 0..m {
        let q = r.hi.floor();
        d.push(q as i64);
        r = r.add_f64(-q).mul_f64(10.0);
    }
    let mut carry = 0;
    for v in d.iter_mut().rev() {
        let t = *v + carry;
        carry = t.div_euclid(10);
        *v = t.rem_euclid(10);
    }
    while carry > 0 {
        d.insert(0, carry % 10);
        carry /= 10;
        e += 1;
    }
    while d.len() > n + 1 && d[0] == 0 {
        d.remove(0);
        e -= 1;
    }

    // Round half up at digit n.
    let round_up = d[n] >= 5;
    d.truncate(n);
    if round_up {
        let mut i = n;
        loop {
            if i == 0 {
                d.insert(0, 1);
                d.truncate(n);
                e += 1;
                break;
            }
            i -= 1;
            if d[i] == 9 {
                d[i] = 0;
            } else {
                d[i] += 1;
                break;
            }
        }
    }
    (d.into_iter().map(|v| v as u8).collect(), e)
}

/// `d.ddd...e±x` with `digits` significant digits (at least 1).
fn format_sci(x: Dd, digits: usize) -> String {
    let digits = digits.max(1);
    if x.hi.is_nan() || x.lo.is_nan() {
        return "NaN".to_string();
    }
    let neg = x.hi.is_sign_negative();
    let sign = if neg { "-" } else { "" };
    if x.hi.is_infinite() {
        return format!("{sign}inf");
    }
    let mut s = String::from(sign);
    if x.hi == 0.0 {
        s.push('0');
        if digits > 1 {
            s.push('.');
            s.extend(std::iter::repeat_n('0', digits - 1));
        }
        s.push_str("e0");
        return s;
    }
    let (d, e) = to_digits(x.abs(), digits);
    s.push(char::from(b'0' + d[0]));
    if digits > 1 {
        s.push('.');
        s.extend(d[1..].iter().map(|&v| char::from(b'0' + v)));
    }
    s.push('e');
    s.push_str(&e.to_string());
    s
}

/// Scientific notation with 32 significant digits, or `{:.N}` for N digits after
/// the point; width, fill and alignment are honoured. Digits past the 31st are not reliable.
impl fmt::Display for Dd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let digits = f.precision().map_or(DISPLAY_DIGITS, |p| p + 1);
        let s = format_sci(*self, digits);
        let len = s.chars().count();
        let pad = f.width().map_or(0, |w| w.saturating_sub(len));
        let (before, after) = match f.align() {
            Some(fmt::Alignment::Left) => (0, pad),
            Some(fmt::Alignment::Center) => (pad / 2, pad - pad / 2),
            _ => (pad, 0),
        };
        let fill = f.fill();
        for _ in 0..before {
            write!(f, "{fill}")?;
        }
        f.write_str(&s)?;
        for _ in 0..after {
            write!(f, "{fill}")?;
        }
        Ok(())
    }
}

/// Why a string is not a double-double literal.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseDdError {
    #[error("empty string is not a number")]
    Empty,
    #[error("invalid character {0:?} in number")]
    InvalidChar(char),
    #[error("number has no digits")]
    NoDigits,
    #[error("exponent has no digits")]
    NoExponentDigits,
}

/// Parses `[+-]digits[.digits][(e|E)[+-]digits]`, `inf`, `infinity` and `nan` (any case), like
/// `f64`. The mantissa is accumulated exactly as a double-double integer (up to 36 digits), then
/// scaled by a power of ten; see the module docs for the accuracy. Overflow gives ±inf, underflow
/// ±0 (and values below ~1e-290 lose `lo` to the subnormal range).
impl FromStr for Dd {
    type Err = ParseDdError;

    fn from_str(s: &str) -> Result<Dd, ParseDdError> {
        let s = s.trim();
        if s.is_empty() {
            return Err(ParseDdError::Empty);
        }
        let (neg, body) = match s.as_bytes()[0] {
            b'-' => (true, &s[1..]),
            b'+' => (false, &s[1..]),
            _ => (false, s),
        };
        let signed = |x: Dd| if neg { x.neg() } else { x };
        let lower = body.to_ascii_lowercase();
        if lower == "inf" || lower == "infinity" {
            return Ok(signed(Dd::from_f64(f64::INFINITY)));
        }
        if lower == "nan" {
            return Ok(Dd::from_f64(f64::NAN));
        }

        let bytes = body.as_bytes();
        let mut i = 0;
        let mut mant = Dd::ZERO;
        let mut kept = 0usize; // significant digits accumulated
        let mut exp10: i64 = 0; // decimal exponent of the accumulated integer
        let mut any_digit = false;
        let mut seen_point = false;
        while i < bytes.len() {
            match bytes[i] {
                c @ b'0'..=b'9' => {
                    any_digit = true;
                    let digit = f64::from(c - b'0');
                    if kept < PARSE_DIGITS {
                        if kept > 0 || digit != 0.0 {
                            mant = mant.mul_f64(10.0).add_f64(digit);
                            kept += 1;
                        }
                        if seen_point {
                            exp10 -= 1;
                        }
                    } else if !seen_point {
                        exp10 += 1;
                    }
                }
                b'.' if !seen_point => seen_point = true,
                b'e' | b'E' => break,
                _ => {
                    let c = body[i..].chars().next().unwrap_or('?');
                    return Err(ParseDdError::InvalidChar(c));
                }
            }
            i += 1;
        }
        if !any_digit {
            return Err(ParseDdError::NoDigits);
        }
        if i < bytes.len() {
            exp10 = exp10.saturating_add(parse_exponent(&body[i + 1..])?);
        }
        if mant.hi == 0.0 {
            return Ok(signed(Dd::ZERO));
        }
        // Beyond these the result is 0 or inf anyway; clamping keeps the scaling loop short.
        let exp10 = exp10.clamp(-400, 400);
        Ok(signed(scale_pow10(mant, exp10)))
    }
}

/// Decimal exponent after the `e`, saturating (the value is clamped later).
fn parse_exponent(s: &str) -> Result<i64, ParseDdError> {
    let (neg, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() {
        return Err(ParseDdError::NoExponentDigits);
    }
    let mut v: i64 = 0;
    for c in digits.chars() {
        let d = c.to_digit(10).ok_or(ParseDdError::InvalidChar(c))?;
        v = v.saturating_mul(10).saturating_add(i64::from(d));
    }
    Ok(if neg { -v } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn powers_of_ten_up_to_32_are_exact() {
        for k in 0..=22 {
            assert_eq!(pow10(k), Dd::from_f64(10f64.powi(k as i32)), "10^{k}");
        }
        // 10^32 = 2^32 * 5^32 and 5^32 has 75 bits: hi + lo must hold it exactly.
        let p = pow10(32);
        let five32: u128 = 5u128.pow(32);
        let hi = p.hi / 2f64.powi(32);
        let lo = p.lo / 2f64.powi(32);
        assert_eq!(hi as u128 as i128 + lo as i128, five32 as i128);
    }

    #[test]
    fn displays_simple_values() {
        assert_eq!(format!("{:.3}", Dd::ONE), "1.000e0");
        assert_eq!(format!("{:.2}", Dd::from_f64(-0.125)), "-1.25e-1");
        assert_eq!(format!("{:.0}", Dd::from_f64(9.6)), "1e1");
        assert_eq!(format!("{:>8.1}", Dd::from_f64(2.0)), "   2.0e0");
        assert_eq!(format!("{:<8.1}|", Dd::from_f64(2.0)), "2.0e0   |");
        assert_eq!(format!("{}", Dd::ZERO).len(), "0.".len() + 31 + "e0".len());
        assert_eq!(format!("{}", Dd::from_f64(f64::NAN)), "NaN");
        assert_eq!(format!("{}", Dd::from_f64(f64::NEG_INFINITY)), "-inf");
        // 1/3 to 32 digits
        let third = Dd::ONE.div(Dd::from_f64(3.0));
        assert_eq!(format!("{third}"), "3.3333333333333333333333333333333e-1");
    }

    #[test]
    fn parses_and_rejects() {
        assert_eq!("1".parse::<Dd>(), Ok(Dd::ONE));
        assert_eq!("-2.5e-1".parse::<Dd>(), Ok(Dd::from_f64(-0.25)));
        assert_eq!("+.5".parse::<Dd>(), Ok(Dd::from_f64(0.5)));
        assert_eq!("5.".parse::<Dd>(), Ok(Dd::from_f64(5.0)));
        assert_eq!("0e999".parse::<Dd>(), Ok(Dd::ZERO));
        assert_eq!("1e999".parse::<Dd>().unwrap().hi, f64::INFINITY);
        assert_eq!("-1e-999".parse::<Dd>().unwrap().hi, 0.0);
        assert_eq!("-Infinity".parse::<Dd>().unwrap().hi, f64::NEG_INFINITY);
        assert!("nan".parse::<Dd>().unwrap().hi.is_nan());
        assert_eq!("".parse::<Dd>(), Err(ParseDdError::Empty));
        assert_eq!(".".parse::<Dd>(), Err(ParseDdError::NoDigits));
        assert_eq!("1e".parse::<Dd>(), Err(ParseDdError::NoExponentDigits));
        assert_eq!("1.2.3".parse::<Dd>(), Err(ParseDdError::InvalidChar('.')));
        assert_eq!("1x".parse::<Dd>(), Err(ParseDdError::InvalidChar('x')));
        // 0.1 is not a double: the double-double keeps the next 53 bits.
        let tenth: Dd = "0.1".parse().unwrap();
        assert_eq!(tenth.hi, 0.1);
        assert_ne!(tenth.lo, 0.0);
        assert!(tenth.mul_f64(10.0).sub(Dd::ONE).hi.abs() < 1e-31);
    }

    #[test]
    fn display_then_parse_round_trips_to_about_31_digits() {
        let x = Dd::from_f64(2.0).sqrt();
        let y: Dd = x.to_string().parse().unwrap();
        assert!(x.sub(y).abs().hi <= 1e-31 * x.hi, "{x} vs {y}");
    }
}
