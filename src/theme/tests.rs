//! Unit tests for theme loading (the embedded files are also covered in tests/config_files.rs).

use ratatui::style::{Color, Modifier, Style};

use super::load::BUILTIN_THEMES;
use super::*;

fn user_dir_with(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).expect("write theme");
    }
    dir
}

#[test]
fn default_file_matches_the_fallback() {
    assert_eq!(
        load_theme("default", None).expect("loads"),
        Theme::fallback()
    );
}

#[test]
fn mono_file_matches_the_mono_fallback() {
    assert_eq!(
        load_theme("mono", None).expect("loads"),
        Theme::fallback_mono()
    );
}

#[test]
fn every_slot_key_is_set_in_the_default_file() {
    let text = BUILTIN_THEMES
        .iter()
        .find(|(name, _)| *name == "default")
        .map(|(_, text)| *text)
        .expect("default is built in");
    for slot in SLOT_NAMES {
        assert!(
            text.lines()
                .any(|line| line.starts_with(&format!("{slot} = "))),
            "default.toml does not set {slot}"
        );
    }
    assert_eq!(SLOT_NAMES.len(), 22);
}

#[test]
fn builtin_names_match_the_embedded_files() {
    let embedded: Vec<&str> = BUILTIN_THEMES.iter().map(|(name, _)| *name).collect();
    assert_eq!(builtin_theme_names(), embedded.as_slice());
}

#[test]
fn user_theme_extends_and_overrides_one_slot() {
    let dir = user_dir_with(&[(
        "ops.toml",
        "extends = \"default\"\n[styles]\nheader = { fg = \"white\", bg = \"#005f87\" }\n",
    )]);
    let theme = load_theme("ops", Some(dir.path())).expect("loads");
    let expected = Theme {
        name: "ops".into(),
        header: Style::new()
            .fg(Color::White)
            .bg(Color::Rgb(0x00, 0x5f, 0x87)),
        ..Theme::fallback()
    };
    assert_eq!(theme, expected);
}

#[test]
fn user_theme_can_shadow_a_builtin_and_extend_it() {
    let dir = user_dir_with(&[(
        "default.toml",
        "extends = \"default\"\n[styles]\nok = { fg = 46 }\n",
    )]);
    let theme = load_theme("default", Some(dir.path())).expect("loads");
    assert_eq!(theme.ok, Style::new().fg(Color::Indexed(46)));
    assert_eq!(theme.warn, Theme::fallback().warn);
}

#[test]
fn user_theme_extending_mono_stays_monochrome() {
    let dir = user_dir_with(&[(
        "quiet.toml",
        "extends = \"mono\"\n[styles]\nselected = { modifiers = [\"underlined\"] }\n",
    )]);
    let theme = load_theme("quiet", Some(dir.path())).expect("loads");
    assert!(theme.monochrome);
    assert_eq!(
        theme.selected,
        Style::new().add_modifier(Modifier::UNDERLINED)
    );
    assert_eq!(theme.crit, Theme::fallback_mono().crit);
}

#[test]
fn extends_loops_are_reported() {
    let dir = user_dir_with(&[
        ("a.toml", "extends = \"b\"\n"),
        ("b.toml", "extends = \"a\"\n"),
    ]);
    let err = load_theme("a", Some(dir.path())).expect_err("loop");
    assert!(matches!(err, ThemeError::ExtendsLoop { .. }), "{err:?}");
    assert!(err.to_string().contains("a -> b -> a"), "{err}");
}

#[test]
fn unknown_theme_lists_builtin_and_user_names() {
    let dir = user_dir_with(&[("ops.toml", ""), ("notes.txt", "")]);
    let err = load_theme("solarized", Some(dir.path())).expect_err("unknown");
    assert_eq!(
        err.to_string(),
        "unknown theme \"solarized\"; available: default, high-contrast, light, mono, ops"
    );
}

#[test]
fn names_cannot_escape_the_themes_directory() {
    for bad in ["../etc/passwd", "a/b", "", "a.toml", "x y"] {
        let err = load_theme(bad, None).expect_err(bad);
        assert!(
            matches!(err, ThemeError::InvalidName { .. }),
            "{bad}: {err:?}"
        );
    }
}

#[test]
fn bad_colour_names_the_file_key_and_position() {
    let dir = user_dir_with(&[("bad.toml", "[styles]\nheader = { fg = \"purplish\" }\n")]);
    let err = load_theme("bad", Some(dir.path())).expect_err("bad colour");
    let text = err.to_string();
    let file = dir.path().join("bad.toml");
    assert!(
        text.starts_with(&format!(
            "{}:2:17: styles.header.fg: \"purplish\" is not a colour",
            file.display()
        )),
        "{text}"
    );
}

#[test]
fn unknown_slot_lists_the_slots() {
    let dir = user_dir_with(&[("bad.toml", "[styles]\nheadr = {}\n")]);
    let text = load_theme("bad", Some(dir.path()))
        .expect_err("unknown slot")
        .to_string();
    assert!(text.contains("styles.headr"), "{text}");
    assert!(text.contains("unknown field `headr`"), "{text}");
    assert!(text.contains("`header`"), "{text}");
}

#[test]
fn broken_toml_shows_line_and_column() {
    let dir = user_dir_with(&[("bad.toml", "monochrome = true\n[styles\n")]);
    let err = load_theme("bad", Some(dir.path())).expect_err("syntax");
    let ThemeError::Syntax { file, at, .. } = &err else {
        panic!("expected a syntax error, got {err:?}");
    };
    assert!(file.ends_with("bad.toml"), "{file}");
    assert_eq!(at.line, 2);
}

#[test]
fn valid_names() {
    assert!(is_valid_theme_name("high-contrast"));
    assert!(is_valid_theme_name("my_theme2"));
    assert!(!is_valid_theme_name("a.b"));
    assert!(!is_valid_theme_name(&"x".repeat(65)));
}
