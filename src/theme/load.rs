//! Finding theme files (user directory, then built-ins), following `extends`, and applying
//! each file's slots over its base.

use std::io;
use std::path::{Path, PathBuf};

use super::file::ThemeFile;
use super::{Theme, ThemeError, builtin_theme_names, is_valid_theme_name};
use kvtop_core::toml_location::{self, TomlError};

/// The themes built into the binary, by name.
pub(super) const BUILTIN_THEMES: [(&str, &str); 4] = [
    ("default", include_str!("../../themes/default.toml")),
    ("light", include_str!("../../themes/light.toml")),
    (
        "high-contrast",
        include_str!("../../themes/high-contrast.toml"),
    ),
    ("mono", include_str!("../../themes/mono.toml")),
];

/// Longest `extends` chain followed before giving up.
const MAX_EXTENDS_DEPTH: usize = 8;

/// Every theme that can be loaded: built-ins plus `*.toml` in `user_dir`, sorted.
pub fn available_theme_names(user_dir: Option<&Path>) -> Vec<String> {
    let mut names: Vec<String> = builtin_theme_names()
        .iter()
        .map(|name| (*name).to_owned())
        .collect();
    if let Some(entries) = user_dir.and_then(|dir| std::fs::read_dir(dir).ok()) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|ext| ext != "toml") {
                continue;
            }
            if let Some(stem) = path
                .file_stem()
                .and_then(|stem| stem.to_str())
                .filter(|stem| is_valid_theme_name(stem))
            {
                names.push(stem.to_owned());
            }
        }
    }
    names.sort();
    names.dedup();
    names
}

/// Loads a theme by name: `<user_dir>/NAME.toml` if present, else the built-in. Slots it does
/// not set come from the theme it `extends`, or from the built-in default theme.
pub fn load_theme(name: &str, user_dir: Option<&Path>) -> Result<Theme, ThemeError> {
    let mut chain = Vec::new();
    let mut theme = resolve(name, user_dir, &mut chain)?;
    theme.name = name.to_owned();
    Ok(theme)
}

/// Where a theme's text came from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Origin {
    Builtin,
    User(PathBuf),
}

/// One step of an `extends` chain: a name and where it was found.
type ChainLink = (String, Origin);

fn resolve(
    name: &str,
    user_dir: Option<&Path>,
    chain: &mut Vec<ChainLink>,
) -> Result<Theme, ThemeError> {
    if !is_valid_theme_name(name) {
        return Err(ThemeError::InvalidName {
            name: name.to_owned(),
        });
    }
    // A user file may extend the built-in of its own name ("default" tweaking "default"), and
    // built-ins only ever extend built-ins.
    let inside_builtin = chain
        .last()
        .is_some_and(|(_, origin)| *origin == Origin::Builtin);
    let user_file_in_chain = chain
        .iter()
        .any(|(n, origin)| n == name && matches!(origin, Origin::User(_)));
    let loop_error = |chain: &[ChainLink]| {
        let mut names: Vec<String> = chain.iter().map(|(n, _)| n.clone()).collect();
        names.push(name.to_owned());
        ThemeError::ExtendsLoop {
            name: chain.first().map_or(name, |(n, _)| n.as_str()).to_owned(),
            chain: names,
        }
    };
    if user_file_in_chain && !builtin_theme_names().contains(&name) {
        return Err(loop_error(chain));
    }
    let search_user = !inside_builtin && !user_file_in_chain;
    let (origin, text) = find(name, user_dir.filter(|_| search_user))?;
    let link = (name.to_owned(), origin.clone());
    if chain.contains(&link) || chain.len() >= MAX_EXTENDS_DEPTH {
        return Err(loop_error(chain));
    }
    chain.push(link);
    let file_label = match &origin {
        Origin::Builtin => format!("themes/{name}.toml (built-in)"),
        Origin::User(path) => path.display().to_string(),
    };
    let theme_file = parse(&file_label, &text)?;
    let base = match &theme_file.extends {
        Some(parent) => resolve(parent, user_dir, chain)?,
        None => Theme::fallback(),
    };
    Ok(theme_file.apply_to(base))
}

/// Finds a theme's text: the user directory first (when given), then the built-ins.
fn find(name: &str, user_dir: Option<&Path>) -> Result<(Origin, String), ThemeError> {
    if let Some(dir) = user_dir {
        let path = dir.join(format!("{name}.toml"));
        match std::fs::read_to_string(&path) {
            Ok(text) => return Ok((Origin::User(path), text)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(source) => return Err(ThemeError::Read { path, source }),
        }
    }
    BUILTIN_THEMES
        .iter()
        .find(|(builtin, _)| *builtin == name)
        .map(|(_, text)| (Origin::Builtin, (*text).to_owned()))
        .ok_or_else(|| ThemeError::Unknown {
            name: name.to_owned(),
            available: available_theme_names(user_dir),
        })
}

fn parse(file: &str, text: &str) -> Result<ThemeFile, ThemeError> {
    toml_location::deserialize::<ThemeFile>(text)
        .map(|(theme_file, _)| theme_file)
        .map_err(|e| match e {
            TomlError::Syntax {
                at,
                message,
                context,
            } => ThemeError::Syntax {
                file: file.to_owned(),
                at,
                message,
                context,
            },
            TomlError::Invalid { at, key, message } => ThemeError::Invalid {
                file: file.to_owned(),
                at,
                key: key.describe(),
                message,
            },
        })
}
