//! `--chart`: arrivals per window as small multiples, one panel per rule, with shared axes,
//! the capacity line and the outages shaded. SVG or PNG by the file's extension.
//!
//! Text is drawn with a small DejaVu Sans subset bundled in the binary (see
//! `crates/herd-cli/assets/README.md`), so PNG charts work on a machine without fonts.
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::anyhow;
use herd_sim::{RunResult, Scenario};
use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::{FontStyle, register_font};

use crate::error::CliError;

const FONT: &[u8] = include_bytes!("../../../assets/DejaVuSans-subset.ttf");
const WIDTH: u32 = 960;
const PANEL_HEIGHT: u32 = 170;
const TITLE_HEIGHT: u32 = 40;
/// Points per panel at most; windows are merged (keeping the busiest) beyond that.
const MAX_POINTS: usize = 1200;

/// The file formats `--chart` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Svg,
    Png,
}

impl Kind {
    /// The format named by the file's extension, if it is one we write.
    pub(crate) fn of(path: &Path) -> Option<Self> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "svg" => Some(Kind::Svg),
            "png" => Some(Kind::Png),
            _ => None,
        }
    }
}

/// The file a chart's flag (`--chart`, `--heatmap`) names, with its format: what drawing
/// needs, and the flag to name in an error.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ChartFile<'a> {
    pub(crate) flag: &'static str,
    pub(crate) path: &'a Path,
    pub(crate) kind: Kind,
}

impl<'a> ChartFile<'a> {
    /// The file given to `flag`, if any: bad input naming the flag when the extension is not
    /// one we write.
    pub(crate) fn of(flag: &'static str, path: Option<&'a Path>) -> Result<Option<Self>, CliError> {
        path.map(|path| match Kind::of(path) {
            Some(kind) => Ok(Self { flag, path, kind }),
            None => Err(CliError::input(format!(
                "{flag}: {} must end in .svg or .png",
                path.display()
            ))),
        })
        .transpose()
    }

    /// Checks, before anything is simulated, that the chart can be written: a temporary file
    /// beside it can be created (and is removed again), and the path is not a folder. The
    /// chart itself is left as it is until the drawing has succeeded ([`render`]).
    pub(crate) fn check(self) -> Result<(), CliError> {
        let fail = |why: String| {
            CliError::input(format!(
                "{}: cannot write {}: {why}",
                self.flag,
                self.path.display()
            ))
        };
        if self.path.is_dir() {
            return Err(fail("it is a folder".to_owned()));
        }
        let temp = self.temp_path();
        fs::File::create(&temp).map_err(|e| fail(e.to_string()))?;
        let _ = fs::remove_file(&temp);
        Ok(())
    }

    /// Where the chart is drawn before it is renamed into place: a hidden file beside it
    /// (the same file system, so the rename is atomic), with the same extension (the PNG
    /// encoder goes by it).
    pub(crate) fn temp_path(self) -> PathBuf {
        let name = self
            .path
            .file_name()
            .map_or_else(|| "chart".into(), |n| n.to_string_lossy().into_owned());
        let ext = match self.kind {
            Kind::Svg => "svg",
            Kind::Png => "png",
        };
        self.path
            .with_file_name(format!(".{name}.{}.partial.{ext}", std::process::id()))
    }

    /// Moves a finished drawing at [`ChartFile::temp_path`] into place and says where on
    /// stderr, or removes it when drawing failed: the chart is replaced whole or not at all.
    pub(crate) fn finish(self, drawn: anyhow::Result<()>) -> anyhow::Result<()> {
        let temp = self.temp_path();
        let placed = drawn.and_then(|()| {
            fs::rename(&temp, self.path)
                .map_err(|e| anyhow!("{}: moving the chart into place: {e}", self.flag))
        });
        if placed.is_err() {
            let _ = fs::remove_file(&temp);
        } else {
            // Every command's `--chart` (and `--heatmap`) says where it wrote, on stderr so
            // that the table or the JSON on stdout stays clean.
            eprintln!("chart written to {}", self.path.display());
        }
        placed
    }
}

pub(crate) fn font() -> anyhow::Result<()> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok =
        *REGISTERED.get_or_init(|| register_font("sans-serif", FontStyle::Normal, FONT).is_ok());
    if ok {
        Ok(())
    } else {
        Err(anyhow!("the bundled font could not be loaded"))
    }
}

/// The charts' line colours, in order: matplotlib's "tab10" (its olive and cyan last), then black
/// and navy, so that twelve lines are told apart.
pub(crate) const PALETTE: [RGBColor; 12] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
    RGBColor(0, 0, 0),
    RGBColor(0, 0, 128),
];

/// A drawing error from plotters, as a chart's error.
pub(crate) fn draw_err(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow!("{e}")
}

/// Draws on a new SVG or PNG (as `$kind` says) of `$size` at `$path` for the option `$flag`,
/// with the bundled font:
/// `$draw` is generic drawing code over `$root`, the whole drawing area, written once and
/// compiled for both backends. An error names the option and the file.
///
/// The drawing goes to a temporary file beside the chart, renamed into place once it is
/// complete: an interrupted or failed drawing leaves the old chart as it was.
macro_rules! render {
    ($file:expr, $size:expr, |$root:ident| $draw:expr) => {{
        use anyhow::Context as _;
        let file: $crate::cmd::storm::chart::ChartFile<'_> = $file;
        $crate::cmd::storm::chart::font()?;
        let temp = file.temp_path();
        let path = temp.as_path();
        let drawn = (|| match file.kind {
            $crate::cmd::storm::chart::Kind::Svg => {
                let $root = plotters::prelude::SVGBackend::new(path, $size).into_drawing_area();
                $draw?;
                $root.present().map_err(|e| anyhow::anyhow!("{e}"))
            }
            $crate::cmd::storm::chart::Kind::Png => {
                let $root = plotters::prelude::BitMapBackend::new(path, $size).into_drawing_area();
                $draw?;
                $root.present().map_err(|e| anyhow::anyhow!("{e}"))
            }
        })()
        .with_context(|| format!("{}: drawing {}", file.flag, file.path.display()));
        file.finish(drawn)
    }};
}
pub(crate) use render;

/// Draws one panel per result to `file`.
pub(crate) fn draw(
    file: ChartFile<'_>,
    scenario: &Scenario,
    results: &[&RunResult],
) -> anyhow::Result<()> {
    let height = TITLE_HEIGHT + PANEL_HEIGHT * results.len().max(1) as u32;
    render!(file, (WIDTH, height), |root| panels(
        &root, scenario, results
    ))
}

/// The y-axis of one panel, fitted to its own rule's story: the recovery after the outage,
/// not the burst at t = 0 nor another rule's spike.
#[derive(Clone, Copy, Debug, PartialEq)]
struct PanelScale {
    /// The top of the axis.
    y_max: f64,
    /// Arrivals above this are drawn cut at it, with a mark; `None` when every shown window
    /// fits.
    clip_at: Option<u64>,
    /// The most arrivals in one shown window.
    peak: u64,
}

/// One panel of load over time, shared by the storm's and the check's charts: `caption` on
/// top, time in seconds from 0 to `span` across, 0 to `y_max` up, and each fault's
/// `(start, end)` in seconds shaded (clipped to the panel).
pub(crate) fn time_panel<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    caption: &str,
    span: f64,
    y_max: f64,
    faults: impl Iterator<Item = (f64, f64)>,
) -> anyhow::Result<ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>>
where
    DB::ErrorType: 'static,
{
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 15))
        .margin(6)
        .x_label_area_size(24)
        .y_label_area_size(56)
        .build_cartesian_2d(0.0..span, 0.0..y_max)
        .map_err(draw_err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(WHITE)
        .y_labels(5)
        .x_labels(12)
        .y_label_formatter(&|v| herd_sim::figure::number(*v))
        .x_label_formatter(&|v| format!("{v}"))
        .x_desc("time (s)")
        .label_style(("sans-serif", 11))
        .axis_desc_style(("sans-serif", 11))
        .draw()
        .map_err(draw_err)?;
    let shade = RGBColor(235, 120, 120).mix(0.18).filled();
    chart
        .draw_series(
            faults
                .filter(|&(start, _)| start < span)
                .map(|(start, end)| Rectangle::new([(start, 0.0), (end.min(span), y_max)], shade)),
        )
        .map_err(draw_err)?;
    Ok(chart)
}

/// The scale of a panel showing `shown` windows of a rule whose peak after the outage is
/// `peak_after_outage`: up to its shown peak when that is at most 2.5 × capacity or 1.15 ×
/// the peak after the outage (whichever is higher), otherwise clipped there, as the page's
/// Storm chart zooms on the recovery. The capacity line is always inside.
fn panel_scale(shown: &[u64], capacity: f64, peak_after_outage: u64) -> PanelScale {
    let peak = shown.iter().copied().max().unwrap_or(0);
    let fit = (capacity * 2.5).max(peak_after_outage as f64 * 1.15).ceil();
    if peak as f64 <= fit {
        PanelScale {
            y_max: (peak as f64).max(capacity).max(1.0) * 1.08,
            clip_at: None,
            peak,
        }
    } else {
        PanelScale {
            y_max: fit.max(1.0) * 1.08,
            clip_at: Some(fit as u64),
            peak,
        }
    }
}

/// The panel's caption: the rule; how long it goes on past the `shown` windows, and how many
/// clients were still waiting at the horizon; where its bars are clipped.
fn caption(result: &RunResult, shown: usize, scale: &PanelScale) -> String {
    let mut notes = Vec::new();
    let active = result.series.arrivals.len();
    if active > shown {
        let w = result.series.window_s;
        notes.push(format!(
            "goes on to {}, past the {} shown",
            super::table::seconds(active as f64 * w),
            super::table::seconds(shown as f64 * w)
        ));
    }
    if result.waiting > 0 {
        notes.push(format!("{} still waiting at the horizon", result.waiting));
    }
    if let Some(clip) = scale.clip_at {
        notes.push(format!(
            "clipped at {clip} (peak {}), marked dark red",
            scale.peak
        ));
    }
    if notes.is_empty() {
        result.rule.to_string()
    } else {
        format!("{}: {}", result.rule, notes.join("; "))
    }
}

/// The time spans `[start, end)` of the shown windows whose arrivals go past `clip`, runs of
/// neighbouring windows merged: where the clipped bars are marked.
fn clipped_spans(arrivals: &[u64], window_s: f64, clip: u64) -> Vec<(f64, f64)> {
    let mut spans: Vec<(usize, usize)> = Vec::new();
    for (i, _) in arrivals.iter().enumerate().filter(|&(_, &a)| a > clip) {
        match spans.last_mut() {
            Some(last) if last.1 == i => last.1 = i + 1,
            _ => spans.push((i, i + 1)),
        }
    }
    spans
        .into_iter()
        .map(|(a, b)| (a as f64 * window_s, b as f64 * window_s))
        .collect()
}

/// The busiest window of each of at most `MAX_POINTS` groups, as (start time, arrivals),
/// arrivals cut at `top`.
fn points(result: &RunResult, shown: usize, top: f64) -> Vec<(f64, f64)> {
    let arrivals = &result.series.arrivals[..shown.min(result.series.arrivals.len())];
    let w = result.series.window_s;
    let group = arrivals.len().div_ceil(MAX_POINTS).max(1);
    let mut pts = Vec::with_capacity(2 * arrivals.len() / group + 2);
    for (g, chunk) in arrivals.chunks(group).enumerate() {
        let peak = (chunk.iter().copied().max().unwrap_or(0) as f64).min(top);
        let t0 = (g * group) as f64 * w;
        let t1 = ((g * group + chunk.len()) as f64) * w;
        // A step shape: flat over the group.
        pts.push((t0, peak));
        pts.push((t1, peak));
    }
    pts
}

fn panels<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    scenario: &Scenario,
    results: &[&RunResult],
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(draw_err)?;
    let (title, body) = root.split_vertically(TITLE_HEIGHT);
    let clients = results
        .first()
        .map_or(scenario.clients.count, |r| r.clients);
    title
        .titled(
            &format!(
                "Arrivals per {} ms window: {} clients, capacity {} (red line), outages shaded, seed {}",
                scenario.window_ms, clients, scenario.server.capacity, scenario.seed
            ),
            ("sans-serif", 18),
        )
        .map_err(draw_err)?;
    // The same time span as the table's sparklines: quick rules are not squeezed into a
    // corner by a slow one; a slow one's panel says how long it goes on.
    let windows = super::table::shown_windows(results);
    let window_s = results.first().map_or(1.0, |r| r.series.window_s);
    let span = (windows as f64 * window_s).max(1e-3);
    let capacity = scenario.server.capacity as f64;
    let areas = body.split_evenly((results.len().max(1), 1));
    for (area, result) in areas.iter().zip(results) {
        // Each panel's y-axis fits its own rule: one rule's spike does not flatten the
        // recovery of the others.
        let arrivals = &result.series.arrivals[..windows.min(result.series.arrivals.len())];
        let scale = panel_scale(arrivals, capacity, result.peak_after_outage);
        let y_max = scale.y_max;
        let mut chart = time_panel(
            area,
            &caption(result, windows, &scale),
            span,
            y_max,
            scenario.server.outages.iter().map(|o| (o[0], o[1])),
        )?;
        let top = scale.clip_at.map_or(f64::INFINITY, |c| c as f64);
        chart
            .draw_series(
                AreaSeries::new(points(result, windows, top), 0.0, BLUE.mix(0.25))
                    .border_style(BLUE),
            )
            .map_err(draw_err)?;
        if let Some(clip) = scale.clip_at {
            // A dark red band along the top of each run of clipped bars, with a triangle at
            // its start, so the cut shows without reading the caption.
            let mark = RGBColor(157, 2, 8);
            let spans = clipped_spans(arrivals, result.series.window_s, clip);
            chart
                .draw_series(spans.iter().map(|&(a, b)| {
                    Rectangle::new([(a, clip as f64), (b.min(span), y_max)], mark.filled())
                }))
                .map_err(draw_err)?;
            chart
                .draw_series(
                    spans
                        .iter()
                        .map(|&(a, _)| TriangleMarker::new((a, y_max), 7, mark.filled())),
                )
                .map_err(draw_err)?;
        }
        chart
            .draw_series(LineSeries::new(
                [(0.0, capacity), (span, capacity)],
                RED.stroke_width(2),
            ))
            .map_err(draw_err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use herd::RuleName;
    use herd_sim::{Limits, Simulation};

    use super::*;

    /// The default storm (2000 clients, capacity 50, an outage of 10 s), seed 1.
    fn default_runs(rules: &[RuleName]) -> (Scenario, Vec<RunResult>) {
        let scenario = Scenario::default();
        let sim = Simulation::new(&scenario, &Limits::default()).expect("the default scenario");
        let runs = rules
            .iter()
            .map(|&r| {
                sim.run(r, scenario.seed, herd_sim::Watch::none())
                    .expect("a run")
            })
            .collect();
        (scenario, runs)
    }

    #[test]
    fn a_panel_fits_its_rule_and_clips_what_goes_beyond() {
        // Everything fits: the peak sets the top, the capacity line stays inside.
        let fits = panel_scale(&[10, 40, 20], 50.0, 40);
        assert_eq!(fits.clip_at, None);
        assert!((fits.y_max - 54.0).abs() < 1e-9, "{fits:?}");
        // A burst of 2000 over a recovery that peaks at 33: clipped at 2.5 × capacity.
        let burst = panel_scale(&[2000, 0, 33, 20], 50.0, 33);
        assert_eq!(burst.clip_at, Some(125));
        assert_eq!(burst.peak, 2000);
        assert!(burst.y_max < 140.0, "{burst:?}");
        // A spike after the outage is the rule's story: it is shown whole.
        let spike = panel_scale(&[2000, 0, 2000, 20], 50.0, 2000);
        assert_eq!(spike.clip_at, None);
        // 1.15 × the peak after the outage when that is above 2.5 × capacity.
        assert_eq!(panel_scale(&[2000, 200], 50.0, 200).clip_at, Some(230));
        // Nothing at all: an axis still.
        assert!(panel_scale(&[], 0.0, 0).y_max > 0.0);
    }

    #[test]
    fn clipped_windows_merge_into_spans() {
        let spans = clipped_spans(&[200, 300, 10, 126, 125, 400], 0.5, 125);
        assert_eq!(spans, vec![(0.0, 1.0), (1.5, 2.0), (2.5, 3.0)]);
        assert!(clipped_spans(&[1, 2], 0.1, 125).is_empty());
    }

    /// Regression: one y-axis for all panels, up to the highest window of any rule, so the
    /// burst of 2000 flattened the jittered rules' recovery (33 to 92 arrivals a window) to
    /// a few pixels; and a slow rule's caption did not say what it had been cut to.
    #[test]
    fn the_chart_fits_each_panel_and_says_what_it_cut() {
        let rules = [RuleName::Exponential, RuleName::Full, RuleName::Immediate];
        let (scenario, runs) = default_runs(&rules);
        let refs: Vec<&RunResult> = runs.iter().collect();
        let shown = super::super::table::shown_windows(&refs);
        let (exponential, full, immediate) = (&runs[0], &runs[1], &runs[2]);
        assert!(exponential.series.arrivals.len() > shown);
        let scale = |r: &RunResult| {
            panel_scale(
                &r.series.arrivals[..shown.min(r.series.arrivals.len())],
                scenario.server.capacity as f64,
                r.peak_after_outage,
            )
        };
        let full_scale = scale(full);
        assert_eq!(full_scale.clip_at, Some(125), "{full_scale:?}");
        assert!(full_scale.y_max < 3.0 * scenario.server.capacity as f64);
        assert_eq!(scale(immediate).clip_at, None);

        let path =
            std::env::temp_dir().join(format!("herd-chart-test-{}-fits.svg", std::process::id()));
        let file = ChartFile {
            flag: "--chart",
            path: &path,
            kind: Kind::Svg,
        };
        draw(file, &scenario, &refs).expect("drawn");
        let svg = fs::read_to_string(&path).expect("the chart");
        let _ = fs::remove_file(&path);
        let window_s = full.series.window_s;
        let expected = [
            format!(
                "exponential: goes on to {}, past the {} shown",
                super::super::table::seconds(exponential.series.arrivals.len() as f64 * window_s),
                super::super::table::seconds(shown as f64 * window_s)
            ),
            format!(
                "full: clipped at 125 (peak {}), marked dark red",
                full_scale.peak
            ),
        ];
        for caption in expected {
            assert!(svg.contains(&caption), "{caption:?} missing from the chart");
        }
        // The immediate rule's spike after the outage is its story: no clipping there.
        assert!(!svg.contains("immediate: clipped"));
    }
}
