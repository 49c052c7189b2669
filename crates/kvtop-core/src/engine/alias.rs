//! Vendor metric names -> typed signals, one `EngineSample` per engine, along the routes the
//! signal catalog (`crate::signals`) defines.
//!
//! One pass over the samples: a name's route is looked up once per family (samples of one
//! family arrive together). Names kvtop does not read (`_created` series, request-parameter
//! histograms, `iteration_tokens_total`, ...) stop there: they neither carry a signal nor
//! create an engine. For the others the labels are scanned once, the engine is found by its raw
//! `model_name` × `engine` values (in order of first appearance) and the value lands in the
//! slot of its metric and rank. Renamed metrics keep one slot per name and the catalog's
//! precedence (new name over old) is applied once at the end, so family order does not matter.
//! How repeated and extra-labelled series combine is documented in `series.rs`.

use std::collections::HashMap;

use super::cache_info::{CacheInfoSeries, cache_config_for};
use super::series::{HistogramParts, SCAN_LIMIT, SeriesKey, SeriesSet};
use super::{EngineId, EngineSample};
use crate::metrics::number::parse_f64;
use crate::metrics::parser::unescape;
use crate::metrics::{Exposition, Sample};
use crate::signals::routes::{Part, Route, Target, route_of};
use crate::signals::{FlavorEvidence, HTTP_STATUS_LABEL, MetricId, Precedence, metric};

/// Map a parsed payload onto one sample per engine (per `model_name` × `engine` label pair).
pub fn extract_engines(expo: &Exposition<'_>) -> Vec<EngineSample> {
    extract_engines_within(expo, usize::MAX).unwrap_or_default()
}

/// The payload names more engines than one target may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooManyEngines {
    pub limit: usize,
}

/// [`extract_engines`], refusing a payload that names more than `max_engines` engines: reading
/// stops at the first one past the limit, so a payload naming 100,000 models costs no more than
/// the limit allows.
pub fn extract_engines_within(
    expo: &Exposition<'_>,
    max_engines: usize,
) -> Result<Vec<EngineSample>, TooManyEngines> {
    let mut engines: Vec<EngineParts<'_>> = Vec::new();
    // Position in `engines` by raw (model, engine) labels: a payload may name 100,000 engines.
    let mut engine_index: HashMap<(&str, &str), usize> = HashMap::new();
    let mut cache_infos: Vec<CacheInfoSeries<'_>> = Vec::new();
    let mut process_cpu = SeriesSet::default();
    let mut http = ByLabel::default();
    // Samples of one family arrive together, and counters alternate `_total` and `_created`
    // series: remembering the routes of the last two names makes the lookup run about once
    // per family rather than once per sample.
    let mut recent: [Option<(&str, Option<Route>)>; 2] = [None, None];
    let mut last_engine = 0usize;

    for sample in &expo.samples {
        let route = match recent {
            [Some((name, route)), _] if name == sample.name => route,
            [first, Some((name, route))] if name == sample.name => {
                recent = [Some((name, route)), first];
                route
            }
            [first, _] => {
                let route = route_of(sample.name);
                recent = [Some((sample.name, route)), first];
                route
            }
        };
        // Unmapped names (`_created` series, request-parameter histograms, ...) are skipped
        // before their labels are even looked at: they neither carry a signal nor make an
        // engine.
        let Some(route) = route else {
            continue;
        };
        let metric = match route.target {
            Target::Metric { metric, .. } => Some(metric),
            Target::Evidence => None,
        };
        // One per target, attached to every engine.
        if metric == Some(MetricId::ProcessCpu) {
            process_cpu.record((sample.labels_raw, ""), sample.value);
            continue;
        }
        if metric == Some(MetricId::HttpRequests) {
            let status = label_value(expo, sample, HTTP_STATUS_LABEL).unwrap_or("");
            http.record(status, (sample.labels_raw, ""), sample.value);
            continue;
        }
        let labels = SeriesLabels::of(expo, sample);
        // Configuration labels, attached to engines at the end.
        if metric == Some(MetricId::CacheConfig) {
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
            _ => match engine_index.get(&(model, engine_label)) {
                Some(index) => *index,
                None if engines.len() >= max_engines => {
                    return Err(TooManyEngines { limit: max_engines });
                }
                None => {
                    engines.push(EngineParts::new(model, engine_label));
                    engine_index.insert((model, engine_label), engines.len() - 1);
                    engines.len() - 1
                }
            },
        };
        last_engine = index;
        if let Some(engine) = engines.get_mut(index) {
            engine.record(route, &labels, sample);
        }
    }

    let process_cpu = process_cpu.sum();
    let http_requests = http.sums();
    Ok(engines
        .into_iter()
        .map(|engine| {
            let cache_config =
                cache_config_for(&cache_infos, engine.model, engine.engine_label_value());
            let mut sample = engine.finish();
            sample.process_cpu_seconds_total = process_cpu;
            sample.http_requests_total = http_requests.clone();
            sample.cache_config = cache_config;
            sample
        })
        .collect())
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
    /// The labels that matter, from the spans the parser kept: nothing is scanned again.
    fn of(expo: &Exposition<'a>, sample: &Sample<'a>) -> Self {
        let raw = sample.labels_raw;
        let mut labels = SeriesLabels {
            model: None,
            engine: None,
            finished_reason: None,
            le: None,
        };
        for label in expo.raw_labels(sample) {
            // An if-chain rather than a `match`: a string `match` compiles to a jump table on
            // the length, an indirect branch the CPU mispredicts on almost every label.
            let name = label.name;
            if name == "le" {
                let (start, end) = label.pair;
                let key = (
                    raw.get(..start).unwrap_or_default(),
                    raw.get(end..).unwrap_or_default(),
                );
                labels.le = Some((label.value, key));
            } else if name == "engine" {
                labels.engine = Some(label.value);
            } else if name == "model_name" {
                labels.model = Some(label.value);
            } else if name == crate::signals::FINISHED_REASON_LABEL {
                labels.finished_reason = Some(label.value);
            }
        }
        labels
    }
}

/// The raw value of one label of a sample.
fn label_value<'a>(expo: &Exposition<'a>, sample: &Sample<'a>, name: &str) -> Option<&'a str> {
    expo.raw_labels(sample)
        .find(|label| label.name == name)
        .map(|label| label.value)
}

/// Readings of one counter per raw value of a label (`finished_reason`, `status`), in order
/// of first appearance; series that differ in other labels add up.
#[derive(Default)]
struct ByLabel<'a> {
    sets: Vec<(&'a str, SeriesSet<'a>)>,
    /// Position in `sets` by raw value, built once `sets` outgrows a short scan (as in
    /// [`SeriesSet`]): an engine has five finish reasons, a hostile payload 100,000. Until
    /// then no map is allocated, at every scrape of every engine.
    #[allow(clippy::box_collection)]
    index: Option<Box<HashMap<&'a str, usize>>>,
}

impl<'a> ByLabel<'a> {
    fn record(&mut self, value: &'a str, key: SeriesKey<'a>, reading: f64) {
        let found = match &self.index {
            None => self.sets.iter().position(|(v, _)| *v == value),
            Some(index) => index.get(value).copied(),
        };
        let slot = match found {
            Some(slot) => slot,
            None => {
                self.sets.push((value, SeriesSet::default()));
                let slot = self.sets.len() - 1;
                match &mut self.index {
                    Some(index) => {
                        index.insert(value, slot);
                    }
                    None if self.sets.len() > SCAN_LIMIT => {
                        let index = self.sets.iter().enumerate().map(|(i, (v, _))| (*v, i));
                        self.index = Some(Box::new(index.collect()));
                    }
                    None => {}
                }
                slot
            }
        };
        if let Some((_, set)) = self.sets.get_mut(slot) {
            set.record(key, reading);
        }
    }

    /// The total per label value (unescaped); values with no reading are left out.
    fn sums(&self) -> Vec<(String, f64)> {
        self.sets
            .iter()
            .filter_map(|(value, set)| Some((unescape(value).into_owned(), set.sum()?)))
            .collect()
    }
}

/// Alternative names per metric with a slot of their own (a test checks the catalog fits).
pub const RANKS: usize = 2;

/// Everything read so far about one engine, still borrowing the payload.
struct EngineParts<'a> {
    model: &'a str,
    engine: &'a str,
    has_engine_label: bool,
    evidence: FlavorEvidence,
    /// Gauge and counter readings per metric and rank. The two tables are 21 KB together:
    /// on the heap, filled in place, so that no stack frame holds a copy of them (one did,
    /// twice, and the console's thread kept those 44 KB of stack resident for good).
    values: Box<[[SeriesSet<'a>; RANKS]]>,
    /// Histogram series per metric and rank.
    hists: Box<[[HistogramParts<'a>; RANKS]]>,
    /// `request_success_total` per raw `finished_reason`.
    finished: ByLabel<'a>,
}

/// One default T per metric, written straight into its heap block.
fn per_metric<T: Default>() -> Box<[T]> {
    std::iter::repeat_with(T::default)
        .take(MetricId::COUNT)
        .collect()
}

impl<'a> EngineParts<'a> {
    fn new(model: &'a str, engine: &'a str) -> Self {
        EngineParts {
            model,
            engine,
            has_engine_label: false,
            evidence: FlavorEvidence::default(),
            values: per_metric(),
            hists: per_metric(),
            finished: ByLabel::default(),
        }
    }

    /// The raw `engine` label value, when the engine's series carry one.
    fn engine_label_value(&self) -> Option<&'a str> {
        self.has_engine_label.then_some(self.engine)
    }

    fn record(&mut self, route: Route, labels: &SeriesLabels<'a>, s: &Sample<'a>) {
        self.has_engine_label |= labels.engine.is_some();
        self.evidence.name(route.vendor, route.proves);
        let Target::Metric { metric, rank, part } = route.target else {
            return;
        };
        let key = (s.labels_raw, "");
        if metric == MetricId::RequestSuccess {
            let reason = labels.finished_reason.unwrap_or("");
            self.finished.record(reason, key, s.value);
            return;
        }
        let (m, r) = (metric as usize, usize::from(rank));
        if part == Part::Value {
            if let Some(set) = self.values.get_mut(m).and_then(|ranks| ranks.get_mut(r)) {
                set.record(key, s.value);
            }
            return;
        }
        let Some(parts) = self.hists.get_mut(m).and_then(|ranks| ranks.get_mut(r)) else {
            return;
        };
        match part {
            Part::Sum => parts.record_sum(key, s.value),
            Part::Count => parts.record_count(key, s.value),
            Part::Bucket => {
                let bound = labels.le.and_then(|(le, key)| Some((parse_f64(le)?, key)));
                if let Some((le, key)) = bound {
                    parts.record_bucket(key, le, s.value);
                }
            }
            Part::Value => {}
        }
    }

    /// Whether anything was read under the `rank`-th name of a metric.
    fn has(&self, id: MetricId, rank: usize) -> bool {
        let m = id as usize;
        let value = self.values.get(m).and_then(|r| r.get(rank));
        let hist = self.hists.get(m).and_then(|r| r.get(rank));
        value.is_some_and(|set| !set.is_empty()) || hist.is_some_and(|parts| !parts.is_empty())
    }

    /// The rank whose name the engine exports first in the catalog's order of precedence
    /// (the new name wins whenever it is exported); a paired metric decides with its partner.
    fn chosen_rank(&self, id: MetricId) -> usize {
        let partner = match metric(id).precedence {
            Precedence::PairedWith(other) => Some(other),
            Precedence::PerMetric => None,
        };
        (0..RANKS)
            .find(|&rank| self.has(id, rank) || partner.is_some_and(|p| self.has(p, rank)))
            .unwrap_or(0)
    }

    fn values_of(&self, id: MetricId) -> Option<&SeriesSet<'a>> {
        let rank = self.chosen_rank(id);
        self.values.get(id as usize).and_then(|r| r.get(rank))
    }

    fn gauge(&self, id: MetricId) -> Option<f64> {
        self.values_of(id).and_then(SeriesSet::max)
    }

    fn counter(&self, id: MetricId) -> Option<f64> {
        self.values_of(id).and_then(SeriesSet::sum)
    }

    fn histogram(&mut self, id: MetricId) -> Option<super::Histogram> {
        let rank = self.chosen_rank(id);
        let parts = self.hists.get_mut(id as usize)?.get_mut(rank)?;
        std::mem::take(parts).finish()
    }

    fn finish(mut self) -> EngineSample {
        if self.has_engine_label {
            self.evidence.engine_label();
        }
        use MetricId as M;
        EngineSample {
            id: EngineId {
                model: unescape(self.model).into_owned(),
                engine: unescape(self.engine).into_owned(),
            },
            flavor: self.evidence.flavor(),
            kv_usage: self.gauge(M::KvUsage),
            running: self.gauge(M::Running),
            waiting: self.gauge(M::Waiting),
            swapped: self.gauge(M::Swapped),
            prefix_hit_rate_gauge: self.gauge(M::PrefixHitRate),
            spec_acceptance_gauge: self.gauge(M::SpecAcceptanceRate),
            preemptions_total: self.counter(M::Preemptions),
            prompt_tokens_total: self.counter(M::PromptTokens),
            generation_tokens_total: self.counter(M::GenerationTokens),
            prefix_queries_total: self.counter(M::PrefixQueries),
            prefix_hits_total: self.counter(M::PrefixHits),
            request_success_total: self.finished.sums(),
            spec_drafts_total: self.counter(M::SpecDrafts),
            spec_draft_tokens_total: self.counter(M::SpecDraftTokens),
            spec_accepted_tokens_total: self.counter(M::SpecAcceptedTokens),
            process_cpu_seconds_total: None,
            http_requests_total: Vec::new(),
            ttft: self.histogram(M::Ttft),
            itl: self.histogram(M::Itl),
            e2e: self.histogram(M::E2e),
            queue_time: self.histogram(M::QueueTime),
            tpot: self.histogram(M::Tpot),
            prefill_time: self.histogram(M::PrefillTime),
            decode_time: self.histogram(M::DecodeTime),
            cache_config: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{EngineFlavor, Histogram};
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

    /// Past the short scan the reasons are found through the map built for them: sums and
    /// order stay those of the scan, and a repeated series still replaces its reading.
    #[test]
    fn many_reasons_sum_alike_below_and_above_the_scan_limit() {
        for reasons in [SCAN_LIMIT, SCAN_LIMIT + 1, 40] {
            let mut payload = String::new();
            for pass in 0..2 {
                for r in 0..reasons {
                    for pid in 0..2 {
                        payload.push_str(&format!(
                            "vllm:request_success_total{{finished_reason=\"r{r}\",model_name=\"m\",pid=\"{pid}\"}} {}\n",
                            r * 10 + pass
                        ));
                    }
                }
            }
            let e = one(&payload);
            let expected: Vec<(String, f64)> = (0..reasons)
                .map(|r| (format!("r{r}"), 2.0 * (r * 10 + 1) as f64))
                .collect();
            assert_eq!(e.request_success_total, expected, "{reasons} reasons");
        }
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
