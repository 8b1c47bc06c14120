//! `herd hedge --chart`: the latency tail of each policy (the fraction of requests slower
//! than x, both axes logarithmic), or p99.9 against utilisation for a sweep.
use std::path::Path;

use anyhow::{Context, anyhow};
use herd_sim::latency::LatencyResult;
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::cmd::storm::chart::{Kind, font};

const WIDTH: u32 = 960;
const HEIGHT: u32 = 560;
/// Points per tail curve.
const TAIL_POINTS: usize = 400;

const COLOURS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

fn render(
    path: &Path,
    kind: Kind,
    draw: impl Fn(&DrawingArea<SVGBackend<'_>, Shift>) -> anyhow::Result<()>,
    draw_png: impl Fn(&DrawingArea<BitMapBackend<'_>, Shift>) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    font()?;
    match kind {
        Kind::Svg => {
            let root = SVGBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area();
            draw(&root)?;
            root.present().map_err(|e| anyhow!("{e}"))
        }
        Kind::Png => {
            let root = BitMapBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area();
            draw_png(&root)?;
            root.present().map_err(|e| anyhow!("{e}"))
        }
    }
    .with_context(|| format!("--chart: drawing {}", path.display()))
}

/// (latency ms, fraction slower) at log-spaced fractions from 1 down to 1/n.
fn tail(sorted: &[u64]) -> Vec<(f64, f64)> {
    let n = sorted.len();
    if n == 0 {
        return Vec::new();
    }
    let mut pts = Vec::with_capacity(TAIL_POINTS);
    let lowest = (1.0 / n as f64).ln();
    for k in 0..TAIL_POINTS {
        let frac = (lowest * k as f64 / (TAIL_POINTS - 1) as f64).exp();
        // The sample of rank n − ceil(frac · n) + 1 has about `frac` of the samples at or above it.
        // (The small margin keeps exp(ln(x)) = x + 1 ulp from rounding a whole count up.)
        let above = ((frac * n as f64 - 1e-9).ceil() as usize).clamp(1, n);
        let x = sorted[n - above] as f64 / 1e6;
        pts.push((x.max(1e-3), above as f64 / n as f64));
    }
    pts
}

/// One curve per policy: the fraction of requests slower than x.
pub(super) fn tails(
    path: &Path,
    kind: Kind,
    results: &[LatencyResult],
    latencies: &[Vec<u64>],
) -> anyhow::Result<()> {
    let curves: Vec<(&str, Vec<(f64, f64)>)> = results
        .iter()
        .zip(latencies)
        .map(|(r, l)| (r.policy.as_str(), tail(l)))
        .collect();
    let x_max = curves
        .iter()
        .flat_map(|(_, c)| c.iter().map(|p| p.0))
        .fold(1.0_f64, f64::max)
        * 1.2;
    let x_min = curves
        .iter()
        .flat_map(|(_, c)| c.iter().map(|p| p.0))
        .fold(f64::INFINITY, f64::min)
        .clamp(1e-3, x_max / 10.0);
    let y_min = latencies
        .iter()
        .map(|l| 1.0 / l.len().max(1) as f64)
        .fold(1.0_f64, f64::min);
    let caption = "Fraction of user requests slower than x (both axes log)";
    macro_rules! body {
        ($root:expr) => {{
            let root = $root;
            let err = |e| anyhow!("{e:?}");
            root.fill(&WHITE).map_err(err)?;
            let mut chart = ChartBuilder::on(root)
                .caption(caption, ("sans-serif", 18))
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(64)
                .build_cartesian_2d((x_min..x_max).log_scale(), (y_min..1.0).log_scale())
                .map_err(err)?;
            chart
                .configure_mesh()
                .x_desc("latency (ms)")
                .y_desc("fraction slower")
                .x_label_formatter(&|v| format!("{v}"))
                .y_label_formatter(&|v| format!("{v}"))
                .label_style(("sans-serif", 12))
                .axis_desc_style(("sans-serif", 13))
                .draw()
                .map_err(err)?;
            for (i, (name, curve)) in curves.iter().enumerate() {
                let colour = COLOURS[i % COLOURS.len()];
                chart
                    .draw_series(LineSeries::new(
                        curve.iter().copied(),
                        colour.stroke_width(2),
                    ))
                    .map_err(err)?
                    .label(*name)
                    .legend(move |(x, y)| {
                        PathElement::new([(x, y), (x + 18, y)], colour.stroke_width(2))
                    });
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::LowerLeft)
                .border_style(BLACK)
                .background_style(WHITE.mix(0.9))
                .label_font(("sans-serif", 13))
                .draw()
                .map_err(err)?;
            Ok(())
        }};
    }
    render(path, kind, |root| body!(root), |root| body!(root))
}

/// One line per policy: p99.9 (log) against utilisation.
pub(super) fn crossover(
    path: &Path,
    kind: Kind,
    sweep: &[(f64, &[LatencyResult])],
) -> anyhow::Result<()> {
    let names: Vec<&str> = sweep
        .first()
        .map(|(_, r)| r.iter().map(|x| x.policy.as_str()).collect())
        .unwrap_or_default();
    let u_min = sweep.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let u_max = sweep.iter().map(|p| p.0).fold(0.0_f64, f64::max);
    let (u_min, u_max) = if u_max > u_min {
        (u_min, u_max)
    } else {
        (u_min - 0.05, u_max + 0.05)
    };
    let values = sweep
        .iter()
        .flat_map(|(_, r)| r.iter().map(|x| x.p999_ms.max(1e-3)));
    let y_min = values.clone().fold(f64::INFINITY, f64::min) / 1.5;
    let y_max = values.fold(0.0_f64, f64::max) * 1.5;
    let caption = "p99.9 of user latency against server utilisation";
    macro_rules! body {
        ($root:expr) => {{
            let root = $root;
            let err = |e| anyhow!("{e:?}");
            root.fill(&WHITE).map_err(err)?;
            let mut chart = ChartBuilder::on(root)
                .caption(caption, ("sans-serif", 18))
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(64)
                .build_cartesian_2d(u_min..u_max, (y_min..y_max).log_scale())
                .map_err(err)?;
            chart
                .configure_mesh()
                .x_desc("utilisation without hedges")
                .y_desc("p99.9 (ms)")
                .y_label_formatter(&|v| format!("{v}"))
                .label_style(("sans-serif", 12))
                .axis_desc_style(("sans-serif", 13))
                .draw()
                .map_err(err)?;
            for (i, name) in names.iter().enumerate() {
                let colour = COLOURS[i % COLOURS.len()];
                let line: Vec<(f64, f64)> = sweep
                    .iter()
                    .filter_map(|(u, r)| r.get(i).map(|x| (*u, x.p999_ms.max(1e-3))))
                    .collect();
                chart
                    .draw_series(LineSeries::new(
                        line.iter().copied(),
                        colour.stroke_width(2),
                    ))
                    .map_err(err)?
                    .label(*name)
                    .legend(move |(x, y)| {
                        PathElement::new([(x, y), (x + 18, y)], colour.stroke_width(2))
                    });
                chart
                    .draw_series(line.iter().map(|&p| Circle::new(p, 3, colour.filled())))
                    .map_err(err)?;
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .border_style(BLACK)
                .background_style(WHITE.mix(0.9))
                .label_font(("sans-serif", 13))
                .draw()
                .map_err(err)?;
            Ok(())
        }};
    }
    render(path, kind, |root| body!(root), |root| body!(root))
}

#[cfg(test)]
mod tests {
    use super::tail;

    #[test]
    fn the_tail_runs_from_everyone_to_the_slowest() {
        let sorted: Vec<u64> = (1..=1000).map(|ms| ms * 1_000_000).collect();
        let t = tail(&sorted);
        assert_eq!(t.first(), Some(&(1.0, 1.0)));
        assert_eq!(t.last(), Some(&(1000.0, 0.001)));
        assert!(t.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 >= w[1].1));
    }
}
