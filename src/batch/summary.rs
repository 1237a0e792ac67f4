//! The thesis's categories (section 4.4, Tables 4.2-4.5) computed from a study's records: for
//! each condition (tolerance, preconditioner, method, limits), every matrix's f64 and dd runs
//! side by side and the outcome they fall in. Data only: `report::study` formats it.
//!
//! The categories, flags and ratios compare f64 and dd, as the thesis does. Every precision of
//! the study (td, qd, `mp:<bits>` too) gets a line of [`PrecisionStats`] per condition: how many
//! matrices it solved, and its median iterations and time over the matrices every precision
//! solved, against the first precision's: what each extra word of precision bought.

use super::grid::Condition;
use super::store::RunRecord;
use crate::precond::ilu0::IluRemedy;
use crate::solver::dispatch::WorkingPrecision;
use std::collections::HashMap;

/// Where a matrix lands under one condition. The first five are a partition; "dd faster" and
/// "f64 missed the true residual" are flags on top (as the thesis counts them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Category {
    SolvedByBoth,
    DdOnly,
    F64Only,
    Neither,
    /// A run failed to load or solve (an error, not an outcome).
    Error,
    /// A precision has no record under this condition (not in the grid, or not run yet).
    Incomplete,
}

impl Category {
    pub const ALL: [Category; 6] = [
        Category::SolvedByBoth,
        Category::DdOnly,
        Category::F64Only,
        Category::Neither,
        Category::Error,
        Category::Incomplete,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Category::SolvedByBoth => "both",
            Category::DdOnly => "dd-only",
            Category::F64Only => "f64-only",
            Category::Neither => "neither",
            Category::Error => "error",
            Category::Incomplete => "incomplete",
        }
    }
}

/// Ratios dd/f64 as in thesis Table 4.3(d); times are iteration-loop times (`RunResult::time`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ratios {
    pub iterations: f64,
    pub time_per_iteration: f64,
    pub time: f64,
}

/// One matrix under one condition.
#[derive(Clone, Debug)]
pub struct MatrixRow {
    /// Unique within the study: the file name, or `parent/name` where two files share a name.
    pub name: String,
    pub matrix: String,
    pub f64: Option<RunRecord>,
    pub dd: Option<RunRecord>,
    /// The qd run, if the study has one: kept, not classified (see the module docs).
    pub qd: Option<RunRecord>,
    /// The td run, if the study has one: kept, not classified, as qd.
    pub td: Option<RunRecord>,
    /// The precision-ladder runs (`auto`, `ladder:...`), in the study's order.
    pub ladders: Vec<RunRecord>,
    pub category: Category,
    /// Solved by both and dd's iterations took less time.
    pub dd_faster: bool,
    /// f64's recurrence residual met tol (it stopped as converged) but its true residual did not.
    pub f64_missed_true_residual: bool,
    pub ratios: Option<Ratios>,
}

impl MatrixRow {
    pub fn run(&self, p: WorkingPrecision) -> Option<&RunRecord> {
        match p {
            WorkingPrecision::F64 => self.f64.as_ref(),
            WorkingPrecision::Dd => self.dd.as_ref(),
            WorkingPrecision::Qd => self.qd.as_ref(),
            WorkingPrecision::Td => self.td.as_ref(),
            WorkingPrecision::Mp(_) | WorkingPrecision::Mpfr(_) => None,
            WorkingPrecision::Ladder(_) => self.ladders.iter().find(|r| r.key.precision == p),
        }
    }

    /// The ladder runs that solved the matrix in a later rung than their first: each with the
    /// precision it finished in.
    pub fn solved_after_escalation(&self) -> impl Iterator<Item = (&RunRecord, &str)> {
        self.ladders.iter().filter(|r| r.solved).filter_map(|r| {
            let phases = &r.result.as_ref()?.phases;
            let last = phases.last().filter(|_| phases.len() > 1)?;
            Some((r, last.precision.as_str()))
        })
    }

    /// ILU(0)'s `sigma` and, where the automatic shift chose it, what it did: from whichever
    /// of the f64 and dd runs has them (both share one factorization).
    pub fn ilu_shift(&self) -> Option<(f64, Option<&IluRemedy>)> {
        self.f64
            .iter()
            .chain(self.dd.iter())
            .filter_map(|r| r.result.as_ref())
            .find_map(|x| x.ilu_shift.map(|sigma| (sigma, x.ilu_remedy.as_ref())))
    }

    /// What the automatic ILU(0) remedy did for this matrix (a matching, a shift), from
    /// whichever of the f64 and dd runs has it.
    pub fn ilu_remedy(&self) -> Option<&IluRemedy> {
        self.f64
            .iter()
            .chain(self.dd.iter())
            .filter_map(|r| r.result.as_ref())
            .find_map(|x| x.ilu_remedy.as_ref())
    }

    /// The automatic ILU(0) remedy ran for this matrix.
    pub fn ilu_remedied(&self) -> bool {
        self.ilu_remedy().is_some()
    }

    /// A run of this matrix (f64 or dd) was solved after BiCGStab restarted past a breakdown.
    pub fn solved_after_restart(&self) -> bool {
        self.f64
            .iter()
            .chain(self.dd.iter())
            .any(|r| r.solved && r.result.as_ref().is_some_and(|x| x.restarts > 0))
    }

    /// Solved by f64 or dd.
    pub fn solved_by_any(&self) -> bool {
        self.f64.iter().chain(self.dd.iter()).any(|r| r.solved)
    }

    /// Rows, nonzeros and symmetry from whichever run loaded the matrix.
    pub fn shape(&self) -> Option<&super::store::MatrixShape> {
        self.f64
            .iter()
            .chain(self.dd.iter())
            .find_map(|r| r.matrix.as_ref())
    }
}

/// Every matrix under one condition, sorted by name (ignoring case).
#[derive(Clone, Debug)]
pub struct ConditionSummary {
    pub condition: Condition,
    pub rows: Vec<MatrixRow>,
    /// One line per precision of the study, in the order the study lists them.
    pub precisions: Vec<PrecisionStats>,
    /// How many matrices every precision solved (where the medians of `precisions` are taken).
    pub solved_by_all: usize,
    /// Each later precision's true residual against the first's, per matrix.
    pub residuals: Option<super::profile::ResidualScatter>,
}

/// One precision's runs under one condition.
#[derive(Clone, Debug, PartialEq)]
pub struct PrecisionStats {
    pub precision: WorkingPrecision,
    /// Runs with an outcome (errors and runs not made yet excluded).
    pub runs: usize,
    /// Runs that solved their matrix (converged, true residual <= tol).
    pub solved: usize,
    /// Over the matrices every precision solved: median iterations, median iteration-loop time
    /// [s], and the median over those matrices of this precision's time over the first
    /// precision's (1 for the first). `None` where no matrix was solved by all.
    pub median_iterations: Option<f64>,
    pub median_time: Option<f64>,
    pub median_time_ratio: Option<f64>,
}

impl ConditionSummary {
    pub fn in_category(&self, c: Category) -> impl Iterator<Item = &MatrixRow> {
        self.rows.iter().filter(move |r| r.category == c)
    }

    pub fn dd_faster(&self) -> impl Iterator<Item = &MatrixRow> {
        self.rows.iter().filter(|r| r.dd_faster)
    }

    pub fn f64_missed_true_residual(&self) -> impl Iterator<Item = &MatrixRow> {
        self.rows.iter().filter(|r| r.f64_missed_true_residual)
    }

    /// Matrices whose ILU(0) came from the automatic shift (`A` itself had none).
    pub fn ilu_remedied(&self) -> impl Iterator<Item = &MatrixRow> {
        self.rows.iter().filter(|r| r.ilu_remedied())
    }

    /// Matrices a precision solved only after BiCGStab restarted past a breakdown.
    pub fn solved_after_restart(&self) -> impl Iterator<Item = &MatrixRow> {
        self.rows.iter().filter(|r| r.solved_after_restart())
    }

    /// Matrices a ladder solved after escalating, with the precision it finished in.
    pub fn solved_after_escalation(&self) -> impl Iterator<Item = (&MatrixRow, &str)> {
        self.rows.iter().filter_map(|r| {
            let (_, precision) = r.solved_after_escalation().next()?;
            Some((r, precision))
        })
    }

    pub fn count(&self, c: Category) -> usize {
        self.in_category(c).count()
    }
}

/// A whole study: one summary per condition, tolerances from loose to tight.
#[derive(Clone, Debug)]
pub struct Summary {
    pub conditions: Vec<ConditionSummary>,
    /// Every run's latest record, in recording order (for the per-run CSV).
    pub runs: Vec<RunRecord>,
    /// The performance profiles: one per group of conditions that differ only in the method.
    pub profiles: Vec<super::profile::Profile>,
}

impl Summary {
    /// `records` must already hold one record per key (see `store::latest_by_key`).
    pub fn new(records: Vec<RunRecord>) -> Summary {
        let names = unique_names(&records);
        // Per condition: its rows by matrix, and its records (in recording order).
        type Group<'a> = (Condition, HashMap<String, MatrixRow>, Vec<&'a RunRecord>);
        let mut conditions: Vec<Group> = Vec::new();
        for r in &records {
            let cond = r.key.condition();
            let slot = match conditions.iter().position(|(c, ..)| c.id() == cond.id()) {
                Some(i) => i,
                None => {
                    conditions.push((cond, HashMap::new(), Vec::new()));
                    conditions.len() - 1
                }
            };
            conditions[slot].2.push(r);
            let row = conditions[slot]
                .1
                .entry(r.key.matrix.clone())
                .or_insert_with(|| MatrixRow {
                    name: names[&r.key.matrix].clone(),
                    matrix: r.key.matrix.clone(),
                    f64: None,
                    dd: None,
                    qd: None,
                    td: None,
                    ladders: Vec::new(),
                    category: Category::Incomplete,
                    dd_faster: false,
                    f64_missed_true_residual: false,
                    ratios: None,
                });
            match r.key.precision {
                WorkingPrecision::F64 => row.f64 = Some(r.clone()),
                WorkingPrecision::Dd => row.dd = Some(r.clone()),
                WorkingPrecision::Qd => row.qd = Some(r.clone()),
                WorkingPrecision::Td => row.td = Some(r.clone()),
                // In the per-run records only (a study may hold several `mp:<bits>`).
                WorkingPrecision::Mp(_) | WorkingPrecision::Mpfr(_) => {}
                WorkingPrecision::Ladder(_) => row.ladders.push(r.clone()),
            }
        }
        let mut conditions: Vec<ConditionSummary> = conditions
            .into_iter()
            .map(|(condition, rows, here)| {
                let mut rows: Vec<MatrixRow> = rows.into_values().map(classify).collect();
                // Case-insensitive, as people look names up (Pd among the p's).
                rows.sort_by(|a, b| {
                    (a.name.to_lowercase(), &a.name, &a.matrix).cmp(&(
                        b.name.to_lowercase(),
                        &b.name,
                        &b.matrix,
                    ))
                });
                let (precisions, solved_by_all) = precision_stats(&here);
                ConditionSummary {
                    condition,
                    rows,
                    precisions,
                    solved_by_all,
                    residuals: super::profile::residual_scatter(&here),
                }
            })
            .collect();
        conditions.sort_by(|a, b| {
            b.condition
                .tol
                .total_cmp(&a.condition.tol)
                .then_with(|| a.condition.id().cmp(&b.condition.id()))
        });
        Summary {
            conditions,
            profiles: super::profile::profiles(&records),
            runs: records,
        }
    }
}

fn classify(mut row: MatrixRow) -> MatrixRow {
    let tol = row
        .f64
        .as_ref()
        .or(row.dd.as_ref())
        .map_or(0.0, |r| r.key.tol);
    if let Some(f) = row.f64.as_ref().and_then(|r| r.result.as_ref()) {
        // A NaN true residual misses too.
        let met = f.true_residual <= tol;
        row.f64_missed_true_residual = f.stop_reason.converged() && !met;
    }
    let is_error = |r: &Option<RunRecord>| r.as_ref().is_some_and(|r| r.status.is_retried());
    row.category = match (&row.f64, &row.dd) {
        _ if is_error(&row.f64) || is_error(&row.dd) => Category::Error,
        (Some(f), Some(d)) => match (f.solved, d.solved) {
            (true, true) => Category::SolvedByBoth,
            (false, true) => Category::DdOnly,
            (true, false) => Category::F64Only,
            (false, false) => Category::Neither,
        },
        _ => Category::Incomplete,
    };
    if let (Some(f), Some(d)) = (
        row.f64.as_ref().and_then(|r| r.result.as_ref()),
        row.dd.as_ref().and_then(|r| r.result.as_ref()),
    ) {
        row.ratios = Some(Ratios {
            iterations: ratio(d.iterations as f64, f.iterations as f64),
            time_per_iteration: ratio(d.time_per_iteration(), f.time_per_iteration()),
            time: ratio(d.time(), f.time()),
        });
        row.dd_faster = row.category == Category::SolvedByBoth && d.time() < f.time();
    }
    row
}

/// [`PrecisionStats`] for every precision with a record in `here` (one condition's records), in
/// the order they first appear (the study's order), and the number of matrices all of them
/// solved.
fn precision_stats(here: &[&RunRecord]) -> (Vec<PrecisionStats>, usize) {
    let mut order: Vec<WorkingPrecision> = Vec::new();
    for r in here {
        if !order.contains(&r.key.precision) {
            order.push(r.key.precision);
        }
    }
    // matrix -> the solved run of each precision (by position in `order`)
    let mut solved: HashMap<&str, Vec<Option<&RunRecord>>> = HashMap::new();
    for r in here.iter().filter(|r| r.solved) {
        let slot = order
            .iter()
            .position(|p| *p == r.key.precision)
            .expect("listed");
        solved
            .entry(r.key.matrix.as_str())
            .or_insert_with(|| vec![None; order.len()])[slot] = Some(r);
    }
    let common: Vec<Vec<&RunRecord>> = solved
        .into_values()
        .filter_map(|runs| runs.into_iter().collect::<Option<Vec<_>>>())
        .collect();
    let time = |r: &RunRecord| r.result.as_ref().map_or(f64::NAN, |x| x.time());
    let stats = order
        .iter()
        .enumerate()
        .map(|(slot, &precision)| {
            let mine = here.iter().filter(|r| r.key.precision == precision);
            let iterations = common.iter().map(|runs| {
                runs[slot]
                    .result
                    .as_ref()
                    .map_or(f64::NAN, |x| x.iterations as f64)
            });
            let ratios = common
                .iter()
                .map(|runs| ratio(time(runs[slot]), time(runs[0])));
            PrecisionStats {
                precision,
                runs: mine.clone().filter(|r| r.result.is_some()).count(),
                solved: mine.filter(|r| r.solved).count(),
                median_iterations: median(iterations.collect()),
                median_time: median(common.iter().map(|runs| time(runs[slot])).collect()),
                median_time_ratio: median(ratios.collect()),
            }
        })
        .collect();
    (stats, common.len())
}

/// The median (mean of the middle two for an even count), ignoring NaN; `None` when empty.
fn median(mut values: Vec<f64>) -> Option<f64> {
    values.retain(|v| !v.is_nan());
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(values[n / 2]),
        _ => Some((values[n / 2 - 1] + values[n / 2]) / 2.0),
    }
}

fn ratio(a: f64, b: f64) -> f64 {
    if b == 0.0 { f64::NAN } else { a / b }
}

/// Display names, unique per matrix key: `parent/name` where two files share a name.
fn unique_names(records: &[RunRecord]) -> HashMap<String, String> {
    let mut matrices_named: HashMap<&str, Vec<&str>> = HashMap::new();
    for r in records {
        let keys = matrices_named.entry(r.name.as_str()).or_default();
        if !keys.contains(&r.key.matrix.as_str()) {
            keys.push(&r.key.matrix);
        }
    }
    let mut out = HashMap::new();
    for (name, keys) in &matrices_named {
        for key in keys {
            let display = if keys.len() > 1 {
                qualified(key, name)
            } else {
                name.to_string()
            };
            out.insert(key.to_string(), display);
        }
    }
    out
}

/// `.../dir/name.mtx` -> `dir/name`.
fn qualified(matrix: &str, name: &str) -> String {
    let parent = std::path::Path::new(matrix)
        .parent()
        .and_then(|p| p.file_name())
        .map(|p| p.to_string_lossy().into_owned());
    match parent {
        Some(p) => format!("{p}/{name}"),
        None => matrix.to_string(),
    }
}
