//! The console drawn into a `TestBackend`, as text.

use kvtop::app::App;
use kvtop_core::fleet::Ts;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

/// The screen at `width` × `height` as of `now`, one line per row.
pub fn text(app: &App, width: u16, height: u16, now: Ts) -> String {
    let mut terminal =
        Terminal::new(TestBackend::new(width, height)).unwrap_or_else(|e| panic!("{e}"));
    terminal
        .draw(|frame| kvtop::ui::draw(frame, app, now))
        .unwrap_or_else(|e| panic!("{e}"));
    let buffer = terminal.backend().buffer().clone();
    (0..height)
        .map(|y| {
            (0..width)
                .map(|x| buffer.cell((x, y)).map_or(" ", |c| c.symbol()))
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}
