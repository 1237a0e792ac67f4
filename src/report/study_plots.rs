//! A study's two summary pictures, as SVG: the performance profile of the time to the target
//! true residual across the precisions and methods, and the true residual each precision
//! attained per matrix against the first precision's. Data from `batch::profile`.

use super::plot::{FLOOR, SIZE, color, decades};
use crate::batch::profile::{Profile, ResidualScatter};
use plotters::prelude::*;

/// The profile as an SVG: for each solver, the fraction of the matrices on which its time to
/// the target true residual was within a factor `tau` of the best solver's, `tau` on a log
/// scale. A solver's curve at `tau = 1` is where it was the fastest; its height at the right
/// edge is the fraction it solved at all. `None` (logged) if drawing fails.
pub fn profile_svg(profile: &Profile) -> Option<String> {
    draw_profile(profile)
        .map_err(|e| log::warn!("performance profile: {e}"))
        .ok()
}

fn draw_profile(profile: &Profile) -> Result<String, Box<dyn std::error::Error>> {
    let tau_max = (profile.max_ratio() * 1.25).max(2.0);
    let title = format!(
        "time to true residual <= {:e}: performance profile ({} matrices, precond {})",
        profile.condition.tol,
        profile.matrices,
        profile.condition.precond.name()
    );
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 15))
            .margin(12)
            .x_label_area_size(38)
            .y_label_area_size(52)
            .build_cartesian_2d((1.0..tau_max).log_scale(), 0.0..1.0)?;
        chart
            .configure_mesh()
            .x_desc("tau: time within this factor of the best")
            .y_desc("fraction of matrices")
            .x_label_formatter(&|v| format!("{v:.3}"))
            .light_line_style(WHITE.mix(0.0))
            .draw()?;
        for (i, solver) in profile.solvers.iter().enumerate() {
            // a step function: rho rises at each ratio
            let mut ratios: Vec<f64> = solver
                .ratios
                .iter()
                .copied()
                .filter(|r| r.is_finite())
                .collect();
            ratios.sort_by(f64::total_cmp);
            let mut points = vec![(1.0, solver.rho(1.0))];
            for &r in ratios.iter().filter(|&&r| r > 1.0) {
                points.push((r, points.last().map_or(0.0, |p| p.1)));
                points.push((r, solver.rho(r)));
            }
            points.push((tau_max, solver.rho(tau_max)));
            let style = color(i).stroke_width(2);
            chart
                .draw_series(LineSeries::new(points, style))?
                .label(solver.label.clone())
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], style));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .draw()?;
        root.present()?;
    }
    Ok(svg)
}

/// The true residual of each later precision against the first's, one point per matrix, both
/// axes logarithmic, with the diagonal and the tolerance: a point below the diagonal is a
/// matrix where the later precision got closer to the solution. `None` (logged) if drawing
/// fails.
pub fn residual_scatter_svg(scatter: &ResidualScatter, tol: f64, title: &str) -> Option<String> {
    draw_scatter(scatter, tol, title)
        .map_err(|e| log::warn!("true-residual scatter: {e}"))
        .ok()
}

fn draw_scatter(
    scatter: &ResidualScatter,
    tol: f64,
    title: &str,
) -> Result<String, Box<dyn std::error::Error>> {
    let values = scatter
        .series
        .iter()
        .flat_map(|(_, points)| points.iter().flat_map(|&(x, y)| [x, y]));
    let (lo, hi) = decades(values.chain([tol]));
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 15))
            .margin(12)
            .x_label_area_size(38)
            .y_label_area_size(64)
            .build_cartesian_2d((lo..hi).log_scale(), (lo..hi).log_scale())?;
        chart
            .configure_mesh()
            .x_desc(format!("{} true residual", scatter.against))
            .y_desc("true residual")
            .x_label_formatter(&|v| format!("{v:.0e}"))
            .y_label_formatter(&|v| format!("{v:.0e}"))
            .light_line_style(WHITE.mix(0.0))
            .draw()?;
        chart
            .draw_series(LineSeries::new([(lo, lo), (hi, hi)], BLACK.mix(0.35)))?
            .label("equal")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLACK.mix(0.35)));
        let tol_style = BLACK.mix(0.2).stroke_width(1);
        chart.draw_series(LineSeries::new([(tol, lo), (tol, hi)], tol_style))?;
        chart
            .draw_series(LineSeries::new([(lo, tol), (hi, tol)], tol_style))?
            .label(format!("tol {tol:e}"))
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], tol_style));
        for (i, (precision, points)) in scatter.series.iter().enumerate() {
            let c = color(i + 1);
            chart
                .draw_series(
                    points
                        .iter()
                        .filter(|(x, y)| x.is_finite() && y.is_finite())
                        .map(|&(x, y)| {
                            Circle::new((x.max(FLOOR), y.max(FLOOR)), 3, c.mix(0.7).filled())
                        }),
                )?
                .label(format!("{precision} against {}", scatter.against))
                .legend(move |(x, y)| Circle::new((x + 10, y), 3, c.filled()));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .draw()?;
        root.present()?;
    }
    Ok(svg)
}
