//! PURE. The PromQL kvtop sends, generated from the catalog: one instant query per signal (or
//! per histogram, for its quantiles) for the whole fleet, each aggregated `by` the labels that
//! identify an engine.
//!
//! A metric's alternative names are joined with `or` in the catalog's order of precedence (the
//! V1 name first, so during a deprecation window, when an engine exports both, the new one
//! wins; `or` matches label sets without the metric name); SGLang's names come last. A ratio
//! is one `(hits / queries)` per rank of names, then the engine's own gauge. Rates and
//! quantiles are computed by Prometheus over the console's window (`rate(x[1m])`,
//! `histogram_quantile(q, sum by (le, …) (rate(x_bucket[1m])))`); several quantiles of one
//! histogram travel in one answer, told apart by a `kvtop_q` label added with `label_replace`.

use super::model::{Derivation, Kind, MetricId, Selector, Signal, Vendor};
use super::values::QuantileWindow;
use super::{SIGNALS, metric, quantile_stand_in, selector_label};

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
    /// The scrape job: two jobs scraping one engine report it twice, told apart by this.
    pub job: String,
    /// Labels that tell the replicas of an HA pair apart (external labels seen through a
    /// federating or deduplicating front end); kept apart in answers so one replica is taken,
    /// never their sum.
    pub replicas: Vec<String>,
}

/// Replica labels of common HA setups (Prometheus Operator, Thanos, Cortex/Mimir, VictoriaMetrics).
pub const DEFAULT_REPLICA_LABELS: [&str; 3] = ["prometheus_replica", "replica", "__replica__"];

impl Default for LabelMap {
    fn default() -> Self {
        LabelMap {
            pod: "pod".into(),
            namespace: "namespace".into(),
            model: "model_name".into(),
            engine: "engine".into(),
            instance: "instance".into(),
            node: None,
            job: "job".into(),
            replicas: DEFAULT_REPLICA_LABELS.map(str::to_owned).to_vec(),
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

    /// The labels that tell apart several reports of one engine (job, replica), not already
    /// among `taken`.
    fn source_labels<'s>(&'s self, taken: &[&str]) -> Vec<&'s str> {
        let mut labels: Vec<&str> = Vec::new();
        for name in std::iter::once(&self.job).chain(&self.replicas) {
            if !name.is_empty()
                && !taken.contains(&name.as_str())
                && !labels.contains(&name.as_str())
            {
                labels.push(name);
            }
        }
        labels
    }

    /// `pod, namespace, instance[, node], job, <replica labels>`.
    pub(crate) fn process_clause(&self) -> String {
        let mut labels = self.process_labels();
        let sources = self.source_labels(&labels);
        labels.extend(sources);
        labels.join(", ")
    }

    /// `pod, namespace, instance[, node], model_name, engine`: an engine whichever job or
    /// replica reported it.
    pub(crate) fn engine_identity_clause(&self) -> String {
        self.engine_identity_labels().join(", ")
    }

    /// The labels of [`Self::engine_identity_clause`].
    pub fn engine_identity_labels(&self) -> Vec<&str> {
        let mut labels = self.process_labels();
        labels.push(&self.model);
        labels.push(&self.engine);
        labels
    }

    /// `pod, namespace, instance[, node], model_name, engine, job, <replica labels>`.
    pub(crate) fn engine_clause(&self) -> String {
        self.engine_labels().join(", ")
    }

    /// The labels of [`Self::engine_clause`]: one report of one engine.
    pub fn engine_labels(&self) -> Vec<&str> {
        let mut labels = self.engine_identity_labels();
        let sources = self.source_labels(&labels);
        labels.extend(sources);
        labels
    }

    /// The labels of a series that say which scrape (job, instance when the pod identifies the
    /// engine, replica) reported it, in a fixed order.
    pub fn report_labels(&self) -> Vec<&str> {
        let mut labels = vec![self.instance.as_str()];
        let sources = self.source_labels(&labels);
        labels.extend(sources);
        labels
    }

    /// Every configured label name, for validation.
    pub fn names(&self) -> Vec<&str> {
        let mut names = self.process_labels();
        names.push(&self.model);
        names.push(&self.engine);
        let sources = self.source_labels(&names);
        names.extend(sources);
        names
    }
}

/// How an answer's series are read.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// Raw KV-usage series (not aggregated, so their names tell the engine's flavor; several
    /// series of one engine, e.g. per API-server `pid`, are merged by their maximum). An engine
    /// in this answer or in the `running` one exists.
    KvRaw,
    /// One value per engine.
    Engine(Signal),
    /// One value per process, given to each of its engines.
    Process(Signal),
    /// One value per engine and quantile: the `kvtop_q` label names the quantile.
    Quantiles(Vec<(&'static str, Signal)>),
    /// One value per model and quantile signal, over the model's engines' merged histograms:
    /// the `kvtop_q` label names the signal (`ttft_p95`).
    ModelQuantiles,
    /// Per engine, how often its generated-token counter went back to zero in the window
    /// (`resets()`): a rise is a restart.
    Resets,
    /// `cache_config_info` series: configuration in the labels.
    CacheConfig,
    /// The time of each engine's newest sample (`timestamp()` of its `running` gauge): how
    /// fresh what the server answers is, lag included.
    Sampled,
    /// dcgm-exporter series of every GPU.
    Dcgm,
    /// `rate()` of every bucket series of one of a histogram's names, unaggregated: the
    /// `rank`th of its names in order of precedence. A past window reads these instead of
    /// [`Shape::Quantiles`] and [`Shape::ModelQuantiles`] and derives both from them.
    BucketRates { histogram: MetricId, rank: usize },
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

/// A window of `secs` seconds for a range selector: as the console names it when it is one of
/// its windows, else in whole seconds.
fn selector_secs(window: QuantileWindow, secs: f64) -> String {
    if secs <= window.secs() {
        range_selector(window).to_owned()
    } else {
        format!("{}s", secs.ceil() as u64)
    }
}

/// The window rates and quantiles need at a scrape interval of `interval` seconds: four
/// intervals (as Grafana's `$__rate_interval`), so a window always holds several samples.
pub fn window_for_interval(window: QuantileWindow, interval: Option<f64>) -> f64 {
    let floor = interval
        .filter(|i| i.is_finite() && *i > 0.0)
        .map_or(0.0, |i| 4.0 * i);
    window.secs().max(floor)
}

/// Vendors in the order their names are joined with `or`.
const VENDORS: [Vendor; 3] = [Vendor::Vllm, Vendor::SGLang, Vendor::Process];

/// A metric's names under their canonical prefixes, vendor by vendor, each vendor's in order of
/// precedence (`_bucket` appended for histograms).
fn names(id: MetricId) -> Vec<String> {
    let def = metric(id);
    let suffix = if def.kind == Kind::Histogram {
        "_bucket"
    } else {
        ""
    };
    VENDORS
        .iter()
        .flat_map(|v| def.names_of(*v))
        .map(|n| format!("{}{suffix}", n.canonical()))
        .collect()
}

/// `name{finished_reason=~"abort|error"}` when the selector keeps some reasons only.
fn selected(name: &str, selector: &Selector) -> String {
    match selector.reasons {
        Some(reasons) => format!(
            "{name}{{{}=~\"{}\"}}",
            selector_label(selector.metric),
            reasons.join("|")
        ),
        None => name.to_owned(),
    }
}

/// Whether every metric a derivation reads is a per-process one (the API server's, not an
/// engine's): its query is grouped by process and given to each engine of the process.
fn per_process_signal(derivation: Derivation) -> bool {
    let process = |id: MetricId| metric(id).names.iter().all(|n| n.vendor == Vendor::Process);
    match derivation {
        Derivation::Rate(id) => process(id),
        Derivation::Ratio {
            numerator,
            denominator,
            fallback: None,
        } => process(numerator.metric) && process(denominator.metric),
        _ => false,
    }
}

/// Builds the queries of a cycle for one label mapping and window.
#[derive(Debug, Clone)]
pub struct QueryPlan {
    labels: LabelMap,
    window: QuantileWindow,
    /// The longest scrape interval of the engines read, seconds, when known.
    scrape_interval: Option<f64>,
    dcgm: bool,
    engines: bool,
}

impl QueryPlan {
    /// Engines, and GPUs too when `dcgm`.
    pub fn new(labels: LabelMap, window: QuantileWindow, dcgm: bool) -> Self {
        QueryPlan {
            labels,
            window,
            scrape_interval: None,
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

    /// The same plan for engines scraped every `interval` seconds (the longest of them).
    pub fn with_scrape_interval(&self, interval: Option<f64>) -> Self {
        QueryPlan {
            scrape_interval: interval,
            ..self.clone()
        }
    }

    /// The longest scrape interval the plan was told of.
    pub fn scrape_interval(&self) -> Option<f64> {
        self.scrape_interval
    }

    /// The window rates and quantiles are computed over, seconds: the console's, or four
    /// scrape intervals when that is longer.
    pub fn window_secs(&self) -> f64 {
        window_for_interval(self.window, self.scrape_interval)
    }

    /// The range selector of the window in effect.
    fn selector(&self) -> String {
        selector_secs(self.window, self.window_secs())
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

    /// The queries of [`Self::every_cycle`] for a past window: each histogram's quantiles (per
    /// engine, and per model) are not asked of the server but derived by the reader from the
    /// histogram's bucket rates, read once per name ([`Shape::BucketRates`]).
    ///
    /// Why: over a range, Prometheus evaluates every `histogram_quantile` of a query anew,
    /// inner `rate`, `or` and `sum by` included (three times per histogram per engine, 21
    /// times in the per-model query), and its `sum by` of many labels and its `or` each cost
    /// several times the `rate` itself; an hour of 100 engines took it minutes. The bucket
    /// rates of all names are one cheap selector each, and the `or`, the sums and the
    /// interpolation are done once per step by the reader.
    pub fn past_window_cycle(&self) -> Vec<QuerySpec> {
        let mut queries: Vec<QuerySpec> = self
            .every_cycle()
            .into_iter()
            .filter(|q| !matches!(q.shape, Shape::Quantiles(_) | Shape::ModelQuantiles))
            .collect();
        if !self.engines {
            return queries;
        }
        // Each histogram a quantile is derived from, and its stand-in, once.
        let mut histograms: Vec<(MetricId, &'static str)> = Vec::new();
        for def in &SIGNALS {
            if let Derivation::Quantile(histogram, _) = def.derivation {
                for h in std::iter::once(histogram).chain(quantile_stand_in(histogram)) {
                    if !histograms.iter().any(|(known, _)| *known == h) {
                        histograms.push((h, def.query));
                    }
                }
            }
        }
        let w = self.selector();
        for (histogram, query) in histograms {
            for (rank, name) in names(histogram).iter().enumerate() {
                queries.push(QuerySpec {
                    signal: query,
                    promql: format!("rate({name}[{w}])"),
                    shape: Shape::BucketRates { histogram, rank },
                });
            }
        }
        queries
    }

    /// One query per catalog signal (one per histogram for its quantiles), the per-engine ones
    /// first, then the per-process ones.
    fn engine_queries(&self) -> Vec<QuerySpec> {
        let mut per_engine = Vec::new();
        let mut per_process = Vec::new();
        for def in &SIGNALS {
            match def.derivation {
                Derivation::Quantile(histogram, _) => {
                    if !per_engine.iter().any(|q: &QuerySpec| q.signal == def.query) {
                        per_engine.push(self.quantiles(def.query, histogram));
                    }
                }
                // Read by the slow queries.
                Derivation::Capacity(_) => {}
                derivation if per_process_signal(derivation) => {
                    per_process.push(self.process_query(def.id))
                }
                derivation => {
                    per_engine.extend(self.engine_expr(derivation).map(|promql| QuerySpec {
                        signal: def.query,
                        promql,
                        shape: match derivation {
                            Derivation::RawByName(_) => Shape::KvRaw,
                            _ => Shape::Engine(def.id),
                        },
                    }))
                }
            }
        }
        per_engine.extend(per_process);
        per_engine.push(self.sampled());
        per_engine.push(self.resets());
        per_engine.push(self.model_quantiles());
        per_engine
    }

    /// Counter resets of each engine's generated tokens over the window, per report.
    fn resets(&self) -> QuerySpec {
        let w = self.selector();
        self.per_report(
            "resets",
            MetricId::GenerationTokens,
            Shape::Resets,
            |name| format!("resets({name}[{w}])"),
        )
    }

    /// Every latency quantile of the catalog per model, over the model's engines' histograms
    /// merged (bucket rates summed by `le`, as the dashboards do). Several reports of one engine
    /// (two jobs, an HA pair) are one engine: their rates are averaged bucket by bucket, so the
    /// engine weighs once (the highest of each bucket would lean every bucket towards whichever
    /// report happened to scrape more), never summed.
    fn model_quantiles(&self) -> QuerySpec {
        let w = self.selector();
        let model = &self.labels.model;
        let engine = self.labels.engine_identity_clause();
        let merged = |histogram: MetricId| {
            let rates: Vec<String> = names(histogram)
                .iter()
                .map(|name| format!("rate({name}[{w}])"))
                .collect();
            format!(
                "sum by (le, {model}) (avg by (le, {engine}) ({}))",
                rates.join(" or ")
            )
        };
        let parts: Vec<String> = SIGNALS
            .iter()
            .filter_map(|def| match def.derivation {
                Derivation::Quantile(histogram, q) => {
                    let inner = match quantile_stand_in(histogram) {
                        Some(stand_in) => format!(
                            "{} or on ({model}) {}",
                            merged(histogram),
                            merged(stand_in)
                        ),
                        None => merged(histogram),
                    };
                    Some(format!(
                        "label_replace(histogram_quantile({q}, {inner}), \"{QUANTILE_LABEL}\", \"{}\", \"\", \"\")",
                        def.name
                    ))
                }
                _ => None,
            })
            .collect();
        QuerySpec {
            signal: "model_quantiles",
            promql: parts.join(" or "),
            shape: Shape::ModelQuantiles,
        }
    }

    /// The time of each engine's newest `running` sample, per report (job, replica). Each
    /// name has its own `timestamp()`: VictoriaMetrics answers nothing for `timestamp(a or b)`.
    fn sampled(&self) -> QuerySpec {
        self.per_report("sampled", MetricId::Running, Shape::Sampled, |name| {
            format!("timestamp({name})")
        })
    }

    /// `of` applied to each name of `metric`, the highest per engine and report.
    fn per_report(
        &self,
        signal: &'static str,
        metric: MetricId,
        shape: Shape,
        of: impl Fn(&str) -> String,
    ) -> QuerySpec {
        let by = self.labels.engine_clause();
        let parts: Vec<String> = names(metric).iter().map(|name| of(name)).collect();
        QuerySpec {
            signal,
            promql: format!("max by ({by}) ({})", parts.join(" or ")),
            shape,
        }
    }

    /// The PromQL of one per-engine signal; quantiles and the capacity have queries of their
    /// own.
    fn engine_expr(&self, derivation: Derivation) -> Option<String> {
        self.expr(derivation, &self.labels.engine_clause())
    }

    /// The PromQL of a signal computed per group of the labels `by`.
    fn expr(&self, derivation: Derivation, by: &str) -> Option<String> {
        let w = self.selector();
        let rate = |name: &str| format!("sum by ({by}) (rate({name}[{w}]))");
        Some(match derivation {
            Derivation::RawByName(id) => names(id).join(" or "),
            Derivation::Raw(id) => format!("sum by ({by}) ({})", names(id).join(" or ")),
            Derivation::Rate(id) => names(id)
                .iter()
                .map(|name| rate(name))
                .collect::<Vec<_>>()
                .join(" or "),
            Derivation::Ratio {
                numerator,
                denominator,
                fallback,
            } => {
                // One ratio per rank: the paired names of one generation divide each other.
                let pairs: Vec<String> = names(numerator.metric)
                    .iter()
                    .zip(names(denominator.metric))
                    .map(|(n, d)| {
                        format!(
                            "{} / {}",
                            rate(&selected(n, &numerator)),
                            rate(&selected(&d, &denominator))
                        )
                    })
                    .collect();
                match fallback {
                    Some(gauge) => {
                        let mut parts: Vec<String> =
                            pairs.iter().map(|p| format!("({p})")).collect();
                        parts.push(format!("max by ({by}) ({})", names(gauge).join(" or ")));
                        parts.join(" or ")
                    }
                    None => pairs.join(" or "),
                }
            }
            Derivation::AcceptanceLength { accepted, drafts } => names(accepted)
                .iter()
                .zip(names(drafts))
                .map(|(a, d)| format!("1 + ({} / {})", rate(a), rate(&d)))
                .collect::<Vec<_>>()
                .join(" or "),
            Derivation::Quantile(..) | Derivation::Capacity(_) => return None,
        })
    }

    /// The queries sent now and then: configuration that rarely changes.
    pub fn slow(&self) -> Vec<QuerySpec> {
        if !self.engines {
            return Vec::new();
        }
        vec![QuerySpec {
            signal: "cache_config",
            promql: names(MetricId::CacheConfig).join(" or "),
            shape: Shape::CacheConfig,
        }]
    }

    /// The queries whose history is read at start-up: those of the signals the per-engine
    /// history keeps.
    pub fn backfill(&self) -> Vec<QuerySpec> {
        self.every_cycle()
            .into_iter()
            .filter(|q| match &q.shape {
                Shape::KvRaw => kept(Signal::KvUsage),
                Shape::Engine(signal) => kept(*signal),
                Shape::Quantiles(quantiles) => quantiles.iter().any(|(_, s)| kept(*s)),
                Shape::Process(_)
                | Shape::CacheConfig
                | Shape::Dcgm
                | Shape::Sampled
                | Shape::Resets
                | Shape::ModelQuantiles
                | Shape::BucketRates { .. } => false,
            })
            .collect()
    }

    /// `histogram_quantile` for each quantile of one histogram the catalog derives (alternative
    /// names joined with `or`), tagged with `kvtop_q`.
    fn quantiles(&self, query: &'static str, histogram: MetricId) -> QuerySpec {
        let quantiles: Vec<(&'static str, Signal)> = SIGNALS
            .iter()
            .filter_map(|def| match def.derivation {
                Derivation::Quantile(h, q) if h == histogram => Some((q, def.id)),
                _ => None,
            })
            .collect();
        let by = self.labels.engine_clause();
        let w = self.selector();
        let merged = |histogram: MetricId| {
            let rates: Vec<String> = names(histogram)
                .iter()
                .map(|name| format!("rate({name}[{w}])"))
                .collect();
            format!("sum by (le, {by}) ({})", rates.join(" or "))
        };
        // The stand-in's buckets only for engines with none of the histogram's own: `on` the
        // engine's labels, so bucket layouts are never mixed.
        let inner = match quantile_stand_in(histogram) {
            Some(stand_in) => format!("{} or on ({by}) {}", merged(histogram), merged(stand_in)),
            None => merged(histogram),
        };
        let parts: Vec<String> = quantiles
            .iter()
            .map(|(q, _)| {
                format!(
                    "label_replace(histogram_quantile({q}, {inner}), \"{QUANTILE_LABEL}\", \"{q}\", \"\", \"\")"
                )
            })
            .collect();
        QuerySpec {
            signal: query,
            promql: parts.join(" or "),
            shape: Shape::Quantiles(quantiles),
        }
    }

    /// A per-process signal (CPU, HTTP requests) of the serving processes: of the processes
    /// that export engine metrics only (every exporter has `process_cpu_seconds_total`; only
    /// these are wanted), told by their `running` gauge.
    fn process_query(&self, signal: Signal) -> QuerySpec {
        let def = super::signal(signal);
        let by = self.labels.process_clause();
        let engines = names(MetricId::Running).join(" or ");
        let expr = self.expr(def.derivation, &by).unwrap_or_default();
        let expr = if expr.contains(" / ") || expr.contains(" or ") {
            format!("({expr})")
        } else {
            expr
        };
        QuerySpec {
            signal: def.query,
            promql: format!("{expr} and on ({by}) group by ({by}) ({engines})"),
            shape: Shape::Process(signal),
        }
    }
}

fn kept(signal: Signal) -> bool {
    super::signal(signal).history
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
                "tpot",
                "prefill",
                "decode",
                "finished_stop",
                "finished_length",
                "finished_abort",
                "finished_error",
                "finished_repetition",
                "spec_accept_length",
                "cpu",
                "http",
                "http_4xx",
                "http_5xx",
                "sampled",
                "resets",
                "model_quantiles",
                "dcgm"
            ]
        );
        let without_gpus = QueryPlan::new(LabelMap::default(), QuantileWindow::M1, false);
        assert_eq!(without_gpus.every_cycle().len(), 31);
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
                "sum by (pod, namespace, instance, model_name, engine, job, prometheus_replica, \
                 replica, __replica__) (rate(vllm:generation_tokens_total[5m])) or \
                 sum by (pod, namespace, instance, model_name, engine, job, prometheus_replica, \
                 replica, __replica__) (rate(sglang:generation_tokens_total[5m]))"
            )
        );
    }

    #[test]
    fn model_quantiles_merge_engines_once_each_and_name_their_signal() {
        let queries = plan().every_cycle();
        let model = queries
            .iter()
            .find(|q| q.shape == Shape::ModelQuantiles)
            .map(|q| q.promql.clone())
            .unwrap_or_default();
        // One part per quantile signal of the catalog, each named by the signal.
        let quantiles = SIGNALS
            .iter()
            .filter(|d| matches!(d.derivation, Derivation::Quantile(..)))
            .count();
        assert_eq!(model.matches("histogram_quantile(").count(), quantiles);
        assert!(model.contains(
            "label_replace(histogram_quantile(0.95, sum by (le, model_name) (avg by (le, pod, \
             namespace, instance, model_name, engine) \
             (rate(vllm:request_queue_time_seconds_bucket[1m])))), \"kvtop_q\", \"queue_p95\""
        ));
        // TPOT falls back to the ITL per model, never mixing the two layouts.
        assert!(model.contains(
            "(rate(vllm:request_time_per_output_token_seconds_bucket[1m]))) or on (model_name) \
             sum by (le, model_name)"
        ));
        let resets = queries.iter().find(|q| q.shape == Shape::Resets);
        assert_eq!(
            resets.map(|q| q.promql.as_str()),
            Some(
                "max by (pod, namespace, instance, model_name, engine, job, prometheus_replica, \
                 replica, __replica__) (resets(vllm:generation_tokens_total[1m]) or \
                 resets(sglang:generation_tokens_total[1m]))"
            )
        );
    }

    #[test]
    fn quantiles_of_one_histogram_share_a_query_and_carry_their_quantile() {
        let queries = plan().every_cycle();
        let queue = queries.iter().find(|q| q.signal == "queue");
        let promql = queue.map(|q| q.promql.clone()).unwrap_or_default();
        assert!(promql.starts_with(
            "label_replace(histogram_quantile(0.95, sum by (le, pod, namespace, instance, \
             model_name, engine, job, prometheus_replica, replica, __replica__) \
             (rate(vllm:request_queue_time_seconds_bucket[1m]))), \
             \"kvtop_q\", \"0.95\", \"\", \"\") or "
        ));
        assert_eq!(promql.matches("histogram_quantile(").count(), 3);
        assert!(promql.contains("\"kvtop_q\", \"0.5\""));
        assert!(promql.contains("\"kvtop_q\", \"0.99\""));
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
            replicas: vec!["replica".into()],
            ..LabelMap::default()
        };
        assert_eq!(
            labels.engine_clause(),
            "kubernetes_pod_name, namespace, instance, node, model_name, engine, job, replica"
        );
        let cpu =
            QueryPlan::new(labels, QuantileWindow::S15, false).process_query(Signal::CpuCores);
        assert_eq!(
            cpu.promql,
            "sum by (kubernetes_pod_name, namespace, instance, node, job, replica) \
             (rate(process_cpu_seconds_total[15s])) and on (kubernetes_pod_name, namespace, \
             instance, node, job, replica) group by (kubernetes_pod_name, namespace, instance, \
             node, job, replica) (vllm:num_requests_running or sglang:num_running_reqs)"
        );
    }

    #[test]
    fn dashboard_signals_select_like_the_direct_scrape_and_fall_back_per_engine() {
        let queries = plan().every_cycle();
        let find = |s: &str| {
            queries
                .iter()
                .find(|q| q.signal == s)
                .map(|q| q.promql.clone())
                .unwrap_or_default()
        };
        let by = "pod, namespace, instance, model_name, engine, job, prometheus_replica, \
                  replica, __replica__";
        assert_eq!(
            find("finished_length"),
            format!(
                "sum by ({by}) (rate(vllm:request_success_total{{finished_reason=~\"length\"}}[1m])) \
                 / sum by ({by}) (rate(vllm:request_success_total[1m])) or \
                 sum by ({by}) (rate(sglang:num_requests_total{{finished_reason=~\"length\"}}[1m])) \
                 / sum by ({by}) (rate(sglang:num_requests_total[1m]))"
            )
        );
        let process = "pod, namespace, instance, job, prometheus_replica, replica, __replica__";
        assert_eq!(
            find("http_5xx"),
            format!(
                "(sum by ({process}) (rate(http_requests_total{{status=~\"5..\"}}[1m])) / \
                 sum by ({process}) (rate(http_requests_total[1m]))) and on ({process}) \
                 group by ({process}) (vllm:num_requests_running or sglang:num_running_reqs)"
            )
        );
        assert_eq!(
            find("spec_accept_length"),
            format!(
                "1 + (sum by ({by}) (rate(vllm:spec_decode_num_accepted_tokens_total[1m])) / \
                 sum by ({by}) (rate(vllm:spec_decode_num_drafts_total[1m])))"
            )
        );
        // ITL's buckets only for engines without TPOT's, matched on the engine's labels.
        let tpot = find("tpot");
        assert_eq!(tpot.matches("histogram_quantile(").count(), 3);
        assert!(
            tpot.contains(&format!(
                "sum by (le, {by}) (rate(vllm:request_time_per_output_token_seconds_bucket[1m])) \
                 or on ({by}) sum by (le, {by}) (rate(vllm:inter_token_latency_seconds_bucket[1m]) \
                 or rate(vllm:time_per_output_token_seconds_bucket[1m])"
            )),
            "{tpot}"
        );
    }

    #[test]
    fn the_window_stretches_to_four_scrape_intervals() {
        let plan = plan().with_window(QuantileWindow::S15);
        assert_eq!(plan.window_secs(), 15.0);
        let sparse = plan.with_scrape_interval(Some(15.0));
        assert_eq!(sparse.window_secs(), 60.0);
        let gen_tps = sparse
            .every_cycle()
            .into_iter()
            .find(|q| q.signal == "gen_tps")
            .map(|q| q.promql)
            .unwrap_or_default();
        assert!(gen_tps.contains("[60s]"), "{gen_tps}");
        // A window already long enough is kept as named.
        let m5 = sparse.with_window(QuantileWindow::M5);
        assert_eq!(m5.window_secs(), 300.0);
        assert!(m5.every_cycle().iter().any(|q| q.promql.contains("[5m]")));
        assert_eq!(
            window_for_interval(QuantileWindow::M1, Some(f64::NAN)),
            60.0
        );
    }

    #[test]
    fn freshness_is_the_timestamp_of_each_reports_running_sample() {
        let sampled = plan()
            .every_cycle()
            .into_iter()
            .find(|q| q.shape == Shape::Sampled)
            .map(|q| q.promql)
            .unwrap_or_default();
        assert_eq!(
            sampled,
            "max by (pod, namespace, instance, model_name, engine, job, prometheus_replica, \
             replica, __replica__) (timestamp(vllm:num_requests_running) or \
             timestamp(sglang:num_running_reqs))"
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
    fn a_past_window_reads_each_histograms_bucket_rates_once_per_name() {
        let live = plan().every_cycle();
        let past = plan().past_window_cycle();
        // Everything but the quantile queries is asked as live.
        let kept: Vec<&QuerySpec> = live
            .iter()
            .filter(|q| !matches!(q.shape, Shape::Quantiles(_) | Shape::ModelQuantiles))
            .collect();
        assert_eq!(past.iter().take(kept.len()).collect::<Vec<_>>(), kept);
        let buckets: Vec<&str> = past[kept.len()..]
            .iter()
            .map(|q| q.promql.as_str())
            .collect();
        assert!(
            past[kept.len()..]
                .iter()
                .all(|q| matches!(q.shape, Shape::BucketRates { .. }))
        );
        // Every histogram a quantile is derived from, each name once, in order of precedence.
        assert_eq!(buckets.len(), 11, "{buckets:?}");
        let itl: Vec<&str> = buckets
            .iter()
            .copied()
            .filter(|q| q.contains("inter_token") || q.contains("vllm:time_per_output"))
            .collect();
        assert_eq!(
            itl,
            [
                "rate(vllm:inter_token_latency_seconds_bucket[1m])",
                "rate(vllm:time_per_output_token_seconds_bucket[1m])",
                "rate(sglang:inter_token_latency_seconds_bucket[1m])"
            ]
        );
        assert!(buckets.contains(&"rate(vllm:request_time_per_output_token_seconds_bucket[1m])"));
        let ranks: Vec<usize> = past[kept.len()..]
            .iter()
            .filter_map(|q| match q.shape {
                Shape::BucketRates {
                    histogram: MetricId::Itl,
                    rank,
                } => Some(rank),
                _ => None,
            })
            .collect();
        assert_eq!(ranks, [0, 1, 2]);
        assert!(
            plan()
                .gpus_only()
                .past_window_cycle()
                .iter()
                .all(|q| q.signal == "dcgm")
        );
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
