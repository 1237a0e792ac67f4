//! The two pictures solver studies are read by, as data: Dolan-More performance profiles of the
//! time to the target true residual (E. D. Dolan, J. J. More, "Benchmarking optimization
//! software with performance profiles", Math. Program. 91, 2002), and the true residual each
//! precision attained per matrix against the first precision's. `report::study_plots` draws them.

use super::grid::Condition;
use super::store::RunRecord;
use crate::solver::dispatch::Method;
use std::collections::BTreeMap;

/// One solver of a profile: a precision and a method, and for each of the group's matrices its
/// time to the target over the best of all solvers on that matrix (infinite where it never
/// reached the target).
#[derive(Clone, Debug, PartialEq)]
pub struct ProfileSolver {
    pub label: String,
    pub ratios: Vec<f64>,
}

impl ProfileSolver {
    /// `rho(tau)`: the fraction of the matrices on which this solver was within `tau` of the
    /// best.
    pub fn rho(&self, tau: f64) -> f64 {
        if self.ratios.is_empty() {
            return 0.0;
        }
        self.ratios.iter().filter(|&&r| r <= tau).count() as f64 / self.ratios.len() as f64
    }
}

/// The profile of one group of runs: the conditions that differ only in the method, every
/// precision and method of the study in it.
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    /// The group's condition, its method left out (`auto` in its fields).
    pub condition: Condition,
    pub matrices: usize,
    pub solvers: Vec<ProfileSolver>,
}

impl Profile {
    /// The largest finite ratio of any solver (1 where none exceeds the best).
    pub fn max_ratio(&self) -> f64 {
        self.solvers
            .iter()
            .flat_map(|s| s.ratios.iter().copied())
            .filter(|r| r.is_finite())
            .fold(1.0, f64::max)
    }
}

/// The profiles of a study's records (one record per key): one per group of conditions that
/// differ only in the method, with at least two solvers.
pub fn profiles(records: &[RunRecord]) -> Vec<Profile> {
    // group id -> (condition, solver label -> matrix -> time to target)
    type Times = BTreeMap<String, BTreeMap<String, Option<f64>>>;
    let mut groups: BTreeMap<String, (Condition, Times)> = BTreeMap::new();
    for r in records {
        let condition = Condition {
            method: Method::Auto,
            ..r.key.condition()
        };
        let label = format!("{} {}", r.key.precision.name(), r.key.method.name());
        let time = r.result.as_ref().and_then(|x| x.time_to_target);
        groups
            .entry(condition.id())
            .or_insert_with(|| (condition, BTreeMap::new()))
            .1
            .entry(label)
            .or_default()
            .insert(r.key.matrix.clone(), time);
    }
    let mut out = Vec::new();
    for (_, (condition, times)) in groups {
        if times.len() < 2 {
            continue;
        }
        let matrices: Vec<&String> = {
            let mut all: Vec<&String> = times.values().flat_map(|m| m.keys()).collect();
            all.sort();
            all.dedup();
            all
        };
        let best: Vec<f64> = matrices
            .iter()
            .map(|m| {
                times
                    .values()
                    .filter_map(|t| t.get(*m).copied().flatten())
                    .fold(f64::INFINITY, f64::min)
            })
            .collect();
        let solvers = times
            .iter()
            .map(|(label, t)| ProfileSolver {
                label: label.clone(),
                ratios: matrices
                    .iter()
                    .zip(&best)
                    .map(|(m, &best)| match t.get(*m).copied().flatten() {
                        Some(time) if best > 0.0 => time / best,
                        Some(_) => 1.0,
                        None => f64::INFINITY,
                    })
                    .collect(),
            })
            .collect();
        out.push(Profile {
            condition,
            matrices: matrices.len(),
            solvers,
        });
    }
    out
}

/// One condition's true residuals: per later precision, the points (first precision's true
/// residual, this precision's) of the matrices both ran.
#[derive(Clone, Debug, PartialEq)]
pub struct ResidualScatter {
    /// The first precision of the study (the x axis).
    pub against: String,
    /// Each later precision with its points.
    pub series: Vec<(String, Vec<(f64, f64)>)>,
}

/// The scatter of one condition's records (in the study's order: the first precision seen is
/// the x axis); `None` with fewer than two precisions.
pub fn residual_scatter(records: &[&RunRecord]) -> Option<ResidualScatter> {
    let mut order: Vec<String> = Vec::new();
    let mut by: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();
    for r in records {
        let Some(result) = &r.result else { continue };
        let p = r.key.precision.name().to_string();
        if !order.contains(&p) {
            order.push(p.clone());
        }
        by.entry(p)
            .or_default()
            .insert(r.key.matrix.clone(), result.true_residual);
    }
    let (first, later) = order.split_first()?;
    if later.is_empty() {
        return None;
    }
    let base = &by[first];
    let series = later
        .iter()
        .map(|p| {
            let points = by[p]
                .iter()
                .filter_map(|(m, &y)| base.get(m).map(|&x| (x, y)))
                .collect();
            (p.clone(), points)
        })
        .collect();
    Some(ResidualScatter {
        against: first.clone(),
        series,
    })
}
