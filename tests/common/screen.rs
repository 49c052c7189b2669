//! The console in tests: keys into `update`, the screen drawn into a `TestBackend`, as a buffer
//! or as text.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use kvtop::app::{App, Event, update};
use kvtop_core::fleet::Ts;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;

/// Press `code` (no modifiers) at `now`.
pub fn press(app: &mut App, code: KeyCode, now: Ts) {
    update(
        app,
        Event::Key(KeyEvent::new(code, KeyModifiers::NONE)),
        now,
    );
}

/// Press the character key `c` at `now`.
pub fn press_char(app: &mut App, c: char, now: Ts) {
    press(app, KeyCode::Char(c), now);
}

/// The screen at `width` × `height` as of `now`.
pub fn render(app: &App, width: u16, height: u16, now: Ts) -> Buffer {
    let mut terminal =
        Terminal::new(TestBackend::new(width, height)).unwrap_or_else(|e| panic!("{e}"));
    terminal
        .draw(|frame| kvtop::ui::draw(frame, app, now))
        .unwrap_or_else(|e| panic!("draw: {e}"));
    terminal.backend().buffer().clone()
}

/// A buffer as text, one line per row, with trailing blanks removed.
pub fn buffer_text(buf: &Buffer) -> String {
    let area = buf.area;
    (area.top()..area.bottom())
        .map(|y| {
            let line: String = (area.left()..area.right())
                .map(|x| buf[(x, y)].symbol())
                .collect();
            line.trim_end().to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The screen at `width` × `height` as of `now`, one line per row, every row full width.
pub fn text(app: &App, width: u16, height: u16, now: Ts) -> String {
    let buffer = render(app, width, height, now);
    (0..height)
        .map(|y| {
            (0..width)
                .map(|x| buffer.cell((x, y)).map_or(" ", |c| c.symbol()))
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}
