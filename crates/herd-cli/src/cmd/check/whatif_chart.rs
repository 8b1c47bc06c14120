//! `herd check --chart`: the load at the failing backend over time, attempts per second, as
//! set (red) against the fix (blue), one panel per policy and fault, the fault shaded and the
//! capacity drawn. SVG or PNG by the file's extension.
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::cmd::storm::chart::{ChartFile, draw_err, render, time_panel};

const WIDTH: u32 = 960;
const PANEL_HEIGHT: u32 = 170;
const TITLE_HEIGHT: u32 = 40;
/// A panel's bins of 100 ms are merged (keeping the busiest) beyond this many points.
const MAX_POINTS: usize = 1200;
const BIN_S: f64 = 0.1;

/// One panel: its title, the load as set and with the fix (attempts per second per 100 ms),
/// when the fault started and how long it lasted (seconds).
pub(super) type Panel = (String, Vec<f64>, Vec<f64>, f64, f64);

/// Draws `panels` to `file`, against a backend of `capacity` answers a second.
pub(super) fn draw(file: ChartFile<'_>, capacity: f64, panels: &[Panel]) -> anyhow::Result<()> {
    let height = TITLE_HEIGHT + PANEL_HEIGHT * panels.len().max(1) as u32;
    render!(file, (WIDTH, height), |root| draw_panels(
        &root, capacity, panels
    ))
}

/// The busiest bin of each group, as a step line.
fn points(load: &[f64]) -> Vec<(f64, f64)> {
    let group = load.len().div_ceil(MAX_POINTS).max(1);
    let mut pts = Vec::with_capacity(2 * load.len() / group + 2);
    for (g, chunk) in load.chunks(group).enumerate() {
        let peak = chunk.iter().copied().fold(0.0, f64::max);
        let t0 = (g * group) as f64 * BIN_S;
        pts.push((t0, peak));
        pts.push((t0 + chunk.len() as f64 * BIN_S, peak));
    }
    pts
}

fn draw_panels<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    capacity: f64,
    panels: &[Panel],
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(draw_err)?;
    let (title, body) = root.split_vertically(TITLE_HEIGHT);
    title
        .titled(
            &format!(
                "Attempts per second at the backend: as set (red) and fix (blue); capacity {} (black), fault shaded",
                herd_sim::figure::number(capacity)
            ),
            ("sans-serif", 18),
        )
        .map_err(draw_err)?;
    let areas = body.split_evenly((panels.len().max(1), 1));
    for (area, (name, set, fix, start, length)) in areas.iter().zip(panels) {
        let span = (set.len().max(fix.len()) as f64 * BIN_S).max(1.0);
        let peak = set.iter().chain(fix).copied().fold(capacity, f64::max);
        let y_max = peak * 1.08;
        let mut chart = time_panel(
            area,
            name,
            span,
            y_max,
            std::iter::once((*start, start + length)),
        )?;
        chart
            .draw_series(LineSeries::new(points(set), RED.stroke_width(2)))
            .map_err(draw_err)?;
        chart
            .draw_series(LineSeries::new(points(fix), BLUE.stroke_width(1)))
            .map_err(draw_err)?;
        chart
            .draw_series(LineSeries::new(
                [(0.0, capacity), (span, capacity)],
                BLACK.stroke_width(1),
            ))
            .map_err(draw_err)?;
    }
    Ok(())
}
