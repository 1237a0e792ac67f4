//! Convergence plots of a batch study: recurrence and true residual against iteration for each
//! precision, as SVG (plotters' SVG backend only: no font or bitmap libraries).

use crate::batch::{ConditionSummary, MatrixRow};
use crate::solver::dispatch::WorkingPrecision;
use plotters::prelude::*;

/// Every plot's size (the study page lays them out side by side).
pub(super) const SIZE: (u32, u32) = (720, 440);
/// Residuals below this are drawn at it (a true residual can be exactly zero).
pub(super) const FLOOR: f64 = 1e-40;

/// The `i`-th series colour: f64 first, dd second, as in every plot of a study.
pub(super) fn color(i: usize) -> RGBColor {
    const PALETTE: [RGBColor; 8] = [
        RGBColor(0x1f, 0x77, 0xb4),
        RGBColor(0xd6, 0x27, 0x28),
        RGBColor(0x2c, 0xa0, 0x2c),
        RGBColor(0xff, 0x7f, 0x0e),
        RGBColor(0x94, 0x67, 0xbd),
        RGBColor(0x8c, 0x56, 0x4b),
        RGBColor(0xe3, 0x77, 0xc2),
        RGBColor(0x17, 0xbe, 0xcf),
    ];
    PALETTE[i % PALETTE.len()]
}

/// The whole decades around the finite ones of `values` (each drawn at least at [`FLOOR`]):
/// a log axis's bounds, at least one decade apart.
pub(super) fn decades(values: impl IntoIterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values
        .into_iter()
        .map(|v| v.max(FLOOR))
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    let lo = 10f64.powf(lo.log10().floor());
    (lo, 10f64.powf(hi.log10().ceil()).max(lo * 10.0))
}

/// The plot of one matrix under one condition, or `None` when no run has a history (the matrix
/// failed to load). A drawing error is logged and gives `None`: a missing plot must not stop
/// the rest of the report.
pub fn convergence_svg(cs: &ConditionSummary, row: &MatrixRow) -> Option<String> {
    match draw(cs, row) {
        Ok(svg) => svg,
        Err(e) => {
            log::warn!("plot of {}: {e}", row.name);
            None
        }
    }
}

struct Curve<'a> {
    label: String,
    points: &'a [(usize, f64)],
    color: RGBColor,
    /// The true residual: a wide translucent band under the thin recurrence line, so where
    /// the two agree the line sits in its band and where they part it shows. (Dashed lines
    /// cost one SVG element per dash: ten times the file.)
    band: bool,
}

impl Curve<'_> {
    fn style(&self) -> ShapeStyle {
        if self.band {
            self.color.mix(0.35).stroke_width(4)
        } else {
            self.color.stroke_width(1)
        }
    }
}

fn draw(
    cs: &ConditionSummary,
    row: &MatrixRow,
) -> Result<Option<String>, Box<dyn std::error::Error>> {
    let mut curves = Vec::new();
    for (p, color) in [
        (WorkingPrecision::F64, color(0)),
        (WorkingPrecision::Dd, color(1)),
    ] {
        let Some(h) = row.run(p).and_then(|r| r.history.as_ref()) else {
            continue;
        };
        let name = p.name();
        curves.push(Curve {
            label: format!("{name} true residual"),
            points: &h.true_residual,
            color,
            band: true,
        });
        curves.push(Curve {
            label: format!("{name} recurrence"),
            points: &h.recurrence,
            color,
            band: false,
        });
    }
    if curves.is_empty() {
        return Ok(None);
    }
    let tol = cs.condition.tol;
    let values = curves.iter().flat_map(|c| c.points.iter().map(|p| p.1));
    let (y_lo, y_hi) = decades(values.chain([tol]));
    let x_hi = curves
        .iter()
        .flat_map(|c| c.points.iter().map(|p| p.0))
        .max()
        .unwrap_or(0)
        .max(1);
    let method = [&row.f64, &row.dd]
        .into_iter()
        .flatten()
        .find_map(|r| r.result.as_ref().map(|x| x.method.clone()))
        .unwrap_or_default();
    let title = format!(
        "{}  ({method}, tol {tol:e}, precond {})",
        row.name,
        cs.condition.precond.name()
    );

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 17))
            .margin(12)
            .x_label_area_size(38)
            .y_label_area_size(64)
            .build_cartesian_2d(0..x_hi, (y_lo..y_hi).log_scale())?;
        chart
            .configure_mesh()
            .x_desc("iteration")
            .y_desc("relative residual")
            .y_label_formatter(&|v| format!("{v:.0e}"))
            .light_line_style(WHITE.mix(0.0))
            .draw()?;
        chart
            .draw_series(LineSeries::new(
                [(0, tol), (x_hi, tol)],
                BLACK.mix(0.35).stroke_width(1),
            ))?
            .label(format!("tol {tol:e}"))
            .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLACK.mix(0.35)));
        for c in &curves {
            let pts = c.points.iter().map(|&(i, v)| (i, v.max(FLOOR)));
            let style = c.style();
            chart
                .draw_series(LineSeries::new(pts, style))?
                .label(c.label.clone())
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], style));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .draw()?;
        root.present()?;
    }
    Ok(Some(svg))
}
