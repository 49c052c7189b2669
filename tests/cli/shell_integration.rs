//! Where kvtop meets the engineer's tools: shell completions and man pages generated from the
//! command-line definition, `kvtop --version`, `kubectl kvtop` found by the real kubectl, and
//! the k9s and krew files in `dist/`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use clap::{CommandFactory, Parser};
use kvtop::cli::Cli;
use serde::Deserialize;

use crate::common;
use crate::common::kube_sim::fast_cluster;

const BIN: &str = env!("CARGO_BIN_EXE_kvtop");

/// `kvtop ARGS` with home, config and state in a temporary directory.
fn kvtop(args: &[&str]) -> Output {
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(args)
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("XDG_STATE_HOME", home.path().join("state"))
        .env_remove("KVTOP_CONFIG")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "kvtop {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Every command as a path of names: `["check"]`, `["rules", "list"]`, …
fn command_paths() -> Vec<Vec<String>> {
    fn walk(cmd: &clap::Command, prefix: &[String], out: &mut Vec<Vec<String>>) {
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            let mut path = prefix.to_vec();
            path.push(sub.get_name().to_owned());
            out.push(path.clone());
            walk(sub, &path, out);
        }
    }
    let mut out = Vec::new();
    walk(&Cli::command(), &[], &mut out);
    out
}

#[test]
fn completions_know_every_command_in_bash_zsh_and_fish() {
    let paths = command_paths();
    assert!(paths.iter().any(|p| p == &["doctor"]), "{paths:?}");
    assert!(paths.iter().any(|p| p == &["config", "init"]), "{paths:?}");
    for shell in ["bash", "zsh", "fish"] {
        let script = String::from_utf8(kvtop(&["completions", shell]).stdout).unwrap();
        for path in &paths {
            let name = path.last().unwrap();
            assert!(
                script.contains(name.as_str()),
                "{shell} completion lacks {path:?}"
            );
        }
        assert!(script.contains("kubeconfig"), "{shell}: no --kubeconfig");
    }
}

#[test]
fn the_bash_completion_loads_and_completes_commands_and_flags() {
    if !common::have_program("bash") {
        return;
    }
    let bash = |script: &str| -> String {
        let out = Command::new("bash")
            .args(["--norc", "--noprofile", "-c", script])
            .env("KVTOP", BIN)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "bash: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let registered = bash(r#"source <("$KVTOP" completions bash) && complete -p kvtop"#);
    assert!(
        registered.contains("_kvtop") && registered.trim_end().ends_with(" kvtop"),
        "{registered}"
    );
    // What Tab after `kvtop doc` and after `kvtop doctor --out` offers.
    let complete = |line: &str| {
        bash(&format!(
            r#"source <("$KVTOP" completions bash)
               COMP_LINE='{line}'; COMP_POINT=${{#COMP_LINE}}
               read -ra COMP_WORDS <<< "$COMP_LINE"; COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
               _kvtop kvtop "${{COMP_WORDS[-1]}}" "${{COMP_WORDS[-2]}}"
               printf '%s\n' "${{COMPREPLY[@]}}""#
        ))
    };
    let offered = complete("kvtop doc");
    assert_eq!(offered.lines().collect::<Vec<_>>(), ["doctor"], "{offered}");
    let offered = complete("kvtop doctor --out");
    assert!(offered.lines().any(|l| l == "--output"), "{offered}");
    let offered = complete("kvtop completions z");
    assert_eq!(offered.lines().collect::<Vec<_>>(), ["zsh"], "{offered}");
}

#[test]
fn man_pages_cover_every_command() {
    let page = String::from_utf8(kvtop(&["man"]).stdout).unwrap();
    assert!(page.starts_with(".ie"), "{}", &page[..page.len().min(200)]);
    assert!(page.contains(".TH kvtop 1"), "no title");
    for path in command_paths().iter().filter(|p| p.len() == 1) {
        assert!(
            page.contains(&format!("kvtop\\-{}(1)", path[0].replace('-', "\\-"))),
            "kvtop.1 does not list {path:?}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("man1");
    kvtop(&["man", "--out-dir", &out_dir.display().to_string()]);
    let mut pages = vec![out_dir.join("kvtop.1")];
    pages.extend(
        command_paths()
            .iter()
            .map(|p| out_dir.join(format!("kvtop-{}.1", p.join("-")))),
    );
    for page in &pages {
        assert!(page.is_file(), "{} was not written", page.display());
    }
    // The pages render: man (with groff) formats the doctor's page without a warning.
    if common::find_program("man").is_some() {
        let out = Command::new("man")
            .arg("-l")
            .arg(out_dir.join("kvtop-doctor.1"))
            .env("MANWIDTH", "100")
            .env("MANPAGER", "cat")
            .env("PAGER", "cat")
            .output()
            .unwrap();
        // Bold and underline come as overstrikes (`X\u{8}X`): keep the last of each.
        let mut text = String::new();
        for c in String::from_utf8_lossy(&out.stdout).chars() {
            if c == '\u{8}' {
                text.pop();
            } else {
                text.push(c);
            }
        }
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains("kvtop-doctor"), "{text}");
        assert!(text.contains("--output"), "{text}");
        assert!(
            out.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn the_version_names_the_commit_it_was_built_from() {
    let out = String::from_utf8(kvtop(&["--version"]).stdout).unwrap();
    let version = env!("CARGO_PKG_VERSION");
    assert!(out.starts_with(&format!("kvtop {version} (")), "{out}");
    // Built from this checkout: the commit is git's HEAD (with -dirty when tracked files
    // differed). Outside a git checkout it says so.
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    match head {
        Some(head) => assert!(out.contains(&format!("({head}")), "{out} is not at {head}"),
        None => assert!(out.contains("not built from a git checkout"), "{out}"),
    }
    // Every command says the same.
    let doctor = String::from_utf8(kvtop(&["doctor", "--version"]).stdout).unwrap();
    assert_eq!(doctor.replace("kvtop-doctor", "kvtop"), out);
}

/// A directory holding `kubectl-kvtop`, a link to the binary, as a user links or krew installs
/// it; and PATH with that directory first.
fn plugin_path() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(BIN, dir.path().join("kubectl-kvtop")).unwrap();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![dir.path().to_path_buf()];
    dirs.extend(std::env::split_paths(&path));
    let joined = std::env::join_paths(dirs).unwrap();
    (dir, joined.to_string_lossy().into_owned())
}

/// The real kubectl with the plugin directory first on PATH and `home` as its home.
fn kubectl(path: &str, home: &Path, kubeconfig: Option<&Path>, args: &[&str]) -> Output {
    let mut command = Command::new("kubectl");
    command
        .args(args)
        .env("PATH", path)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env_remove("KVTOP_CONFIG");
    match kubeconfig {
        Some(file) => command.env("KUBECONFIG", file),
        None => command.env_remove("KUBECONFIG"),
    };
    command.output().unwrap()
}

#[test]
fn kubectl_finds_the_plugin_on_path() {
    if !common::have_program("kubectl") {
        return;
    }
    let (dir, path) = plugin_path();
    let home = tempfile::tempdir().unwrap();
    let out = kubectl(&path, home.path(), None, &["plugin", "list"]);
    let listed = String::from_utf8_lossy(&out.stdout);
    let link = dir.path().join("kubectl-kvtop");
    assert!(
        listed
            .lines()
            .any(|l| l.trim() == link.display().to_string()),
        "{listed}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = kubectl(&path, home.path(), None, &["kvtop", "--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        help.contains("Usage: kubectl kvtop [OPTIONS] [COMMAND]"),
        "{help}"
    );
    assert!(help.contains("--context <NAME>"), "{help}");
}

/// `kubectl kvtop …` turns discovery on without `--kube`, on the kubeconfig kubectl passes
/// on (KUBECONFIG) or the one named, in the namespace of `-n`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_kvtop_watches_the_current_context_with_discovery_on() {
    if !common::have_program("kubectl") {
        return;
    }
    let (_sim, kube) = fast_cluster(2, 3).await;
    let home = tempfile::tempdir().unwrap();
    let kubeconfig = home.path().join("kubeconfig");
    std::fs::write(&kubeconfig, kube.kubeconfig_yaml("sim")).unwrap();
    let (_dir, path) = plugin_path();
    let run = |args: Vec<String>, env_kubeconfig: bool| {
        let home = home.path().to_path_buf();
        let path = path.clone();
        let kubeconfig = kubeconfig.clone();
        tokio::task::spawn_blocking(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            kubectl(
                &path,
                &home,
                env_kubeconfig.then_some(kubeconfig.as_path()),
                &args,
            )
        })
    };
    let doctor_json = |out: &Output| -> serde_json::Value {
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "{e}: {}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        })
    };
    let discovery = |report: &serde_json::Value| -> String {
        report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["check"] == "context sim: discovery")
            .map(|c| c["detail"].as_str().unwrap().to_owned())
            .unwrap_or_else(|| panic!("{report:#}"))
    };
    // The current context of $KUBECONFIG, its namespace from -n.
    let args = ["kvtop", "doctor", "-n", "llm", "-o", "json"]
        .map(String::from)
        .to_vec();
    let out = run(args, true).await.unwrap();
    let report = doctor_json(&out);
    assert_eq!(out.status.code(), Some(0), "{report:#}");
    assert!(discovery(&report).starts_with("2 engine pod(s) among 2 pod(s) in namespace llm"));
    // --kubeconfig and --context as kubectl spells them; a namespace without engines.
    let args = [
        "kvtop",
        "doctor",
        "--kubeconfig",
        &kubeconfig.display().to_string(),
        "--context",
        "sim",
        "--namespace",
        "default",
        "-o",
        "json",
    ]
    .map(String::from)
    .to_vec();
    let out = run(args, false).await.unwrap();
    let report = doctor_json(&out);
    assert_eq!(out.status.code(), Some(1), "{report:#}");
    assert!(
        discovery(&report).starts_with("0 engine pod(s)"),
        "{report:#}"
    );
}

#[test]
fn the_plugin_name_turns_discovery_on_and_keeps_kubectl_s_flags() {
    let parse =
        |args: &[&str]| kvtop::cli::parse_command_line(args.iter().map(Into::into).collect());
    let cli = parse(&[
        "/home/me/.krew/bin/kubectl-kvtop",
        "-n",
        "llm",
        "--context",
        "prod",
        "-l",
        "app=vllm",
    ]);
    assert!(cli.global.kube.kube);
    assert_eq!(cli.global.kube.namespace.as_deref(), Some("llm"));
    assert_eq!(cli.global.kube.contexts, ["prod"]);
    assert_eq!(cli.global.kube.selectors, ["app=vllm"]);
    assert!(cli.command.is_none(), "the console");
    let cli = parse(&["kubectl-kvtop", "-A", "--kubeconfig", "/tmp/k"]);
    assert!(cli.global.kube.kube && cli.global.kube.all_namespaces);
    assert_eq!(cli.global.kube.kubeconfig, Some(PathBuf::from("/tmp/k")));
    // Under its own name nothing is turned on.
    let cli = parse(&["kvtop", "-n", "llm"]);
    assert!(!cli.global.kube.kube);
}

/// A k9s plugin entry (the keys kvtop's file uses).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct K9sPlugin {
    short_cut: String,
    description: String,
    scopes: Vec<String>,
    command: String,
    background: bool,
    args: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct K9sPlugins {
    plugins: std::collections::BTreeMap<String, K9sPlugin>,
}

/// Variables k9s sets for a plugin (its documented list), with what the test puts in them.
const K9S_VARS: [(&str, &str); 5] = [
    ("$CONTEXT", "prod-eu"),
    ("$NAMESPACE", "llm"),
    ("$NAME", "vllm-llama-8b-7d9f-abcde"),
    ("$CLUSTER", "eu-1"),
    ("$KUBECONFIG", "/home/me/.kube/config"),
];

fn dist(path: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("dist")
            .join(path),
    )
    .unwrap()
}

#[test]
fn the_k9s_plugins_open_kvtop_on_the_namespace_and_on_a_pod() {
    let file: K9sPlugins = serde_saphyr::from_str(&dist("k9s/plugins.yaml")).unwrap();
    assert_eq!(file.plugins.len(), 2, "{file:?}");
    let mut shortcuts: Vec<&str> = file
        .plugins
        .values()
        .map(|p| p.short_cut.as_str())
        .collect();
    shortcuts.dedup();
    assert_eq!(shortcuts.len(), 2, "two entries on one key");
    for (name, plugin) in &file.plugins {
        assert_eq!(plugin.command, "kvtop", "{name}");
        assert!(!plugin.background, "{name}: a console needs the terminal");
        assert!(!plugin.description.is_empty() && plugin.scopes.contains(&"pods".to_owned()));
        // The command line k9s runs, with its variables filled in, is a valid kvtop one.
        let args: Vec<String> = plugin
            .args
            .iter()
            .map(|arg| {
                K9S_VARS
                    .iter()
                    .fold(arg.clone(), |arg, (var, value)| arg.replace(var, value))
            })
            .collect();
        assert!(
            args.iter().all(|a| !a.contains('$')),
            "{name}: a variable k9s does not set: {args:?}"
        );
        let cli = Cli::try_parse_from(std::iter::once("kvtop".to_owned()).chain(args))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(cli.command.is_none(), "{name} opens the console");
        assert!(cli.global.kube.kube, "{name}: discovery on");
        assert_eq!(cli.global.kube.contexts, ["prod-eu"], "{name}");
        assert_eq!(cli.global.kube.namespace.as_deref(), Some("llm"), "{name}");
    }
    let namespace = &file.plugins["kvtop"];
    assert!(namespace.scopes.contains(&"deployments".to_owned()));
    let pod = &file.plugins["kvtop-pod"];
    assert_eq!(pod.scopes, ["pods"]);
    let cli = Cli::try_parse_from(
        std::iter::once("kvtop".to_owned())
            .chain(
                pod.args
                    .iter()
                    .map(|a| a.replace("$NAME", "vllm-llama-8b-7d9f-abcde")),
            )
            .map(|a| a.replace("$CONTEXT", "c").replace("$NAMESPACE", "n")),
    )
    .unwrap();
    assert_eq!(
        cli.global.focus.as_deref(),
        Some("vllm-llama-8b-7d9f-abcde")
    );
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct KrewManifest {
    api_version: String,
    kind: String,
    metadata: KrewMetadata,
    spec: KrewSpec,
}

#[derive(Debug, Deserialize)]
struct KrewMetadata {
    name: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct KrewSpec {
    version: String,
    short_description: String,
    platforms: Vec<KrewPlatform>,
}

#[derive(Debug, Deserialize)]
struct KrewPlatform {
    selector: serde_json::Value,
    uri: String,
    sha256: String,
    bin: String,
    files: Vec<KrewFile>,
}

#[derive(Debug, Deserialize)]
struct KrewFile {
    from: String,
    to: String,
}

#[test]
fn the_krew_manifest_installs_the_binary_as_the_plugin() {
    let manifest: KrewManifest = serde_saphyr::from_str(&dist("krew/kvtop.yaml")).unwrap();
    assert_eq!(
        manifest.api_version,
        "krew.googlecontainertools.github.com/v1alpha2"
    );
    assert_eq!(manifest.kind, "Plugin");
    assert_eq!(manifest.metadata.name, "kvtop");
    assert_eq!(manifest.spec.version, "{{VERSION}}");
    assert!(!manifest.spec.short_description.is_empty());
    assert!(!manifest.spec.platforms.is_empty());
    for platform in &manifest.spec.platforms {
        assert_eq!(platform.selector["matchLabels"]["os"], "linux");
        assert!(
            platform.uri.starts_with("{{RELEASE_URL}}/")
                && platform.sha256.starts_with("{{SHA256_")
        );
        assert_eq!(platform.bin, kvtop::cli::KUBECTL_PLUGIN);
        assert!(
            platform
                .files
                .iter()
                .any(|f| f.from == "kvtop" && f.to == platform.bin),
            "{platform:?}"
        );
        // Installed under that name, kvtop runs as the plugin.
        assert!(kvtop::cli::invoked_as_kubectl_plugin(Some(
            Path::new("/home/me/.krew/bin")
                .join(&platform.bin)
                .as_os_str()
        )));
    }
}
