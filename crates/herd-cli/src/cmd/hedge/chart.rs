//! `herd hedge --chart`: the latency tail of each policy (the fraction of requests slower
//! than x, both axes logarithmic), or p99.9 against utilisation for a sweep.
use std::ops::Range;

use herd_sim::latency::{LatencyResult, tail};
use plotters::coord::Shift;
use plotters::coord::ranged1d::AsRangedCoord;
use plotters::prelude::*;

use crate::cmd::storm::chart::{ChartFile, PALETTE, draw_err, render};

const WIDTH: u32 = 960;
const HEIGHT: u32 = 560;
/// Points per tail curve.
const TAIL_POINTS: usize = 400;

/// A chart with axes of `X` and `Y`, drawn on `DB`.
type Axes<'a, DB, X, Y> = ChartContext<
    'a,
    DB,
    Cartesian2d<<X as AsRangedCoord>::CoordDescType, <Y as AsRangedCoord>::CoordDescType>,
>;

/// The frame both charts share: a white area, the caption, room for the axis labels.
fn frame<'a, DB: DrawingBackend, X: AsRangedCoord, Y: AsRangedCoord>(
    root: &'a DrawingArea<DB, Shift>,
    caption: &str,
    x: X,
    y: Y,
) -> anyhow::Result<Axes<'a, DB, X, Y>> {
    root.fill(&WHITE).map_err(draw_err)?;
    ChartBuilder::on(root)
        .caption(caption, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d(x, y)
        .map_err(draw_err)
}

/// The `i`-th policy's line, in its colour, with its entry in the legend; the colour.
fn line<DB: DrawingBackend, X: Ranged, Y: Ranged>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    i: usize,
    name: &str,
    points: &[(X::ValueType, Y::ValueType)],
) -> anyhow::Result<RGBColor>
where
    X::ValueType: Clone + 'static,
    Y::ValueType: Clone + 'static,
{
    let colour = PALETTE[i % PALETTE.len()];
    chart
        .draw_series(LineSeries::new(
            points.iter().cloned(),
            colour.stroke_width(2),
        ))
        .map_err(draw_err)?
        .label(name)
        .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], colour.stroke_width(2)));
    Ok(colour)
}

/// The legend of the policies' lines, at `position`.
fn legend<'a, DB: DrawingBackend + 'a, X: Ranged, Y: Ranged>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    position: SeriesLabelPosition,
) -> anyhow::Result<()> {
    chart
        .configure_series_labels()
        .position(position)
        .border_style(BLACK)
        .background_style(WHITE.mix(0.9))
        .label_font(("sans-serif", 13))
        .draw()
        .map_err(draw_err)
}

/// One curve per policy: the fraction of requests slower than x.
pub(super) fn tails(
    file: ChartFile<'_>,
    results: &[LatencyResult],
    latencies: &[Vec<u64>],
) -> anyhow::Result<()> {
    let curves: Vec<(&str, Vec<(f64, f64)>)> = results
        .iter()
        .zip(latencies)
        .map(|(r, l)| {
            // A log axis: a latency under a microsecond is drawn at one.
            let points = tail(l, TAIL_POINTS).into_iter();
            (
                r.policy.as_str(),
                points.map(|[x, y]| (x.max(1e-3), y)).collect(),
            )
        })
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
    let (x, y) = (x_min..x_max, y_min..1.0);
    render!(file, (WIDTH, HEIGHT), |root| draw_tails(
        &root,
        &curves,
        x.clone(),
        y.clone()
    ))
}

/// [`tails`] on one backend.
fn draw_tails<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    curves: &[(&str, Vec<(f64, f64)>)],
    x: Range<f64>,
    y: Range<f64>,
) -> anyhow::Result<()> {
    let caption = "Fraction of user requests slower than x (both axes log)";
    let mut chart = frame(root, caption, x.log_scale(), y.log_scale())?;
    chart
        .configure_mesh()
        .x_desc("latency (ms)")
        .y_desc("fraction slower")
        .x_label_formatter(&|v| format!("{v}"))
        .y_label_formatter(&|v| format!("{v}"))
        .label_style(("sans-serif", 12))
        .axis_desc_style(("sans-serif", 13))
        .draw()
        .map_err(draw_err)?;
    for (i, (name, curve)) in curves.iter().enumerate() {
        line(&mut chart, i, name, curve)?;
    }
    legend(&mut chart, SeriesLabelPosition::LowerLeft)
}

/// One line per policy: p99.9 (log) against utilisation.
pub(super) fn crossover(
    file: ChartFile<'_>,
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
    let (u, y) = (u_min..u_max, y_min..y_max);
    render!(file, (WIDTH, HEIGHT), |root| {
        draw_crossover(&root, &names, sweep, u.clone(), y.clone())
    })
}

/// [`crossover`] on one backend.
fn draw_crossover<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    names: &[&str],
    sweep: &[(f64, &[LatencyResult])],
    u: Range<f64>,
    y: Range<f64>,
) -> anyhow::Result<()> {
    let caption = "p99.9 of user latency against server utilisation";
    let mut chart = frame(root, caption, u, y.log_scale())?;
    chart
        .configure_mesh()
        .x_desc("utilisation without hedges")
        .y_desc("p99.9 (ms)")
        .y_label_formatter(&|v| format!("{v}"))
        .label_style(("sans-serif", 12))
        .axis_desc_style(("sans-serif", 13))
        .draw()
        .map_err(draw_err)?;
    for (i, name) in names.iter().enumerate() {
        let points: Vec<(f64, f64)> = sweep
            .iter()
            .filter_map(|(u, r)| r.get(i).map(|x| (*u, x.p999_ms.max(1e-3))))
            .collect();
        let colour = line(&mut chart, i, name, &points)?;
        chart
            .draw_series(points.iter().map(|&p| Circle::new(p, 3, colour.filled())))
            .map_err(draw_err)?;
    }
    legend(&mut chart, SeriesLabelPosition::UpperLeft)
}
