//! Line charts as PNG through plotters' bitmap backend. Text is drawn with ab_glyph from the DejaVu Sans
//! bytes the `dejavu` crate embeds, so no system font library (fontconfig, freetype) is needed.

use std::path::Path;
use std::sync::Once;

use anyhow::{anyhow, Result};
use plotters::prelude::*;
use plotters::style::FontStyle;

/// One curve: a label, its points, and whether it is measured (markers) or analytical (a plain line).
pub struct Series {
    /// Legend text.
    pub label: String,
    /// (x, y) points in x order.
    pub points: Vec<(f64, f64)>,
    /// Measured points get markers; analytical curves do not.
    pub measured: bool,
    /// Drawn dashed (comparison curves that are neither measured nor the paper's model).
    pub dashed: bool,
    /// Colour index (curves of one N share it).
    pub colour: usize,
}

fn register_font() -> Result<()> {
    static ONCE: Once = Once::new();
    let mut res = Ok(());
    ONCE.call_once(|| {
        res = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            dejavu::sans::regular(),
        )
        .map_err(|_| anyhow!("the bundled DejaVu Sans font did not load"));
    });
    res
}

/// Draws `series` into a PNG at `path`.
pub fn line_chart(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    x_range: (f64, f64),
    y_range: (f64, f64),
    series: &[Series],
) -> Result<()> {
    register_font()?;
    let root = BitMapBackend::new(path, (1000, 700)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(65)
        .build_cartesian_2d(x_range.0..x_range.1, y_range.0..y_range.1)
        .map_err(|e| anyhow!("{e}"))?;
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .label_style(("sans-serif", 15))
        .draw()
        .map_err(|e| anyhow!("{e}"))?;
    for s in series {
        let colour = Palette99::pick(s.colour).to_rgba();
        let style = if s.measured {
            colour.stroke_width(1)
        } else {
            colour.stroke_width(2)
        };
        let drawn = if s.dashed {
            chart
                .draw_series(DashedLineSeries::new(s.points.iter().copied(), 8, 5, style))
                .map_err(|e| anyhow!("{e}"))?
        } else {
            chart
                .draw_series(LineSeries::new(s.points.iter().copied(), style))
                .map_err(|e| anyhow!("{e}"))?
        };
        drawn
            .label(s.label.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour));
        if s.measured {
            chart
                .draw_series(s.points.iter().map(|&p| Circle::new(p, 3, colour.filled())))
                .map_err(|e| anyhow!("{e}"))?;
        }
    }
    chart
        .configure_series_labels()
        // Success curves fall from the top left; the lower left stays clear.
        .position(SeriesLabelPosition::LowerLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()
        .map_err(|e| anyhow!("{e}"))?;
    root.present().map_err(|e| anyhow!("{e}"))?;
    Ok(())
}
