//! `--heatmap`: one metric over two swept fields, the phase maps of the metastability papers.
//!
//! One panel per rule (and per value of any further swept field), shared colour scale: the
//! mean over the seeds, dark for worse (slow recovery, many requests; few served or
//! recovered), light for better.
//! The scale is logarithmic when the values span more than a factor of 50. Cells where the
//! metric never happened (never recovered in any run) are black with grey hatching; cells
//! where it happened in only some runs say how many. SVG or PNG by the file's extension,
//! text in the font bundled for `herd storm --chart`.

use anyhow::anyhow;
use herd_sim::sweep::{Row, Stats, Sweep, show};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::cmd::storm::chart::{ChartFile, draw_err, render};
use crate::error::{CliError, CliResult};
use herd_sim::figure::number;

/// The most panels one heat map draws.
const MAX_PANELS: usize = 48;
const TITLE_HEIGHT: u32 = 56;
const LEGEND_WIDTH: u32 = 190;
const NEVER_FILL: RGBColor = RGBColor(22, 22, 22);
const NEVER_HATCH: RGBColor = RGBColor(150, 150, 150);

/// The indices of the x and y axes among the swept fields.
pub(crate) fn axes(sweep: &Sweep, x: Option<&str>, y: Option<&str>) -> CliResult<(usize, usize)> {
    let names: Vec<&str> = sweep.axes().iter().map(|a| a.name()).collect();
    // Fields with several values; a --set with one value only fixes a field.
    let swept = super::swept(sweep);
    if swept.len() < 2 && (x.is_none() || y.is_none()) {
        return Err(CliError::input(format!(
            "--heatmap needs two swept fields (two --set options with several values), got {}",
            swept.len()
        )));
    }
    let find = |flag: &str, name: &str| {
        sweep
            .axes()
            .iter()
            .position(|a| a.name() == name || a.path() == name)
            .ok_or_else(|| {
                CliError::input(format!(
                    "{flag} {name}: not a swept field; the swept fields are {}",
                    names.join(", ")
                ))
            })
    };
    let y_given = match y {
        Some(name) => Some(find("--y", name)?),
        None => None,
    };
    let x = match x {
        Some(name) => find("--x", name)?,
        None => swept
            .iter()
            .copied()
            .find(|&i| Some(i) != y_given)
            .unwrap_or(0),
    };
    let y = match y_given {
        Some(y) => y,
        None => swept.iter().copied().find(|&i| i != x).unwrap_or(1),
    };
    if x == y {
        return Err(CliError::input(format!(
            "--x and --y must be different fields, both are {}",
            names[x]
        )));
    }
    let panels = sweep
        .axes()
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != x && *i != y)
        .fold(sweep.rules().len(), |n, (_, a)| {
            n.saturating_mul(a.values().len())
        });
    if panels > MAX_PANELS {
        return Err(CliError::input(format!(
            "--heatmap: {panels} panels (one per rule and per value of the fields other than --x and --y); at most {MAX_PANELS}: use fewer --rules or sweep fewer fields"
        )));
    }
    Ok((x, y))
}

/// One panel: a rule and the values of the other swept fields, and its grid of cells.
struct Panel<'a> {
    title: String,
    key: (Vec<usize>, usize),
    /// `cells[yi * nx + xi]`: the stats and the runs.
    cells: Vec<Option<(&'a Stats, usize)>>,
}

/// Metrics where more is better: drawn light when high, so that dark always means worse.
const HIGHER_IS_BETTER: [&str; 2] = ["recovered", "served"];

/// The colour scale from the smallest to the largest mean.
#[derive(Clone, Copy)]
struct Scale {
    lo: f64,
    hi: f64,
    log: bool,
    /// Light for high values instead of dark.
    invert: bool,
}

impl Scale {
    fn of(values: impl Iterator<Item = f64>) -> Self {
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in values {
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if !lo.is_finite() {
            return Self {
                lo: 0.0,
                hi: 1.0,
                log: false,
                invert: false,
            };
        }
        let log = lo > 0.0 && hi / lo > 50.0;
        Self {
            lo,
            hi,
            log,
            invert: false,
        }
    }

    /// The colour at position `t` of the scale.
    fn colour(&self, t: f64) -> RGBColor {
        colour(if self.invert { 1.0 - t } else { t })
    }

    /// Position of `v` on the scale, 0 to 1.
    fn t(&self, v: f64) -> f64 {
        let (a, b, v) = if self.log {
            (self.lo.ln(), self.hi.ln(), v.max(self.lo).ln())
        } else {
            (self.lo, self.hi, v)
        };
        if b > a {
            ((v - a) / (b - a)).clamp(0.0, 1.0)
        } else {
            0.5
        }
    }

    /// The value at position `t`.
    fn value(&self, t: f64) -> f64 {
        if self.log {
            (self.lo.ln() + t * (self.hi.ln() - self.lo.ln())).exp()
        } else {
            self.lo + t * (self.hi - self.lo)
        }
    }
}

/// Viridis, reversed: light yellow for low values, dark purple for high ones.
fn colour(t: f64) -> RGBColor {
    const STOPS: [(f64, f64, f64); 5] = [
        (253.0, 231.0, 37.0),
        (94.0, 201.0, 98.0),
        (33.0, 145.0, 140.0),
        (59.0, 82.0, 139.0),
        (68.0, 1.0, 84.0),
    ];
    let x = t.clamp(0.0, 1.0) * (STOPS.len() - 1) as f64;
    let i = (x.floor() as usize).min(STOPS.len() - 2);
    let f = x - i as f64;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    let mix = |p: f64, q: f64| (p + (q - p) * f).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

fn is_light(c: RGBColor) -> bool {
    0.299 * f64::from(c.0) + 0.587 * f64::from(c.1) + 0.114 * f64::from(c.2) > 140.0
}

fn panels<'a>(sweep: &Sweep, rows: &'a [Row], x: usize, y: usize, metric: &str) -> Vec<Panel<'a>> {
    let (nx, ny) = (
        sweep.axes()[x].values().len(),
        sweep.axes()[y].values().len(),
    );
    let mut panels: Vec<Panel<'a>> = Vec::new();
    for row in rows {
        let picks = sweep.picks(row.cell);
        let others: Vec<usize> = picks
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != x && *i != y)
            .map(|(_, &p)| p)
            .collect();
        let rule = sweep
            .rules()
            .iter()
            .position(|r| *r == row.rule)
            .unwrap_or(0);
        let key = (others, rule);
        let index = match panels.iter().position(|p| p.key == key) {
            Some(i) => i,
            None => {
                let mut title = row.rule.to_string();
                for (i, axis) in sweep.axes().iter().enumerate() {
                    if i != x && i != y && axis.values().len() > 1 {
                        title.push_str(&format!(
                            " · {}={}",
                            axis.name(),
                            show(&axis.values()[picks[i]])
                        ));
                    }
                }
                panels.push(Panel {
                    title,
                    key,
                    cells: vec![None; nx * ny],
                });
                panels.len() - 1
            }
        };
        if let Some(stats) = row.metric(metric) {
            panels[index].cells[picks[y] * nx + picks[x]] = Some((stats, row.runs));
        }
    }
    panels
}

/// Draws the heat map of `metric` over axes `x` and `y` to `file`.
pub(crate) fn draw(
    file: ChartFile<'_>,
    sweep: &Sweep,
    rows: &[Row],
    x: usize,
    y: usize,
    metric: &str,
) -> anyhow::Result<()> {
    let panels = panels(sweep, rows, x, y, metric);
    if panels.len() > MAX_PANELS {
        return Err(anyhow!(
            "{} panels (rules × values of the other swept fields); at most {MAX_PANELS}: use fewer --rules or sweep fewer fields",
            panels.len()
        ));
    }
    let n = panels.len().max(1);
    let cols = if n <= 3 {
        n
    } else {
        (n as f64).sqrt().ceil() as usize
    };
    let grid_rows = n.div_ceil(cols);
    let (pw, ph) = if n == 1 { (640, 500) } else { (430, 350) };
    let width = cols as u32 * pw + LEGEND_WIDTH;
    let height = TITLE_HEIGHT + grid_rows as u32 * ph;
    render!(file, (width, height), |root| paint(
        &root,
        sweep,
        &panels,
        (x, y, metric),
        (cols, grid_rows)
    ))
}

fn clip(label: String, max: usize) -> String {
    if label.chars().count() <= max {
        label
    } else {
        let mut s: String = label.chars().take(max - 1).collect();
        s.push('-');
        s
    }
}

fn hatch<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    (x0, y0): (i32, i32),
    (x1, y1): (i32, i32),
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    area.draw(&Rectangle::new([(x0, y0), (x1, y1)], NEVER_FILL.filled()))?;
    let (w, h) = (x1 - x0, y1 - y0);
    let gap = 7;
    // Lines of slope −1 clipped to the rectangle: x + y = x0 + y0 + d.
    let mut d = gap;
    while d < w + h {
        let start = (x0 + (d - h).max(0), y0 + d.min(h));
        let end = (x0 + d.min(w), y0 + (d - w).max(0));
        area.draw(&PathElement::new(vec![start, end], NEVER_HATCH))?;
        d += gap;
    }
    Ok(())
}

fn paint<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    sweep: &Sweep,
    panels: &[Panel<'_>],
    (x, y, metric): (usize, usize, &str),
    (cols, grid_rows): (usize, usize),
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(draw_err)?;
    let (xa, ya) = (&sweep.axes()[x], &sweep.axes()[y]);
    let (nx, ny) = (xa.values().len(), ya.values().len());
    let scale = Scale {
        invert: HIGHER_IS_BETTER.contains(&metric),
        ..Scale::of(
            panels
                .iter()
                .flat_map(|p| p.cells.iter().flatten().filter_map(|(s, _)| s.mean)),
        )
    };
    let seeds = sweep.seeds().len();
    let (title, rest) = root.split_vertically(TITLE_HEIGHT);
    let centred = |size| {
        TextStyle::from(("sans-serif", size).into_font())
            .color(&BLACK)
            .pos(Pos::new(HPos::Center, VPos::Top))
    };
    let middle = title.dim_in_pixel().0 as i32 / 2;
    title
        .draw_text(
            &format!(
                "{metric}: mean over {seeds} seed{} per cell, by {} and {}",
                if seeds == 1 { "" } else { "s" },
                xa.name(),
                ya.name()
            ),
            &centred(20),
            (middle, 6),
        )
        .map_err(draw_err)?;
    // The fields a --set fixed to one value, so the map says what it is of.
    let fixed: Vec<String> = sweep
        .axes()
        .iter()
        .filter(|a| a.values().len() == 1)
        .map(|a| format!("{}={}", a.name(), show(&a.values()[0])))
        .collect();
    if !fixed.is_empty() {
        title
            .draw_text(&fixed.join(", "), &centred(13), (middle, 32))
            .map_err(draw_err)?;
    }
    let (body, legend) = rest.split_horizontally(rest.dim_in_pixel().0 - LEGEND_WIDTH);
    let areas = body.split_evenly((grid_rows, cols));
    let label_style = TextStyle::from(("sans-serif", 12).into_font()).color(&BLACK);
    let mut partial = false;
    let mut never = false;
    for (area, panel) in areas.iter().zip(panels) {
        let mut chart = ChartBuilder::on(area)
            .caption(&panel.title, ("sans-serif", 15))
            .margin(8)
            .margin_right(16)
            .x_label_area_size(44)
            .y_label_area_size(78)
            .build_cartesian_2d(0.0..nx as f64, 0.0..ny as f64)
            .map_err(draw_err)?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_labels(0)
            .y_labels(0)
            .x_desc(xa.name())
            .y_desc(ya.name())
            .axis_desc_style(("sans-serif", 13))
            .draw()
            .map_err(draw_err)?;
        for yi in 0..ny {
            for xi in 0..nx {
                let (fx, fy) = (xi as f64, yi as f64);
                let p0 = chart.backend_coord(&(fx, fy + 1.0));
                let p1 = chart.backend_coord(&(fx + 1.0, fy));
                let (a, b) = ((p0.0 + 1, p0.1 + 1), (p1.0 - 1, p1.1 - 1));
                let cell = panel.cells[yi * nx + xi];
                let Some((stats, runs)) = cell else {
                    continue;
                };
                let Some(mean) = stats.mean else {
                    never = true;
                    hatch(root, a, b).map_err(draw_err)?;
                    continue;
                };
                let fill = scale.colour(scale.t(mean));
                root.draw(&Rectangle::new([a, b], fill.filled()))
                    .map_err(draw_err)?;
                let (w, h) = (b.0 - a.0, b.1 - a.1);
                if w >= 34 && h >= 16 {
                    let ink = if is_light(fill) { BLACK } else { WHITE };
                    let centre = ((a.0 + b.0) / 2, (a.1 + b.1) / 2);
                    let style = TextStyle::from(("sans-serif", 11).into_font())
                        .color(&ink)
                        .pos(Pos::new(HPos::Center, VPos::Center));
                    let partial_here = stats.defined < runs;
                    let dy = if partial_here && h >= 30 { 7 } else { 0 };
                    root.draw_text(&number(mean), &style, (centre.0, centre.1 - dy))
                        .map_err(draw_err)?;
                    if partial_here && h >= 30 {
                        root.draw_text(
                            &format!("{}/{runs}", stats.defined),
                            &style,
                            (centre.0, centre.1 + 7),
                        )
                        .map_err(draw_err)?;
                    }
                }
                if stats.defined < runs {
                    partial = true;
                    if !(w >= 34 && h >= 30) {
                        // Too small for text: a corner mark.
                        let c = (b.0, a.1);
                        root.draw(&Polygon::new(
                            vec![(c.0 - 7, c.1), c, (c.0, c.1 + 7)],
                            NEVER_FILL.filled(),
                        ))
                        .map_err(draw_err)?;
                    }
                }
            }
        }
        let max_label = if nx > 6 { 6 } else { 12 };
        for (xi, v) in xa.values().iter().enumerate() {
            let (px, py) = chart.backend_coord(&(xi as f64 + 0.5, 0.0));
            root.draw_text(
                &clip(show(v), max_label),
                &label_style.pos(Pos::new(HPos::Center, VPos::Top)),
                (px, py + 5),
            )
            .map_err(draw_err)?;
        }
        for (yi, v) in ya.values().iter().enumerate() {
            let (px, py) = chart.backend_coord(&(0.0, yi as f64 + 0.5));
            root.draw_text(
                &clip(show(v), 11),
                &label_style.pos(Pos::new(HPos::Right, VPos::Center)),
                (px - 6, py),
            )
            .map_err(draw_err)?;
        }
    }
    draw_legend(&legend, metric, scale, never, partial, seeds).map_err(draw_err)
}

fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    metric: &str,
    scale: Scale,
    never: bool,
    partial: bool,
    seeds: usize,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let (w, h) = area.dim_in_pixel();
    let (w, h) = (w as i32, h as i32);
    let text = TextStyle::from(("sans-serif", 12).into_font()).color(&BLACK);
    area.draw_text(metric, &text, (10, 20))?;
    if scale.log {
        area.draw_text("(log scale)", &text, (10, 36))?;
    }
    let (bx, by, bw) = (14, 50, 22);
    let bh = (h - by - 120).clamp(60, 320);
    let steps = 64;
    for i in 0..steps {
        // Top of the bar is the highest value.
        let t0 = 1.0 - f64::from(i) / f64::from(steps);
        let y0 = by + bh * i / steps;
        let y1 = by + bh * (i + 1) / steps;
        area.draw(&Rectangle::new(
            [(bx, y0), (bx + bw, y1.max(y0 + 1))],
            scale.colour(t0).filled(),
        ))?;
    }
    area.draw(&Rectangle::new([(bx, by), (bx + bw, by + bh)], BLACK))?;
    let ticks = 5;
    for k in 0..ticks {
        let t = f64::from(k) / f64::from(ticks - 1);
        let py = by + (f64::from(bh) * (1.0 - t)).round() as i32;
        area.draw(&PathElement::new(
            vec![(bx + bw, py), (bx + bw + 4, py)],
            BLACK,
        ))?;
        area.draw_text(
            &number(scale.value(t)),
            &text.pos(Pos::new(HPos::Left, VPos::Center)),
            (bx + bw + 8, py),
        )?;
    }
    let mut y = by + bh + 24;
    if never {
        hatch(area, (bx, y), (bx + bw, y + 16))?;
        area.draw_text(
            &format!("never, in all {seeds} runs"),
            &text.pos(Pos::new(HPos::Left, VPos::Center)),
            (bx + bw + 8, y + 8),
        )?;
        y += 28;
    }
    if partial {
        area.draw_text("k/n or a black corner:", &text, (10, y))?;
        area.draw_text("happened in only k of n", &text, (10, y + 15))?;
        area.draw_text("runs; mean over those", &text, (10, y + 30))?;
    }
    let _ = w;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_goes_log_over_wide_ranges() {
        let s = Scale::of([1.0, 1000.0].into_iter());
        assert!(s.log);
        assert!((s.t(31.622_776_601_683_793) - 0.5).abs() < 1e-12);
        let lin = Scale::of([0.0, 10.0].into_iter());
        assert!(!lin.log);
        assert_eq!(lin.t(5.0), 0.5);
        assert_eq!(lin.value(0.5), 5.0);
    }

    #[test]
    fn colours_run_light_to_dark() {
        assert!(is_light(colour(0.0)));
        assert!(!is_light(colour(1.0)));
    }
}
