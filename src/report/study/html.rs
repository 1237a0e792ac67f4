//! `index.html`: the summary tables, then every plot, each linking to its SVG.

use super::{
    DEFINITIONS, Table, category_label, comparison_table, count_rows, detail_sections, escape,
    has_plot, plot_file, precision_table, profile_file, scatter_file, spread_note,
};
use crate::batch::{MatrixRow, Summary};
use std::fmt::Write as _;

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em;color:#222}\
table{border-collapse:collapse;margin:0.5em 0 1.2em;font-size:13px}\
th,td{border:1px solid #ccc;padding:3px 7px;text-align:right}\
th{background:#f0f0f0}td.t,th.t{text-align:left}\
table.counts td:nth-child(3){max-width:70em}\
.plots{display:flex;flex-wrap:wrap;gap:10px}\
figure{margin:0;border:1px solid #ddd;padding:4px}\
figure img{width:560px;height:auto}figcaption{font-size:12px}";

/// What a performance profile shows, above the profiles.
const PROFILE_NOTE: &str = "Each curve is a precision and method of the study: at tau, the \
fraction of the matrices on which its time to the target true residual was within a factor tau \
of the fastest's (Dolan and More, 2002). Its height at tau = 1 is where it was the fastest; its \
height at the right edge is the fraction it solved.";

/// `index.html`: the summary tables, then every plot, each linking to its SVG.
pub fn html(summary: &Summary) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Batch study</title>\
<style>{STYLE}</style></head><body>\n<h1>Batch study</h1>\n<p>{}</p>\n\
<p>Files: <a href=\"summary.md\">summary.md</a>, <a href=\"summary.csv\">summary.csv</a>, \
<a href=\"runs.csv\">runs.csv</a>, <a href=\"runs.jsonl\">runs.jsonl</a>.</p>\n",
        escape(DEFINITIONS)
    );
    if summary.conditions.is_empty() {
        out.push_str("<p>No runs recorded.</p>\n");
    }
    if let Some(spread) = spread_note(summary) {
        let _ = writeln!(out, "<p>{}</p>", escape(&spread));
    }
    if !summary.profiles.is_empty() {
        let _ = writeln!(
            out,
            "<h2>Performance profiles</h2>\n<p>{}</p>\n<div class=\"plots\">",
            escape(PROFILE_NOTE)
        );
        for profile in &summary.profiles {
            let file = escape(&profile_file(profile));
            let _ = writeln!(
                out,
                "<figure><a href=\"{file}\"><img src=\"{file}\" alt=\"performance profile\"></a>\
<figcaption>{}</figcaption></figure>",
                escape(&profile.condition.label().replace(", method auto", ""))
            );
        }
        out.push_str("</div>\n");
    }
    for (ci, cs) in summary.conditions.iter().enumerate() {
        let _ = writeln!(
            out,
            "<h2>{} ({} matrices)</h2>",
            escape(&cs.condition.label()),
            cs.rows.len()
        );
        let link = |row: &MatrixRow| {
            if has_plot(row) {
                format!(
                    "<a href=\"#p{ci}-{}\">{}</a>",
                    escape(&row.name),
                    escape(&row.name)
                )
            } else {
                escape(&row.name)
            }
        };
        let precond = cs.condition.precond != crate::precond::PrecondKind::None;
        let mut t = Table::new(&["category", "count", "matrices"]);
        for (label, rows) in count_rows(cs) {
            let label = match label.strip_prefix("  ") {
                Some(sub) => format!("&nbsp;&nbsp;&nbsp;&nbsp;{}", escape(sub)),
                None => escape(&label),
            };
            let names: Vec<String> = rows.iter().map(|r| link(r)).collect();
            t.rows
                .push(vec![label, rows.len().to_string(), names.join(", ")]);
        }
        out.push_str(&t.html("counts"));
        let (title, table) = precision_table(cs);
        let _ = writeln!(out, "<h3>{}</h3>", escape(&title));
        out.push_str(&table.html("runs"));
        for (title, rows) in detail_sections(cs) {
            if !rows.is_empty() {
                let _ = writeln!(out, "<h3>{}</h3>", escape(&title));
                out.push_str(&comparison_table(rows.into_iter(), link, precond).html("runs"));
            }
        }
        let _ = writeln!(out, "<h3>All matrices</h3>");
        let mut all = comparison_table(cs.rows.iter(), link, precond);
        all.header.push("category".into());
        for (cells, row) in all.rows.iter_mut().zip(&cs.rows) {
            cells.push(escape(&category_label(row)));
        }
        out.push_str(&all.html("runs"));
        if cs.residuals.is_some() {
            let file = escape(&scatter_file(cs));
            let _ = writeln!(
                out,
                "<h3>True residual per matrix</h3>\n<div class=\"plots\"><figure><a href=\"{file}\">\
<img src=\"{file}\" alt=\"true residuals\"></a><figcaption>each later precision against the \
first; below the diagonal, closer to the solution</figcaption></figure></div>"
            );
        }
        let _ = writeln!(out, "<h3>Convergence</h3>\n<div class=\"plots\">");
        for row in cs.rows.iter().filter(|r| has_plot(r)) {
            let file = escape(&plot_file(cs, row));
            let _ = writeln!(
                out,
                "<figure id=\"p{ci}-{name}\"><a href=\"{file}\"><img src=\"{file}\" \
alt=\"{name}\"></a><figcaption>{name}: {cat}</figcaption></figure>",
                name = escape(&row.name),
                cat = escape(&category_label(row)),
            );
        }
        out.push_str("</div>\n");
    }
    out.push_str("</body></html>\n");
    out
}
