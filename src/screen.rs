//! The console's screen: the frame being drawn, and what the terminal shows, kept small.
//!
//! ratatui's `Terminal` keeps two whole buffers, the frame being drawn and the one before it,
//! to send the terminal only the cells that changed: 40 bytes a cell, 576 KB at 160×45, the
//! largest single piece of the console's memory at one engine. Here the frame is drawn into one
//! ratatui `Buffer` as before, and what the terminal shows is kept as 16 bytes a cell
//! ([`Shown`]); a cell that does not fit (a symbol of more than one character, a forced width)
//! is kept whole beside them. The changes are found exactly as ratatui's `Buffer::diff` finds
//! them between the two buffers, wide characters included (a test holds the two to the same
//! answer over random frames), and written through the same backend.

use std::collections::HashMap;

use ratatui::backend::{Backend, ClearType};
use ratatui::buffer::{Buffer, Cell, CellDiffOption, CellWidth};
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier};

/// A terminal backend and the frame drawn on it.
pub struct Screen<B: Backend> {
    backend: B,
    frame: Buffer,
    shown: Shown,
    /// Indices of the cells the last diff sent, and of those it did not find shown already,
    /// kept to spare two allocations a frame.
    updates: Vec<usize>,
    unsure: Vec<usize>,
}

impl<B: Backend> Screen<B> {
    /// A screen of `area` on a terminal that shows nothing yet (just cleared).
    pub fn new(backend: B, area: Rect) -> Self {
        Screen {
            backend,
            frame: Buffer::empty(area),
            shown: Shown::blank(area),
            updates: Vec::new(),
            unsure: Vec::new(),
        }
    }

    /// Draw one frame with `draw` (into a buffer reset to blanks) and send the terminal the
    /// cells that changed, then hide the cursor and flush, as ratatui's `Terminal::draw` does.
    pub fn draw(&mut self, draw: impl FnOnce(&mut Buffer, Rect)) -> Result<(), B::Error> {
        let area = self.frame.area;
        draw(&mut self.frame, area);
        diff(
            &self.shown,
            &self.frame.content,
            &mut self.updates,
            &mut self.unsure,
        );
        let width = usize::from(area.width.max(1));
        let cells = &self.frame.content;
        let updates = self.updates.iter().filter_map(|&i| {
            let cell = cells.get(i)?;
            let x = u16::try_from(i % width).ok()? + area.x;
            let y = u16::try_from(i / width).ok()? + area.y;
            Some((x, y, cell))
        });
        self.backend.draw(updates)?;
        self.shown.take(&self.frame.content, &self.unsure);
        self.backend.hide_cursor()?;
        self.backend.flush()?;
        self.frame.reset();
        Ok(())
    }

    /// Follow the terminal to a new size: clear it, and draw the next frame whole.
    pub fn resize(&mut self, area: Rect) -> Result<(), B::Error> {
        self.backend.clear_region(ClearType::All)?;
        self.frame.resize(area);
        self.frame.reset();
        self.shown = Shown::blank(area);
        Ok(())
    }

    pub fn backend_mut(&mut self) -> &mut B {
        &mut self.backend
    }

    pub fn show_cursor(&mut self) -> Result<(), B::Error> {
        self.backend.show_cursor()
    }
}

/// What the terminal shows, a cell at a time.
struct Shown {
    cells: Vec<Packed>,
    /// The cells that do not pack, whole, by index.
    whole: HashMap<usize, Cell>,
}

/// One cell in 16 bytes: its one character, colours, modifiers, how it is diffed and its width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Packed {
    symbol: u32,
    fg: Color,
    bg: Color,
    modifier: Modifier,
    /// The `CellDiffOption` (0 none, 1 skip, 2 always update), `SKIP`, or `WHOLE`.
    flags: u8,
    width: u8,
}

/// The cell's deprecated `skip` flag.
const SKIP: u8 = 0x04;
/// The cell is in `Shown::whole`.
const WHOLE: u8 = 0x80;

/// What a blank cell shows (`Cell::EMPTY`, as a reset buffer holds).
const BLANK: Packed = Packed {
    symbol: ' ' as u32,
    fg: Color::Reset,
    bg: Color::Reset,
    modifier: Modifier::empty(),
    flags: 0,
    width: 1,
};

/// Modifiers that show on a blank cell, as ratatui's diff counts them.
const VISIBLE_ON_BLANK: Modifier = Modifier::REVERSED
    .union(Modifier::UNDERLINED)
    .union(Modifier::SLOW_BLINK)
    .union(Modifier::RAPID_BLINK)
    .union(Modifier::CROSSED_OUT);

/// `cell` in 16 bytes, when its symbol is one character and its width not forced.
fn pack(cell: &Cell) -> Option<Packed> {
    let symbol = cell.symbol();
    Some(Packed {
        symbol: only_char(symbol)?,
        fg: cell.fg,
        bg: cell.bg,
        modifier: cell.modifier,
        flags: flags_of(cell)?,
        width: u8::try_from(symbol.cell_width()).ok()?,
    })
}

/// The cell's diff option and skip flag as `Packed::flags`; `None` for a forced width.
fn flags_of(cell: &Cell) -> Option<u8> {
    let option = match cell.diff_option {
        CellDiffOption::None => 0,
        CellDiffOption::Skip => 1,
        CellDiffOption::AlwaysUpdate => 2,
        CellDiffOption::ForcedWidth(_) => return None,
    };
    #[allow(deprecated)]
    let skip = if cell.skip { SKIP } else { 0 };
    Some(option | skip)
}

/// The symbol's one character; `None` for none or several.
fn only_char(symbol: &str) -> Option<u32> {
    if let [byte] = symbol.as_bytes() {
        return Some(u32::from(*byte));
    }
    let mut chars = symbol.chars();
    let first = chars.next()?;
    chars.next().is_none().then_some(u32::from(first))
}

/// Whether `shown` (packed) is `cell`: `pack(cell) == Some(shown)` without measuring the width,
/// which follows from the symbol.
fn same(cell: &Cell, shown: &Packed) -> bool {
    flags_of(cell) == Some(shown.flags)
        && cell.modifier == shown.modifier
        && cell.fg == shown.fg
        && cell.bg == shown.bg
        && only_char(cell.symbol()) == Some(shown.symbol)
}

impl Shown {
    fn blank(area: Rect) -> Self {
        Shown {
            cells: vec![BLANK; usize::from(area.width) * usize::from(area.height)],
            whole: HashMap::new(),
        }
    }

    fn len(&self) -> usize {
        self.cells.len()
    }

    fn whole(&self, i: usize) -> Option<&Cell> {
        match self.cells.get(i) {
            Some(packed) if packed.flags & WHOLE != 0 => self.whole.get(&i),
            _ => None,
        }
    }

    /// Whether the terminal shows `cell` at `i` (ratatui's `Cell` equality).
    fn shows(&self, i: usize, cell: &Cell) -> bool {
        match self.cells.get(i) {
            Some(shown) if shown.flags & WHOLE != 0 => self.whole.get(&i) == Some(cell),
            Some(shown) => same(cell, shown),
            None => false,
        }
    }

    fn width(&self, i: usize) -> usize {
        match (self.whole(i), self.cells.get(i)) {
            (Some(whole), _) => usize::from(whole.cell_width()),
            (None, Some(shown)) => usize::from(shown.width),
            (None, None) => 0,
        }
    }

    /// Whether a style of the cell at `i` would show on the blank columns a wide character
    /// leaves behind.
    fn visible_on_blank(&self, i: usize) -> bool {
        match (self.whole(i), self.cells.get(i)) {
            (Some(whole), _) => {
                whole.bg != Color::Reset || whole.modifier.intersects(VISIBLE_ON_BLANK)
            }
            (None, Some(shown)) => {
                shown.bg != Color::Reset || shown.modifier.intersects(VISIBLE_ON_BLANK)
            }
            (None, None) => false,
        }
    }

    fn symbol_is(&self, i: usize, symbol: &str) -> bool {
        if let Some(whole) = self.whole(i) {
            return whole.symbol() == symbol;
        }
        let mut chars = symbol.chars();
        match (self.cells.get(i), chars.next(), chars.next()) {
            (Some(shown), Some(only), None) => shown.symbol == u32::from(only),
            _ => false,
        }
    }

    /// The terminal now shows `cells` (after their diff was sent): the cells at `unsure`, the
    /// only ones the diff did not find shown already, are taken.
    fn take(&mut self, cells: &[Cell], unsure: &[usize]) {
        for &i in unsure {
            let Some(cell) = cells.get(i) else {
                continue;
            };
            if self.shows(i, cell) {
                continue;
            }
            let Some(slot) = self.cells.get_mut(i) else {
                break;
            };
            match pack(cell) {
                Some(packed) => {
                    *slot = packed;
                    self.whole.remove(&i);
                }
                None => {
                    *slot = Packed {
                        flags: WHOLE,
                        ..BLANK
                    };
                    self.whole.insert(i, cell.clone());
                }
            }
        }
    }
}

/// Whether ratatui's diff leaves `cell` alone (a cell a wide character covers, or one marked).
#[allow(deprecated)]
fn is_skip(cell: &Cell) -> bool {
    matches!(cell.diff_option, CellDiffOption::Skip)
        || (cell.skip && matches!(cell.diff_option, CellDiffOption::None))
}

/// The indices of the cells of `next` to send to a terminal showing `shown`, in order: what
/// ratatui's `Buffer::diff` yields from a buffer holding what `shown` shows to `next`. `unsure`
/// gets every other index the diff did not find shown already (cells it passed over, covered
/// by a wide character or marked skip), so that only those need taking afterwards.
fn diff(shown: &Shown, next: &[Cell], out: &mut Vec<usize>, unsure: &mut Vec<usize>) {
    out.clear();
    unsure.clear();
    let len = next.len().min(shown.len());
    let mut pos = 0usize;
    while pos < len {
        let i = pos;
        pos += 1;
        let Some(current) = next.get(i) else {
            break;
        };
        if is_skip(current) {
            unsure.push(i);
            continue;
        }
        match current.diff_option {
            CellDiffOption::Skip => unsure.push(i),
            CellDiffOption::ForcedWidth(width) => {
                pos = pos.saturating_add(usize::from(width.get().saturating_sub(1)));
                if !shown.shows(i, current) {
                    out.push(i);
                }
                unsure.extend(i..pos.min(len));
            }
            CellDiffOption::None | CellDiffOption::AlwaysUpdate => {
                let cell_width = usize::from(current.cell_width());
                if matches!(current.diff_option, CellDiffOption::None) && shown.shows(i, current) {
                    pos += cell_width.saturating_sub(1);
                    unsure.extend(i + 1..pos.min(len));
                    continue;
                }
                let previous_width = shown.width(i);
                let contains_vs16 =
                    cell_width > 1 && current.symbol().chars().any(|c| c == '\u{FE0F}');
                out.push(i);
                if contains_vs16 {
                    // Trailing columns are sent when their symbol changed.
                    pos = trailing(shown, next, i, (i + cell_width).min(len), false, len, out);
                } else if cell_width > 1 {
                    pos += cell_width - 1;
                } else if previous_width > cell_width && shown.visible_on_blank(i) {
                    // The wide character before left a visible style: every trailing column
                    // is sent again.
                    pos = trailing(shown, next, i, i + previous_width, true, len, out);
                }
                unsure.extend(i..pos.min(len));
            }
        }
    }
}

/// The trailing columns after a wide character at `i` up to `end` (growing past a wide
/// trailing cell), as ratatui's diff sends them; returns where the diff goes on.
fn trailing(
    shown: &Shown,
    next: &[Cell],
    i: usize,
    mut end: usize,
    force: bool,
    len: usize,
    out: &mut Vec<usize>,
) -> usize {
    let mut j = i + 1;
    while j < end {
        let Some(cell) = next.get(j) else {
            break;
        };
        let at = j;
        j += usize::from(cell.cell_width().max(1));
        end = end.max(j).min(len);
        if !is_skip(cell) && (force || !shown.symbol_is(at, cell.symbol())) {
            out.push(at);
        }
    }
    end
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use ratatui::backend::TestBackend;
    use ratatui::{Terminal, TerminalOptions, Viewport};

    use super::*;

    /// Symbols that exercise every path of the diff: ASCII, wide, zero-width joiners, VS16
    /// emoji, several characters, empty.
    const SYMBOLS: [&str; 10] = [
        " ",
        "a",
        "b",
        "│",
        "コ",
        "界",
        "❤\u{FE0F}",
        "e\u{301}",
        "",
        "👍",
    ];
    const COLORS: [Color; 5] = [
        Color::Reset,
        Color::Red,
        Color::Rgb(1, 2, 3),
        Color::Indexed(200),
        Color::White,
    ];
    const MODIFIERS: [Modifier; 3] = [Modifier::empty(), Modifier::BOLD, Modifier::REVERSED];

    fn cell_strategy() -> impl Strategy<Value = Cell> {
        (
            0..SYMBOLS.len(),
            0..COLORS.len(),
            0..COLORS.len(),
            0..MODIFIERS.len(),
            0..8u8,
        )
            .prop_map(|(s, fg, bg, m, option)| {
                let mut cell = Cell::new(SYMBOLS[s]);
                cell.fg = COLORS[fg];
                cell.bg = COLORS[bg];
                cell.modifier = MODIFIERS[m];
                cell.diff_option = match option {
                    0 => CellDiffOption::Skip,
                    1 => CellDiffOption::AlwaysUpdate,
                    2 => CellDiffOption::ForcedWidth(std::num::NonZeroU16::MIN.saturating_add(1)),
                    _ => CellDiffOption::None,
                };
                if option == 3 {
                    #[allow(deprecated)]
                    cell.set_skip(true);
                }
                cell
            })
    }

    /// A frame of 7×3 cells; half the frames mostly blank, so frames repeat cells often. The
    /// last cell is narrow: past a wide one there, ratatui's own diff indexes beyond the buffer
    /// and panics (this one stops at the end).
    fn frame_strategy() -> impl Strategy<Value = Vec<Cell>> {
        prop_oneof![
            proptest::collection::vec(cell_strategy(), 21),
            proptest::collection::vec(prop_oneof![Just(Cell::EMPTY), cell_strategy()], 21),
        ]
        .prop_map(|mut cells| {
            if let Some(last) = cells.last_mut() {
                *last = Cell::new("z");
            }
            cells
        })
    }

    fn buffer_of(cells: &[Cell]) -> Buffer {
        let mut buffer = Buffer::empty(Rect::new(0, 0, 7, 3));
        buffer.content = cells.to_vec();
        buffer
    }

    proptest! {
        #[test]
        fn finds_what_ratatuis_diff_finds_frame_after_frame(
            frames in proptest::collection::vec(frame_strategy(), 1..6)
        ) {
            let mut shown = Shown::blank(Rect::new(0, 0, 7, 3));
            let mut before = Buffer::empty(Rect::new(0, 0, 7, 3));
            let mut ours = Vec::new();
            let mut unsure = Vec::new();
            for cells in &frames {
                let next = buffer_of(cells);
                let theirs: Vec<(u16, u16)> =
                    before.diff(&next).into_iter().map(|(x, y, _)| (x, y)).collect();
                diff(&shown, &next.content, &mut ours, &mut unsure);
                let ours_xy: Vec<(u16, u16)> =
                    ours.iter().map(|&i| ((i % 7) as u16, (i / 7) as u16)).collect();
                prop_assert_eq!(ours_xy, theirs);
                shown.take(&next.content, &unsure);
                for (i, cell) in next.content.iter().enumerate() {
                    prop_assert!(shown.shows(i, cell));
                }
                before = next;
            }
        }
    }

    #[test]
    fn plain_cells_take_16_bytes() {
        assert_eq!(std::mem::size_of::<Packed>(), 16);
    }

    /// Frames drawn through `Screen` and through ratatui's `Terminal` leave the same screen
    /// and send the same cells, across a resize.
    #[test]
    fn draws_what_ratatuis_terminal_draws() {
        let area = Rect::new(0, 0, 12, 2);
        let mut screen = Screen::new(TestBackend::new(12, 2), area);
        let options = TerminalOptions {
            viewport: Viewport::Fixed(area),
        };
        let mut terminal = Terminal::with_options(TestBackend::new(12, 2), options).unwrap();
        let frames: [&[&str]; 4] = [
            &["kvtop 1 up", "ttft 120ms"],
            &["kvtop 1 up", "ttft 130ms"],
            &["kvtop コ up", "ttft 130ms"],
            &["kvtop 1 up", "❤\u{FE0F} 130ms"],
        ];
        for lines in frames {
            let paint = |buf: &mut Buffer, area: Rect| {
                for (row, line) in lines.iter().enumerate() {
                    buf.set_string(area.x, area.y + row as u16, line, Color::Green);
                }
            };
            screen.draw(paint).unwrap();
            terminal
                .draw(|frame| {
                    let area = frame.area();
                    paint(frame.buffer_mut(), area)
                })
                .unwrap();
            assert_eq!(screen.backend_mut().buffer(), terminal.backend().buffer());
        }
        let smaller = Rect::new(0, 0, 10, 2);
        screen.resize(smaller).unwrap();
        screen.backend_mut().resize(10, 2);
        screen
            .draw(|buf, area| {
                buf.set_string(area.x, area.y, "after", Color::Reset);
            })
            .unwrap();
        let rows: Vec<String> = (0..2)
            .map(|y| {
                (0..10)
                    .map(|x| screen.backend_mut().buffer()[(x, y)].symbol().to_owned())
                    .collect()
            })
            .collect();
        assert_eq!(rows, ["after     ", "          "]);
    }
}
