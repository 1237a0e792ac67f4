//! Precision ladders (`--precision auto`, `ladder:f64,dd,qd`): the precisions a solve climbs
//! through, cheapest first, when one stops making progress (`solver::escalation`).

use super::choices::WorkingPrecision;

/// The most rungs a ladder holds: f64, td, dd, qd and one `mp:<bits>`.
const MAX_RUNGS: usize = 5;

/// A precision ladder: two or more precisions, each more precise than the one before
/// (f64 53 bits < td 75 < dd 106 < qd 212; `mp:<bits>` only as the top rung). Written
/// `auto` (f64, dd, qd) or `ladder:f64,dd` / `ladder:f64,td,dd,qd,mp:512`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ladder {
    rungs: [Rung; MAX_RUNGS],
    len: u8,
}

/// A rung, which is any precision but a ladder (a `WorkingPrecision` holding a `Ladder` could
/// not hold rungs of its own type by value).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rung {
    F64,
    Td,
    Dd,
    Qd,
    Mp(u32),
}

impl Rung {
    fn precision(self) -> WorkingPrecision {
        match self {
            Rung::F64 => WorkingPrecision::F64,
            Rung::Td => WorkingPrecision::Td,
            Rung::Dd => WorkingPrecision::Dd,
            Rung::Qd => WorkingPrecision::Qd,
            Rung::Mp(bits) => WorkingPrecision::Mp(bits),
        }
    }

    fn of(p: WorkingPrecision) -> Option<Rung> {
        Some(match p {
            WorkingPrecision::F64 => Rung::F64,
            WorkingPrecision::Td => Rung::Td,
            WorkingPrecision::Dd => Rung::Dd,
            WorkingPrecision::Qd => Rung::Qd,
            WorkingPrecision::Mp(bits) => Rung::Mp(bits),
            WorkingPrecision::Mpfr(_) | WorkingPrecision::Ladder(_) => return None,
        })
    }

    /// Significand bits, by which rungs are ordered (td rounds like 75 bits, `precision::td`).
    fn bits(self) -> u32 {
        match self {
            Rung::F64 => 53,
            Rung::Td => 75,
            Rung::Dd => 106,
            Rung::Qd => 212,
            Rung::Mp(bits) => bits,
        }
    }
}

impl Ladder {
    /// `auto`: f64, then dd, then qd.
    pub const AUTO: Ladder = Ladder {
        rungs: [Rung::F64, Rung::Dd, Rung::Qd, Rung::F64, Rung::F64],
        len: 3,
    };

    /// The ladder of `rungs`, in that order: at least two, each more precise than the one
    /// before, `mp:<bits>` only at the top (a solution in MPFR has no exact handover to a
    /// wider MPFR precision here).
    pub fn new(rungs: &[WorkingPrecision]) -> Result<Ladder, String> {
        let names = || {
            let names: Vec<_> = rungs.iter().map(|p| p.name()).collect();
            names.join(",")
        };
        if rungs.len() < 2 {
            return Err(format!(
                "a precision ladder needs at least two precisions, cheapest first (ladder:{} has {})",
                names(),
                rungs.len()
            ));
        }
        if rungs.len() > MAX_RUNGS {
            return Err(format!(
                "a precision ladder has at most {MAX_RUNGS} rungs (f64, td, dd, qd, mp:<bits>)"
            ));
        }
        let mut ladder = Ladder {
            rungs: [Rung::F64; MAX_RUNGS],
            len: rungs.len() as u8,
        };
        for (i, &p) in rungs.iter().enumerate() {
            let rung = Rung::of(p)
                .ok_or_else(|| match p {
                    WorkingPrecision::Mpfr(_) => format!(
                        "a ladder's rungs are f64, td, dd, qd and mp:<bits>, not `{}`",
                        p.name()
                    ),
                    _ => format!("a ladder cannot hold a ladder (`{}`)", p.name()),
                })?;
            if i > 0 && rung.bits() <= ladder.rungs[i - 1].bits() {
                return Err(format!(
                    "ladder:{}: each precision must be more precise than the one before it \
                     ({} after {})",
                    names(),
                    p.name(),
                    ladder.rungs[i - 1].precision().name()
                ));
            }
            if matches!(rung, Rung::Mp(_)) && i + 1 < rungs.len() {
                return Err(format!(
                    "ladder:{}: mp:<bits> can only be the last precision of a ladder",
                    names()
                ));
            }
            ladder.rungs[i] = rung;
        }
        Ok(ladder)
    }

    /// The rungs, cheapest first.
    pub fn rungs(&self) -> impl Iterator<Item = WorkingPrecision> + '_ {
        self.rungs[..usize::from(self.len)]
            .iter()
            .map(|r| r.precision())
    }

    /// `auto` for [`Ladder::AUTO`], else `ladder:` and the rungs.
    pub fn name(&self) -> String {
        if *self == Ladder::AUTO {
            return "auto".into();
        }
        let names: Vec<_> = self.rungs().map(|p| p.name()).collect();
        format!("ladder:{}", names.join(","))
    }

    /// Parse `auto` or `ladder:<p>,<p>...`; `Ok(None)` for text that is neither.
    pub fn parse(text: &str) -> Result<Option<Ladder>, String> {
        let t = text.trim();
        if t.eq_ignore_ascii_case("auto") {
            return Ok(Some(Ladder::AUTO));
        }
        let Some(list) = t
            .get(..7)
            .filter(|p| p.eq_ignore_ascii_case("ladder:"))
            .map(|_| &t[7..])
        else {
            return Ok(None);
        };
        let rungs = list
            .split(',')
            .map(str::parse)
            .collect::<Result<Vec<WorkingPrecision>, String>>()?;
        Ladder::new(&rungs).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back() {
        for text in ["auto", "ladder:f64,dd", "ladder:f64,td,dd,qd,mp:512", "ladder:dd,mp:128"] {
            let ladder = Ladder::parse(text).unwrap().unwrap();
            assert_eq!(ladder.name(), text);
        }
        assert_eq!(
            Ladder::parse("LADDER:f64,dd,qd").unwrap(),
            Some(Ladder::AUTO)
        );
        assert_eq!(Ladder::parse("dd").unwrap(), None);
    }

    #[test]
    fn rungs_must_climb() {
        for (text, why) in [
            ("ladder:dd,f64", "more precise than the one before"),
            ("ladder:dd,dd", "more precise than the one before"),
            ("ladder:qd,mp:128", "more precise than the one before"),
            ("ladder:f64,mp:128,qd", "can only be the last"),
            ("ladder:f64,mp:256,mp:512", "can only be the last"),
            ("ladder:dd", "at least two"),
            ("ladder:f64,auto", "cannot hold a ladder"),
            ("ladder:f64,xx", "unknown precision"),
        ] {
            let err = Ladder::parse(text).unwrap_err();
            assert!(err.contains(why), "{text}: {err}");
        }
    }
}
