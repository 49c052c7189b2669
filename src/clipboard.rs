//! Copying to the clipboard of the terminal the operator sits at, with OSC 52: the text travels
//! base64-encoded inside one escape sequence, so it works over SSH and through tmux (with
//! `set-clipboard` on or external), and the terminal never interprets what is copied.

use base64::Engine;

/// Longest copy sent: terminals and tmux cap the sequence (xterm at about 100 KB); a longer
/// text is cut at a character boundary.
pub const MAX_COPY: usize = 64 * 1024;

/// Whether copies go out: the setting (`[display] clipboard`) and the terminal allow it. A
/// `dumb` terminal or the Linux console does not understand OSC 52 and would show the text.
pub fn allowed(setting: bool, term: Option<&str>) -> bool {
    setting && !matches!(term, Some("dumb" | "linux"))
}

/// The OSC 52 sequence that puts `text` on the clipboard.
pub fn sequence(text: &str) -> String {
    let mut end = text.len().min(MAX_COPY);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let encoded = base64::engine::general_purpose::STANDARD.encode(&text.as_bytes()[..end]);
    format!("\u{1b}]52;c;{encoded}\u{7}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_travels_encoded_and_bounded() {
        let seq = sequence("kvtop \u{1b}[2J é");
        assert!(seq.starts_with("\u{1b}]52;c;") && seq.ends_with('\u{7}'));
        assert_eq!(seq.matches('\u{1b}').count(), 1, "{seq:?}");
        let body = &seq[7..seq.len() - 1];
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(body)
            .unwrap_or_default();
        assert_eq!(String::from_utf8_lossy(&decoded), "kvtop \u{1b}[2J é");
        let long = "é".repeat(MAX_COPY);
        let seq = sequence(&long);
        assert!(seq.len() < MAX_COPY * 4 / 3 + 16);
    }

    #[test]
    fn a_dumb_terminal_or_the_setting_turns_it_off() {
        assert!(allowed(true, Some("xterm-256color")));
        assert!(allowed(true, Some("tmux-256color")));
        assert!(allowed(true, None));
        assert!(!allowed(true, Some("dumb")));
        assert!(!allowed(true, Some("linux")));
        assert!(!allowed(false, Some("xterm")));
    }
}
