//! Stamps the binary with the commit it was built from, for `kvtop --version`.
//!
//! `KVTOP_GIT_COMMIT` wins (a packager building from a tarball knows the commit); otherwise git
//! is asked, and a build outside a git checkout, or without git installed, says so plainly
//! instead of naming a commit it cannot know.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=KVTOP_GIT_COMMIT");
    let commit = std::env::var("KVTOP_GIT_COMMIT")
        .ok()
        .filter(|value| !value.trim().is_empty())
        .map(|value| value.trim().to_owned())
        .or_else(commit_from_git)
        .unwrap_or_else(|| "unknown commit: not built from a git checkout".to_owned());
    println!("cargo:rustc-env=KVTOP_BUILD_COMMIT={commit}");
}

/// `COMMIT (DATE)`, with `-dirty` when tracked files differ from the commit; `None` when this
/// is not a git checkout or git cannot be run.
fn commit_from_git() -> Option<String> {
    let hash = git(&["rev-parse", "--short=12", "HEAD"])?;
    let date = git(&["log", "-1", "--format=%cs", "HEAD"]).unwrap_or_default();
    // Re-run when HEAD moves (a commit, a checkout) and when the index changes (`git add`,
    // which is also when a build's dirtiness is usually settled).
    for name in ["HEAD", "index", "packed-refs"] {
        if let Some(path) = git(&["rev-parse", "--git-path", name]) {
            watch(absolute(path));
        }
    }
    let reference = git(&["symbolic-ref", "-q", "HEAD"]);
    if let Some(path) = reference.and_then(|r| git(&["rev-parse", "--git-path", &r])) {
        watch(absolute(path));
    }
    let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
        .is_some_and(|changes| !changes.is_empty());
    let mut text = hash;
    if dirty {
        text.push_str("-dirty");
    }
    if !date.is_empty() {
        text.push_str(&format!(" {date}"));
    }
    Some(text)
}

/// Re-run when `path` changes. Cargo counts a missing file as changed on every build, which
/// would rebuild kvtop each time (a checkout whose refs are all loose has no `packed-refs`, and a
/// packed branch has no loose file): only files that exist are watched. A ref moving between
/// the two changes the file that is watched, which re-runs the script too.
fn watch(path: PathBuf) {
    if path.exists() {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}

/// Runs git in the package's directory; its trimmed stdout when it succeeds.
fn git(args: &[&str]) -> Option<String> {
    let dir = std::env::var_os("CARGO_MANIFEST_DIR")?;
    let output = Command::new("git")
        .args(args)
        .current_dir(&dir)
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?;
    Some(text.trim().to_owned())
}

/// git prints `--git-path` relative to the directory it ran in.
fn absolute(path: String) -> PathBuf {
    let path = PathBuf::from(path);
    match std::env::var_os("CARGO_MANIFEST_DIR") {
        Some(dir) if path.is_relative() => PathBuf::from(dir).join(path),
        _ => path,
    }
}
