//! `kvtop` / `kvtop console`: watch the configured targets, and with `--kube` (or
//! `[kubernetes] enabled = true`) the vLLM pods discovered in the cluster(s).

use std::convert::Infallible;
use std::process::ExitCode;
use std::time::Duration;

use super::setup::{Session, load_config};
use crate::cli::GlobalArgs;
use crate::config::Config;
use crate::sources::kube::ClusterClient;

#[inline(never)] // a command entry: see main.rs
pub fn run(global: &GlobalArgs) -> ExitCode {
    let mut loaded = load_config(global);
    if let Err(err) = loaded.config.kubernetes.apply(&global.kube.overrides()) {
        super::err(&format!("kvtop: {err}"));
        return ExitCode::from(2);
    }
    let kube = loaded.config.kubernetes.enabled;
    if loaded.config.targets.is_empty() && loaded.config.prometheus.is_none() && !kube {
        for problem in &loaded.problems {
            super::err(&format!("kvtop: {problem}"));
        }
        super::err(
            "kvtop: no targets to watch. Pass --target http://HOST:PORT/metrics (repeatable), \
             add [[targets]] to the config file (kvtop config init), read them through \
             Prometheus with --prometheus URL, discover vLLM pods with --kube, or try \
             `kvtop demo`.",
        );
        return ExitCode::from(2);
    }
    let Session {
        config,
        theme,
        problems,
        runtime,
    } = match Session::start(loaded) {
        Ok(session) => session,
        Err(code) => return code,
    };
    let panic_after = test_panic_delay();
    // Boxed here, where it is made: the console's future is about 20 KB, and passed by value it
    // took that much of this thread's stack twice, resident for the whole session.
    runtime.block_on(Box::pin(async move {
        let clusters = if kube {
            match super::stop_signals::connect_kube(&config.kubernetes).await {
                Ok(clusters) => clusters,
                Err(err) => {
                    super::err(&format!("kvtop: {err}"));
                    return ExitCode::from(2);
                }
            }
        } else {
            Vec::new()
        };
        let source = describe_source(&config, &clusters);
        let sources = super::console::Sources {
            targets: &config.targets,
            clusters,
            #[cfg(feature = "demo")]
            sim: None,
            help_note: None,
            focus: global.focus.clone(),
            audit_log: None,
        };
        let console = super::console::run_console_with(&config, theme, sources, source, problems);
        tokio::select! {
            code = console => code,
            never = panic_later(panic_after) => match never {},
        }
    }))
}

/// Test hook, for checking that a panic gives the terminal back: with
/// `KVTOP_TEST_PANIC_AFTER_MS=N` in the environment the console panics N ms after it starts,
/// in the task that runs its event loop. Read once at start; unset it does nothing.
///
/// Only in debug builds, the ones `cargo test` runs (its end-to-end tests drive the real
/// binary, so `cfg(test)` cannot reach them): release and dist builds, the ones shipped,
/// do not contain it.
#[cfg(debug_assertions)]
const TEST_PANIC_ENV: &str = "KVTOP_TEST_PANIC_AFTER_MS";

#[cfg(debug_assertions)]
fn test_panic_delay() -> Option<Duration> {
    let ms: u64 = std::env::var(TEST_PANIC_ENV).ok()?.trim().parse().ok()?;
    Some(Duration::from_millis(ms))
}

#[cfg(not(debug_assertions))]
fn test_panic_delay() -> Option<Duration> {
    None
}

/// Never finishes without `delay`; panics once `delay` has passed.
async fn panic_later(delay: Option<Duration>) -> Infallible {
    match delay {
        #[cfg(debug_assertions)]
        Some(delay) => {
            tokio::time::sleep(delay).await;
            panic!("{TEST_PANIC_ENV} asked for a panic after {delay:?}");
        }
        #[cfg(not(debug_assertions))]
        Some(_) => std::future::pending().await,
        None => std::future::pending().await,
    }
}

/// What the header says is watched: `3 targets`, `prometheus host:9090`,
/// `kube prod/llm + 1 target`.
pub(crate) fn describe_source(config: &Config, clusters: &[ClusterClient]) -> String {
    let mut parts = Vec::new();
    if !clusters.is_empty() {
        let k = &config.kubernetes;
        let contexts: Vec<&str> = clusters.iter().map(|c| c.context.as_str()).collect();
        let namespace = if k.all_namespaces {
            "*".to_owned()
        } else {
            k.namespace.clone().unwrap_or_else(|| {
                clusters
                    .first()
                    .map(|c| c.default_namespace.clone())
                    .unwrap_or_default()
            })
        };
        parts.push(format!("kube {}/{namespace}", contexts.join(", ")));
    }
    match config.targets.len() {
        0 => {}
        1 => parts.push("1 target".to_owned()),
        n => parts.push(format!("{n} targets")),
    }
    if let Some(p) = &config.prometheus {
        parts.push(super::console::source_name(&p.url));
    }
    parts.join(" + ")
}
