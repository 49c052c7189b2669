//! The story pager through a real terminal: tmux runs `kvtop demo`, `l` opens the selected
//! engine's story, a search finds an argument, and `y` puts that line on tmux's clipboard
//! through OSC 52 (tmux with `set-clipboard on` keeps it as its paste buffer).

use crate::common;

use std::time::Duration;

use common::tmux::Tmux;

#[test]
fn a_searched_line_of_the_story_is_copied_through_osc_52() {
    if !common::have_program("tmux") {
        return;
    }
    let tmux = Tmux::new("story");
    let home = tempfile::tempdir().expect("temp home");
    let bin = env!("CARGO_BIN_EXE_kvtop");
    tmux.start(&format!("{bin} demo"), 100, 30, home.path(), &[]);
    tmux.run(&["set-option", "-g", "set-clipboard", "on"]);
    tmux.wait_for("the fleet", Duration::from_secs(20), |s| {
        s.matches(" UP").count() >= 3
    });
    tmux.send("l");
    let screen = tmux.wait_for("the story pager", Duration::from_secs(5), |s| {
        s.contains("story ·") && s.contains("following")
    });
    assert!(screen.contains("── log ("), "{screen}");
    tmux.send("/");
    for c in "max-model-len".chars() {
        tmux.send(&c.to_string());
    }
    tmux.wait_for("the search typed", Duration::from_secs(5), |s| {
        s.contains("/max-model-len")
    });
    tmux.send("Enter");
    tmux.wait_for("paging again", Duration::from_secs(5), |s| {
        s.contains("n/N")
    });
    tmux.send("y");
    tmux.wait_for("the copy notice", Duration::from_secs(5), |s| {
        s.contains("copied the line to the clipboard")
    });
    let buffer = tmux.run(&["show-buffer"]);
    assert!(
        buffer.starts_with("--max-model-len "),
        "tmux's clipboard holds the argument line: {buffer:?}"
    );
    tmux.send("Escape");
    tmux.wait_for("the fleet again", Duration::from_secs(5), |s| {
        !s.contains("story ·")
    });
    tmux.send("q");
    assert_eq!(tmux.wait_exit(Duration::from_secs(10)), "0");
}
