//! The Prometheus (or VictoriaMetrics) server of `--prometheus` / `[prometheus]`: reachable,
//! its version, whether it holds vLLM and DCGM series, and how far behind its newest vLLM
//! sample is.

use std::time::Duration;

use super::report::{Check, Verdict};
use crate::config::{Config, PrometheusConfig};
use crate::sources::prometheus::{ClientSettings, PromClient, RawAnswer};

const AREA: &str = "prometheus";

/// A newest sample older than this means Prometheus no longer scrapes the engines: its
/// default staleness lookback is 5 minutes, and two of the usual 30 s scrape intervals is
/// already late.
const LAG_WARN: Duration = Duration::from_secs(120);

/// Series every vLLM generation exports, one per engine.
const VLLM_SERIES: &str = "vllm:num_requests_running";
/// dcgm-exporter's utilisation gauge, one per GPU.
const DCGM_SERIES: &str = "DCGM_FI_DEV_GPU_UTIL";

pub async fn run(config: &Config, prom: &PrometheusConfig, checks: &mut Vec<Check>) {
    let settings = ClientSettings {
        timeout: prom.timeout.unwrap_or(config.timeout),
        body_limit: prom.body_limit,
        user_agent: config.user_agent.clone(),
    };
    let client = match PromClient::new(prom, settings) {
        Ok(client) => client,
        Err(err) => {
            checks.push(
                Check::new(AREA, "server", Verdict::Fail)
                    .detail(err.to_string())
                    .fix("correct --prometheus URL or [prometheus] url / ca_file"),
            );
            return;
        }
    };
    let url = client.url().to_owned();
    match client.build_info().await {
        Ok(answer) if answer.status == 200 => {
            let version = data(&answer)
                .and_then(|d| d.get("version").and_then(|v| v.as_str()).map(str::to_owned))
                .unwrap_or_else(|| "version not stated".to_owned());
            checks.push(
                Check::new(AREA, "server", Verdict::Ok)
                    .detail(format!("{url}: reachable, {version}")),
            );
        }
        Ok(answer) => {
            let fix = match answer.status {
                401 | 403 => {
                    "check the credentials ([prometheus] bearer_token_file, username/password_file)"
                }
                404 => "is this Prometheus' base URL (with its path prefix, if any)?",
                _ => "check the server's health",
            };
            checks.push(
                Check::new(AREA, "server", Verdict::Fail)
                    .detail(format!(
                        "{url}/api/v1/status/buildinfo: HTTP {}",
                        answer.status
                    ))
                    .fix(fix),
            );
            return;
        }
        Err(err) => {
            checks.push(
                Check::new(AREA, "server", Verdict::Fail)
                    .detail(format!("{url}: {err}"))
                    .fix("check the URL and the network to it (`curl URL/-/healthy`)"),
            );
            return;
        }
    }
    let engines = instant(&client, &format!("count({VLLM_SERIES})")).await;
    checks.push(match engines {
        Ok(Some(n)) if n > 0.0 => Check::new(AREA, "vLLM series", Verdict::Ok)
            .detail(format!("{n} engine(s) export {VLLM_SERIES}")),
        Ok(_) => Check::new(
            AREA,
            "vLLM series",
            if prom.engines {
                Verdict::Fail
            } else {
                Verdict::Warn
            },
        )
        .detail(format!("no {VLLM_SERIES} series"))
        .fix("add the vLLM pods to Prometheus' scrape configuration (a PodMonitor or ServiceMonitor)"),
        Err(err) => Check::new(AREA, "vLLM series", Verdict::Fail).detail(err),
    });
    let gpus = instant(&client, &format!("count({DCGM_SERIES})")).await;
    checks.push(match gpus {
        Ok(Some(n)) if n > 0.0 => {
            Check::new(AREA, "DCGM series", Verdict::Ok).detail(format!("{n} GPU(s) from dcgm-exporter"))
        }
        Ok(_) => Check::new(AREA, "DCGM series", Verdict::Warn)
            .detail(format!("no {DCGM_SERIES} series: no GPU data"))
            .fix("deploy dcgm-exporter and let Prometheus scrape it (or add its endpoints as targets)"),
        Err(err) => Check::new(AREA, "DCGM series", Verdict::Warn).detail(err),
    });
    let lag = instant(&client, &format!("time() - max(timestamp({VLLM_SERIES}))")).await;
    checks.push(match lag {
        Ok(Some(secs)) if secs.is_finite() => {
            let verdict = if secs > LAG_WARN.as_secs_f64() {
                Verdict::Warn
            } else {
                Verdict::Ok
            };
            let check = Check::new(AREA, "lag", verdict)
                .detail(format!("newest vLLM sample {secs:.1} s old"));
            if verdict == Verdict::Warn {
                check.fix("Prometheus is not scraping the engines any more: check its targets page")
            } else {
                check
            }
        }
        Ok(_) => Check::new(AREA, "lag", Verdict::Skip).detail("no vLLM sample to measure it on"),
        Err(err) => Check::new(AREA, "lag", Verdict::Warn).detail(err),
    });
}

/// The `data` object of a successful API answer.
fn data(answer: &RawAnswer) -> Option<serde_json::Value> {
    let mut json: serde_json::Value = serde_json::from_slice(&answer.body).ok()?;
    (json.get("status")?.as_str()? == "success")
        .then(|| json.get_mut("data").map(serde_json::Value::take))?
}

/// The single value of an instant query (`None`: an empty result).
async fn instant(client: &PromClient, promql: &str) -> Result<Option<f64>, String> {
    let answer = client
        .query(promql, None)
        .await
        .map_err(|e| format!("{promql}: {e}"))?;
    if answer.status != 200 {
        let message = serde_json::from_slice::<serde_json::Value>(&answer.body)
            .ok()
            .and_then(|j| j.get("error").and_then(|e| e.as_str()).map(str::to_owned))
            .unwrap_or_default();
        return Err(format!("{promql}: HTTP {} {message}", answer.status));
    }
    let data = data(&answer).ok_or_else(|| format!("{promql}: not a Prometheus API answer"))?;
    let Some(first) = data
        .get("result")
        .and_then(|r| r.as_array())
        .and_then(|r| r.first())
    else {
        return Ok(None);
    };
    first
        .get("value")
        .and_then(|v| v.get(1))
        .and_then(|v| v.as_str())
        .and_then(|v| v.parse::<f64>().ok())
        .map(Some)
        .ok_or_else(|| format!("{promql}: unexpected answer"))
}
