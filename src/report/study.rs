//! Formatting a batch study's summary: the terminal text, `summary.md`, the two CSV files and
//! `index.html`. The numbers come from `batch::Summary`; this module only lays them out.

use crate::batch::{
    Category, ConditionSummary, MatrixRow, PLOTS_DIR, RunRecord, RunResult, Summary, method_name,
};
use crate::error::{Error, Result};
use crate::solver::dispatch::WorkingPrecision;
use std::fmt::Write as _;

mod html;
pub use html::html;

/// Count rows of a condition, in the thesis's order (Table 4.2), with the rows that are subsets
/// indented. Each: label, count, matrices.
fn count_rows(cs: &ConditionSummary) -> Vec<(String, Vec<&MatrixRow>)> {
    let of = |c| cs.in_category(c).collect::<Vec<_>>();
    let remedied = (cs.condition.precond == crate::precond::PrecondKind::Ilu0).then(|| {
        [
            (
                "ILU(0) remedied (A + sigma I: automatic shift)",
                cs.ilu_remedied().collect(),
            ),
            (
                "  of which solved with a remedied ILU(0)",
                cs.ilu_remedied().filter(|r| r.solved_by_any()).collect(),
            ),
        ]
    });
    let thesis = [
        ("solved by both f64 and dd", of(Category::SolvedByBoth)),
        ("  of which dd is faster", cs.dd_faster().collect()),
        ("solved by dd only", of(Category::DdOnly)),
        (
            "f64 converged by its recurrence, true residual > tol",
            cs.f64_missed_true_residual().collect(),
        ),
        ("solved by f64 only", of(Category::F64Only)),
        ("solved by neither", of(Category::Neither)),
        ("failed to load or solve", of(Category::Error)),
        (
            "incomplete (a precision not recorded)",
            of(Category::Incomplete),
        ),
    ];
    let mut rows: Vec<(String, Vec<&MatrixRow>)> = thesis
        .into_iter()
        .chain(remedied.into_iter().flatten())
        .map(|(label, m)| (label.to_string(), m))
        .collect();
    let restarted: Vec<&MatrixRow> = cs.solved_after_restart().collect();
    if !restarted.is_empty() {
        rows.push(("solved after a BiCGStab restart".into(), restarted));
    }
    let escalated: Vec<(&MatrixRow, &str)> = cs.solved_after_escalation().collect();
    if !escalated.is_empty() {
        rows.push((
            "solved after precision escalation".into(),
            escalated.iter().map(|(r, _)| *r).collect(),
        ));
        let mut finished: Vec<&str> = escalated.iter().map(|(_, p)| *p).collect();
        finished.sort();
        finished.dedup();
        for p in finished {
            rows.push((
                format!("  of which finished in {p}"),
                escalated
                    .iter()
                    .filter(|(_, q)| *q == p)
                    .map(|(r, _)| *r)
                    .collect(),
            ));
        }
    }
    rows
}

/// ILU(0)'s shift of a row: `sigma`, with `(auto, s = ...)` where the automatic shift chose it.
fn shift_cell(row: &MatrixRow) -> String {
    match row.ilu_shift() {
        None => "-".into(),
        Some((sigma, None)) => sci(sigma),
        Some((sigma, Some(r))) => format!("{} (auto, s = {:e})", sci(sigma), r.s),
    }
}

fn category_label(row: &MatrixRow) -> String {
    let mut s = match row.category {
        Category::SolvedByBoth if row.dd_faster => "both, dd faster".to_string(),
        Category::SolvedByBoth => "both".to_string(),
        Category::DdOnly => "dd only".to_string(),
        Category::F64Only => "f64 only".to_string(),
        Category::Neither => "neither".to_string(),
        Category::Error => "error".to_string(),
        Category::Incomplete => "incomplete".to_string(),
    };
    if row.f64_missed_true_residual {
        s.push_str("; f64 true res. missed");
    }
    if row.solved_after_restart() {
        s.push_str("; solved after a BiCGStab restart");
    }
    match row.ilu_remedy() {
        Some(r) if r.permuted_rows > 0 => s.push_str("; ILU(0) rows matched"),
        Some(_) => s.push_str("; ILU(0) shifted"),
        None => {}
    }
    for (ladder, finished) in row.solved_after_escalation() {
        s.push_str(&format!(
            "; {} solved in {finished}",
            ladder.key.precision.name()
        ));
    }
    s
}

/// A table of text cells, laid out as aligned text, Markdown or HTML.
struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn new(header: &[&str]) -> Self {
        Table {
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// Columns of numbers (or `-`) are right-aligned, text columns left-aligned.
    fn numeric(&self) -> Vec<bool> {
        (0..self.header.len())
            .map(|c| {
                self.rows
                    .iter()
                    .all(|r| r[c] == "-" || r[c].parse::<f64>().is_ok())
            })
            .collect()
    }

    fn text(&self) -> String {
        let widths: Vec<usize> = (0..self.header.len())
            .map(|c| {
                std::iter::once(&self.header)
                    .chain(&self.rows)
                    .map(|r| r[c].chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let numeric = self.numeric();
        let mut out = String::new();
        for r in std::iter::once(&self.header).chain(&self.rows) {
            let mut line = String::new();
            for (c, cell) in r.iter().enumerate() {
                let pad = " ".repeat(widths[c] - cell.chars().count());
                let gap = if c == 0 { "" } else { "  " };
                if numeric[c] {
                    let _ = write!(line, "{gap}{pad}{cell}");
                } else {
                    let _ = write!(line, "{gap}{cell}{pad}");
                }
            }
            let _ = writeln!(out, "{}", line.trim_end());
        }
        out
    }

    fn markdown(&self) -> String {
        let esc = |s: &String| s.replace('|', "\\|");
        let mut out = String::new();
        let _ = writeln!(
            out,
            "| {} |",
            self.header.iter().map(esc).collect::<Vec<_>>().join(" | ")
        );
        let _ = writeln!(
            out,
            "|{}",
            self.numeric()
                .iter()
                .map(|&n| if n { "---:|" } else { "---|" })
                .collect::<String>()
        );
        for r in &self.rows {
            let _ = writeln!(
                out,
                "| {} |",
                r.iter().map(esc).collect::<Vec<_>>().join(" | ")
            );
        }
        out
    }

    /// Cells are HTML already (escaped by the caller where they hold text).
    fn html(&self, class: &str) -> String {
        let numeric = self.numeric();
        let mut out = format!("<table class=\"{class}\">\n<thead><tr>");
        for (h, &n) in self.header.iter().zip(&numeric) {
            let class = if n { "" } else { " class=\"t\"" };
            let _ = write!(out, "<th{class}>{}</th>", escape(h));
        }
        out.push_str("</tr></thead>\n<tbody>\n");
        for r in &self.rows {
            out.push_str("<tr>");
            for (cell, &n) in r.iter().zip(&numeric) {
                let class = if n { "" } else { " class=\"t\"" };
                let _ = write!(out, "<td{class}>{cell}</td>");
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody></table>\n");
        out
    }
}

fn sci(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.2e}")
    } else {
        "-".into()
    }
}

fn fixed2(x: f64) -> String {
    super::ratio_cell(x)
}

/// The thesis's per-matrix comparison (Tables 4.3-4.5): both precisions and dd/f64 ratios.
/// With `precond`, two more columns: the preconditioner's share of each run's iteration time
/// (thesis Table 4.8's "Precond [%]").
fn comparison_table<'a>(
    rows: impl Iterator<Item = &'a MatrixRow>,
    name: impl Fn(&MatrixRow) -> String,
    precond: bool,
) -> Table {
    let mut t = Table::new(&[
        "matrix",
        "rows",
        "nnz",
        "method",
        "f64 iter",
        "f64 s/iter",
        "f64 time [s]",
        "f64 TRR",
        "f64 stop",
        "dd iter",
        "dd s/iter",
        "dd time [s]",
        "dd TRR",
        "dd stop",
        "dd/f64 iter",
        "dd/f64 s/iter",
        "dd/f64 time",
    ]);
    for row in rows {
        let mut cells = vec![name(row)];
        match row.shape() {
            Some(s) => cells.extend([s.rows.to_string(), s.nnz.to_string()]),
            None => cells.extend(["-".into(), "-".into()]),
        }
        let method = [&row.f64, &row.dd]
            .into_iter()
            .flatten()
            .find_map(|r| r.result.as_ref().map(|x| x.method.clone()))
            .unwrap_or_else(|| "-".into());
        cells.push(method);
        for p in [WorkingPrecision::F64, WorkingPrecision::Dd] {
            cells.extend(run_cells(row.run(p)));
        }
        match row.ratios {
            Some(q) => cells.extend([
                fixed2(q.iterations),
                fixed2(q.time_per_iteration),
                fixed2(q.time),
            ]),
            None => cells.extend(["-".into(), "-".into(), "-".into()]),
        }
        if precond {
            for p in [WorkingPrecision::F64, WorkingPrecision::Dd] {
                let share = row
                    .run(p)
                    .and_then(|r| r.result.as_ref())
                    .filter(|r| r.iteration_time > 0.0)
                    .map(|r| format!("{:.1}", 100.0 * r.precond_time / r.iteration_time));
                cells.push(share.unwrap_or_else(|| "-".into()));
            }
            cells.push(shift_cell(row));
        }
        t.rows.push(cells);
    }
    if precond {
        t.header.extend([
            "f64 precond %".to_string(),
            "dd precond %".to_string(),
            "ILU(0) sigma".to_string(),
        ]);
    }
    t
}

/// The per-precision lines of a condition and their title: what each precision solved, and
/// its medians over the matrices every precision solved, against the first precision.
fn precision_table(cs: &ConditionSummary) -> (String, Table) {
    let first = cs.precisions.first().map_or("f64", |p| p.precision.name());
    let mut t = Table::new(&[
        "precision",
        "runs",
        "solved",
        "median iterations",
        "median time [s]",
        &format!("median time / {first}"),
    ]);
    let cell = |v: Option<f64>, f: fn(f64) -> String| v.map_or("-".into(), f);
    for p in &cs.precisions {
        t.rows.push(vec![
            p.precision.name().to_string(),
            p.runs.to_string(),
            p.solved.to_string(),
            cell(p.median_iterations, |v| format!("{v:.0}")),
            cell(p.median_time, sci),
            cell(p.median_time_ratio, fixed2),
        ]);
    }
    let n = cs.solved_by_all;
    let matrices = if n == 1 { "matrix" } else { "matrices" };
    let title = format!("Per precision (medians over the {n} {matrices} every precision solved)");
    (title, t)
}

fn run_cells(run: Option<&RunRecord>) -> [String; 5] {
    match run {
        Some(RunRecord {
            result: Some(r),
            status,
            ..
        }) => [
            r.iterations.to_string(),
            sci(r.time_per_iteration()),
            sci(r.time()),
            sci(r.true_residual),
            status.name().to_string(),
        ],
        Some(r) => [
            "-".into(),
            "-".into(),
            "-".into(),
            "-".into(),
            r.status.name().into(),
        ],
        None => [
            "-".into(),
            "-".into(),
            "-".into(),
            "-".into(),
            "not run".into(),
        ],
    }
}

/// The detail tables worth a look, each with the thesis table it mirrors.
fn detail_sections(cs: &ConditionSummary) -> Vec<(String, Vec<&MatrixRow>)> {
    let tol = cs.condition.tol;
    vec![
        (
            format!("Solved by both, dd faster (like thesis Table 4.3; TRR <= {tol:e})"),
            cs.dd_faster().collect(),
        ),
        (
            format!("Solved by dd only (like thesis Table 4.4; f64 did not reach TRR <= {tol:e})"),
            cs.in_category(Category::DdOnly).collect(),
        ),
        (
            format!(
                "f64 converged by its recurrence but its true residual missed {tol:e} (like thesis Table 4.5)"
            ),
            cs.f64_missed_true_residual().collect(),
        ),
    ]
}

const DEFINITIONS: &str = "Solved: the stopping test ||r||/||r0|| <= tol converged AND the true \
relative residual (TRR) ||b - A x||/||b||, computed in double-double, is <= tol (thesis section \
4.4). Times are of the iterations only, as in the thesis: without setup and without the \
true-residual checks made for the plots. b = ones, x0 = 0.";

/// The terminal summary: per condition, the category counts with their matrices and the
/// thesis-style detail tables.
pub fn text(summary: &Summary) -> String {
    let mut out = String::new();
    if summary.conditions.is_empty() {
        out.push_str("no runs recorded\n");
    }
    if let Some(spread) = spread_note(summary) {
        let _ = writeln!(out, "{spread}\n");
    }
    for cs in &summary.conditions {
        let precond = cs.condition.precond != crate::precond::PrecondKind::None;
        let _ = writeln!(
            out,
            "== {} ({} matrices) ==",
            cs.condition.label(),
            cs.rows.len()
        );
        let mut t = Table::new(&["category", "count"]);
        for (label, rows) in count_rows(cs) {
            t.rows.push(vec![label.to_string(), rows.len().to_string()]);
        }
        out.push_str(&t.text());
        for (label, rows) in count_rows(cs) {
            if rows.is_empty() {
                continue;
            }
            let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
            let _ = writeln!(out, "{}:", label.trim());
            out.push_str(&wrap(&names.join(", "), 96, "    "));
        }
        let (title, table) = precision_table(cs);
        let _ = writeln!(out, "\n{title}");
        out.push_str(&table.text());
        for (title, rows) in detail_sections(cs) {
            if rows.is_empty() {
                continue;
            }
            let _ = writeln!(out, "\n{title}");
            let table = comparison_table(rows.into_iter(), |r| r.name.clone(), precond);
            out.push_str(&table.text());
        }
        out.push('\n');
    }
    out
}

fn wrap(text: &str, width: usize, indent: &str) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.is_empty() && indent.len() + line.len() + 1 + word.len() > width {
            let _ = writeln!(out, "{indent}{line}");
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        let _ = writeln!(out, "{indent}{line}");
    }
    out
}

/// Where a study's solves were spread over ranks or devices: how many, and the share of their
/// time spent moving words between them.
fn spread_note(summary: &Summary) -> Option<String> {
    let spread: Vec<&RunResult> = summary
        .runs
        .iter()
        .filter_map(|r| r.result.as_ref())
        .filter(|r| r.ranks > 1 || r.devices > 1)
        .collect();
    let counts = |of: fn(&RunResult) -> usize| {
        let mut counts: Vec<usize> = spread.iter().map(|r| of(r)).collect();
        counts.sort_unstable();
        counts.dedup();
        counts
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let total: f64 = spread.iter().map(|r| r.total_time).sum();
    let communication: f64 = spread.iter().map(|r| r.communication_time).sum();
    let share = if total > 0.0 {
        communication / total
    } else {
        0.0
    };
    let mut over = Vec::new();
    if spread.iter().any(|r| r.ranks > 1) {
        over.push(format!("{} MPI ranks", counts(|r| r.ranks)));
    }
    if spread.iter().any(|r| r.devices > 1) {
        over.push(format!("{} GPUs", counts(|r| r.devices)));
    }
    (!spread.is_empty()).then(|| {
        format!(
            "{} solves spread over {}: {:.1}% of their time spent moving words between them \
             (`runs.csv`: `ranks`, `devices`, `communication_time_s`).",
            spread.len(),
            over.join(" and "),
            100.0 * share
        )
    })
}

/// `summary.md`: the terminal summary's content plus every matrix's row and the errors.
pub fn markdown(summary: &Summary) -> String {
    let mut out = String::from("# Batch study summary\n\n");
    let _ = writeln!(
        out,
        "{DEFINITIONS} Plots: `{PLOTS_DIR}/`, all of it: `index.html`.\n"
    );
    let in_flight = summary
        .runs
        .iter()
        .filter_map(|r| r.result.as_ref().map(|r| r.in_flight))
        .max()
        .unwrap_or(1);
    if in_flight > 1 {
        let _ = writeln!(
            out,
            "Up to {in_flight} solves ran at once (`--in-flight`): each time includes the \
             others' use of the device; iterations and residuals are those of each solve alone.\n"
        );
    }
    if let Some(spread) = spread_note(summary) {
        let _ = writeln!(out, "{spread}\n");
    }
    for cs in &summary.conditions {
        let precond = cs.condition.precond != crate::precond::PrecondKind::None;
        let _ = writeln!(
            out,
            "## {} ({} matrices)\n",
            cs.condition.label(),
            cs.rows.len()
        );
        let mut t = Table::new(&["category", "count", "matrices"]);
        for (label, rows) in count_rows(cs) {
            let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
            let label = match label.strip_prefix("  ") {
                Some(sub) => format!("&nbsp;&nbsp;{sub}"),
                None => label.to_string(),
            };
            t.rows
                .push(vec![label, rows.len().to_string(), names.join(", ")]);
        }
        out.push_str(&t.markdown());
        let (title, table) = precision_table(cs);
        let _ = writeln!(out, "\n### {title}\n");
        out.push_str(&table.markdown());
        for (title, rows) in detail_sections(cs) {
            if !rows.is_empty() {
                let _ = writeln!(out, "\n### {title}\n");
                let table = comparison_table(rows.into_iter(), |r| r.name.clone(), precond);
                out.push_str(&table.markdown());
            }
        }
        let _ = writeln!(out, "\n### All matrices\n");
        let mut all = comparison_table(cs.rows.iter(), |r| r.name.clone(), precond);
        all.header.push("category".into());
        for (cells, row) in all.rows.iter_mut().zip(&cs.rows) {
            cells.push(category_label(row));
        }
        out.push_str(&all.markdown());
        let errors: Vec<&RunRecord> = cs
            .rows
            .iter()
            .flat_map(|r| r.f64.iter().chain(r.dd.iter()))
            .filter(|r| r.error.is_some())
            .collect();
        if !errors.is_empty() {
            let _ = writeln!(out, "\n### Errors\n");
            for r in errors {
                let _ = writeln!(
                    out,
                    "- {} ({}): {}",
                    r.name,
                    r.key.precision.name(),
                    r.error.as_deref().unwrap_or_default().replace('\n', " ")
                );
            }
        }
        out.push('\n');
    }
    out
}

fn csv_bytes(write: impl FnOnce(&mut csv::Writer<Vec<u8>>) -> csv::Result<()>) -> Result<Vec<u8>> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let err = |e: csv::Error| Error::InvalidInput(format!("writing CSV: {e}"));
    write(&mut w).map_err(err)?;
    w.into_inner()
        .map_err(|e| Error::InvalidInput(format!("writing CSV: {e}")))
}

fn num(x: f64) -> String {
    if x.is_finite() {
        format!("{x:e}")
    } else {
        String::new()
    }
}

fn result_fields(r: Option<&RunResult>) -> Vec<String> {
    match r {
        Some(r) => vec![
            r.method.clone(),
            r.iterations.to_string(),
            num(r.time_per_iteration()),
            num(r.time()),
            num(r.total_time),
            num(r.recurrence_residual),
            num(r.true_residual),
            r.time_to_target.map_or(String::new(), num),
        ],
        None => vec![String::new(); 8],
    }
}

const RESULT_HEADER: [&str; 8] = [
    "method",
    "iterations",
    "time_per_iteration_s",
    "iteration_time_s",
    "total_time_s",
    "recurrence_residual",
    "true_residual",
    "time_to_target_s",
];

/// `summary.csv`: one row per matrix and condition, f64 and dd side by side.
pub fn summary_csv(summary: &Summary) -> Result<Vec<u8>> {
    csv_bytes(|w| {
        let mut header: Vec<String> = [
            "tol",
            "precond",
            "method",
            "max_iter",
            "time_limit_s",
            "matrix",
            "path",
            "rows",
            "nnz",
            "category",
            "dd_faster",
            "f64_missed_true_residual",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for p in ["f64", "dd"] {
            header.push(format!("{p}_status"));
            header.extend(RESULT_HEADER.iter().map(|h| format!("{p}_{h}")));
        }
        header.extend(
            ["ratio_iterations", "ratio_time_per_iteration", "ratio_time"].map(String::from),
        );
        w.write_record(&header)?;
        for cs in &summary.conditions {
            let c = &cs.condition;
            for row in &cs.rows {
                let shape = row.shape();
                let mut rec = vec![
                    format!("{:e}", c.tol),
                    c.precond.name().into(),
                    method_name(c.method).into(),
                    c.max_iter.to_string(),
                    c.time_limit_s.map_or(String::new(), |t| t.to_string()),
                    row.name.clone(),
                    row.matrix.clone(),
                    shape.map_or(String::new(), |s| s.rows.to_string()),
                    shape.map_or(String::new(), |s| s.nnz.to_string()),
                    row.category.name().into(),
                    row.dd_faster.to_string(),
                    row.f64_missed_true_residual.to_string(),
                ];
                for p in [WorkingPrecision::F64, WorkingPrecision::Dd] {
                    let run = row.run(p);
                    rec.push(run.map_or("not-run".into(), |r| r.status.name().into()));
                    rec.extend(result_fields(run.and_then(|r| r.result.as_ref())));
                }
                match row.ratios {
                    Some(q) => {
                        rec.extend([num(q.iterations), num(q.time_per_iteration), num(q.time)])
                    }
                    None => rec.extend([String::new(), String::new(), String::new()]),
                }
                w.write_record(&rec)?;
            }
        }
        Ok(())
    })
}

/// `runs.csv`: one row per recorded run.
pub fn runs_csv(summary: &Summary) -> Result<Vec<u8>> {
    csv_bytes(|w| {
        let mut header = vec![
            "matrix",
            "path",
            "precision",
            "tol",
            "precond",
            "method_requested",
            "max_iter",
            "time_limit_s",
            "status",
            "solved",
            "rows",
            "nnz",
        ];
        header.extend(RESULT_HEADER);
        header.extend([
            "setup_time_s",
            "true_residual_every",
            "true_residual_points",
            "precond_share",
            "precond_setup_time_s",
            "ilu_shift",
            "ilu_sigma",
            "ilu_remedy",
            "ranks",
            "devices",
            "communication_time_s",
            "error",
        ]);
        w.write_record(&header)?;
        for r in &summary.runs {
            let k = &r.key;
            let mut rec = vec![
                r.name.clone(),
                k.matrix.clone(),
                k.precision.name().into(),
                format!("{:e}", k.tol),
                k.precond.name().into(),
                method_name(k.method).into(),
                k.max_iter.to_string(),
                k.time_limit_s.map_or(String::new(), |t| t.to_string()),
                r.status.name().into(),
                r.solved.to_string(),
                r.matrix
                    .as_ref()
                    .map_or(String::new(), |s| s.rows.to_string()),
                r.matrix
                    .as_ref()
                    .map_or(String::new(), |s| s.nnz.to_string()),
            ];
            rec.extend(result_fields(r.result.as_ref()));
            rec.push(
                r.result
                    .as_ref()
                    .map_or(String::new(), |x| num(x.setup_time)),
            );
            rec.push(
                r.result
                    .as_ref()
                    .map_or(String::new(), |x| x.true_residual_every.to_string()),
            );
            rec.push(
                r.result
                    .as_ref()
                    .map_or(String::new(), |x| x.true_residual_points.to_string()),
            );
            rec.push(r.result.as_ref().map_or(String::new(), |x| {
                if x.iteration_time > 0.0 {
                    num(x.precond_time / x.iteration_time)
                } else {
                    String::new()
                }
            }));
            rec.push(
                r.result
                    .as_ref()
                    .map_or(String::new(), |x| num(x.precond_setup_time)),
            );
            rec.push(if k.precond == crate::precond::PrecondKind::Ilu0 {
                k.ilu_shift.to_string()
            } else {
                String::new()
            });
            let result = r.result.as_ref();
            rec.push(result.and_then(|x| x.ilu_shift).map_or(String::new(), num));
            rec.push(
                result
                    .and_then(|x| x.ilu_remedy.as_ref())
                    .map_or(String::new(), |m| m.to_string()),
            );
            rec.push(result.map_or(String::new(), |x| x.ranks.to_string()));
            rec.push(result.map_or(String::new(), |x| x.devices.to_string()));
            rec.push(result.map_or(String::new(), |x| num(x.communication_time)));
            rec.push(r.error.clone().unwrap_or_default());
            w.write_record(&rec)?;
        }
        Ok(())
    })
}

/// Where a matrix's plot under a condition lives, relative to the study directory.
pub fn plot_file(cs: &ConditionSummary, row: &MatrixRow) -> String {
    let safe: String = row
        .name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{PLOTS_DIR}/{safe}__{}.svg", cs.condition.slug())
}

/// The performance profile's file: `plots/profile__<condition without the method>.svg`.
pub fn profile_file(profile: &crate::batch::profile::Profile) -> String {
    format!("{PLOTS_DIR}/profile__{}.svg", profile.condition.slug())
}

/// A condition's true-residual scatter: `plots/residuals__<condition>.svg`.
pub fn scatter_file(cs: &ConditionSummary) -> String {
    format!("{PLOTS_DIR}/residuals__{}.svg", cs.condition.slug())
}

pub fn has_plot(row: &MatrixRow) -> bool {
    [&row.f64, &row.dd]
        .into_iter()
        .flatten()
        .any(|r| r.history.is_some())
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
