//! PURE. Whether a pod is an inference engine kvtop should watch, and which container runs it.
//!
//! Real deployments are labelled every which way (`app: vllm`, Helm charts' own labels, KServe,
//! AIBrix, LeaderWorkerSet), so labels alone miss most of them. What a pod runs is steadier: a
//! container whose image is a vLLM or SGLang image, or whose command line starts the server.
//! A pod is an engine when its labels match one of the selectors, or when one of its containers
//! runs vLLM or SGLang by image or command — except LeaderWorkerSet workers, which join their
//! leader's engine and serve no HTTP of their own.

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::api::core::v1::{Container, Pod};

use super::selector::LabelSelector;
use super::vllm_args::expand_shell;

/// The label LeaderWorkerSet puts on each pod of a group: `0` for the leader.
pub const LWS_WORKER_INDEX: &str = "leaderworkerset.sigs.k8s.io/worker-index";

/// The serving engine a pod runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum EngineKind {
    #[default]
    Vllm,
    Sglang,
}

impl EngineKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EngineKind::Vllm => "vLLM",
            EngineKind::Sglang => "SGLang",
        }
    }
}

impl fmt::Display for EngineKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What made a pod an engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchedBy {
    /// Its labels match a selector.
    Selector,
    /// A container's command line starts the server.
    Command,
    /// A container's image is a vLLM or SGLang image.
    Image,
}

/// A pod recognised as an engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recognized {
    pub kind: EngineKind,
    pub by: MatchedBy,
    /// Index in `spec.containers` of the container running the engine (`None` when only the
    /// labels matched and no container says what it runs).
    pub container: Option<usize>,
}

/// How pods are recognised: the selectors, and whether what a container runs counts too.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Recognizer {
    pub selectors: Vec<LabelSelector>,
    /// A container running vLLM or SGLang (by image or command) makes an engine even when no
    /// selector matches. Off when the user's own selectors are meant to narrow the search.
    pub by_workload: bool,
}

impl Recognizer {
    /// The engine `pod` runs, if it is one.
    pub fn recognize(&self, pod: &Pod) -> Option<Recognized> {
        let empty = BTreeMap::new();
        let labels = pod.metadata.labels.as_ref().unwrap_or(&empty);
        if is_lws_worker(labels) {
            return None;
        }
        let containers: &[Container] = pod
            .spec
            .as_ref()
            .map(|s| s.containers.as_slice())
            .unwrap_or_default();
        let running = engine_container(containers);
        if self.selectors.iter().any(|s| s.matches(labels)) {
            return Some(Recognized {
                kind: running.map_or(EngineKind::Vllm, |(_, kind, _)| kind),
                by: MatchedBy::Selector,
                container: running.map(|(index, _, _)| index),
            });
        }
        if !self.by_workload {
            return None;
        }
        running.map(|(index, kind, by)| Recognized {
            kind,
            by,
            container: Some(index),
        })
    }
}

/// A LeaderWorkerSet worker (any index but the leader's `0`).
fn is_lws_worker(labels: &BTreeMap<String, String>) -> bool {
    labels.get(LWS_WORKER_INDEX).is_some_and(|i| i != "0")
}

/// The first container that runs an engine by its command line, else the first whose image
/// is an engine image and whose command (when set) starts nothing else.
pub(crate) fn engine_container(containers: &[Container]) -> Option<(usize, EngineKind, MatchedBy)> {
    let by_command = containers.iter().enumerate().find_map(|(i, c)| {
        command_engine(
            c.command.as_deref().unwrap_or_default(),
            c.args.as_deref().unwrap_or_default(),
        )
        .map(|kind| (i, kind, MatchedBy::Command))
    });
    by_command.or_else(|| {
        containers.iter().enumerate().find_map(|(i, c)| {
            // An engine image started as another program (LMCache's cache server ships in
            // `lmcache/vllm-openai` and runs `lmcache_server`) is not an engine; a shell or
            // Python running a script may well start it.
            if !starts_engine_or_script(c.command.as_deref().unwrap_or_default()) {
                return None;
            }
            image_engine(c.image.as_deref()?).map(|kind| (i, kind, MatchedBy::Image))
        })
    })
}

/// Whether a container's `command` leaves the image's engine a chance: none set (the image's
/// entry point), a shell, a Python interpreter, or the engine's own program.
fn starts_engine_or_script(command: &[String]) -> bool {
    let Some(first) = command.first() else {
        return true;
    };
    let program = first.rsplit('/').next().unwrap_or(first);
    matches!(
        program,
        "sh" | "bash" | "dash" | "ash" | "zsh" | "vllm" | "sglang" | "env" | "tini" | "dumb-init"
    ) || program.starts_with("python")
}

/// The engine a command line starts: `vllm serve`, `python -m vllm.entrypoints.openai.api_server`,
/// `python -m sglang.launch_server`, directly or inside `sh -c "…"`.
pub fn command_engine(command: &[String], args: &[String]) -> Option<EngineKind> {
    let argv: Vec<String> = command.iter().chain(args).cloned().collect();
    let argv = expand_shell(argv);
    argv.iter().enumerate().find_map(|(i, word)| {
        let program = word.rsplit('/').next().unwrap_or(word);
        let next = argv.get(i + 1).map(String::as_str);
        if program == "vllm" && next == Some("serve") || word.starts_with("vllm.entrypoints.") {
            Some(EngineKind::Vllm)
        } else if word.starts_with("sglang.launch_server")
            || program == "sglang" && next == Some("serve")
        {
            Some(EngineKind::Sglang)
        } else {
            None
        }
    })
}

/// The engine an image reference names: `vllm` or `sglang` as a whole word of its repository
/// path (`vllm/vllm-openai:v0.10.1`, `myregistry:5000/team/vllm-openai`, `lmsysorg/sglang`),
/// never inside another word (`novllmx`) nor in the registry host or the tag.
pub fn image_engine(image: &str) -> Option<EngineKind> {
    let without_digest = image.split('@').next().unwrap_or(image);
    let path = match without_digest.rsplit_once('/') {
        Some((head, last)) => {
            let name = last.split(':').next().unwrap_or(last);
            let mut parts: Vec<&str> = head.split('/').collect();
            // A first part with a dot, a port or `localhost` is the registry, not the path.
            if parts
                .first()
                .is_some_and(|p| p.contains('.') || p.contains(':') || *p == "localhost")
            {
                parts.remove(0);
            }
            parts.push(name);
            parts
        }
        None => vec![without_digest.split(':').next().unwrap_or(without_digest)],
    };
    let words = path
        .iter()
        .flat_map(|part| part.split(['-', '_', '.']))
        .map(str::to_ascii_lowercase);
    let mut found = None;
    for word in words {
        match word.as_str() {
            // SGLang images are sometimes built on vLLM's: the more specific name wins.
            "sglang" => return Some(EngineKind::Sglang),
            "vllm" => found = Some(EngineKind::Vllm),
            _ => {}
        }
    }
    found
}

#[cfg(test)]
#[path = "recognize_tests.rs"]
mod tests;
