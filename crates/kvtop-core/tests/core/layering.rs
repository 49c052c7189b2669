//! The workspace's module layering: within each crate, no top-level module imports one that
//! imports it back, directly or through others. A cycle means two modules can no longer be
//! understood, tested or moved apart; this keeps the tree honest as it grows.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The crates' source roots, from this crate's manifest directory.
fn crate_roots() -> Vec<PathBuf> {
    let core = Path::new(env!("CARGO_MANIFEST_DIR"));
    vec![
        core.join("src"),
        core.join("../kvtop-sim/src"),
        core.join("../../src"),
    ]
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// The `crate::NAME` paths a source file names (comments skipped).
fn crate_paths(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in text.lines() {
        let code = line.trim_start();
        if code.starts_with("//") {
            continue;
        }
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            let after = &rest[at + "crate::".len()..];
            let name: String = after
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            // `kvtop_core::…` and `$crate::…` are other crates' paths, not this one's.
            let before = &rest[..at];
            if !name.is_empty() && !before.ends_with('_') && !before.ends_with('$') {
                names.insert(name);
            }
            rest = after;
        }
    }
    names
}

/// Top-level module → the top-level modules it names.
fn module_graph(root: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(root, &mut files);
    let module_of = |file: &Path| -> Option<String> {
        let first = file.strip_prefix(root).ok()?.components().next()?;
        let name = first
            .as_os_str()
            .to_str()?
            .trim_end_matches(".rs")
            .to_owned();
        (name != "lib" && name != "main").then_some(name)
    };
    let modules: BTreeSet<String> = files.iter().filter_map(|f| module_of(f)).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let Some(module) = module_of(file) else {
            continue;
        };
        let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{e}"));
        let uses = graph.entry(module.clone()).or_default();
        for name in crate_paths(&text) {
            if name != module && modules.contains(&name) {
                uses.insert(name);
            }
        }
    }
    graph
}

/// A path from `from` back to itself through `graph`, if there is one.
fn cycle_through(graph: &BTreeMap<String, BTreeSet<String>>, from: &str) -> Option<Vec<String>> {
    let mut stack = vec![vec![from.to_owned()]];
    let mut seen = BTreeSet::new();
    while let Some(path) = stack.pop() {
        let last = path.last()?;
        for next in graph.get(last).into_iter().flatten() {
            if next == from {
                let mut cycle = path.clone();
                cycle.push(next.clone());
                return Some(cycle);
            }
            if seen.insert(next.clone()) {
                let mut longer = path.clone();
                longer.push(next.clone());
                stack.push(longer);
            }
        }
    }
    None
}

#[test]
fn no_top_level_module_imports_itself_back() {
    for root in crate_roots() {
        let graph = module_graph(&root);
        assert!(graph.len() > 3, "{} has its modules", root.display());
        for module in graph.keys() {
            if let Some(cycle) = cycle_through(&graph, module) {
                panic!("{}: import cycle {}", root.display(), cycle.join(" -> "));
            }
        }
    }
}

#[test]
fn the_checker_sees_a_cycle() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec!["a"]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.into_iter().map(str::to_owned).collect()))
    .collect();
    assert_eq!(
        cycle_through(&graph, "a"),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    assert_eq!(cycle_through(&graph, "d"), None);
    let paths = crate_paths(
        "use crate::fleet::Ts;\n// crate::ui in a comment\nkvtop_core::rules::x; $crate::y",
    );
    assert_eq!(paths, BTreeSet::from(["fleet".to_owned()]));
}
