//! Stamps the binary with the commit it was built from, for `kvtop --version`.
//!
//! `KVTOP_GIT_COMMIT` wins (a packager building from a tarball knows the commit); otherwise git
//! is asked, and a build outside a git checkout, or without git installed, says so plainly
//! instead of naming a commit it cannot know.
//!
//! The shipped build (`[profile.dist]`) also has its functions laid out in the order of
//! `benches/symbol-order.txt` and its relocations packed (see `link_the_shipped_build`).

use std::path::{Path, PathBuf};
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
    link_the_shipped_build();
}

/// How the shipped build (`[profile.dist]`, the one profile optimised for size) is linked, on
/// Linux: two ways to map less of the binary, each used only when this build's linker takes it.
fn link_the_shipped_build() {
    println!("cargo:rerun-if-env-changed=KVTOP_LINK_MAP");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    if var("OPT_LEVEL") != "s" || !var("TARGET").contains("-linux-") {
        return;
    }
    let (Some(dir), Some(out)) = (
        std::env::var_os("CARGO_MANIFEST_DIR"),
        std::env::var_os("OUT_DIR"),
    ) else {
        return;
    };
    let out = PathBuf::from(out);
    let mut args = symbol_order_args(Path::new(&dir));
    if !args.is_empty() && !linker_accepts(&args, &out, false) {
        args.clear();
    }
    let relr = [PACKED_RELOCATIONS.to_owned()];
    if linker_accepts(&relr, &out, true) {
        args.extend(relr);
    }
    for arg in args {
        println!("cargo:rustc-link-arg-bin=kvtop={arg}");
    }
}

/// The kernel maps a binary's code around each page fault in 64 KB blocks, so functions a
/// console runs, scattered among ones it never runs, make nearly the whole text resident. The
/// linker is asked to place the functions `benches/symbol_order.sh` saw running first, next to
/// each other (the names are those of this profile). rust-lld, the default of
/// x86_64-unknown-linux-gnu, and mold take `--symbol-ordering-file`; GNU ld, which a
/// distribution's rustc may use, does not. A name the build no longer has is skipped silently.
/// `KVTOP_LINK_MAP=PATH` also writes the linker's map there, which is how the script finds the
/// names in a stripped binary.
fn symbol_order_args(dir: &Path) -> Vec<String> {
    let order = dir.join("benches").join("symbol-order.txt");
    println!("cargo:rerun-if-changed={}", order.display());
    let mut args = Vec::new();
    if order.is_file() {
        args.push(format!("-Wl,--symbol-ordering-file={}", order.display()));
        args.push("-Wl,--no-warn-symbol-ordering".to_owned());
    }
    let map = std::env::var("KVTOP_LINK_MAP").unwrap_or_default();
    if !map.is_empty() {
        args.push(format!("-Wl,-Map={map}"));
    }
    args
}

/// A position-independent executable carries one relocation for each pointer the loader must
/// adjust (vtables, string tables): 0.5 MB of `.rela.dyn` in kvtop, every page of it read, and
/// so resident, at start. Packed (`DT_RELR`, glibc 2.36 and later; lld and GNU ld 2.38 write
/// it), the same relocations take about 10 KB. The binary then needs a loader that reads the
/// format (the linker adds the `GLIBC_ABI_DT_RELR` version, so an older glibc refuses to start
/// it with a clear message rather than misrun it); the probe runs what it linked, so the build
/// packs them only where the glibc it links against reads them.
const PACKED_RELOCATIONS: &str = "-Wl,-z,pack-relative-relocs";

/// Whether the linker this build uses takes ARGS: links an empty program with them, with the
/// same rustc, target, linker and flags as the build; with `run`, the program must also run.
fn linker_accepts(args: &[String], out: &Path, run: bool) -> bool {
    let source = out.join("link_probe.rs");
    if std::fs::write(&source, "fn main() {}\n").is_err() {
        return false;
    }
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let mut command = Command::new(rustc);
    command
        .args(["--edition", "2021", "--crate-type", "bin"])
        .arg("--target")
        .arg(std::env::var("TARGET").unwrap_or_default())
        .arg("-o")
        .arg(out.join("link_probe"))
        .arg(&source);
    if let Some(linker) = std::env::var_os("RUSTC_LINKER") {
        let mut flag = std::ffi::OsString::from("linker=");
        flag.push(linker);
        command.arg("-C").arg(flag);
    }
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    command.args(flags.split('\u{1f}').filter(|flag| !flag.is_empty()));
    for arg in args {
        command.arg("-C").arg(format!("link-arg={arg}"));
    }
    let linked = command.output().is_ok_and(|output| output.status.success());
    if !linked || !run {
        return linked;
    }
    // A program built for another machine cannot be tried here.
    std::env::var("TARGET").ok() == std::env::var("HOST").ok()
        && Command::new(out.join("link_probe"))
            .output()
            .is_ok_and(|output| output.status.success())
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
