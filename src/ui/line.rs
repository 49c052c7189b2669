//! One-line bars (header, footer) made of segments that drop out, least important first, when
//! the terminal is too narrow for all of them.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

/// Columns between two segments.
pub(crate) const GAP: usize = 2;

/// A piece of a one-line bar.
pub struct Segment<'a> {
    pub spans: Vec<Span<'a>>,
    /// 0 is never dropped; otherwise the highest number is dropped first.
    pub priority: u8,
    /// Aligned to the right edge instead of the left.
    pub right: bool,
}

impl<'a> Segment<'a> {
    /// A segment aligned to the left edge.
    pub fn left(priority: u8, spans: Vec<Span<'a>>) -> Self {
        Segment {
            spans,
            priority,
            right: false,
        }
    }

    /// A segment aligned to the right edge.
    pub fn right(priority: u8, spans: Vec<Span<'a>>) -> Self {
        Segment {
            spans,
            priority,
            right: true,
        }
    }

    /// Columns the segment takes.
    pub fn width(&self) -> usize {
        self.spans.iter().map(Span::width).sum()
    }
}

fn total_width(segments: &[Segment<'_>]) -> usize {
    let widths: usize = segments.iter().map(Segment::width).sum();
    widths + GAP * segments.len().saturating_sub(1)
}

/// Drop segments until the rest fit in `width` (or only never-dropped ones remain).
pub fn fit(mut segments: Vec<Segment<'_>>, width: usize) -> Vec<Segment<'_>> {
    while total_width(&segments) > width {
        let droppable = segments
            .iter()
            .enumerate()
            .filter(|(_, s)| s.priority > 0)
            .max_by_key(|(i, s)| (s.priority, *i))
            .map(|(i, _)| i);
        match droppable {
            Some(i) => {
                segments.remove(i);
            }
            None => break,
        }
    }
    segments
}

/// Draw segments on the first row of `area`: left ones from the left edge, right ones against
/// the right edge.
pub fn render(buf: &mut Buffer, area: Rect, segments: Vec<Segment<'_>>) {
    if area.width == 0 || area.height == 0 {
        return;
    }
    let segments = fit(segments, usize::from(area.width));
    let (right, left): (Vec<_>, Vec<_>) = segments.into_iter().partition(|s| s.right);
    let right_width = total_width(&right);
    let gap = " ".repeat(GAP);

    let mut spans: Vec<Span<'_>> = Vec::new();
    for (i, seg) in left.into_iter().enumerate() {
        if i > 0 {
            spans.push(Span::raw(gap.clone()));
        }
        spans.extend(seg.spans);
    }
    super::cells::put_line(buf, area.x, area.y, &Line::from(spans), area.width);

    let mut spans: Vec<Span<'_>> = Vec::new();
    for (i, seg) in right.into_iter().enumerate() {
        if i > 0 {
            spans.push(Span::raw(gap.clone()));
        }
        spans.extend(seg.spans);
    }
    let width = u16::try_from(right_width)
        .unwrap_or(u16::MAX)
        .min(area.width);
    let x = area.x + area.width - width;
    super::cells::put_line(buf, x, area.y, &Line::from(spans), width);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(priority: u8, text: &'static str) -> Segment<'static> {
        Segment::left(priority, vec![Span::raw(text)])
    }

    #[test]
    fn least_important_segments_go_first() {
        let kept = fit(vec![seg(0, "aaaa"), seg(2, "bbbb"), seg(1, "cccc")], 10);
        let texts: Vec<String> = kept
            .iter()
            .map(|s| s.spans.iter().map(|s| s.content.to_string()).collect())
            .collect();
        assert_eq!(texts, ["aaaa", "cccc"]);
    }

    #[test]
    fn never_dropped_segments_stay_even_when_too_wide() {
        let kept = fit(vec![seg(0, "aaaaaaaaaaaa"), seg(1, "b")], 4);
        assert_eq!(kept.len(), 1);
    }

    #[test]
    fn renders_left_and_right() {
        let area = Rect::new(0, 0, 12, 1);
        let mut buf = Buffer::empty(area);
        render(
            &mut buf,
            area,
            vec![seg(0, "ab"), Segment::right(0, vec![Span::raw("yz")])],
        );
        let row: String = (0..12).map(|x| buf[(x, 0)].symbol().to_string()).collect();
        assert_eq!(row, "ab        yz");
    }
}
