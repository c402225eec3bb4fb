//! Look and feel shared by every chart: the bundled font, the palette (15 colours that
//! stay apart, plus 15 marker shapes cycling on their own so greyscale prints keep
//! series apart), the title block, the legend panel and saving as SVG + PNG.

use std::path::{Path, PathBuf};
use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// DejaVu Sans (Bitstream Vera licence, `assets/fonts/DejaVuSans-LICENSE.txt`).
pub(crate) static DEJAVU_SANS: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

/// The family every chart asks for.
pub const FONT: &str = "sans-serif";

/// Register the bundled font under every family name plotters or we might ask for.
pub fn ensure_fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        for family in ["sans-serif", "serif", "monospace", "DejaVu Sans"] {
            // The font is compiled in and known to parse; a failure would only mean
            // text is missing from PNGs, which the tests would catch.
            let _ = plotters::style::register_font(family, FontStyle::Normal, DEJAVU_SANS);
        }
    });
}

/// Colours: Okabe-Ito (without its yellow, too pale on white), then Paul Tol's muted
/// scheme, then grey. Neighbours differ in hue and in lightness.
const PALETTE: [u32; 15] = [
    0x0072B2, // blue
    0xD55E00, // vermillion
    0x009E73, // bluish green
    0xCC79A7, // reddish purple
    0xE69F00, // orange
    0x56B4E9, // sky blue
    0x000000, // black
    0x882255, // wine
    0x117733, // green
    0x332288, // indigo
    0x999933, // olive
    0xAA4499, // purple
    0x44AA99, // teal
    0xCC6677, // rose
    0x888888, // grey
];

/// Colour of series `i`.
pub fn color(i: usize) -> RGBColor {
    let c = PALETTE[i % PALETTE.len()];
    RGBColor((c >> 16) as u8, (c >> 8) as u8, c as u8)
}

/// Marker shapes, filled and hollow interleaved so neighbours differ in greyscale too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    Circle,
    Square,
    TriangleUp,
    Diamond,
    TriangleDown,
    Pentagon,
    Star,
}

/// `(shape, filled)`; 14 polygons plus `x`, `+` below.
const MARKERS: [(Option<Shape>, bool); 16] = [
    (Some(Shape::Circle), true),
    (Some(Shape::Square), false),
    (Some(Shape::TriangleUp), true),
    (Some(Shape::Diamond), false),
    (None, true), // x
    (Some(Shape::TriangleDown), true),
    (Some(Shape::Circle), false),
    (Some(Shape::Square), true),
    (Some(Shape::TriangleUp), false),
    (Some(Shape::Diamond), true),
    (None, false), // +
    (Some(Shape::TriangleDown), false),
    (Some(Shape::Star), true),
    (Some(Shape::Pentagon), false),
    (Some(Shape::Pentagon), true),
    (Some(Shape::Star), false),
];

/// The marker of series `i`. 16 shapes against 15 colours: the pair is unique for any
/// number of series up to 240, and both alone are unique up to 15.
fn marker(i: usize) -> (Option<Shape>, bool) {
    MARKERS[i % MARKERS.len()]
}

fn regular(n: usize, r: f64, phase: f64) -> Vec<(f64, f64)> {
    (0..n)
        .map(|k| {
            let a = phase + k as f64 * std::f64::consts::TAU / n as f64;
            (r * a.cos(), r * a.sin())
        })
        .collect()
}

fn outline(shape: Shape, r: f64) -> Vec<(f64, f64)> {
    use std::f64::consts::FRAC_PI_2;
    match shape {
        Shape::Circle => regular(16, r, 0.0),
        Shape::Square => {
            vec![(-0.85 * r, -0.85 * r), (0.85 * r, -0.85 * r), (0.85 * r, 0.85 * r), (-0.85 * r, 0.85 * r)]
        }
        // Screen y grows downwards.
        Shape::TriangleUp => regular(3, 1.15 * r, -FRAC_PI_2).into_iter().map(|(x, y)| (x, y + 0.2 * r)).collect(),
        Shape::TriangleDown => regular(3, 1.15 * r, FRAC_PI_2).into_iter().map(|(x, y)| (x, y - 0.2 * r)).collect(),
        Shape::Diamond => vec![(0.0, -1.2 * r), (r, 0.0), (0.0, 1.2 * r), (-r, 0.0)],
        Shape::Pentagon => regular(5, 1.05 * r, -FRAC_PI_2),
        Shape::Star => (0..10)
            .map(|k| {
                let rr = if k % 2 == 0 { 1.3 * r } else { 0.55 * r };
                let a = -FRAC_PI_2 + k as f64 * std::f64::consts::PI / 5.0;
                (rr * a.cos(), rr * a.sin())
            })
            .collect(),
    }
}

/// Draw series `i`'s marker centred on pixel `at` of `area` (a pixel-coordinate area
/// whose origin is the backend's).
pub fn draw_marker<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    at: (i32, i32),
    i: usize,
    r: f64,
) -> Result<(), String> {
    let c = color(i);
    let px = |pts: Vec<(f64, f64)>| -> Vec<(i32, i32)> {
        pts.into_iter().map(|(x, y)| (at.0 + x.round() as i32, at.1 + y.round() as i32)).collect()
    };
    match marker(i) {
        (Some(shape), filled) => {
            let pts = px(outline(shape, r));
            let mut closed = pts.clone();
            closed.push(pts[0]);
            if filled {
                area.draw(&Polygon::new(pts, c.filled())).map_err(de)?;
                // A thin white rim keeps overlapping markers apart.
                area.draw(&PathElement::new(closed, WHITE.stroke_width(1))).map_err(de)?;
            } else {
                area.draw(&Polygon::new(pts, WHITE.filled())).map_err(de)?;
                area.draw(&PathElement::new(closed, c.stroke_width(2))).map_err(de)?;
            }
        }
        (None, diagonal) => {
            let d = r.round() as i32;
            let (a, b) = if diagonal {
                ([(-d, -d), (d, d)], [(-d, d), (d, -d)])
            } else {
                let d = (1.2 * r).round() as i32;
                ([(-d, 0), (d, 0)], [(0, -d), (0, d)])
            };
            for seg in [a, b] {
                let seg: Vec<_> = seg.iter().map(|&(x, y)| (at.0 + x, at.1 + y)).collect();
                area.draw(&PathElement::new(seg, c.stroke_width(3))).map_err(de)?;
            }
        }
    }
    Ok(())
}

/// A drawing error as text.
pub fn de<E: std::fmt::Display>(e: E) -> String {
    format!("drawing failed: {e}")
}

/// The innermost cause of a drawing backend's error, as the system says it (`File too
/// large (os error 27)`): the backend's own text wraps it in three layers of Rust names.
fn cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut inner = e;
    while let Some(next) = inner.source() {
        inner = next;
    }
    let text = inner.to_string();
    // The bitmap backend gives no source, only its Debug text around the system's words
    // (`ImageError(IoError(Custom { kind: Other, error: "File too large (os error 27)" }))`).
    match text.split_once("error: \"").and_then(|(_, rest)| rest.split_once('"')) {
        Some((words, _)) => words.to_string(),
        None => text,
    }
}

/// A text style of the bundled font.
pub fn text(size: f64, color: &RGBColor) -> TextStyle<'_> {
    TextStyle::from((FONT, size).into_font()).color(color)
}

/// Dark grey for secondary text.
pub const GREY_TEXT: RGBColor = RGBColor(80, 80, 80);

/// Pixel width of `s` at `size` in the bundled font.
pub fn text_width(s: &str, size: f64) -> u32 {
    (FONT, size).into_font().box_size(s).map(|(w, _)| w).unwrap_or((s.len() as f64 * size * 0.6) as u32)
}

/// Height of the title block.
pub const HEADER: u32 = 64;

/// Draw the title (large) and subtitle (smaller, grey) centred at the top of `area`;
/// returns the area below.
pub fn header<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    subtitle: &str,
) -> Result<DrawingArea<DB, Shift>, String> {
    let (w, _) = area.dim_in_pixel();
    let (top, body) = area.split_vertically(HEADER);
    let cx = w as i32 / 2;
    let title_size = fit_size(title, 22.0, w.saturating_sub(40));
    top.draw_text(title, &text(title_size, &BLACK).pos(Pos::new(HPos::Center, VPos::Top)), (cx, 10)).map_err(de)?;
    let sub_size = fit_size(subtitle, 15.0, w.saturating_sub(40));
    top.draw_text(subtitle, &text(sub_size, &GREY_TEXT).pos(Pos::new(HPos::Center, VPos::Top)), (cx, 40))
        .map_err(de)?;
    Ok(body)
}

/// The largest size not above `size` at which `s` fits in `width` pixels (not below 10).
pub fn fit_size(s: &str, size: f64, width: u32) -> f64 {
    let mut size = size;
    while size > 10.0 && text_width(s, size) > width {
        size -= 1.0;
    }
    size
}

/// One line of a legend.
#[derive(Clone, Debug)]
pub enum Key {
    /// Series `i` (colour and marker), with or without its line.
    Series(usize, bool),
    /// A grey dashed reference line (`y = x`, the lower bound).
    Reference,
    /// A filled swatch of series `i`'s colour with its marker (the best-algorithm map).
    Swatch(usize),
    /// A plain coloured box (the Gantt chart's kinds).
    Box(RGBColor),
}

/// Font size of legend text.
pub const LEGEND_FONT: f64 = 14.0;
const LEGEND_ROW: i32 = 22;
const LEGEND_GLYPH: i32 = 36;

/// Width a legend of `labels` needs.
pub fn legend_width(title: &str, labels: &[String]) -> u32 {
    let widest = labels.iter().map(|l| text_width(l, LEGEND_FONT)).max().unwrap_or(0);
    (widest + LEGEND_GLYPH as u32 + 28).max(text_width(title, LEGEND_FONT) + 20).max(140)
}

/// Draw a legend with `title` at the top of `area` (its own panel, beside the plot).
pub fn legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    root: &DrawingArea<DB, Shift>,
    title: &str,
    keys: &[(Key, String)],
    top: i32,
) -> Result<(), String> {
    // Everything in root (backend) pixels, offset by the panel's origin.
    let (xs, _) = area.get_pixel_range();
    let x0 = xs.start + 8;
    let rows = keys.len() as i32;
    let (_, h) = area.dim_in_pixel();
    let row = LEGEND_ROW.min(((h as i32 - top - 40) / rows.max(1)).max(14));
    let height = 30 + rows * row;
    let width = xs.end - xs.start - 12;
    root.draw(&Rectangle::new(
        [(x0 - 4, top), (x0 - 4 + width, top + height)],
        RGBColor(200, 200, 200).stroke_width(1),
    ))
    .map_err(de)?;
    root.draw_text(title, &text(LEGEND_FONT, &BLACK), (x0 + 4, top + 7)).map_err(de)?;
    for (k, (key, label)) in keys.iter().enumerate() {
        let y = top + 30 + k as i32 * row + row / 2;
        let gx = x0 + 4;
        match *key {
            Key::Series(i, line) => {
                if line {
                    root.draw(&PathElement::new(vec![(gx, y), (gx + LEGEND_GLYPH - 8, y)], color(i).stroke_width(2)))
                        .map_err(de)?;
                }
                draw_marker(root, (gx + (LEGEND_GLYPH - 8) / 2, y), i, 5.0)?;
            }
            Key::Reference => {
                dashed_hline(root, gx, gx + LEGEND_GLYPH - 8, y)?;
            }
            Key::Swatch(i) => {
                root.draw(&Rectangle::new([(gx, y - 8), (gx + LEGEND_GLYPH - 8, y + 8)], color(i).filled()))
                    .map_err(de)?;
                draw_marker_on_fill(root, (gx + (LEGEND_GLYPH - 8) / 2, y), i, 5.0)?;
            }
            Key::Box(c) => {
                root.draw(&Rectangle::new([(gx, y - 7), (gx + LEGEND_GLYPH - 8, y + 7)], c.filled())).map_err(de)?;
            }
        }
        root.draw_text(
            label,
            &text(LEGEND_FONT, &BLACK).pos(Pos::new(HPos::Left, VPos::Center)),
            (gx + LEGEND_GLYPH, y),
        )
        .map_err(de)?;
    }
    Ok(())
}

/// A marker drawn on top of its own colour (the map's cells): white, same shape.
pub fn draw_marker_on_fill<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    at: (i32, i32),
    i: usize,
    r: f64,
) -> Result<(), String> {
    let ink = if luminance(color(i)) > 0.55 { BLACK } else { WHITE };
    match marker(i) {
        (Some(shape), filled) => {
            let pts: Vec<(i32, i32)> = outline(shape, r)
                .into_iter()
                .map(|(x, y)| (at.0 + x.round() as i32, at.1 + y.round() as i32))
                .collect();
            if filled {
                area.draw(&Polygon::new(pts, ink.filled())).map_err(de)?;
            } else {
                let mut closed = pts.clone();
                closed.push(pts[0]);
                area.draw(&PathElement::new(closed, ink.stroke_width(2))).map_err(de)?;
            }
        }
        (None, diagonal) => {
            let d = r.round() as i32;
            let segs = if diagonal {
                [[(-d, -d), (d, d)], [(-d, d), (d, -d)]]
            } else {
                [[(-d, 0), (d, 0)], [(0, -d), (0, d)]]
            };
            for seg in segs {
                let seg: Vec<_> = seg.iter().map(|&(x, y)| (at.0 + x, at.1 + y)).collect();
                area.draw(&PathElement::new(seg, ink.stroke_width(2))).map_err(de)?;
            }
        }
    }
    Ok(())
}

/// Relative luminance in 0..1 (for choosing black or white text on a colour).
pub fn luminance(c: RGBColor) -> f64 {
    (0.299 * c.0 as f64 + 0.587 * c.1 as f64 + 0.114 * c.2 as f64) / 255.0
}

/// Grey used for reference lines.
pub const REFERENCE: RGBColor = RGBColor(110, 110, 110);

/// A horizontal dashed reference line between pixel columns `x0` and `x1`.
pub fn dashed_hline<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, x0: i32, x1: i32, y: i32) -> Result<(), String> {
    dashed(area, (x0, y), (x1, y))
}

/// A dashed reference line between two pixels.
pub fn dashed<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, a: (i32, i32), b: (i32, i32)) -> Result<(), String> {
    let (dx, dy) = ((b.0 - a.0) as f64, (b.1 - a.1) as f64);
    let len = (dx * dx + dy * dy).sqrt();
    if len < 1.0 {
        return Ok(());
    }
    let (dash, gap) = (8.0, 5.0);
    let mut t = 0.0;
    while t < len {
        let t1 = (t + dash).min(len);
        let p = |s: f64| ((a.0 as f64 + dx * s / len).round() as i32, (a.1 as f64 + dy * s / len).round() as i32);
        area.draw(&PathElement::new(vec![p(t), p(t1)], REFERENCE.stroke_width(2))).map_err(de)?;
        t += dash + gap;
    }
    Ok(())
}

/// A chart that can be drawn on any backend.
pub trait Chart {
    /// Pixel size.
    fn size(&self) -> (u32, u32);
    /// Draw on `root` (the whole canvas, white).
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String>;

    /// Write `<stem>.svg` and `<stem>.png`; returns both paths.
    fn save(&self, stem: &Path) -> Result<Vec<PathBuf>, String>
    where
        Self: Sized,
    {
        let svg = stem.with_extension("svg");
        let png = stem.with_extension("png");
        // `with_extension` would cut a stem containing a dot; stems here have none.
        save_svg(self, &svg)?;
        save_png(self, &png)?;
        Ok(vec![svg, png])
    }
}

/// Draw `chart` into an SVG file, replacing any file of that name only once it is whole.
pub fn save_svg<C: Chart>(chart: &C, path: &Path) -> Result<(), String> {
    crate::files::replace_through_temp(path, path, |tmp| draw_svg(chart, tmp, path))
}

/// Draw `chart` into a PNG file, replacing any file of that name only once it is whole.
pub fn save_png<C: Chart>(chart: &C, path: &Path) -> Result<(), String> {
    // A plot cut short (`ulimit -f`, a second Ctrl-C) replaced a whole one of an earlier
    // run with a truncated file when drawn in place.
    crate::files::replace_through_temp(path, path, |tmp| draw_png(chart, tmp, path))
}

/// Draw `chart` as SVG into exactly `to`, a file the caller has made safe to write (a
/// temporary one: see [`save_svg`]); messages name `shown`.
pub fn draw_svg<C: Chart>(chart: &C, to: &Path, shown: &Path) -> Result<(), String> {
    ensure_fonts();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, chart.size()).into_drawing_area();
        root.fill(&WHITE).map_err(de)?;
        chart.draw(&root)?;
        root.present().map_err(|e| format!("cannot write {}: {}", shown.display(), cause(&e)))?;
    }
    // XML 1.0 allows no control character but the tab and the line ends: a name holding
    // one (the ESC of an escape sequence) left a file no SVG reader opens. Each is written
    // as the terminal shows it (`\u{1b}`).
    std::fs::write(to, crate::units::escape_controls(&svg).as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", shown.display()))
}

/// Draw `chart` as PNG into exactly `to`, as [`draw_svg`] does.
pub fn draw_png<C: Chart>(chart: &C, to: &Path, shown: &Path) -> Result<(), String> {
    ensure_fonts();
    let root = super::text::CrispText(BitMapBackend::new(to, chart.size())).into_drawing_area();
    root.fill(&WHITE).map_err(de)?;
    chart.draw(&root)?;
    root.present().map_err(|e| format!("cannot write {}: {}", shown.display(), cause(&e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifteen_distinct_colours_and_markers() {
        let colours: std::collections::HashSet<_> = (0..15).map(|i| PALETTE[i]).collect();
        assert_eq!(colours.len(), 15);
        let markers: std::collections::HashSet<_> = (0..15).map(|i| format!("{:?}", marker(i))).collect();
        assert_eq!(markers.len(), 15);
    }

    #[test]
    fn font_is_registered_and_measures_text() {
        ensure_fonts();
        let w = text_width("1 MiB", 14.0);
        assert!((20..80).contains(&w), "{w}");
    }
}
