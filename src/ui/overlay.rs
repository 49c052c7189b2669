//! A box drawn over the view: centred, cleared, bordered, with a title and a bottom line.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Clear, Widget};

use crate::theme::Theme;

/// A box of `size` (cut to `area`) centred in `area`, cleared, with its border, `title` and a
/// right-aligned `bottom` line drawn; returns the inside.
pub fn overlay(
    buf: &mut Buffer,
    area: Rect,
    size: (u16, u16),
    theme: &Theme,
    title: Line<'_>,
    bottom: Line<'_>,
) -> Rect {
    let width = size.0.min(area.width);
    let height = size.1.min(area.height);
    let popup = Rect::new(
        area.x + (area.width - width) / 2,
        area.y + (area.height - height) / 2,
        width,
        height,
    );
    Clear.render(popup, buf);
    let block = Block::bordered()
        .border_style(theme.border)
        .style(theme.base)
        .title(title)
        .title_bottom(bottom.right_aligned());
    let inner = block.inner(popup);
    block.render(popup, buf);
    inner
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_box_is_centred_and_cut_to_the_area() {
        let area = Rect::new(0, 0, 40, 10);
        let mut buf = Buffer::empty(area);
        let theme = Theme::fallback();
        let inner = overlay(
            &mut buf,
            area,
            (20, 6),
            &theme,
            Line::raw("t"),
            Line::raw("b"),
        );
        assert_eq!(inner, Rect::new(11, 3, 18, 4));
        let inner = overlay(
            &mut buf,
            area,
            (60, 20),
            &theme,
            Line::raw("t"),
            Line::raw("b"),
        );
        assert_eq!(inner, Rect::new(1, 1, 38, 8));
    }
}
