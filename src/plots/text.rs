//! PNG text, drawn right.
//!
//! plotters 0.3.7's `ab_glyph` renderer places every glyph at the pen position without
//! its left side bearing, so digits and narrow letters drift apart ("1 00 Gb/s",
//! "u s"). [`CrispText`] wraps a bitmap backend and draws text itself with the bundled
//! font: the same anchor and rotation rules as plotters' default, glyphs at their true
//! positions, anti-aliased by coverage. Every other call goes to the wrapped backend.

use std::sync::OnceLock;

use ab_glyph::{Font, FontRef, ScaleFont, point};
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind};

fn font() -> Option<&'static FontRef<'static>> {
    static FONT: OnceLock<Option<FontRef<'static>>> = OnceLock::new();
    FONT.get_or_init(|| FontRef::try_from_slice(super::style::DEJAVU_SANS).ok()).as_ref()
}

/// A backend whose text is drawn with correct glyph placement (see the module docs).
pub struct CrispText<B>(pub B);

impl<B: DrawingBackend> DrawingBackend for CrispText<B> {
    type ErrorType = B::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.0.get_size()
    }
    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.ensure_prepared()
    }
    fn present(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.present()
    }
    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        color: BackendColor,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_pixel(point, color)
    }
    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_line(from, to, style)
    }
    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_rect(upper_left, bottom_right, style, fill)
    }
    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_path(path, style)
    }
    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_circle(center, radius, style, fill)
    }
    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.fill_polygon(vert, style)
    }
    fn estimate_text_size<S: BackendTextStyle>(
        &self,
        text: &str,
        style: &S,
    ) -> Result<(u32, u32), DrawingErrorKind<Self::ErrorType>> {
        self.0.estimate_text_size(text, style)
    }
    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.blit_bitmap(pos, size, src)
    }

    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        let Some(font) = font() else { return self.0.draw_text(text, style, pos) };
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        let size = style.size() as f32;
        let scaled = font.as_scaled(size);
        // Lay the line out: pen positions with kerning, as plotters measures it.
        let mut glyphs = Vec::new();
        let mut pen = 0f32;
        let mut prev = None;
        for c in text.chars() {
            let id = scaled.glyph_id(c);
            if let Some(p) = prev {
                pen += scaled.kern(p, id);
            }
            glyphs.push(id.with_scale_and_position(size, point(pen, 0.0)));
            pen += scaled.h_advance(id);
            prev = Some(id);
        }
        // The box plotters reserves: advance width by size / 1.24 (its estimate_layout).
        let width = pen as i32;
        let height = (f64::from(size) / 1.24) as i32;
        let dx = match style.anchor().h_pos {
            HPos::Left => 0,
            HPos::Right => -width,
            HPos::Center => -width / 2,
        };
        let dy = match style.anchor().v_pos {
            VPos::Top => 0,
            VPos::Center => -height / 2,
            VPos::Bottom => -height,
        };
        // Baseline so that capitals and digits sit centred in that box.
        let baseline = (0.70 * size).round() as i32;
        let trans = style.transform();
        let (w, h) = self.get_size();
        let mut pixels: Vec<(i32, i32, f32)> = Vec::new();
        for g in glyphs {
            if let Some(outlined) = font.outline_glyph(g) {
                let b = outlined.px_bounds();
                let (ox, oy) = (b.min.x as i32, b.min.y as i32 + baseline);
                outlined.draw(|x, y, cov| {
                    if cov > 0.01 {
                        pixels.push((ox + x as i32, oy + y as i32, cov.min(1.0)));
                    }
                });
            }
        }
        for (x, y, cov) in pixels {
            let (x, y) = trans.transform(x + dx, y + dy);
            let (x, y) = (pos.0 + x, pos.1 + y);
            if x >= 0 && y >= 0 && (x as u32) < w && (y as u32) < h {
                self.0.draw_pixel((x, y), BackendColor { alpha: color.alpha * f64::from(cov), rgb: color.rgb })?;
            }
        }
        Ok(())
    }
}
