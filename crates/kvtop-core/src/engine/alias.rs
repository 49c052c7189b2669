//! The alias table: vendor metric names -> typed signals, one `EngineSample` per engine.
//!
//! One pass over the samples: the vendor prefix is stripped (`vllm:`, Ray Serve's `ray_vllm:`,
//! `sglang:`) and a `match` on the bare name picks a route. Names kvtop does not read
//! (`_created` series, request-parameter histograms, `iteration_tokens_total`, ...) stop there:
//! they neither carry a signal nor create an engine. For the others the labels are scanned
//! once, the engine is found by its raw `model_name` × `engine` values (in order of first
//! appearance) and the value lands in a slot. Renamed metrics have separate slots and the
//! precedence (new name over old) is applied once at the end, so family order does not matter.
//! How repeated and extra-labelled series combine is documented in `series.rs`.

use super::cache_info::{CacheInfoSeries, cache_config_for};
use super::series::{HistogramParts, SeriesKey, SeriesSet};
use super::{EngineFlavor, EngineId, EngineSample};
use crate::metrics::number::parse_f64;
use crate::metrics::parser::unescape;
use crate::metrics::{Exposition, LabelIter, Sample};

/// Map a parsed payload onto one sample per engine (per `model_name` × `engine` label pair).
pub fn extract_engines(expo: &Exposition<'_>) -> Vec<EngineSample> {
    let mut engines: Vec<EngineParts<'_>> = Vec::new();
    let mut cache_infos: Vec<CacheInfoSeries<'_>> = Vec::new();
    let mut process_cpu = SeriesSet::default();
    // Samples of one family arrive together: remember the last name's route so the name
    // `match` runs once per family rather than once per sample.
    let mut last: Option<(&str, Vendor, Route)> = None;
    let mut last_engine = 0usize;

    for sample in &expo.samples {
        let (vendor, route) = match last {
            Some((name, vendor, route)) if name == sample.name => (vendor, route),
            _ => {
                let (vendor, route) = route_of(sample.name);
                last = Some((sample.name, vendor, route));
                (vendor, route)
            }
        };
        if route == Route::ProcessCpu {
            process_cpu.record((sample.labels_raw, ""), sample.value);
            continue;
        }
        // Unmapped names (`_created` series, request-parameter histograms, ...) are skipped
        // before their labels are even looked at: they neither carry a signal nor make an
        // engine.
        if route == Route::Ignored {
            continue;
        }
        let labels = SeriesLabels::scan(sample);
        if route == Route::CacheConfig {
            cache_infos.push(CacheInfoSeries {
                engine: labels.engine,
                model: labels.model,
                labels_raw: sample.labels_raw,
            });
            continue;
        }
        let model = labels.model.unwrap_or("");
        let engine_label = labels.engine.unwrap_or("");
        let same = |e: &EngineParts<'_>| e.model == model && e.engine == engine_label;
        // Histogram buckets of one engine are consecutive: try the last engine first.
        let index = match engines.get(last_engine) {
            Some(e) if same(e) => last_engine,
            _ => match engines.iter().position(same) {
                Some(index) => index,
                None => {
                    engines.push(EngineParts::new(model, engine_label));
                    engines.len() - 1
                }
            },
        };
        last_engine = index;
        if let Some(engine) = engines.get_mut(index) {
            engine.record(vendor, route, &labels, sample);
        }
    }

    let process_cpu = process_cpu.sum();
    engines
        .into_iter()
        .map(|engine| {
            let cache_config =
                cache_config_for(&cache_infos, engine.model, engine.engine_label_value());
            let mut sample = engine.finish();
            sample.process_cpu_seconds_total = process_cpu;
            sample.cache_config = cache_config;
            sample
        })
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Vendor {
    Vllm,
    SGLang,
    /// Unprefixed process collector names.
    Process,
}

/// The vendor (from the prefix; Ray Serve's `ray_vllm:` is vLLM) and the route of a name.
fn route_of(name: &str) -> (Vendor, Route) {
    if let Some(rest) = name.strip_prefix("vllm:") {
        (Vendor::Vllm, vllm_route(rest))
    } else if let Some(rest) = name.strip_prefix("ray_vllm:") {
        (Vendor::Vllm, vllm_route(rest))
    } else if let Some(rest) = name.strip_prefix("sglang:") {
        (Vendor::SGLang, sglang_route(rest))
    } else if name == "process_cpu_seconds_total" {
        (Vendor::Process, Route::ProcessCpu)
    } else {
        (Vendor::Process, Route::Ignored)
    }
}

/// The labels of one sample that matter here, as raw (still escaped) values.
struct SeriesLabels<'a> {
    model: Option<&'a str>,
    engine: Option<&'a str>,
    finished_reason: Option<&'a str>,
    /// `le` value and the series identity with the `le` pair cut out.
    le: Option<(&'a str, SeriesKey<'a>)>,
}

impl<'a> SeriesLabels<'a> {
    fn scan(sample: &Sample<'a>) -> Self {
        let raw = sample.labels_raw;
        let mut labels = SeriesLabels {
            model: None,
            engine: None,
            finished_reason: None,
            le: None,
        };
        let mut iter = LabelIter { rest: raw };
        while let Some(label) = iter.next_raw() {
            // An if-chain rather than a `match`: a string `match` compiles to a jump table on
            // the length, an indirect branch the CPU mispredicts on almost every label.
            let name = label.name;
            if name == "le" {
                let start = raw.len().saturating_sub(label.tail_len);
                let end = raw.len().saturating_sub(iter.rest.len());
                let key = (
                    raw.get(..start).unwrap_or_default(),
                    raw.get(end..).unwrap_or_default(),
                );
                labels.le = Some((label.value, key));
            } else if name == "engine" {
                labels.engine = Some(label.value);
            } else if name == "model_name" {
                labels.model = Some(label.value);
            } else if name == "finished_reason" {
                labels.finished_reason = Some(label.value);
            }
        }
        labels
    }
}

/// Where one vendor metric goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    Gauge(Gauge),
    Counter(Counter),
    RequestSuccess,
    Histogram(Hist, HistPart),
    /// `cache_config_info`: configuration labels, attached to engines at the end.
    CacheConfig,
    /// `process_cpu_seconds_total`: one per target, attached to every engine.
    ProcessCpu,
    /// Not mapped, but tells which engine generation exported it.
    Evidence(Flavor),
    Ignored,
}

/// Which engine generation a name proves (see `EngineParts::flavor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flavor {
    V0,
    V1,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gauge {
    KvUsage,
    KvUsageOld,
    Running,
    Waiting,
    Swapped,
    PrefixHitRate,
    SpecAcceptance,
}
const GAUGES: usize = 7;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Counter {
    Preemptions,
    PromptTokens,
    GenerationTokens,
    PrefixQueries,
    PrefixHits,
    PrefixQueriesOld,
    PrefixHitsOld,
    SpecDrafts,
    SpecDraftTokens,
    SpecAcceptedTokens,
}
const COUNTERS: usize = 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hist {
    Ttft,
    Itl,
    ItlOld,
    E2e,
    QueueTime,
}
const HISTS: usize = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HistPart {
    Bucket,
    Sum,
    Count,
}

/// `base_bucket` / `base_sum` / `base_count` -> `(base, part)`.
fn histogram_part(name: &str) -> Option<(&str, HistPart)> {
    if let Some(base) = name.strip_suffix("_bucket") {
        Some((base, HistPart::Bucket))
    } else if let Some(base) = name.strip_suffix("_sum") {
        Some((base, HistPart::Sum))
    } else {
        name.strip_suffix("_count")
            .map(|base| (base, HistPart::Count))
    }
}

/// vLLM names (V0 and V1 through 0.33) without the `vllm:` prefix.
fn vllm_route(name: &str) -> Route {
    use Route::{Counter as C, Evidence as E, Gauge as G};
    match name {
        "kv_cache_usage_perc" => G(Gauge::KvUsage),
        "gpu_cache_usage_perc" => G(Gauge::KvUsageOld),
        "num_requests_running" => G(Gauge::Running),
        "num_requests_waiting" => G(Gauge::Waiting),
        "num_requests_swapped" => G(Gauge::Swapped),
        "gpu_prefix_cache_hit_rate" => G(Gauge::PrefixHitRate),
        "spec_decode_draft_acceptance_rate" => G(Gauge::SpecAcceptance),
        "num_preemptions_total" => C(Counter::Preemptions),
        "prompt_tokens_total" => C(Counter::PromptTokens),
        "generation_tokens_total" => C(Counter::GenerationTokens),
        "prefix_cache_queries_total" => C(Counter::PrefixQueries),
        "prefix_cache_hits_total" => C(Counter::PrefixHits),
        "gpu_prefix_cache_queries_total" => C(Counter::PrefixQueriesOld),
        "gpu_prefix_cache_hits_total" => C(Counter::PrefixHitsOld),
        "spec_decode_num_drafts_total" => C(Counter::SpecDrafts),
        "spec_decode_num_draft_tokens_total" => C(Counter::SpecDraftTokens),
        "spec_decode_num_accepted_tokens_total" => C(Counter::SpecAcceptedTokens),
        "request_success_total" => Route::RequestSuccess,
        "cache_config_info" => Route::CacheConfig,
        // A breakdown of `num_requests_waiting` (0.33), never added to it.
        "num_requests_waiting_by_reason" => E(Flavor::V1),
        "cpu_cache_usage_perc"
        | "cpu_prefix_cache_hit_rate"
        | "avg_prompt_throughput_toks_per_s"
        | "avg_generation_throughput_toks_per_s"
        | "spec_decode_efficiency" => E(Flavor::V0),
        _ => match histogram_part(name) {
            Some((base, part)) => match base {
                "time_to_first_token_seconds" => Route::Histogram(Hist::Ttft, part),
                "inter_token_latency_seconds" => Route::Histogram(Hist::Itl, part),
                "time_per_output_token_seconds" => Route::Histogram(Hist::ItlOld, part),
                "e2e_request_latency_seconds" => Route::Histogram(Hist::E2e, part),
                "request_queue_time_seconds" => Route::Histogram(Hist::QueueTime, part),
                // Everything else, including `iteration_tokens_total` (a histogram despite
                // its name), is not a signal kvtop reads.
                _ => Route::Ignored,
            },
            None => Route::Ignored,
        },
    }
}

/// SGLang names without the `sglang:` prefix.
fn sglang_route(name: &str) -> Route {
    match name {
        "token_usage" => Route::Gauge(Gauge::KvUsage),
        "num_running_reqs" => Route::Gauge(Gauge::Running),
        "num_queue_reqs" => Route::Gauge(Gauge::Waiting),
        "cache_hit_rate" => Route::Gauge(Gauge::PrefixHitRate),
        "prompt_tokens_total" => Route::Counter(Counter::PromptTokens),
        "generation_tokens_total" => Route::Counter(Counter::GenerationTokens),
        _ => match histogram_part(name) {
            Some(("time_to_first_token_seconds", part)) => Route::Histogram(Hist::Ttft, part),
            Some(("inter_token_latency_seconds", part)) => Route::Histogram(Hist::Itl, part),
            Some(("e2e_request_latency_seconds", part)) => Route::Histogram(Hist::E2e, part),
            _ => Route::Ignored,
        },
    }
}

/// Everything read so far about one engine, still borrowing the payload.
struct EngineParts<'a> {
    model: &'a str,
    engine: &'a str,
    has_engine_label: bool,
    sglang: bool,
    v1_names: bool,
    v0_names: bool,
    gauges: [SeriesSet<'a>; GAUGES],
    counters: [SeriesSet<'a>; COUNTERS],
    hists: [HistogramParts<'a>; HISTS],
    /// `request_success_total` per raw `finished_reason`, in order of first appearance.
    finished: Vec<(&'a str, SeriesSet<'a>)>,
}

impl<'a> EngineParts<'a> {
    fn new(model: &'a str, engine: &'a str) -> Self {
        EngineParts {
            model,
            engine,
            has_engine_label: false,
            sglang: false,
            v1_names: false,
            v0_names: false,
            gauges: Default::default(),
            counters: Default::default(),
            hists: Default::default(),
            finished: Vec::new(),
        }
    }

    /// The raw `engine` label value, when the engine's series carry one.
    fn engine_label_value(&self) -> Option<&'a str> {
        self.has_engine_label.then_some(self.engine)
    }

    fn record(&mut self, vendor: Vendor, route: Route, labels: &SeriesLabels<'a>, s: &Sample<'a>) {
        self.has_engine_label |= labels.engine.is_some();
        self.sglang |= vendor == Vendor::SGLang;
        let key = (s.labels_raw, "");
        match route {
            Route::Gauge(gauge) => {
                match gauge {
                    Gauge::KvUsage if vendor == Vendor::Vllm => self.v1_names = true,
                    Gauge::Swapped | Gauge::PrefixHitRate | Gauge::SpecAcceptance
                        if vendor == Vendor::Vllm =>
                    {
                        self.v0_names = true
                    }
                    _ => {}
                }
                self.gauges[gauge as usize].record(key, s.value);
            }
            Route::Counter(counter) => {
                if matches!(
                    counter,
                    Counter::PrefixQueries
                        | Counter::PrefixHits
                        | Counter::PrefixQueriesOld
                        | Counter::PrefixHitsOld
                        | Counter::SpecDrafts
                ) {
                    self.v1_names = true;
                }
                self.counters[counter as usize].record(key, s.value);
            }
            Route::RequestSuccess => {
                let reason = labels.finished_reason.unwrap_or("");
                match self.finished.iter_mut().find(|(r, _)| *r == reason) {
                    Some((_, set)) => set.record(key, s.value),
                    None => {
                        let mut set = SeriesSet::default();
                        set.record(key, s.value);
                        self.finished.push((reason, set));
                    }
                }
            }
            Route::Histogram(hist, part) => {
                match hist {
                    Hist::Itl if vendor == Vendor::Vllm => self.v1_names = true,
                    Hist::ItlOld => self.v0_names = true,
                    _ => {}
                }
                let parts = &mut self.hists[hist as usize];
                match part {
                    HistPart::Sum => parts.record_sum(key, s.value),
                    HistPart::Count => parts.record_count(key, s.value),
                    HistPart::Bucket => {
                        let bound = labels.le.and_then(|(le, key)| Some((parse_f64(le)?, key)));
                        if let Some((le, key)) = bound {
                            parts.record_bucket(key, le, s.value);
                        }
                    }
                }
            }
            Route::Evidence(Flavor::V0) => self.v0_names = true,
            Route::Evidence(Flavor::V1) => self.v1_names = true,
            Route::CacheConfig | Route::ProcessCpu | Route::Ignored => {}
        }
    }

    /// V1 wins over V0 evidence: V1 releases up to 0.11 still export the deprecated V0 names
    /// (`gpu_cache_usage_perc`, `time_per_output_token_seconds`) next to the new ones.
    fn flavor(&self) -> EngineFlavor {
        if self.sglang {
            EngineFlavor::SGLang
        } else if self.has_engine_label || self.v1_names {
            EngineFlavor::VllmV1
        } else if self.v0_names {
            EngineFlavor::VllmV0
        } else {
            EngineFlavor::Unknown
        }
    }

    fn finish(self) -> EngineSample {
        let flavor = self.flavor();
        let [
            kv_usage,
            kv_usage_old,
            running,
            waiting,
            swapped,
            prefix_hit_rate,
            spec_acceptance,
        ] = self.gauges;
        let [
            preemptions,
            prompt_tokens,
            generation_tokens,
            prefix_queries,
            prefix_hits,
            prefix_queries_old,
            prefix_hits_old,
            spec_drafts,
            spec_draft_tokens,
            spec_accepted,
        ] = self.counters;
        let [ttft, itl, itl_old, e2e, queue_time] = self.hists;

        // Renamed signals: the new name wins whenever it is exported.
        let kv_usage = kv_usage.max().or_else(|| kv_usage_old.max());
        let itl = if itl.is_empty() { itl_old } else { itl };
        // The prefix-cache pair is taken from one generation, never mixed.
        let (prefix_queries, prefix_hits) = if prefix_queries.is_empty() && prefix_hits.is_empty() {
            (prefix_queries_old, prefix_hits_old)
        } else {
            (prefix_queries, prefix_hits)
        };

        EngineSample {
            id: EngineId {
                model: unescape(self.model).into_owned(),
                engine: unescape(self.engine).into_owned(),
            },
            flavor,
            kv_usage,
            running: running.max(),
            waiting: waiting.max(),
            swapped: swapped.max(),
            prefix_hit_rate_gauge: prefix_hit_rate.max(),
            spec_acceptance_gauge: spec_acceptance.max(),
            preemptions_total: preemptions.sum(),
            prompt_tokens_total: prompt_tokens.sum(),
            generation_tokens_total: generation_tokens.sum(),
            prefix_queries_total: prefix_queries.sum(),
            prefix_hits_total: prefix_hits.sum(),
            request_success_total: self
                .finished
                .iter()
                .filter_map(|(reason, set)| Some((unescape(reason).into_owned(), set.sum()?)))
                .collect(),
            spec_drafts_total: spec_drafts.sum(),
            spec_draft_tokens_total: spec_draft_tokens.sum(),
            spec_accepted_tokens_total: spec_accepted.sum(),
            process_cpu_seconds_total: None,
            ttft: ttft.finish(),
            itl: itl.finish(),
            e2e: e2e.finish(),
            queue_time: queue_time.finish(),
            cache_config: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Histogram;
    use crate::metrics::{Bucket, parse};

    fn bucket(le: f64, count: f64) -> Bucket {
        Bucket { le, count }
    }

    fn engines(payload: &str) -> Vec<EngineSample> {
        let expo = parse(payload);
        assert_eq!(expo.malformed, 0, "{:?}", expo.errors);
        extract_engines(&expo)
    }

    fn one(payload: &str) -> EngineSample {
        let mut all = engines(payload);
        assert_eq!(all.len(), 1, "{all:?}");
        all.remove(0)
    }

    #[test]
    fn no_engine_metrics_means_no_engines() {
        assert!(engines("process_cpu_seconds_total 3.5\nprocess_open_fds 6\n").is_empty());
        assert!(engines("").is_empty());
        // Configuration and `_created` series alone do not make an engine.
        assert!(engines("vllm:cache_config_info{block_size=\"16\"} 1\nvllm:prompt_tokens_created{model_name=\"m\"} 1.7e9\n").is_empty());
    }

    #[test]
    fn kv_usage_prefers_the_new_name_in_either_order() {
        let new_first = one(
            "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.5\n\
             vllm:gpu_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.25\n",
        );
        assert_eq!(new_first.kv_usage, Some(0.5));
        let old_first = one(
            "vllm:gpu_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.25\n\
             vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.5\n",
        );
        assert_eq!(old_first.kv_usage, Some(0.5));
        let old_only = one("vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.75\n");
        assert_eq!(old_only.kv_usage, Some(0.75));
        let none = one("vllm:num_requests_running{model_name=\"m\"} 1\n");
        assert_eq!(none.kv_usage, None);
    }

    #[test]
    fn vllm_gauges_and_v0_only_signals() {
        let e = one("vllm:num_requests_running{model_name=\"m\"} 3\n\
             vllm:num_requests_waiting{model_name=\"m\"} 4\n\
             vllm:num_requests_swapped{model_name=\"m\"} 2\n\
             vllm:gpu_prefix_cache_hit_rate{model_name=\"m\"} 0.4\n\
             vllm:spec_decode_draft_acceptance_rate{model_name=\"m\"} 0.6\n");
        assert_eq!(e.flavor, EngineFlavor::VllmV0);
        assert_eq!(e.running, Some(3.0));
        assert_eq!(e.waiting, Some(4.0));
        assert_eq!(e.swapped, Some(2.0));
        assert_eq!(e.prefix_hit_rate_gauge, Some(0.4));
        assert_eq!(e.spec_acceptance_gauge, Some(0.6));
        assert_eq!(e.prefix_queries_total, None);
    }

    #[test]
    fn waiting_by_reason_is_a_breakdown_not_an_addition() {
        let e = one(
            "vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 7\n\
             vllm:num_requests_waiting_by_reason{engine=\"0\",model_name=\"m\",reason=\"capacity\"} 5\n\
             vllm:num_requests_waiting_by_reason{engine=\"0\",model_name=\"m\",reason=\"deferred\"} 2\n",
        );
        assert_eq!(e.waiting, Some(7.0));
        assert_eq!(e.flavor, EngineFlavor::VllmV1);
    }

    #[test]
    fn counters_and_request_success_by_reason() {
        let e = one("vllm:num_preemptions_total{model_name=\"m\"} 11\n\
             vllm:prompt_tokens_total{model_name=\"m\"} 1000\n\
             vllm:generation_tokens_total{model_name=\"m\"} 2000\n\
             vllm:request_success_total{finished_reason=\"stop\",model_name=\"m\"} 5\n\
             vllm:request_success_total{finished_reason=\"length\",model_name=\"m\"} 3\n\
             vllm:request_success_total{finished_reason=\"error\",model_name=\"m\"} 1\n");
        assert_eq!(e.preemptions_total, Some(11.0));
        assert_eq!(e.prompt_tokens_total, Some(1000.0));
        assert_eq!(e.generation_tokens_total, Some(2000.0));
        assert_eq!(
            e.request_success_total,
            vec![
                ("stop".to_string(), 5.0),
                ("length".to_string(), 3.0),
                ("error".to_string(), 1.0)
            ]
        );
        assert_eq!(e.requests_finished_total(), Some(9.0));
    }

    #[test]
    fn prefix_cache_counters_prefer_token_based_names_and_never_mix() {
        let both = one(
            "vllm:gpu_prefix_cache_queries_total{engine=\"0\",model_name=\"m\"} 10\n\
             vllm:gpu_prefix_cache_hits_total{engine=\"0\",model_name=\"m\"} 5\n\
             vllm:prefix_cache_queries_total{engine=\"0\",model_name=\"m\"} 160\n\
             vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"m\"} 80\n",
        );
        assert_eq!(both.prefix_queries_total, Some(160.0));
        assert_eq!(both.prefix_hits_total, Some(80.0));
        let old = one("vllm:gpu_prefix_cache_queries_total{model_name=\"m\"} 10\n\
             vllm:gpu_prefix_cache_hits_total{model_name=\"m\"} 5\n");
        assert_eq!(old.prefix_queries_total, Some(10.0));
        assert_eq!(old.prefix_hits_total, Some(5.0));
        assert_eq!(old.flavor, EngineFlavor::VllmV1);
        // Only the new queries counter: hits are unknown, not taken from the old pair.
        let half = one("vllm:prefix_cache_queries_total{model_name=\"m\"} 160\n\
             vllm:gpu_prefix_cache_hits_total{model_name=\"m\"} 5\n");
        assert_eq!(half.prefix_queries_total, Some(160.0));
        assert_eq!(half.prefix_hits_total, None);
    }

    #[test]
    fn spec_decode_v1_counters_ignore_per_position_series() {
        let e = one(
            "vllm:spec_decode_num_drafts_total{engine=\"0\",model_name=\"m\"} 10\n\
             vllm:spec_decode_num_draft_tokens_total{engine=\"0\",model_name=\"m\"} 30\n\
             vllm:spec_decode_num_accepted_tokens_total{engine=\"0\",model_name=\"m\"} 21\n\
             vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"0\",model_name=\"m\",position=\"0\"} 9\n",
        );
        assert_eq!(e.spec_drafts_total, Some(10.0));
        assert_eq!(e.spec_draft_tokens_total, Some(30.0));
        assert_eq!(e.spec_accepted_tokens_total, Some(21.0));
        assert_eq!(e.spec_acceptance_gauge, None);
    }

    const TPOT: &str = "vllm:time_per_output_token_seconds_bucket{le=\"0.1\",model_name=\"m\"} 1\n\
         vllm:time_per_output_token_seconds_bucket{le=\"+Inf\",model_name=\"m\"} 2\n\
         vllm:time_per_output_token_seconds_sum{model_name=\"m\"} 0.3\n\
         vllm:time_per_output_token_seconds_count{model_name=\"m\"} 2\n";
    const ITL: &str = "vllm:inter_token_latency_seconds_bucket{le=\"0.05\",model_name=\"m\"} 4\n\
         vllm:inter_token_latency_seconds_bucket{le=\"+Inf\",model_name=\"m\"} 5\n\
         vllm:inter_token_latency_seconds_count{model_name=\"m\"} 5\n";

    #[test]
    fn itl_prefers_inter_token_latency_over_time_per_output_token() {
        let old_only = one(TPOT);
        assert_eq!(old_only.flavor, EngineFlavor::VllmV0);
        assert_eq!(
            old_only.itl,
            Some(Histogram {
                buckets: vec![bucket(0.1, 1.0), bucket(f64::INFINITY, 2.0)],
                sum: Some(0.3),
                count: Some(2.0),
            })
        );
        for payload in [format!("{TPOT}{ITL}"), format!("{ITL}{TPOT}")] {
            let e = one(&payload);
            assert_eq!(e.flavor, EngineFlavor::VllmV1);
            let itl = e.itl.expect("ITL");
            assert_eq!(itl.buckets.first(), Some(&bucket(0.05, 4.0)));
            assert_eq!(itl.count, Some(5.0));
            assert_eq!(itl.sum, None);
        }
    }

    #[test]
    fn latency_histograms_are_routed_and_iteration_tokens_is_not_a_counter() {
        let e = one(
            "vllm:time_to_first_token_seconds_bucket{le=\"1.0\",model_name=\"m\"} 1\n\
             vllm:e2e_request_latency_seconds_bucket{le=\"2.0\",model_name=\"m\"} 2\n\
             vllm:request_queue_time_seconds_bucket{le=\"3.0\",model_name=\"m\"} 3\n\
             vllm:iteration_tokens_total_bucket{le=\"8.0\",model_name=\"m\"} 4\n\
             vllm:iteration_tokens_total_count{model_name=\"m\"} 4\n\
             vllm:iteration_tokens_total_sum{model_name=\"m\"} 20\n",
        );
        let first = |h: &Option<Histogram>| h.as_ref().and_then(|h| h.buckets.first().copied());
        assert_eq!(first(&e.ttft), Some(bucket(1.0, 1.0)));
        assert_eq!(first(&e.e2e), Some(bucket(2.0, 2.0)));
        assert_eq!(first(&e.queue_time), Some(bucket(3.0, 3.0)));
        assert_eq!(e.itl, None);
        assert_eq!(e.generation_tokens_total, None);
        assert_eq!(e.prompt_tokens_total, None);
        assert_eq!(e.preemptions_total, None);
    }

    #[test]
    fn bucket_bounds_compare_numerically_and_are_sorted() {
        let e = one(
            "vllm:time_to_first_token_seconds_bucket{le=\"+Inf\",model_name=\"m\"} 9\n\
             vllm:time_to_first_token_seconds_bucket{le=\"120.0\",model_name=\"m\"} 7\n\
             vllm:time_to_first_token_seconds_bucket{le=\"0.5\",model_name=\"m\"} 2\n\
             vllm:time_to_first_token_seconds_bucket{le=\"120\",model_name=\"m\"} 8\n\
             vllm:time_to_first_token_seconds_bucket{le=\"bogus\",model_name=\"m\"} 1\n",
        );
        assert_eq!(
            e.ttft.expect("TTFT").buckets,
            vec![
                bucket(0.5, 2.0),
                bucket(120.0, 8.0),
                bucket(f64::INFINITY, 9.0),
            ]
        );
    }

    #[test]
    fn extra_label_series_combine_and_exact_duplicates_count_once() {
        let e = one(
            "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\",pid=\"1\"} 0.5\n\
             vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\",pid=\"2\"} 0.75\n\
             vllm:prompt_tokens_total{engine=\"0\",model_name=\"m\",pid=\"1\"} 100\n\
             vllm:prompt_tokens_total{engine=\"0\",model_name=\"m\",pid=\"2\"} 50\n\
             vllm:generation_tokens_total{engine=\"0\",model_name=\"m\"} 10\n\
             vllm:generation_tokens_total{engine=\"0\",model_name=\"m\"} 12\n\
             vllm:e2e_request_latency_seconds_bucket{engine=\"0\",le=\"1.0\",model_name=\"m\",pid=\"1\"} 3\n\
             vllm:e2e_request_latency_seconds_bucket{engine=\"0\",le=\"1.0\",model_name=\"m\",pid=\"2\"} 4\n\
             vllm:e2e_request_latency_seconds_bucket{engine=\"0\",le=\"1.0\",model_name=\"m\",pid=\"2\"} 5\n\
             vllm:e2e_request_latency_seconds_count{engine=\"0\",model_name=\"m\",pid=\"1\"} 3\n\
             vllm:e2e_request_latency_seconds_count{engine=\"0\",model_name=\"m\",pid=\"2\"} 5\n",
        );
        assert_eq!(e.kv_usage, Some(0.75));
        assert_eq!(e.prompt_tokens_total, Some(150.0));
        assert_eq!(e.generation_tokens_total, Some(12.0));
        let e2e = e.e2e.expect("e2e");
        assert_eq!(e2e.buckets, vec![bucket(1.0, 8.0)]);
        assert_eq!(e2e.count, Some(8.0));
    }

    #[test]
    fn created_series_are_ignored() {
        let e = one("vllm:prompt_tokens_total{model_name=\"m\"} 10\n\
             vllm:prompt_tokens_created{model_name=\"m\"} 1.7e9\n\
             vllm:prompt_tokens_total_created{model_name=\"m\"} 1.7e9\n");
        assert_eq!(e.prompt_tokens_total, Some(10.0));
    }

    #[test]
    fn ray_serve_prefix_is_vllm() {
        let e = one(
            "ray_vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.3\n\
             ray_vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 2\n",
        );
        assert_eq!(e.kv_usage, Some(0.3));
        assert_eq!(e.running, Some(2.0));
        assert_eq!(e.flavor, EngineFlavor::VllmV1);
    }

    #[test]
    fn sglang_aliases() {
        let e = one("sglang:token_usage{model_name=\"q\"} 0.42\n\
             sglang:num_running_reqs{model_name=\"q\"} 12\n\
             sglang:num_queue_reqs{model_name=\"q\"} 3\n\
             sglang:cache_hit_rate{model_name=\"q\"} 0.8\n\
             sglang:prompt_tokens_total{model_name=\"q\"} 500\n\
             sglang:generation_tokens_total{model_name=\"q\"} 900\n\
             sglang:time_to_first_token_seconds_bucket{le=\"0.1\",model_name=\"q\"} 1\n\
             sglang:inter_token_latency_seconds_bucket{le=\"0.01\",model_name=\"q\"} 2\n\
             sglang:e2e_request_latency_seconds_bucket{le=\"1\",model_name=\"q\"} 3\n");
        assert_eq!(e.flavor, EngineFlavor::SGLang);
        assert_eq!(e.id.model, "q");
        assert_eq!(e.kv_usage, Some(0.42));
        assert_eq!(e.running, Some(12.0));
        assert_eq!(e.waiting, Some(3.0));
        assert_eq!(e.prefix_hit_rate_gauge, Some(0.8));
        assert_eq!(e.prompt_tokens_total, Some(500.0));
        assert_eq!(e.generation_tokens_total, Some(900.0));
        let first = |h: &Option<Histogram>| h.as_ref().and_then(|h| h.buckets.first().copied());
        assert_eq!(first(&e.ttft), Some(bucket(0.1, 1.0)));
        assert_eq!(first(&e.itl), Some(bucket(0.01, 2.0)));
        assert_eq!(first(&e.e2e), Some(bucket(1.0, 3.0)));
    }

    #[test]
    fn flavor_detection() {
        assert_eq!(
            one("vllm:num_requests_running{engine=\"1\",model_name=\"m\"} 1\n").flavor,
            EngineFlavor::VllmV1
        );
        assert_eq!(
            one("vllm:num_requests_running{model_name=\"m\"} 1\n").flavor,
            EngineFlavor::Unknown
        );
        assert_eq!(
            one("vllm:num_requests_running{model_name=\"m\"} 1\nvllm:cpu_cache_usage_perc{model_name=\"m\"} 0\n").flavor,
            EngineFlavor::VllmV0
        );
        assert_eq!(
            one("vllm:avg_generation_throughput_toks_per_s{model_name=\"m\"} 12\n").flavor,
            EngineFlavor::VllmV0
        );
        assert_eq!(
            one("vllm:kv_cache_usage_perc{model_name=\"m\"} 0.1\n").flavor,
            EngineFlavor::VllmV1
        );
    }

    #[test]
    fn engines_in_order_of_first_appearance_with_unescaped_ids() {
        let all = engines(
            "vllm:num_requests_running{engine=\"1\",model_name=\"b\"} 1\n\
             vllm:num_requests_running{engine=\"0\",model_name=\"b\"} 2\n\
             vllm:num_requests_running{engine=\"0\",model_name=\"a \\\"quoted\\\" \\\\ name\"} 3\n\
             vllm:num_requests_waiting{engine=\"0\",model_name=\"b\"} 4\n\
             process_cpu_seconds_total 12.5\n",
        );
        let ids: Vec<(String, String)> = all
            .iter()
            .map(|e| (e.id.model.clone(), e.id.engine.clone()))
            .collect();
        assert_eq!(
            ids,
            vec![
                ("b".to_string(), "1".to_string()),
                ("b".to_string(), "0".to_string()),
                (r#"a "quoted" \ name"#.to_string(), "0".to_string()),
            ]
        );
        assert_eq!(all[1].running, Some(2.0));
        assert_eq!(all[1].waiting, Some(4.0));
        assert_eq!(all[0].waiting, None);
        assert!(
            all.iter()
                .all(|e| e.process_cpu_seconds_total == Some(12.5))
        );
    }

    #[test]
    fn cache_config_follows_the_engine_label() {
        let all = engines(
            "vllm:cache_config_info{block_size=\"16\",engine=\"0\",num_gpu_blocks=\"100\"} 1\n\
             vllm:cache_config_info{block_size=\"16\",engine=\"1\",num_gpu_blocks=\"200\"} 1\n\
             vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 1\n\
             vllm:num_requests_running{engine=\"1\",model_name=\"m\"} 1\n\
             vllm:num_requests_running{engine=\"2\",model_name=\"m\"} 1\n",
        );
        let capacity: Vec<Option<u64>> = all
            .iter()
            .map(|e| e.cache_config.as_ref().and_then(|c| c.kv_capacity_tokens()))
            .collect();
        assert_eq!(capacity, vec![Some(1600), Some(3200), None]);
        assert_eq!(all[2].cache_config, None);

        let v0 = one(
            "vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"7281\"} 1\n\
             vllm:num_requests_running{model_name=\"m\"} 1\n",
        );
        assert_eq!(
            v0.cache_config.and_then(|c| c.kv_capacity_tokens()),
            Some(116_496)
        );
    }

    #[test]
    fn nan_gauges_are_unknown() {
        let e = one(
            "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} NaN\n\
             vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 1\n",
        );
        assert_eq!(e.kv_usage, None);
        assert_eq!(e.running, Some(1.0));
    }
}
