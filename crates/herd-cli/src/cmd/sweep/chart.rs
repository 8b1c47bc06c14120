//! `--chart`: each metric against the one swept field, one line per rule, with the 95 %
//! interval on the mean as an error bar at every point.
//!
//! One panel per metric (at most four). The swept values sit at equal spacing, labelled as
//! written (so `0, 10, 30, 100, 300, 1000` reads like a logarithmic axis). The vertical scale is
//! logarithmic when every mean and interval end of a panel is above 0 and they span more than
//! a factor of 10, else linear from 0. SVG or PNG by the file's extension, text in the font
//! bundled for `herd storm --chart`.

use herd_sim::sweep::{Row, Sweep, show};
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::cmd::storm::chart::{ChartFile, PALETTE, draw_err, render};
use crate::error::{CliError, CliResult};

/// The most metrics one chart draws, one panel each.
pub(crate) const MAX_PANELS: usize = 4;
const PANEL_WIDTH: u32 = 520;
const PANEL_HEIGHT: u32 = 340;

/// Checks that the sweep has exactly one field with several values: the chart's x axis.
pub(crate) fn axis(sweep: &Sweep) -> CliResult<usize> {
    let swept = super::swept(sweep);
    match swept[..] {
        [x] => Ok(x),
        _ => Err(CliError::input(format!(
            "--chart draws metrics against one swept field (one --set with several values), got {} (use --heatmap for two)",
            swept.len()
        ))),
    }
}

/// One point: x position, mean, interval ends.
type Point = (f64, f64, f64, f64);

/// Draws `metrics` (the first [`MAX_PANELS`]) against axis `x` to `file`.
pub(crate) fn draw(
    file: ChartFile<'_>,
    sweep: &Sweep,
    rows: &[Row],
    x: usize,
    metrics: &[&str],
) -> anyhow::Result<()> {
    let metrics = &metrics[..metrics.len().min(MAX_PANELS)];
    let cols = metrics.len().min(2) as u32;
    let lines = (metrics.len() as u32).div_ceil(2);
    let size = (PANEL_WIDTH * cols, PANEL_HEIGHT * lines);
    render!(file, size, |root| panels(
        &root,
        sweep,
        rows,
        x,
        metrics,
        lines as usize
    ))
}

fn panels<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    sweep: &Sweep,
    rows: &[Row],
    x: usize,
    metrics: &[&str],
    lines: usize,
) -> anyhow::Result<()> {
    root.fill(&WHITE).map_err(draw_err)?;
    let areas = root.split_evenly((lines, metrics.len().min(2)));
    let labels: Vec<String> = sweep.axes()[x].values().iter().map(show).collect();
    for (i, (area, metric)) in areas.iter().zip(metrics).enumerate() {
        // Per rule, its points in the order of the swept values.
        let lines: Vec<(String, Vec<Point>)> = sweep
            .rules()
            .iter()
            .map(|rule| {
                let points = rows
                    .iter()
                    .filter(|r| &r.rule == rule)
                    .filter_map(|r| {
                        let s = r.metric(metric)?;
                        let mean = s.mean?;
                        let at = sweep.picks(r.cell)[x] as f64;
                        Some((at, mean, s.lo.unwrap_or(mean), s.hi.unwrap_or(mean)))
                    })
                    .collect();
                (rule.to_string(), points)
            })
            .collect();
        panel(
            area,
            sweep.axes()[x].name(),
            &labels,
            metric,
            &lines,
            i == 0,
        )?;
    }
    Ok(())
}

/// One metric's panel.
fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    x_name: &str,
    labels: &[String],
    metric: &str,
    lines: &[(String, Vec<Point>)],
    with_legend: bool,
) -> anyhow::Result<()> {
    let values = lines
        .iter()
        .flat_map(|(_, p)| p.iter().flat_map(|&(_, m, lo, hi)| [m, lo, hi]));
    let lowest = values.clone().fold(f64::INFINITY, f64::min);
    let highest = values.fold(f64::NEG_INFINITY, f64::max);
    let log = lowest > 0.0 && highest / lowest > 10.0;
    // On a log scale, points are drawn at log10 of their value and labelled back.
    let y = |v: f64| if log { v.log10() } else { v };
    let (y_lo, y_hi) = if !lowest.is_finite() {
        (0.0, 1.0)
    } else if log {
        let pad = (y(highest) - y(lowest)) * 0.06;
        (y(lowest) - pad, y(highest) + pad)
    } else {
        (lowest.min(0.0), highest.max(lowest + 1e-9) * 1.08)
    };
    let n = labels.len();
    let mut chart = ChartBuilder::on(area)
        .caption(
            if log {
                format!("{metric} (log scale)")
            } else {
                metric.to_owned()
            },
            ("sans-serif", 16),
        )
        .margin(10)
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d(-0.4..(n as f64 - 0.6), y_lo..y_hi)
        .map_err(draw_err)?;
    let x_label = |v: &f64| {
        let i = v.round();
        if (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < n {
            labels[i as usize].clone()
        } else {
            String::new()
        }
    };
    let y_label = |v: &f64| {
        let v = if log { 10f64.powf(*v) } else { *v };
        let digits = if v.abs() >= 100.0 {
            0
        } else if v.abs() >= 10.0 {
            1
        } else {
            2
        };
        format!("{v:.digits$}")
    };
    chart
        .configure_mesh()
        .x_labels(n.max(2))
        .x_label_formatter(&x_label)
        .y_label_formatter(&y_label)
        .disable_x_mesh()
        .x_desc(x_name)
        .label_style(("sans-serif", 12))
        .axis_desc_style(("sans-serif", 13))
        .draw()
        .map_err(draw_err)?;
    for (i, (name, points)) in lines.iter().enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        // Rules side by side around each value, so that their error bars do not overlap.
        let shift = (i as f64 - (lines.len() as f64 - 1.0) / 2.0) * 0.05;
        let at = |p: &Point| (p.0 + shift, y(p.1));
        chart
            .draw_series(LineSeries::new(
                points.iter().map(at),
                colour.stroke_width(2),
            ))
            .map_err(draw_err)?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], colour.stroke_width(2)));
        chart
            .draw_series(
                points
                    .iter()
                    .map(|p| Circle::new(at(p), 3, colour.filled())),
            )
            .map_err(draw_err)?;
        chart
            .draw_series(points.iter().map(|p| {
                let x = p.0 + shift;
                PathElement::new([(x, y(p.2)), (x, y(p.3))], colour.stroke_width(1))
            }))
            .map_err(draw_err)?;
    }
    if with_legend {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .border_style(BLACK)
            .background_style(WHITE.mix(0.9))
            .label_font(("sans-serif", 13))
            .draw()
            .map_err(draw_err)?;
    }
    Ok(())
}
