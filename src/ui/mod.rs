//! Drawing: `draw(frame, &App, now)`; views and widgets.
