//! PURE. The PromQL kvtop sends: one instant query per signal (or per histogram, for its
//! quantiles) for the whole fleet, each aggregated `by` the labels that identify an engine.
//!
//! Names follow vLLM's renames with `or` (V1 name first, so during a deprecation window, when
//! an engine exports both, the new one wins; `or` matches label sets without the metric name):
//! `kv_cache_usage_perc` ⇐ `gpu_cache_usage_perc`, `inter_token_latency_seconds` ⇐
//! `time_per_output_token_seconds`, `prefix_cache_*` ⇐ `gpu_prefix_cache_*` ⇐ the V0 gauge
//! `gpu_prefix_cache_hit_rate`; SGLang's names come last. Rates and quantiles are computed by
//! Prometheus over the console's window (`rate(x[1m])`, `histogram_quantile(q, sum by (le, …)
//! (rate(x_bucket[1m])))`); several quantiles of one histogram travel in one answer, told apart
//! by a `kvtop_q` label added with `label_replace`.

use kvtop_core::fleet::QuantileWindow;

/// Which labels identify an engine in Prometheus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelMap {
    /// Pod name (the engine's process); series without it are told apart by `instance`.
    pub pod: String,
    pub namespace: String,
    /// vLLM's `model_name`.
    pub model: String,
    /// vLLM V1's data-parallel `engine` index.
    pub engine: String,
    /// The scrape address, used when `pod` is absent.
    pub instance: String,
    /// The node a pod runs on (for joining GPUs by host), when relabelling adds one.
    pub node: Option<String>,
}

impl Default for LabelMap {
    fn default() -> Self {
        LabelMap {
            pod: "pod".into(),
            namespace: "namespace".into(),
            model: "model_name".into(),
            engine: "engine".into(),
            instance: "instance".into(),
            node: None,
        }
    }
}

impl LabelMap {
    /// Labels that identify a process (pod or instance), in `by (…)` order.
    fn process_labels(&self) -> Vec<&str> {
        let mut labels = vec![
            self.pod.as_str(),
            self.namespace.as_str(),
            self.instance.as_str(),
        ];
        if let Some(node) = &self.node {
            labels.push(node);
        }
        labels
    }

    /// `pod, namespace, instance[, node]`.
    pub fn process_clause(&self) -> String {
        self.process_labels().join(", ")
    }

    /// `pod, namespace, instance[, node], model_name, engine`.
    pub fn engine_clause(&self) -> String {
        let mut labels = self.process_labels();
        labels.push(&self.model);
        labels.push(&self.engine);
        labels.join(", ")
    }

    /// Every configured label name, for validation.
    pub fn names(&self) -> Vec<&str> {
        let mut names = self.process_labels();
        names.push(&self.model);
        names.push(&self.engine);
        names
    }
}

/// A field of [`kvtop_core::fleet::Signals`] a query fills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    KvUsage,
    Running,
    Waiting,
    Swapped,
    PreemptionsPerS,
    GenTps,
    PromptTps,
    RequestsPerS,
    PrefixHit,
    TtftP50,
    TtftP95,
    TtftP99,
    ItlP50,
    ItlP95,
    ItlP99,
    E2eP95,
    E2eP99,
    QueueP95,
    SpecAcceptance,
    CpuCores,
    ErrorRatio,
}

/// How an answer's series are read.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// Raw KV-usage series (not aggregated, so their names tell the engine's flavor; several
    /// series of one engine, e.g. per API-server `pid`, are merged by their maximum). An engine
    /// in this answer or in the `running` one exists.
    KvRaw,
    /// One value per engine.
    Engine(Slot),
    /// One value per process, given to each of its engines.
    Process(Slot),
    /// One value per engine and quantile: the `kvtop_q` label names the quantile.
    Quantiles(Vec<(&'static str, Slot)>),
    /// `cache_config_info` series: configuration in the labels.
    CacheConfig,
    /// dcgm-exporter series of every GPU.
    Dcgm,
}

/// One query of a cycle.
#[derive(Debug, Clone, PartialEq)]
pub struct QuerySpec {
    /// Short name used in messages (`ttft`, `kv_usage`).
    pub signal: &'static str,
    pub promql: String,
    pub shape: Shape,
}

/// The label carrying the quantile in quantile answers.
pub const QUANTILE_LABEL: &str = "kvtop_q";

/// DCGM fields read, as a regex alternation after `DCGM_FI_DEV_`.
const DCGM_FIELDS: &str =
    "GPU_UTIL|FB_USED|FB_FREE|FB_RESERVED|GPU_TEMP|POWER_USAGE|SM_CLOCK|XID_ERRORS";

/// A duration for a PromQL range selector.
pub fn range_selector(window: QuantileWindow) -> &'static str {
    match window {
        QuantileWindow::S15 => "15s",
        QuantileWindow::M1 => "1m",
        QuantileWindow::M5 => "5m",
    }
}

/// Builds the queries of a cycle for one label mapping and window.
#[derive(Debug, Clone)]
pub struct QueryPlan {
    labels: LabelMap,
    window: QuantileWindow,
    dcgm: bool,
    engines: bool,
}

impl QueryPlan {
    /// Engines, and GPUs too when `dcgm`.
    pub fn new(labels: LabelMap, window: QuantileWindow, dcgm: bool) -> Self {
        QueryPlan {
            labels,
            window,
            dcgm,
            engines: true,
        }
    }

    /// The same plan without the engine queries: GPUs only (engines are scraped directly).
    pub fn gpus_only(self) -> Self {
        QueryPlan {
            engines: false,
            dcgm: true,
            ..self
        }
    }

    pub fn labels(&self) -> &LabelMap {
        &self.labels
    }

    pub fn window(&self) -> QuantileWindow {
        self.window
    }

    /// The same plan over another window.
    pub fn with_window(&self, window: QuantileWindow) -> Self {
        QueryPlan {
            window,
            ..self.clone()
        }
    }

    /// The queries sent every interval. With DCGM, one more query reads every GPU.
    pub fn every_cycle(&self) -> Vec<QuerySpec> {
        let mut queries = if self.engines {
            self.engine_queries()
        } else {
            Vec::new()
        };
        if self.dcgm {
            queries.push(QuerySpec {
                signal: "dcgm",
                promql: format!("{{__name__=~\"DCGM_FI_DEV_({DCGM_FIELDS})\"}}"),
                shape: Shape::Dcgm,
            });
        }
        queries
    }

    /// One query per engine signal.
    fn engine_queries(&self) -> Vec<QuerySpec> {
        let by = self.labels.engine_clause();
        let w = range_selector(self.window);
        let sum = |expr: &str| format!("sum by ({by}) ({expr})");
        let rate = |name: &str| format!("sum by ({by}) (rate({name}[{w}]))");
        let ratio = |hits: &str, queries: &str| format!("({} / {})", rate(hits), rate(queries));
        let spec = |signal, promql, shape| QuerySpec {
            signal,
            promql,
            shape,
        };
        vec![
            spec(
                "kv_usage",
                "vllm:kv_cache_usage_perc or vllm:gpu_cache_usage_perc or sglang:token_usage"
                    .to_owned(),
                Shape::KvRaw,
            ),
            spec(
                "running",
                sum("vllm:num_requests_running or sglang:num_running_reqs"),
                Shape::Engine(Slot::Running),
            ),
            spec(
                "waiting",
                sum("vllm:num_requests_waiting or sglang:num_queue_reqs"),
                Shape::Engine(Slot::Waiting),
            ),
            spec(
                "swapped",
                sum("vllm:num_requests_swapped"),
                Shape::Engine(Slot::Swapped),
            ),
            spec(
                "preemptions",
                rate("vllm:num_preemptions_total"),
                Shape::Engine(Slot::PreemptionsPerS),
            ),
            spec(
                "gen_tps",
                format!(
                    "{} or {}",
                    rate("vllm:generation_tokens_total"),
                    rate("sglang:generation_tokens_total")
                ),
                Shape::Engine(Slot::GenTps),
            ),
            spec(
                "prompt_tps",
                format!(
                    "{} or {}",
                    rate("vllm:prompt_tokens_total"),
                    rate("sglang:prompt_tokens_total")
                ),
                Shape::Engine(Slot::PromptTps),
            ),
            spec(
                "requests",
                rate("vllm:request_success_total"),
                Shape::Engine(Slot::RequestsPerS),
            ),
            spec(
                "prefix_hit",
                format!(
                    "{} or {} or max by ({by}) (vllm:gpu_prefix_cache_hit_rate or sglang:cache_hit_rate)",
                    ratio(
                        "vllm:prefix_cache_hits_total",
                        "vllm:prefix_cache_queries_total"
                    ),
                    ratio(
                        "vllm:gpu_prefix_cache_hits_total",
                        "vllm:gpu_prefix_cache_queries_total"
                    ),
                ),
                Shape::Engine(Slot::PrefixHit),
            ),
            self.quantiles(
                "ttft",
                &[
                    "vllm:time_to_first_token_seconds_bucket",
                    "sglang:time_to_first_token_seconds_bucket",
                ],
                vec![
                    ("0.5", Slot::TtftP50),
                    ("0.95", Slot::TtftP95),
                    ("0.99", Slot::TtftP99),
                ],
            ),
            self.quantiles(
                "itl",
                &[
                    "vllm:inter_token_latency_seconds_bucket",
                    "vllm:time_per_output_token_seconds_bucket",
                    "sglang:inter_token_latency_seconds_bucket",
                ],
                vec![
                    ("0.5", Slot::ItlP50),
                    ("0.95", Slot::ItlP95),
                    ("0.99", Slot::ItlP99),
                ],
            ),
            self.quantiles(
                "e2e",
                &[
                    "vllm:e2e_request_latency_seconds_bucket",
                    "sglang:e2e_request_latency_seconds_bucket",
                ],
                vec![("0.95", Slot::E2eP95), ("0.99", Slot::E2eP99)],
            ),
            self.quantiles(
                "queue",
                &["vllm:request_queue_time_seconds_bucket"],
                vec![("0.95", Slot::QueueP95)],
            ),
            spec(
                "spec_acceptance",
                format!(
                    "{} or max by ({by}) (vllm:spec_decode_draft_acceptance_rate)",
                    ratio(
                        "vllm:spec_decode_num_accepted_tokens_total",
                        "vllm:spec_decode_num_draft_tokens_total"
                    ),
                ),
                Shape::Engine(Slot::SpecAcceptance),
            ),
            spec(
                "error_ratio",
                format!(
                    "{} / {}",
                    rate("vllm:request_success_total{finished_reason=~\"abort|error\"}"),
                    rate("vllm:request_success_total")
                ),
                Shape::Engine(Slot::ErrorRatio),
            ),
            self.cpu(),
        ]
    }

    /// The queries sent now and then: configuration that rarely changes.
    pub fn slow(&self) -> Vec<QuerySpec> {
        if !self.engines {
            return Vec::new();
        }
        vec![QuerySpec {
            signal: "cache_config",
            promql: "vllm:cache_config_info".to_owned(),
            shape: Shape::CacheConfig,
        }]
    }

    /// The queries whose history is read at start-up (what the charts and the history show).
    pub fn backfill(&self) -> Vec<QuerySpec> {
        self.every_cycle()
            .into_iter()
            .filter(|q| {
                matches!(
                    q.shape,
                    Shape::KvRaw | Shape::Engine(_) | Shape::Quantiles(_)
                )
            })
            // Only what the per-engine history keeps (see `fleet::Series`).
            .filter(|q| {
                !matches!(
                    q.signal,
                    "swapped" | "spec_acceptance" | "error_ratio" | "e2e" | "queue"
                )
            })
            .collect()
    }

    /// `histogram_quantile` for each quantile of one histogram (alternative names joined with
    /// `or`), tagged with `kvtop_q`.
    fn quantiles(
        &self,
        signal: &'static str,
        buckets: &[&str],
        quantiles: Vec<(&'static str, Slot)>,
    ) -> QuerySpec {
        let by = self.labels.engine_clause();
        let w = range_selector(self.window);
        let rates: Vec<String> = buckets
            .iter()
            .map(|name| format!("rate({name}[{w}])"))
            .collect();
        let inner = format!("sum by (le, {by}) ({})", rates.join(" or "));
        let parts: Vec<String> = quantiles
            .iter()
            .map(|(q, _)| {
                format!(
                    "label_replace(histogram_quantile({q}, {inner}), \"{QUANTILE_LABEL}\", \"{q}\", \"\", \"\")"
                )
            })
            .collect();
        QuerySpec {
            signal,
            promql: parts.join(" or "),
            shape: Shape::Quantiles(quantiles),
        }
    }

    /// CPU of the serving processes: `process_cpu_seconds_total` of the processes that export
    /// vLLM or SGLang metrics (every exporter has that counter; only these are wanted).
    fn cpu(&self) -> QuerySpec {
        let by = self.labels.process_clause();
        let w = range_selector(self.window);
        QuerySpec {
            signal: "cpu",
            promql: format!(
                "sum by ({by}) (rate(process_cpu_seconds_total[{w}])) and on ({by}) \
                 group by ({by}) (vllm:num_requests_running or sglang:num_running_reqs)"
            ),
            shape: Shape::Process(Slot::CpuCores),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> QueryPlan {
        QueryPlan::new(LabelMap::default(), QuantileWindow::M1, true)
    }

    #[test]
    fn one_query_per_signal_for_the_whole_fleet() {
        let queries = plan().every_cycle();
        let signals: Vec<&str> = queries.iter().map(|q| q.signal).collect();
        assert_eq!(
            signals,
            [
                "kv_usage",
                "running",
                "waiting",
                "swapped",
                "preemptions",
                "gen_tps",
                "prompt_tps",
                "requests",
                "prefix_hit",
                "ttft",
                "itl",
                "e2e",
                "queue",
                "spec_acceptance",
                "error_ratio",
                "cpu",
                "dcgm"
            ]
        );
        let without_gpus = QueryPlan::new(LabelMap::default(), QuantileWindow::M1, false);
        assert_eq!(without_gpus.every_cycle().len(), 16);
    }

    #[test]
    fn rates_are_server_side_over_the_window_and_grouped_by_the_engine_labels() {
        let queries = plan().with_window(QuantileWindow::M5).every_cycle();
        let gen_tps = queries
            .iter()
            .find(|q| q.signal == "gen_tps")
            .map(|q| q.promql.as_str());
        assert_eq!(
            gen_tps,
            Some(
                "sum by (pod, namespace, instance, model_name, engine) \
                 (rate(vllm:generation_tokens_total[5m])) or \
                 sum by (pod, namespace, instance, model_name, engine) \
                 (rate(sglang:generation_tokens_total[5m]))"
            )
        );
    }

    #[test]
    fn quantiles_of_one_histogram_share_a_query_and_carry_their_quantile() {
        let queries = plan().every_cycle();
        let queue = queries.iter().find(|q| q.signal == "queue");
        assert_eq!(
            queue.map(|q| q.promql.as_str()),
            Some(
                "label_replace(histogram_quantile(0.95, sum by (le, pod, namespace, instance, \
                 model_name, engine) (rate(vllm:request_queue_time_seconds_bucket[1m]))), \
                 \"kvtop_q\", \"0.95\", \"\", \"\")"
            )
        );
        let itl = queries.iter().find(|q| q.signal == "itl");
        let promql = itl.map(|q| q.promql.clone()).unwrap_or_default();
        assert_eq!(promql.matches("histogram_quantile(").count(), 3);
        assert!(promql.contains(
            "rate(vllm:inter_token_latency_seconds_bucket[1m]) or \
             rate(vllm:time_per_output_token_seconds_bucket[1m])"
        ));
    }

    #[test]
    fn kv_usage_prefers_the_v1_name_and_prefix_hit_falls_back_to_the_v0_gauge() {
        let queries = plan().every_cycle();
        let find = |s: &str| {
            queries
                .iter()
                .find(|q| q.signal == s)
                .map(|q| q.promql.clone())
                .unwrap_or_default()
        };
        assert!(
            find("kv_usage").starts_with("vllm:kv_cache_usage_perc or vllm:gpu_cache_usage_perc")
        );
        let prefix = find("prefix_hit");
        let new = prefix.find("vllm:prefix_cache_hits_total");
        let old = prefix.find("vllm:gpu_prefix_cache_hits_total");
        let gauge = prefix.find("vllm:gpu_prefix_cache_hit_rate");
        assert!(new < old && old < gauge, "{prefix}");
    }

    #[test]
    fn a_node_label_joins_the_grouping_and_custom_labels_are_used() {
        let labels = LabelMap {
            pod: "kubernetes_pod_name".into(),
            node: Some("node".into()),
            ..LabelMap::default()
        };
        assert_eq!(
            labels.engine_clause(),
            "kubernetes_pod_name, namespace, instance, node, model_name, engine"
        );
        let cpu = QueryPlan::new(labels, QuantileWindow::S15, false).cpu();
        assert_eq!(
            cpu.promql,
            "sum by (kubernetes_pod_name, namespace, instance, node) \
             (rate(process_cpu_seconds_total[15s])) and on (kubernetes_pod_name, namespace, \
             instance, node) group by (kubernetes_pod_name, namespace, instance, node) \
             (vllm:num_requests_running or sglang:num_running_reqs)"
        );
    }

    #[test]
    fn a_gpu_only_plan_reads_dcgm_alone() {
        let plan = QueryPlan::new(LabelMap::default(), QuantileWindow::M1, false).gpus_only();
        let signals: Vec<&str> = plan.every_cycle().iter().map(|q| q.signal).collect();
        assert_eq!(signals, ["dcgm"]);
        assert!(plan.slow().is_empty());
        assert!(plan.backfill().is_empty());
    }

    #[test]
    fn backfill_reads_the_charted_signals_only() {
        let signals: Vec<&str> = plan().backfill().iter().map(|q| q.signal).collect();
        assert_eq!(
            signals,
            [
                "kv_usage",
                "running",
                "waiting",
                "preemptions",
                "gen_tps",
                "prompt_tps",
                "requests",
                "prefix_hit",
                "ttft",
                "itl"
            ]
        );
    }
}
