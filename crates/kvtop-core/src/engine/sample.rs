//! The typed, vendor-neutral reading of one engine at one scrape.

use crate::metrics::Bucket;

pub use crate::signals::EngineFlavor;

/// Identity of one engine inside one scrape target: a target may export several models, and a
/// V1 data-parallel deployment exports several `engine` indices.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct EngineId {
    /// `model_name` label (empty when the exporter has none).
    pub model: String,
    /// V1 `engine` label (empty when absent).
    pub engine: String,
}

/// A cumulative histogram: buckets sorted by `le`, the last one `+Inf` when the exporter sent it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Histogram {
    pub buckets: Vec<Bucket>,
    pub sum: Option<f64>,
    pub count: Option<f64>,
}

/// `vllm:cache_config_info` labels that matter to an operator.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CacheConfig {
    pub block_size: Option<u64>,
    pub num_gpu_blocks: Option<u64>,
    pub num_cpu_blocks: Option<u64>,
    pub gpu_memory_utilization: Option<f64>,
    pub enable_prefix_caching: Option<bool>,
    pub cache_dtype: Option<String>,
    /// Every label as exported, for the detail view and config rules.
    pub fields: CacheFields,
}

impl CacheConfig {
    /// KV capacity in tokens = num_gpu_blocks × block_size, when both are known.
    pub fn kv_capacity_tokens(&self) -> Option<u64> {
        self.num_gpu_blocks?.checked_mul(self.block_size?)
    }
}

/// `cache_config_info`'s label pairs in the order exported, names and values kept in one
/// string: an engine's configuration is built again at every scrape, and two allocations for
/// it instead of two per label took 14 % of the console's allocations off a 1,000-engine
/// fleet (the previous scrape's labels, freed a second later, cost the most).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CacheFields {
    text: String,
    /// Where each pair's name and value end in `text`.
    ends: Vec<(usize, usize)>,
}

impl CacheFields {
    /// Append one pair.
    pub fn push(&mut self, name: &str, value: &str) {
        self.text.push_str(name);
        let name_end = self.text.len();
        self.text.push_str(value);
        self.ends.push((name_end, self.text.len()));
    }

    /// Room for `pairs` more pairs of `text_bytes` bytes in all.
    pub fn reserve(&mut self, text_bytes: usize, pairs: usize) {
        self.text.reserve(text_bytes);
        self.ends.reserve(pairs);
    }

    /// The pairs as `(name, value)`, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> + Clone + '_ {
        let starts = std::iter::once(0).chain(self.ends.iter().map(|(_, value_end)| *value_end));
        starts
            .zip(&self.ends)
            .map(|(start, (name_end, value_end))| {
                (
                    self.text.get(start..*name_end).unwrap_or_default(),
                    self.text.get(*name_end..*value_end).unwrap_or_default(),
                )
            })
    }

    /// The value of the label `name`, if exported.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Keep only the pairs `keep` accepts.
    pub fn retain(&mut self, mut keep: impl FnMut(&str, &str) -> bool) {
        let mut kept = CacheFields::default();
        for (name, value) in self.iter().filter(|(n, v)| keep(n, v)) {
            kept.push(name, value);
        }
        *self = kept;
    }
}

impl<N: AsRef<str>, V: AsRef<str>> FromIterator<(N, V)> for CacheFields {
    fn from_iter<I: IntoIterator<Item = (N, V)>>(pairs: I) -> Self {
        let mut fields = CacheFields::default();
        for (name, value) in pairs {
            fields.push(name.as_ref(), value.as_ref());
        }
        fields
    }
}

/// Everything one scrape says about one engine. Counters are raw cumulative values; rates and
/// windowed quantiles are derived later by the fleet state from successive samples.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EngineSample {
    pub id: EngineId,
    pub flavor: EngineFlavor,
    // Gauges.
    pub kv_usage: Option<f64>,
    pub running: Option<f64>,
    pub waiting: Option<f64>,
    /// V0 only.
    pub swapped: Option<f64>,
    /// V0 gauge `gpu_prefix_cache_hit_rate` (0..1).
    pub prefix_hit_rate_gauge: Option<f64>,
    /// V0 gauge `spec_decode_draft_acceptance_rate` (0..1).
    pub spec_acceptance_gauge: Option<f64>,
    // Counters (cumulative).
    pub preemptions_total: Option<f64>,
    pub prompt_tokens_total: Option<f64>,
    pub generation_tokens_total: Option<f64>,
    pub prefix_queries_total: Option<f64>,
    pub prefix_hits_total: Option<f64>,
    /// `request_success_total` by `finished_reason` (stop, length, abort, error, repetition).
    pub request_success_total: Vec<(String, f64)>,
    pub spec_drafts_total: Option<f64>,
    pub spec_draft_tokens_total: Option<f64>,
    pub spec_accepted_tokens_total: Option<f64>,
    /// `process_cpu_seconds_total` of the serving process (shared by all engines of a target).
    pub process_cpu_seconds_total: Option<f64>,
    /// `http_requests_total` of the API server by `status` (`2xx`, or a code), summed over
    /// handlers and methods; shared by all engines of a target.
    pub http_requests_total: Vec<(String, f64)>,
    // Histograms (cumulative).
    pub ttft: Option<Histogram>,
    pub itl: Option<Histogram>,
    pub e2e: Option<Histogram>,
    pub queue_time: Option<Histogram>,
    pub tpot: Option<Histogram>,
    pub prefill_time: Option<Histogram>,
    pub decode_time: Option<Histogram>,
    pub cache_config: Option<CacheConfig>,
}

impl EngineSample {
    /// Total finished requests over every `finished_reason`, if the counter is exported.
    pub fn requests_finished_total(&self) -> Option<f64> {
        if self.request_success_total.is_empty() {
            None
        } else {
            Some(self.request_success_total.iter().map(|(_, v)| v).sum())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The pairs come back as pushed, whatever their text (empty, non-ASCII, repeated).
        #[test]
        fn cache_fields_keep_their_pairs(pairs in proptest::collection::vec(("\\PC{0,6}", "\\PC{0,6}"), 0..8)) {
            let fields: CacheFields = pairs.iter().map(|(n, v)| (n, v)).collect();
            let back: Vec<(String, String)> =
                fields.iter().map(|(n, v)| (n.to_owned(), v.to_owned())).collect();
            prop_assert_eq!(&back, &pairs);
            prop_assert_eq!(fields.len(), pairs.len());
            for (name, _) in &pairs {
                let first = pairs.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
                prop_assert_eq!(fields.get(name), first);
            }
            let mut even = fields.clone();
            let mut index = 0;
            even.retain(|_, _| {
                index += 1;
                index % 2 == 1
            });
            let kept: Vec<(String, String)> = pairs.iter().step_by(2).cloned().collect();
            let expected: CacheFields = kept.iter().map(|(n, v)| (n, v)).collect();
            prop_assert_eq!(even, expected);
        }
    }
}
