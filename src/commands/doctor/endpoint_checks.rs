//! Each engine's metrics endpoint, scraped once: the configured targets directly, the engine
//! pods directly or through the API server's pod proxy (as `scrape_via` allows), with the vLLM
//! version the metric names point to.

use kvtop_core::fleet::{ScrapePayload, TargetId};
use kvtop_core::kube_model::ScrapeVia;
use kvtop_core::signals::EngineFlavor;

use super::kube_checks::FoundEngine;
use super::report::{Check, Verdict};
use crate::config::Config;
use crate::sources::ScrapeSettings;
use crate::sources::kube::scrape_via_proxy;
use crate::sources::scrape::{ScrapeTarget, build_client, scrape_once};

const AREA: &str = "engines";

/// Scrape every target and engine pod once.
pub async fn run(
    config: &Config,
    settings: &ScrapeSettings,
    pods: &[FoundEngine],
    checks: &mut Vec<Check>,
) {
    let client = match build_client(settings) {
        Ok(client) => client,
        Err(err) => {
            checks.push(
                Check::new(AREA, "HTTP client", Verdict::Fail)
                    .detail(format!("cannot create the HTTP client: {err}")),
            );
            return;
        }
    };
    let mut reached = 0;
    for target in &config.targets {
        let name = format!("target {}: metrics", target.name);
        let scrape = ScrapeTarget {
            id: TargetId(0),
            url: target.url.clone(),
            bearer_token: target.bearer_token.clone(),
        };
        checks.push(match scrape_once(&client, &scrape, settings).await {
            Ok(payload) => {
                reached += 1;
                Check::new(AREA, name, Verdict::Ok).detail(format!(
                    "{}: {}",
                    target.url,
                    found(&payload)
                ))
            }
            Err(err) => Check::new(AREA, name, Verdict::Warn)
                .detail(format!("{}: {err}", target.url))
                .fix("check the URL (host, port, /metrics path) and that vLLM runs there"),
        });
    }
    for engine in pods {
        let check = check_pod(&client, engine, config, settings).await;
        if check.verdict == Verdict::Ok {
            reached += 1;
        }
        checks.push(check);
    }
    let total = config.targets.len() + pods.len();
    if total > 0 {
        // One engine down is the fleet's trouble, which the console shows; none reachable is
        // kvtop's: the network, the port or the proxy permission.
        let summary = Check::new(AREA, "metrics reachable", Verdict::Ok)
            .detail(format!("{reached} of {total} endpoint(s) answered"));
        checks.push(if reached == 0 {
            Check {
                verdict: Verdict::Fail,
                ..summary
            }
            .fix(
                "no engine's metrics could be read: check the targets' URLs, the pods' metrics \
                 port ([kubernetes] metrics_port, pod annotation prometheus.io/port) and RBAC \
                 for pods/proxy",
            )
        } else {
            summary
        });
    }
}

async fn check_pod(
    client: &reqwest::Client,
    engine: &FoundEngine,
    config: &Config,
    settings: &ScrapeSettings,
) -> Check {
    let info = &engine.info;
    let key = &info.key;
    let name = format!("pod {}/{}: metrics", key.namespace, key.name);
    let via = config.kubernetes.scrape_via;
    let mut tried = Vec::new();
    if via != ScrapeVia::Proxy {
        match info.endpoint.direct_url() {
            Some(url) => {
                let target = ScrapeTarget {
                    id: TargetId(0),
                    url: url.clone(),
                    bearer_token: None,
                };
                match scrape_once(client, &target, settings).await {
                    Ok(payload) => {
                        return Check::new(AREA, name, Verdict::Ok)
                            .detail(format!("direct {url}: {}", found(&payload)));
                    }
                    Err(err) => tried.push(format!("direct {url}: {err}")),
                }
            }
            None => tried.push("direct: the pod has no IP yet".to_owned()),
        }
    }
    if via != ScrapeVia::Direct {
        let path = info.endpoint.proxy_path(&key.namespace, &key.name);
        match scrape_via_proxy(&engine.cluster.client, &path, settings).await {
            Ok(payload) => {
                let note = if tried.is_empty() {
                    String::new()
                } else {
                    format!(
                        " (the pod network is not reachable from here: {})",
                        tried.join("; ")
                    )
                };
                return Check::new(AREA, name, Verdict::Ok).detail(format!(
                    "through the API server's proxy: {}{note}",
                    found(&payload)
                ));
            }
            Err(err) => tried.push(format!("proxy: {err}")),
        }
    }
    Check::new(AREA, name, Verdict::Warn)
        .detail(tried.join("; "))
        .fix(format!(
            "is the engine up (`kubectl -n {} logs {}`)? Is its metrics port {} (set the pod \
             annotation prometheus.io/port or [kubernetes] metrics_port)?",
            key.namespace, key.name, info.endpoint.port
        ))
}

/// What a scrape found: engines and the vLLM version their metric names point to.
fn found(payload: &ScrapePayload) -> String {
    if payload.engines.is_empty() {
        return format!(
            "{} samples, but no vLLM or SGLang metric (not an engine's /metrics?)",
            payload.samples
        );
    }
    let mut guesses: Vec<&str> = payload
        .engines
        .iter()
        .map(|e| version_guess(e.flavor))
        .collect();
    guesses.dedup();
    format!(
        "{} engine(s), {}, {} samples",
        payload.engines.len(),
        guesses.join(" / "),
        payload.samples
    )
}

/// The release range a flavor of metric names belongs to.
fn version_guess(flavor: EngineFlavor) -> &'static str {
    match flavor {
        EngineFlavor::VllmV1 => "vLLM 0.10 or later (V1 engine metric names)",
        EngineFlavor::VllmV0 => "vLLM before 0.10 (V0 engine metric names)",
        EngineFlavor::SGLang => "SGLang",
        EngineFlavor::Unknown => "vLLM of unknown version (only names common to V0 and V1)",
    }
}
