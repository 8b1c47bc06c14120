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

    /// Moves a finished drawing at [`ChartFile::temp_path`] into place, or removes it when
    /// drawing failed: the chart is replaced whole or not at all.
    pub(crate) fn finish(self, drawn: anyhow::Result<()>) -> anyhow::Result<()> {
        let temp = self.temp_path();
        let placed = drawn.and_then(|()| {
            fs::rename(&temp, self.path)
                .map_err(|e| anyhow!("{}: moving the chart into place: {e}", self.flag))
        });
        if placed.is_err() {
            let _ = fs::remove_file(&temp);
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

fn caption(result: &RunResult, shown: usize) -> String {
    let active = result.series.arrivals.len();
    if active > shown {
        format!(
            "{} (goes on to {} s)",
            result.rule,
            active as f64 * result.series.window_s
        )
    } else {
        result.rule.to_string()
    }
}

/// The busiest window of each of at most `MAX_POINTS` groups, as (start time, arrivals).
fn points(result: &RunResult, shown: usize) -> Vec<(f64, f64)> {
    let arrivals = &result.series.arrivals[..shown.min(result.series.arrivals.len())];
    let w = result.series.window_s;
    let group = arrivals.len().div_ceil(MAX_POINTS).max(1);
    let mut pts = Vec::with_capacity(2 * arrivals.len() / group + 2);
    for (g, chunk) in arrivals.chunks(group).enumerate() {
        let peak = chunk.iter().copied().max().unwrap_or(0) as f64;
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
    let peak = results
        .iter()
        .flat_map(|r| r.series.arrivals.iter().take(windows).copied())
        .max()
        .unwrap_or(0) as f64;
    let y_max = peak.max(capacity).max(1.0) * 1.08;
    let areas = body.split_evenly((results.len().max(1), 1));
    for (area, result) in areas.iter().zip(results) {
        let mut chart = ChartBuilder::on(area)
            .caption(caption(result, windows), ("sans-serif", 15))
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
            .y_label_formatter(&|v| format!("{v:.0}"))
            .x_label_formatter(&|v| format!("{v}"))
            .x_desc("time (s)")
            .label_style(("sans-serif", 11))
            .axis_desc_style(("sans-serif", 11))
            .draw()
            .map_err(draw_err)?;
        let shade = RGBColor(235, 120, 120).mix(0.18).filled();
        chart
            .draw_series(
                scenario
                    .server
                    .outages
                    .iter()
                    .filter(|o| o[0] < span)
                    .map(|o| Rectangle::new([(o[0], 0.0), (o[1].min(span), y_max)], shade)),
            )
            .map_err(draw_err)?;
        chart
            .draw_series(
                AreaSeries::new(points(result, windows), 0.0, BLUE.mix(0.25)).border_style(BLUE),
            )
            .map_err(draw_err)?;
        chart
            .draw_series(LineSeries::new(
                [(0.0, capacity), (span, capacity)],
                RED.stroke_width(2),
            ))
            .map_err(draw_err)?;
    }
    Ok(())
}
