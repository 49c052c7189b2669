//! Writing text and styles into the screen buffer: what ratatui's `Buffer::set_line` and
//! `Buffer::set_style` do, with the same result, at a fraction of the cost for the text the
//! console mostly draws.
//!
//! `set_line` splits every span into grapheme clusters and measures each one's width, and
//! `set_style` locates every cell afresh, with a bounds check, one at a time. Nearly all the
//! console's text is ASCII (figures, names, labels; outside text is sanitised first), where a
//! byte is a cell: that text is written a byte per cell, and anything else goes through ratatui
//! unchanged. Before this, a frame of 8 engines at 160×45 spent about a quarter of its time in
//! `set_line` (perf over `cargo bench --bench render`).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::Line;

/// Write `line` at (`x`, `y`), at most `max_width` cells of it: `Buffer::set_line`'s result.
/// Returns the position after the last cell written.
pub fn put_line(buf: &mut Buffer, x: u16, y: u16, line: &Line<'_>, max_width: u16) -> (u16, u16) {
    let mut remaining = max_width;
    let mut x = x;
    for span in line {
        if remaining == 0 {
            break;
        }
        let style = line.style.patch(span.style);
        let (end, _) = put_str(buf, x, y, &span.content, usize::from(remaining), style);
        remaining = remaining.saturating_sub(end.saturating_sub(x));
        x = end;
    }
    (x, y)
}

/// Write `text` at (`x`, `y`) in `style`, at most `max_width` cells and never past the buffer's
/// right edge: `Buffer::set_stringn`'s result (control characters are left out). ASCII is
/// written a byte per cell; other text goes to `set_stringn`.
pub fn put_str(
    buf: &mut Buffer,
    x: u16,
    y: u16,
    text: &str,
    max_width: usize,
    style: Style,
) -> (u16, u16) {
    if !text.is_ascii() {
        return buf.set_stringn(x, y, text, max_width, style);
    }
    let area = buf.area;
    let room = area
        .right()
        .saturating_sub(x)
        .min(u16::try_from(max_width).unwrap_or(u16::MAX));
    // Where ratatui would panic (a row or column outside the buffer), nothing is written.
    if room == 0 || x < area.left() || y < area.top() || y >= area.bottom() {
        return (x, y);
    }
    let start = usize::from(y - area.y) * usize::from(area.width) + usize::from(x - area.x);
    let mut written: u16 = 0;
    for (cell, byte) in buf.content[start..start + usize::from(room)]
        .iter_mut()
        .zip(text.bytes().filter(|b| !b.is_ascii_control()))
    {
        cell.set_char(char::from(byte)).set_style(style);
        written += 1;
    }
    (x + written, y)
}

/// Apply `style` to every cell of `area` (within the buffer): `Buffer::set_style`'s result,
/// a row at a time. An empty style changes nothing and is skipped.
pub fn fill_style(buf: &mut Buffer, area: Rect, style: Style) {
    if style == Style::new() {
        return;
    }
    let area = buf.area.intersection(area);
    if area.is_empty() {
        return;
    }
    let width = usize::from(buf.area.width);
    let left = usize::from(area.x - buf.area.x);
    for row in usize::from(area.y - buf.area.y)..usize::from(area.bottom() - buf.area.y) {
        let start = row * width + left;
        for cell in &mut buf.content[start..start + usize::from(area.width)] {
            cell.set_style(style);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use ratatui::style::{Color, Modifier};
    use ratatui::text::Span;

    fn style_of(n: u8) -> Style {
        match n % 5 {
            0 => Style::new(),
            1 => Style::new().fg(Color::Red),
            2 => Style::new().bg(Color::Blue).add_modifier(Modifier::BOLD),
            3 => Style::new()
                .remove_modifier(Modifier::BOLD)
                .fg(Color::Indexed(8)),
            _ => Style::new().add_modifier(Modifier::REVERSED),
        }
    }

    /// A buffer away from the origin, with a pattern to overwrite.
    fn canvas() -> Buffer {
        let mut buf = Buffer::empty(Rect::new(3, 2, 12, 4));
        for (i, cell) in buf.content.iter_mut().enumerate() {
            cell.set_char(char::from(b'a' + (i % 26) as u8))
                .set_style(style_of(i as u8));
        }
        buf
    }

    fn text() -> impl Strategy<Value = String> {
        // ASCII with controls, and now and then a wide or combining character (the fallback).
        proptest::collection::vec(
            prop_oneof![
                8 => proptest::char::range(' ', '~'),
                1 => proptest::char::range('\0', '\x1f'),
                1 => Just('\x7f'),
                1 => prop_oneof![Just('界'), Just('é'), Just('\u{301}'), Just('\u{200b}')],
            ],
            0..20,
        )
        .prop_map(|chars| chars.into_iter().collect())
    }

    proptest! {
        #[test]
        fn put_line_writes_what_set_line_writes(
            spans in proptest::collection::vec((text(), any::<u8>()), 0..4),
            line_style in any::<u8>(),
            x in 3u16..17,
            y in 2u16..6,
            width in 0u16..20,
        ) {
            let line = Line::from(
                spans
                    .iter()
                    .map(|(t, s)| Span::styled(t.as_str(), style_of(*s)))
                    .collect::<Vec<_>>(),
            )
            .style(style_of(line_style));
            let (mut ours, mut theirs) = (canvas(), canvas());
            let at = put_line(&mut ours, x, y, &line, width);
            let expected = theirs.set_line(x, y, &line, width);
            prop_assert_eq!(at, expected);
            prop_assert_eq!(ours, theirs);
        }

        #[test]
        fn fill_style_styles_what_set_style_styles(
            x in 0u16..20, y in 0u16..8, w in 0u16..20, h in 0u16..8, s in any::<u8>(),
        ) {
            let area = Rect::new(x, y, w, h);
            let (mut ours, mut theirs) = (canvas(), canvas());
            fill_style(&mut ours, area, style_of(s));
            theirs.set_style(area, style_of(s));
            prop_assert_eq!(ours, theirs);
        }
    }

    #[test]
    fn a_row_below_the_buffer_is_left_alone() {
        let mut buf = canvas();
        let before = buf.clone();
        assert_eq!(put_str(&mut buf, 3, 9, "abc", 5, Style::new()), (3, 9));
        assert_eq!(buf, before);
    }
}
