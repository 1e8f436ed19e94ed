//! The PNG figures of docs/results.md (plotters, bitmap backend). Text is rendered by
//! plotters' pure-Rust `ab_glyph` path from a TrueType file loaded at run time, so no
//! system font library is needed to build. Every figure carries a footer with the machine,
//! the date, the load average and the measured source.

use std::path::Path;
use vtwin_harness::BenchReport;

use anyhow::{anyhow, Context};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::FontStyle;

use crate::results::{Results, ScalingPoint};

/// The font the figures use (DejaVu Sans, present on Debian and Ubuntu hosts).
pub(crate) const DEFAULT_FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
const FONT: &str = "sans-serif";
const FOOTER: u32 = 30;

/// Loads `path` as the figures' font. The bytes live for the rest of the process (plotters
/// keeps a `'static` reference).
pub(crate) fn register_font(path: &Path) -> anyhow::Result<()> {
    let bytes = std::fs::read(path).with_context(|| format!("font {}", path.display()))?;
    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    plotters::style::register_font(FONT, FontStyle::Normal, bytes)
        .map_err(|_| anyhow!("font {}: not a TrueType/OpenType font", path.display()))
}

fn err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow!("plot: {e}")
}

/// Colour of a backend's series.
fn colour(backend: &str) -> RGBColor {
    match backend {
        "float" => RGBColor(31, 119, 180),
        "fixed" => RGBColor(44, 160, 44),
        "mpc" => RGBColor(214, 39, 40),
        _ => RGBColor(148, 103, 189),
    }
}

/// 1234 -> "1.2k", 2.1e6 -> "2.1M"; small values with 3 significant digits.
pub(crate) fn si(v: f64) -> String {
    let a = v.abs();
    let (x, suffix) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e4 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let s = if x.abs() >= 100.0 || x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        let digits = if x.abs() >= 10.0 {
            1
        } else if x.abs() >= 1.0 {
            2
        } else {
            3
        };
        let t = format!("{x:.digits$}");
        t.trim_end_matches('0').trim_end_matches('.').to_owned()
    };
    format!("{s}{suffix}")
}

/// "CPU, N cores · date UTC · load a/b/c · source X" for the figures' footer.
pub(crate) fn stamp(r: &Results) -> String {
    let load = r
        .load
        .iter()
        .filter_map(|s| s.load_average.map(|l| l[0]))
        .fold(f64::NAN, f64::max);
    format!(
        "{}, {} logical cores | {} UTC | 1-min load up to {:.1} | source {}{}",
        r.machine.as_ref().map_or("unknown CPU", |m| &m.cpu_model),
        r.machine.as_ref().map_or(0, |m| m.logical_cores),
        r.date_utc,
        load,
        r.source,
        if r.quick { " | QUICK (smoke test)" } else { "" }
    )
}

/// A figure: white background, footer with the stamp; returns the body area.
fn figure<'a>(
    path: &'a Path,
    size: (u32, u32),
    stamp: &str,
) -> anyhow::Result<(
    DrawingArea<BitMapBackend<'a>, Shift>,
    DrawingArea<BitMapBackend<'a>, Shift>,
)> {
    let root = BitMapBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let (body, footer) = root.split_vertically(size.1 - FOOTER);
    footer
        .draw(&Text::new(
            stamp.to_owned(),
            (10, 8),
            (FONT, 14).into_font().color(&RGBColor(80, 80, 80)),
        ))
        .map_err(err)?;
    Ok((root, body))
}

/// One line series: label, colour, dashed or not, points (x, y) and optional whiskers
/// (x, low, high).
struct Series {
    label: String,
    colour: RGBColor,
    dashed: bool,
    points: Vec<(f64, f64)>,
    whiskers: Vec<(f64, f64, f64)>,
}

/// Axis: description and whether it is log10.
struct Axis<'a> {
    desc: &'a str,
    log: bool,
}

/// Draws a line panel. Values in `series` are raw. A log axis is drawn as log10 of the
/// value on a linear axis with its own ticks at 1-2-5 (or 1 to 9) times powers of ten,
/// labelled with the value (plotters' own log axis labels only ranges that hold a power of
/// ten).
fn line_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    x: &Axis<'_>,
    y: &Axis<'_>,
    series: &[Series],
    y_floor: Option<f64>,
    legend: SeriesLabelPosition,
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let tx = |v: f64| if x.log { v.log10() } else { v };
    let ty = |v: f64| if y.log { v.log10() } else { v };
    let ok = |log: bool, v: f64| v.is_finite() && (!log || v > 0.0);
    let xs: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .filter(|&v| ok(x.log, v))
        .map(tx)
        .collect();
    let ys: Vec<f64> = series
        .iter()
        .flat_map(|s| {
            s.points
                .iter()
                .map(|p| p.1)
                .chain(s.whiskers.iter().flat_map(|w| [w.1, w.2]))
        })
        .filter(|&v| ok(y.log, v))
        .map(ty)
        .collect();
    let (x0, x1) = range(&xs);
    let (mut y0, y1) = range(&ys);
    if let Some(f) = y_floor {
        y0 = y0.min(ty(f));
    }
    let mut chart = ChartBuilder::on(area)
        .caption(title, (FONT, 20))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(err)?;
    let fmt = |v: &f64| si(*v);
    {
        let mut mesh = chart.configure_mesh();
        mesh.x_desc(x.desc)
            .y_desc(y.desc)
            .x_label_formatter(&fmt)
            .y_label_formatter(&fmt)
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 15))
            .light_line_style(RGBColor(235, 235, 235));
        if x.log {
            mesh.x_labels(0).disable_x_mesh();
        }
        if y.log {
            mesh.y_labels(0).disable_y_mesh();
        }
        mesh.draw().map_err(err)?;
    }
    // Own ticks of the log axes: grid line in the plot, label outside it.
    let base = area.get_base_pixel();
    let rel = |q: (i32, i32)| (q.0 - base.0, q.1 - base.1);
    let grid = RGBColor(215, 215, 215);
    let label_font = (FONT, 14).into_font();
    // (log scale?, range, along x?) of each axis.
    for (log, lo, hi, along_x) in [(x.log, x0, x1, true), (y.log, y0, y1, false)] {
        if !log {
            continue;
        }
        for v in log_ticks(lo, hi) {
            let t = v.log10();
            let (line, at, offset, pos) = if along_x {
                let pos = Pos::new(HPos::Center, VPos::Top);
                (vec![(t, y0), (t, y1)], (t, y0), (0, 6), pos)
            } else {
                let pos = Pos::new(HPos::Right, VPos::Center);
                (vec![(x0, t), (x1, t)], (x0, t), (-6, 0), pos)
            };
            chart
                .draw_series(std::iter::once(PathElement::new(line, grid)))
                .map_err(err)?;
            let (px, py) = rel(chart.backend_coord(&at));
            area.draw(&Text::new(
                si(v),
                (px + offset.0, py + offset.1),
                TextStyle::from(label_font.clone()).pos(pos),
            ))
            .map_err(err)?;
        }
    }
    for s in series {
        let c = s.colour;
        let p: Vec<(f64, f64)> = s
            .points
            .iter()
            .filter(|(a, b)| ok(x.log, *a) && ok(y.log, *b))
            .map(|&(a, b)| (tx(a), ty(b)))
            .collect();
        let style = c.stroke_width(2);
        if s.dashed {
            // Dashes: ten per segment, interpolated in panel pixels.
            let mut dashes = Vec::new();
            for w in p.windows(2) {
                let (a, b) = (
                    rel(chart.backend_coord(&w[0])),
                    rel(chart.backend_coord(&w[1])),
                );
                for i in 0..10 {
                    let at = |f: f64| {
                        (
                            a.0 + (f * f64::from(b.0 - a.0)) as i32,
                            a.1 + (f * f64::from(b.1 - a.1)) as i32,
                        )
                    };
                    let f0 = f64::from(i) / 10.0;
                    dashes.push(PathElement::new(vec![at(f0), at(f0 + 0.06)], style));
                }
            }
            for dash in dashes {
                area.draw(&dash).map_err(err)?;
            }
            chart
                .draw_series(std::iter::empty::<PathElement<(f64, f64)>>())
                .map_err(err)?
                .label(s.label.clone())
                .legend(move |(a, b)| {
                    PathElement::new(vec![(a, b), (a + 7, b)], c.stroke_width(2))
                });
            chart
                .draw_series(p.iter().map(|&q| Cross::new(q, 5, c.stroke_width(2))))
                .map_err(err)?;
        } else {
            chart
                .draw_series(LineSeries::new(p.clone(), style))
                .map_err(err)?
                .label(s.label.clone())
                .legend(move |(a, b)| {
                    PathElement::new(vec![(a, b), (a + 20, b)], c.stroke_width(2))
                });
            chart
                .draw_series(p.iter().map(|&q| Circle::new(q, 4, c.filled())))
                .map_err(err)?;
        }
        for &(a, lo, hi) in &s.whiskers {
            if ok(x.log, a) && ok(y.log, lo) && ok(y.log, hi) {
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(tx(a), ty(lo)), (tx(a), ty(hi))],
                        c.stroke_width(1),
                    )))
                    .map_err(err)?;
            }
        }
    }
    chart
        .configure_series_labels()
        .label_font((FONT, 14))
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(180, 180, 180))
        .position(legend)
        .draw()
        .map_err(err)?;
    Ok(())
}

/// Bounds of the values (already in axis units) padded by 6% of the span; (0, 1) when
/// there are none.
fn range(vals: &[f64]) -> (f64, f64) {
    let (lo, hi) = vals
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        });
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let span = if hi > lo {
        hi - lo
    } else {
        lo.abs().max(1.0) * 0.1
    };
    (lo - 0.06 * span, hi + 0.06 * span)
}

/// Tick values of a log axis spanning log10 values `lo..hi`: the first of 1 x 10^k,
/// {1, 2, 5} x 10^k, {1, ..., 9} x 10^k that gives at least 3 ticks.
pub(crate) fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let mantissas: [&[f64]; 3] = [
        &[1.0],
        &[1.0, 2.0, 5.0],
        &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0],
    ];
    let mut best = Vec::new();
    for m in mantissas {
        best = (lo.floor() as i32..=hi.ceil() as i32)
            .flat_map(|k| m.iter().map(move |&a| a * 10f64.powi(k)))
            .filter(|v| {
                let t = v.log10();
                t >= lo && t <= hi
            })
            .collect();
        if best.len() >= 3 {
            break;
        }
    }
    best
}

/// One bar: name, value, optional whisker (low, high), colour, text above the bar.
struct Bar {
    name: String,
    value: f64,
    whisker: Option<(f64, f64)>,
    colour: RGBColor,
    note: String,
}

fn bar_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    y_desc: &str,
    bars: &[Bar],
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let n = bars.len().max(1);
    let top = bars
        .iter()
        .map(|b| b.whisker.map_or(b.value, |w| w.1.max(b.value)))
        .fold(0.0f64, f64::max)
        * 1.18;
    let top = if top > 0.0 { top } else { 1.0 };
    let mut chart = ChartBuilder::on(area)
        .caption(title, (FONT, 20))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0f64..top)
        .map_err(err)?;
    let names: Vec<String> = bars.iter().map(|b| b.name.clone()).collect();
    let xf = |v: &f64| {
        let i = v.round();
        if (v - i).abs() < 1e-6 && i >= 0.0 {
            names.get(i as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    let yf = |v: &f64| si(*v);
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n + 1)
        .x_label_formatter(&xf)
        .y_label_formatter(&yf)
        .y_desc(y_desc)
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 15))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(err)?;
    for (i, b) in bars.iter().enumerate() {
        let x = i as f64;
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(x - 0.32, 0.0), (x + 0.32, b.value)],
                b.colour.mix(0.8).filled(),
            )))
            .map_err(err)?;
        let mut text_y = b.value;
        if let Some((lo, hi)) = b.whisker {
            text_y = text_y.max(hi);
            chart
                .draw_series([
                    PathElement::new(vec![(x, lo), (x, hi)], BLACK.stroke_width(1)),
                    PathElement::new(vec![(x - 0.08, lo), (x + 0.08, lo)], BLACK.stroke_width(1)),
                    PathElement::new(vec![(x - 0.08, hi), (x + 0.08, hi)], BLACK.stroke_width(1)),
                ])
                .map_err(err)?;
        }
        chart
            .draw_series(std::iter::once(Text::new(
                b.note.clone(),
                (x, text_y + top * 0.015),
                TextStyle::from((FONT, 14).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom)),
            )))
            .map_err(err)?;
    }
    Ok(())
}

/// Figure (a): test NLL (and TVD and TSTR AUC when eval ran) against epsilon.
pub(crate) fn utility(r: &Results, path: &Path) -> anyhow::Result<bool> {
    let Some(u) = &r.utility else {
        return Ok(false);
    };
    let metric = |row: &crate::results::UtilityRow, key: &str| -> Option<f64> {
        match key {
            "nll" => row.nll_test,
            _ => {
                let e = row.eval.as_ref()?;
                let mut v = e;
                for k in key.split('.') {
                    v = v.get(k)?;
                }
                v.as_f64()
            }
        }
    };
    let tvd_key = ["tvd_2way", "tvd_1way"]
        .into_iter()
        .find(|k| u.rows.iter().any(|row| metric(row, k).is_some()));
    let auc_key = "tstr.auc_synth";
    let has_auc = u.rows.iter().any(|row| metric(row, auc_key).is_some());
    let mut panels: Vec<(String, String, String)> = vec![(
        format!("Test NLL on Adult after T = {} iterations", u.iters),
        "nll".into(),
        "test NLL per record (nats, lower is better)".into(),
    )];
    if let Some(k) = tvd_key {
        panels.push((
            format!("{k} (synthetic vs test)"),
            k.into(),
            format!("mean {k} (lower is better)"),
        ));
    }
    if has_auc {
        panels.push((
            "TSTR AUC, logistic regression (test on real)".into(),
            auc_key.into(),
            "AUC".into(),
        ));
    }
    let width = (620 * panels.len() as u32).max(1000);
    let st = stamp(r);
    let (root, body) = figure(path, (width, 520), &st)?;
    let areas = body.split_evenly((1, panels.len()));
    for ((title, key, ydesc), area) in panels.iter().zip(&areas) {
        let mut series: Vec<Series> = crate::utility::BACKENDS
            .iter()
            .map(|&b| Series {
                label: b.into(),
                colour: colour(b),
                dashed: b == "mpc",
                points: u
                    .rows
                    .iter()
                    .filter(|row| row.backend == b)
                    .filter_map(|row| Some((row.epsilon, metric(row, key)?)))
                    .collect(),
                whiskers: vec![],
            })
            .collect();
        // The earlier run's fixed backend, for comparison (its float and mpc lie close by).
        if let Some(b) = &r.utility_before {
            let points: Vec<(f64, f64)> = b
                .utility
                .rows
                .iter()
                .filter(|row| row.backend == "fixed")
                .filter_map(|row| Some((row.epsilon, metric(row, key)?)))
                .collect();
            if !points.is_empty() {
                series.push(Series {
                    label: format!("fixed, before ({})", b.label),
                    colour: RGBColor(150, 150, 150),
                    dashed: true,
                    points,
                    whiskers: vec![],
                });
            }
        }
        if key == auc_key {
            let real = u
                .real_baseline
                .as_ref()
                .and_then(|t| t["auc_real"].as_f64());
            if let Some(v) = real {
                let eps: Vec<f64> = u.rows.iter().map(|row| row.epsilon).collect();
                let lo = eps.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = eps.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                series.push(Series {
                    label: "trained on real data".into(),
                    colour: RGBColor(90, 90, 90),
                    dashed: true,
                    points: vec![(lo, v), (hi, v)],
                    whiskers: vec![],
                });
            }
        }
        line_panel(
            area,
            title,
            &Axis {
                desc: "epsilon (RDP, add/remove, delta 1e-5; log scale)",
                log: true,
            },
            &Axis {
                desc: ydesc,
                log: false,
            },
            &series,
            None,
            // The AUC panel's top holds the train-on-real line, its bottom the data.
            if key == auc_key {
                SeriesLabelPosition::MiddleRight
            } else {
                SeriesLabelPosition::UpperRight
            },
        )?;
    }
    root.present().map_err(err)?;
    Ok(true)
}

fn backend_bars(j: &BenchReport) -> Vec<Bar> {
    j.backends
        .iter()
        .map(|e| {
            let ms = &e.ms_per_iteration;
            let ratio = e
                .ratio_vs_fixed
                .map_or(String::new(), |r| format!(" (x{r:.2})"));
            Bar {
                colour: colour(&e.backend),
                name: e.backend.clone(),
                value: ms.median,
                whisker: Some((ms.p10, ms.p90)),
                note: format!("{}{ratio}", si(ms.median)),
            }
        })
        .collect()
}

/// Figure (b): ms per iteration per backend, Adult and demo (bars: median; whiskers: p10-p90).
pub(crate) fn ms_per_iteration(r: &Results, path: &Path) -> anyhow::Result<bool> {
    let Some(t) = &r.timing else { return Ok(false) };
    let st = stamp(r);
    let (root, body) = figure(path, (1240, 520), &st)?;
    let areas = body.split_evenly((1, 2));
    for (area, (name, j)) in areas.iter().zip([("Adult", &t.adult), ("demo", &t.demo)]) {
        let w = &j.workload;
        bar_panel(
            area,
            &format!(
                "{name}: B {}, K {}, d {} (x = ratio to fixed)",
                w.batch_expected, w.components, w.dimension
            ),
            "ms per iteration (median; whiskers p10-p90)",
            &backend_bars(j),
        )?;
    }
    root.present().map_err(err)?;
    Ok(true)
}

const FACTORS: [(&str, &str); 4] = [
    ("batch", "expected batch size B"),
    ("components", "components K"),
    ("parties", "parties P (total width fixed)"),
    ("dimension", "gradient dimension d = K (1 + width)"),
];

fn points_of<'a>(s: &'a [ScalingPoint], factor: &str, backend: &str) -> Vec<&'a ScalingPoint> {
    let mut v: Vec<&ScalingPoint> = s
        .iter()
        .filter(|p| p.factor == factor && p.backend == backend)
        .collect();
    v.sort_by(|a, b| a.x().total_cmp(&b.x()));
    v
}

/// Figure (c), time: ms per iteration against B, K, P and d, fixed vs mpc.
pub(crate) fn scaling_time(r: &Results, path: &Path) -> anyhow::Result<bool> {
    let Some(s) = &r.scaling else {
        return Ok(false);
    };
    let st = stamp(r);
    let (root, body) = figure(path, (1240, 960), &st)?;
    let areas = body.split_evenly((2, 2));
    for ((factor, desc), area) in FACTORS.iter().zip(&areas) {
        let series: Vec<Series> = ["fixed", "mpc"]
            .iter()
            .map(|&b| {
                let p = points_of(&s.points, factor, b);
                Series {
                    label: b.into(),
                    colour: colour(b),
                    dashed: false,
                    points: p.iter().map(|q| (q.x(), q.ms_median)).collect(),
                    whiskers: p.iter().map(|q| (q.x(), q.ms_p10, q.ms_p90)).collect(),
                }
            })
            .collect();
        line_panel(
            area,
            &format!("ms per iteration vs {factor}"),
            &Axis {
                desc,
                log: *factor != "parties",
            },
            &Axis {
                desc: "ms per iteration (log; whiskers p10-p90)",
                log: true,
            },
            &series,
            None,
            SeriesLabelPosition::UpperLeft,
        )?;
    }
    root.present().map_err(err)?;
    Ok(true)
}

/// Figure (c), bytes: mpc bytes per iteration (between nodes, uploaded by the parties, to
/// the coordinator) against B, K, P and d.
pub(crate) fn scaling_bytes(r: &Results, path: &Path) -> anyhow::Result<bool> {
    let Some(s) = &r.scaling else {
        return Ok(false);
    };
    let st = stamp(r);
    let (root, body) = figure(path, (1240, 960), &st)?;
    let areas = body.split_evenly((2, 2));
    for ((factor, desc), area) in FACTORS.iter().zip(&areas) {
        let p = points_of(&s.points, factor, "mpc");
        let mk = |label: &str, c: RGBColor, f: &dyn Fn(&ScalingPoint) -> Option<f64>| Series {
            label: label.into(),
            colour: c,
            dashed: false,
            points: p.iter().filter_map(|q| Some((q.x(), f(q)?))).collect(),
            whiskers: vec![],
        };
        let series = vec![
            mk("between nodes", colour("mpc"), &|q| q.bytes_between_nodes),
            mk("uploaded by all parties", RGBColor(255, 127, 14), &|q| {
                q.bytes_uploaded_total
            }),
            mk("nodes to coordinator", RGBColor(23, 190, 207), &|q| {
                q.bytes_to_coordinator
            }),
        ];
        line_panel(
            area,
            &format!("mpc bytes per iteration vs {factor}"),
            &Axis {
                desc,
                log: *factor != "parties",
            },
            &Axis {
                desc: "bytes per iteration (median, log)",
                log: true,
            },
            &series,
            None,
            SeriesLabelPosition::UpperLeft,
        )?;
    }
    root.present().map_err(err)?;
    Ok(true)
}

/// Figure (d): bytes per iteration on Adult by link, and rounds per iteration against P.
pub(crate) fn bytes_rounds(r: &Results, path: &Path) -> anyhow::Result<bool> {
    let Some(t) = &r.timing else { return Ok(false) };
    let st = stamp(r);
    let (root, body) = figure(path, (1240, 520), &st)?;
    let areas = body.split_evenly((1, 2));
    let mut bars = Vec::new();
    for e in &t.adult.backends {
        let b = e.backend.as_str();
        let Some(traffic) = &e.traffic else {
            continue;
        };
        let c = colour(b);
        let mut add = |name: String, v: f64| {
            bars.push(Bar {
                name,
                value: v,
                whisker: None,
                colour: c,
                note: si(v),
            })
        };
        add(
            format!("{b}: nodes"),
            traffic.bytes_between_nodes_per_iteration,
        );
        add(
            format!("{b}: to coord."),
            traffic.bytes_to_coordinator_per_iteration,
        );
        for (p, &v) in traffic
            .bytes_uploaded_per_party_per_iteration
            .iter()
            .enumerate()
        {
            add(format!("{b}: party {}", p + 1), v);
        }
    }
    bar_panel(
        &areas[0],
        "Adult: bytes per iteration by link (median)",
        "bytes per iteration",
        &bars,
    )?;
    if let Some(s) = &r.scaling {
        let series: Vec<Series> = FACTORS
            .iter()
            .map(|(f, _)| {
                let p = points_of(&s.points, f, "mpc");
                Series {
                    label: format!("sweep over {f}"),
                    colour: match *f {
                        "batch" => RGBColor(31, 119, 180),
                        "components" => RGBColor(44, 160, 44),
                        "parties" => RGBColor(214, 39, 40),
                        _ => RGBColor(148, 103, 189),
                    },
                    dashed: false,
                    points: p
                        .iter()
                        .filter_map(|q| Some((q.config.parties as f64, q.rounds?)))
                        .collect(),
                    whiskers: vec![],
                }
            })
            .collect();
        line_panel(
            &areas[1],
            "mpc rounds per iteration vs parties (every sweep)",
            &Axis {
                desc: "parties P",
                log: false,
            },
            &Axis {
                desc: "rounds per iteration (median)",
                log: false,
            },
            &series,
            Some(0.0),
            SeriesLabelPosition::LowerRight,
        )?;
    }
    root.present().map_err(err)?;
    Ok(true)
}

/// Histogram of `v` over `bins` equal bins of [lo, hi] as a step line of counts.
fn histogram_steps(v: &[f64], lo: f64, hi: f64, bins: usize) -> Vec<(f64, f64)> {
    let w = (hi - lo) / bins as f64;
    let mut counts = vec![0usize; bins];
    for &x in v {
        let i = ((x - lo) / w).floor();
        if i >= 0.0 && (i as usize) < bins {
            counts[i as usize] += 1;
        }
    }
    let mut pts = vec![(lo, 0.0)];
    for (i, &c) in counts.iter().enumerate() {
        let x0 = lo + i as f64 * w;
        pts.push((x0, c as f64));
        pts.push((x0 + w, c as f64));
    }
    pts.push((hi, 0.0));
    pts
}

/// n times the N(mean, 1) density times the bin width, on [lo, hi].
fn normal_counts(n: usize, mean: f64, lo: f64, hi: f64, w: f64) -> Vec<(f64, f64)> {
    (0..=48)
        .map(|i| {
            let x = lo + (hi - lo) * i as f64 / 48.0;
            let d = (-(x - mean).powi(2) / 2.0).exp() / (2.0 * std::f64::consts::PI).sqrt();
            (x, n as f64 * w * d)
        })
        .collect()
}

/// The mechanism audit's figure: per report (`vtwin audit-mechanism --out`), the scores of
/// the runs with and without the canary with the largest bound, against N(0, 1) and
/// N(mu, 1) of the claim, and the threshold.
pub(crate) fn audit_scores(reports: &[serde_json::Value], path: &Path) -> anyhow::Result<()> {
    let (root, body) = figure(
        path,
        (620 * reports.len().max(1) as u32, 500),
        "vtwin audit-mechanism: scores of the runs with and without the canary",
    )?;
    let areas = body.split_evenly((1, reports.len().max(1)));
    for (area, r) in areas.iter().zip(reports) {
        let canaries = r["canaries"].as_array().cloned().unwrap_or_default();
        let Some(c) = canaries.iter().max_by(|a, b| {
            let e = |v: &serde_json::Value| v["epsilon_lower_bound"].as_f64().unwrap_or(0.0);
            e(a).total_cmp(&e(b))
        }) else {
            continue;
        };
        let scores = |k: &str| -> Vec<f64> {
            c[k].as_array()
                .map(|v| v.iter().filter_map(|x| x.as_f64()).collect())
                .unwrap_or_default()
        };
        let (with, without) = (scores("scores_with"), scores("scores_without"));
        let mu = r["mu_theoretical"].as_f64().unwrap_or(0.0);
        let (lo, hi, bins) = (-4.0, mu + 4.0, 40usize);
        let w = (hi - lo) / bins as f64;
        let threshold = r["threshold"].as_f64().unwrap_or(0.0);
        let tall = (without.len().max(with.len()) as f64 * w * 0.45).max(1.0);
        let series = [
            Series {
                label: format!("without canary ({} runs)", without.len()),
                colour: colour("float"),
                dashed: false,
                points: histogram_steps(&without, lo, hi, bins),
                whiskers: Vec::new(),
            },
            Series {
                label: format!("with {} canary", c["canary"].as_str().unwrap_or("?")),
                colour: colour("mpc"),
                dashed: false,
                points: histogram_steps(&with, lo, hi, bins),
                whiskers: Vec::new(),
            },
            Series {
                label: "N(0, 1): the claimed noise".into(),
                colour: colour("float"),
                dashed: true,
                points: normal_counts(without.len(), 0.0, lo, hi, w),
                whiskers: Vec::new(),
            },
            Series {
                label: format!("N({mu:.2}, 1): a canary at C"),
                colour: colour("mpc"),
                dashed: true,
                points: normal_counts(with.len(), mu, lo, hi, w),
                whiskers: Vec::new(),
            },
            Series {
                label: format!("threshold mu/2 = {threshold:.2}"),
                colour: RGBColor(0, 0, 0),
                dashed: true,
                points: vec![(threshold, 0.0), (threshold, tall)],
                whiskers: Vec::new(),
            },
        ];
        line_panel(
            area,
            &format!(
                "{}: eps lower bound {:.2} vs theory {:.2}",
                r["backend"].as_str().unwrap_or("?"),
                r["epsilon_lower_bound"].as_f64().unwrap_or(f64::NAN),
                r["epsilon_theoretical"].as_f64().unwrap_or(f64::NAN)
            ),
            &Axis {
                desc: "score (projection of G + Z - S on the canary, in noise sd)",
                log: false,
            },
            &Axis {
                desc: "runs per bin",
                log: false,
            },
            &series,
            Some(0.0),
            SeriesLabelPosition::UpperLeft,
        )?;
    }
    root.present().map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn si_prefixes_and_digits() {
        assert_eq!(si(0.5), "0.5");
        assert_eq!(si(1.25), "1.25");
        assert_eq!(si(12.34), "12.3");
        assert_eq!(si(640.0), "640");
        assert_eq!(si(9999.0), "9999");
        assert_eq!(si(20_000.0), "20k");
        assert_eq!(si(2_173_154.0), "2.17M");
        assert_eq!(si(1.5e6), "1.5M");
        assert_eq!(si(3e9), "3G");
    }

    #[test]
    fn log_ticks_cover_the_range() {
        // Two decades: powers of ten are enough.
        assert_eq!(log_ticks(0.0, 3.0), vec![1.0, 10.0, 100.0, 1000.0]);
        // 25..400 (no three powers of ten): 1-2-5.
        assert_eq!(
            log_ticks(25f64.log10(), 400f64.log10()),
            vec![50.0, 100.0, 200.0]
        );
        // 13.7..63: 1 to 9.
        assert_eq!(
            log_ticks(13.7f64.log10(), 63f64.log10()),
            vec![20.0, 30.0, 40.0, 50.0, 60.0]
        );
    }
}
