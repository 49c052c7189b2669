//! The drain wait's reading of an engine's in-flight requests (running + waiting). It goes
//! through the console's own scrape path: [`scrape_once`] straight at the pod or
//! [`scrape_via_proxy`] through the API server, both decoding with [`crate::sources::decode_payload`]
//! and the engine table of `kvtop_core::engine`, so a vendor's metric names are known once.

use std::time::Duration;

use crate::sources::kube::{ClusterClient, scrape_via_proxy};
use crate::sources::{ScrapeSettings, ScrapeTarget, scrape_once};
use kvtop_core::fleet::{ScrapePayload, TargetId};
use kvtop_core::kube_model::PodInfo;

/// A pod scraped straight at its address, as the console's worker for `row` does.
#[derive(Debug, Clone)]
struct Direct {
    http: reqwest::Client,
    row: TargetId,
}

/// Reads the in-flight requests of the pods a drain waits on (one pod, or a node's engines).
#[derive(Debug, Clone)]
pub struct InFlightProbe {
    cluster: ClusterClient,
    /// The pods it can read (none: the action waits on no engine).
    pods: Vec<PodInfo>,
    direct: Option<Direct>,
    settings: ScrapeSettings,
    /// Bound on a read through the API server's proxy: an API call's.
    api_timeout: Duration,
}

impl InFlightProbe {
    /// Read `pods` through `cluster`'s API server proxy with the scrape settings `settings`,
    /// each read bounded by the API timeout.
    pub fn via_proxy(
        cluster: &ClusterClient,
        pods: Vec<PodInfo>,
        settings: &ScrapeSettings,
        api_timeout: Duration,
    ) -> InFlightProbe {
        InFlightProbe {
            cluster: cluster.clone(),
            pods,
            direct: None,
            settings: settings.clone(),
            api_timeout,
        }
    }

    /// Try the pod's own address first (as the console's scrape of `row` does), and the
    /// proxy when that gives no reading.
    pub(crate) fn direct_first(mut self, http: &reqwest::Client, row: TargetId) -> InFlightProbe {
        self.direct = Some(Direct {
            http: http.clone(),
            row,
        });
        self
    }

    /// The running + waiting requests of the engines of pod `namespace/name`; `None` when the
    /// pod is not one of its pods, cannot be read, or names neither gauge (unknown, which the
    /// wait does not take for idle).
    pub async fn read(&self, namespace: &str, name: &str) -> Option<f64> {
        let pod = self
            .pods
            .iter()
            .find(|p| p.key.namespace == namespace && p.key.name == name)?;
        if let Some(direct) = &self.direct {
            let reading = self.read_direct(direct, pod).await;
            if reading.is_some() {
                return reading;
            }
        }
        self.read_via_proxy(pod).await
    }

    async fn read_direct(&self, direct: &Direct, pod: &PodInfo) -> Option<f64> {
        let target = ScrapeTarget {
            id: direct.row,
            url: pod.endpoint.direct_url()?,
            bearer_token: None,
        };
        let payload = scrape_once(&direct.http, &target, &self.settings)
            .await
            .ok()?;
        running_plus_waiting(&payload)
    }

    async fn read_via_proxy(&self, pod: &PodInfo) -> Option<f64> {
        let settings = ScrapeSettings {
            timeout: self.api_timeout,
            ..self.settings.clone()
        };
        let path = pod.endpoint.proxy_path(&pod.key.namespace, &pod.key.name);
        let payload = scrape_via_proxy(&self.cluster.client, &path, &settings)
            .await
            .ok()?;
        running_plus_waiting(&payload)
    }
}

impl crate::actions::InFlight for InFlightProbe {
    fn read(
        &self,
        namespace: &str,
        pod: &str,
    ) -> impl std::future::Future<Output = Option<f64>> + Send {
        InFlightProbe::read(self, namespace, pod)
    }
}

/// The sum over the payload's engines of the gauges they name; `None` when none names one.
fn running_plus_waiting(payload: &ScrapePayload) -> Option<f64> {
    payload
        .engines
        .iter()
        .flat_map(|engine| [engine.running, engine.waiting])
        .flatten()
        .reduce(|sum, value| sum + value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::decode_payload;

    fn in_flight(body: &str) -> Option<f64> {
        let payload = decode_payload(body.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        running_plus_waiting(&payload)
    }

    #[test]
    fn running_and_waiting_add_up_over_the_pod_s_engines() {
        let two_engines = "vllm:num_requests_running{model_name=\"m\",engine=\"0\"} 3\n\
vllm:num_requests_waiting{model_name=\"m\",engine=\"0\"} 2\n\
vllm:num_requests_running{model_name=\"m\",engine=\"1\"} 1\n";
        assert_eq!(in_flight(two_engines), Some(6.0));
        let idle = "vllm:num_requests_running{model_name=\"m\"} 0\n\
vllm:num_requests_waiting{model_name=\"m\"} 0\n";
        assert_eq!(in_flight(idle), Some(0.0));
    }

    #[test]
    fn an_engine_naming_neither_gauge_is_unknown_not_idle() {
        let other = "vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.5\n";
        assert_eq!(in_flight(other), None);
    }
}
