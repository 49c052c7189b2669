//! The ratatui items kvtop uses (add one here when a screen needs it), at the paths the
//! `ratatui` crate gives them, built without the underline colour (see Cargo.toml):
//! `size_of::<Cell>()` is 40 bytes, not 48.

pub use ratatui_core::terminal::{Frame, Terminal, TerminalOptions, Viewport};
pub use ratatui_core::{buffer, layout, style, symbols, text};

/// Where a terminal draws: the real one through crossterm, or a test's buffer.
pub mod backend {
    pub use ratatui_core::backend::{Backend, ClearType, TestBackend};
    pub use ratatui_crossterm::CrosstermBackend;
}

/// The widgets kvtop's screens are made of.
pub mod widgets {
    pub use ratatui_core::widgets::Widget;
    pub use ratatui_widgets::block::Block;
    pub use ratatui_widgets::borders::Borders;
    pub use ratatui_widgets::chart::{Axis, Chart, Dataset, GraphType};
    pub use ratatui_widgets::clear::Clear;
    pub use ratatui_widgets::paragraph::Paragraph;
}

#[cfg(test)]
mod tests {
    use super::buffer::Cell;

    /// A cell a screen position in the frame being drawn (the console's `Screen` keeps what
    /// the terminal shows in 16 bytes beside it): 7,200 positions at 160x45. With ratatui's
    /// default features a cell is 48 bytes; a dependency that turned `underline-color` back on
    /// would make it so again.
    #[test]
    fn a_screen_cell_takes_40_bytes() {
        assert_eq!(std::mem::size_of::<Cell>(), 40);
    }
}
