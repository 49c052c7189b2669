//! `vllm:cache_config_info`: the engine's KV-cache configuration, exported as labels.
//!
//! V0 exports one series without `model_name` or `engine`; V1 exports one per engine index
//! (label `engine`, no `model_name`). A series applies to every engine whose labels it does not
//! contradict. When several different series apply to one engine (a target serving several
//! models under the same engine index, as in the synthetic three-model fixture), nothing tells
//! which belongs to which model: only the fields on which all of them agree are kept, so a
//! disputed `num_gpu_blocks` stays unknown instead of showing another model's capacity.

use crate::engine::{CacheConfig, CacheFields};
use crate::metrics::LabelIter;

/// One `cache_config_info` series as found in the payload (raw, still-escaped label values).
#[derive(Debug, Clone, Copy)]
pub(super) struct CacheInfoSeries<'a> {
    pub engine: Option<&'a str>,
    pub model: Option<&'a str>,
    pub labels_raw: &'a str,
}

impl CacheInfoSeries<'_> {
    fn applies_to(&self, model: &str, engine: Option<&str>) -> bool {
        let engine_ok = match (self.engine, engine) {
            (Some(own), Some(theirs)) => own == theirs,
            _ => true,
        };
        engine_ok && self.model.is_none_or(|own| own == model)
    }
}

/// The cache configuration of the engine `(model, engine)` (raw label values), if any series
/// applies to it.
pub(super) fn cache_config_for(
    series: &[CacheInfoSeries<'_>],
    model: &str,
    engine: Option<&str>,
) -> Option<CacheConfig> {
    let mut candidates = series
        .iter()
        .filter(|s| s.applies_to(model, engine))
        .map(|s| s.labels_raw);
    let first = candidates.next()?;
    let mut fields = CacheFields::default();
    // Sized once: the values' escapes only ever shorten them.
    fields.reserve(first.len(), first.bytes().filter(|b| *b == b'=').count());
    for (name, value) in LabelIter::new(first) {
        fields.push(name, &value);
    }
    for other in candidates.filter(|raw| *raw != first) {
        let other_fields: Vec<_> = LabelIter::new(other).collect();
        keep_agreed(
            &mut fields,
            other_fields.iter().map(|(n, v)| (*n, v.as_ref())),
        );
    }
    Some(typed(fields))
}

/// Keep the fields another applicable series has with the same value: when several different
/// configurations apply to one engine, only what they agree on is known (both paths, direct
/// and Prometheus, resolve it so).
pub fn keep_agreed<'o>(
    fields: &mut CacheFields,
    other: impl Iterator<Item = (&'o str, &'o str)> + Clone,
) {
    fields.retain(|name, value| other.clone().any(|(n, v)| n == name && v == value));
}

/// The typed configuration from `cache_config_info` label pairs (also used for Prometheus answers).
pub fn typed(fields: CacheFields) -> CacheConfig {
    let field = |name: &str| fields.get(name);
    let whole = |name: &str| field(name).and_then(|v| v.parse::<u64>().ok());
    CacheConfig {
        block_size: whole("block_size"),
        num_gpu_blocks: whole("num_gpu_blocks"),
        num_cpu_blocks: whole("num_cpu_blocks"),
        gpu_memory_utilization: field("gpu_memory_utilization")
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|v| v.is_finite()),
        enable_prefix_caching: field("enable_prefix_caching").and_then(|v| {
            match v.to_ascii_lowercase().as_str() {
                "true" => Some(true),
                "false" => Some(false),
                _ => None,
            }
        }),
        cache_dtype: field("cache_dtype").map(str::to_string),
        fields,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series<'a>(engine: Option<&'a str>, labels_raw: &'a str) -> CacheInfoSeries<'a> {
        CacheInfoSeries {
            engine,
            model: None,
            labels_raw,
        }
    }

    #[test]
    fn a_single_series_gives_every_field_typed() {
        let infos = [series(
            None,
            r#"block_size="16",cache_dtype="auto",enable_prefix_caching="False",gpu_memory_utilization="0.9",num_cpu_blocks="0",num_gpu_blocks="7281",num_gpu_blocks_override="None""#,
        )];
        let config = cache_config_for(&infos, "m", None).expect("config");
        assert_eq!(config.block_size, Some(16));
        assert_eq!(config.num_gpu_blocks, Some(7281));
        assert_eq!(config.num_cpu_blocks, Some(0));
        assert_eq!(config.gpu_memory_utilization, Some(0.9));
        assert_eq!(config.enable_prefix_caching, Some(false));
        assert_eq!(config.cache_dtype.as_deref(), Some("auto"));
        assert_eq!(config.kv_capacity_tokens(), Some(116_496));
        assert_eq!(config.fields.len(), 7);
        assert_eq!(
            config.fields.iter().nth(6),
            Some(("num_gpu_blocks_override", "None"))
        );
    }

    #[test]
    fn engine_labels_select_the_series() {
        let infos = [
            series(
                Some("0"),
                r#"engine="0",num_gpu_blocks="100",block_size="16""#,
            ),
            series(
                Some("1"),
                r#"engine="1",num_gpu_blocks="200",block_size="16""#,
            ),
        ];
        let one = cache_config_for(&infos, "m", Some("1")).expect("engine 1");
        assert_eq!(one.num_gpu_blocks, Some(200));
        assert_eq!(cache_config_for(&infos, "m", Some("2")), None);
    }

    #[test]
    fn disagreeing_series_keep_only_the_shared_fields() {
        let infos = [
            series(
                Some("0"),
                r#"block_size="16",engine="0",num_gpu_blocks="100""#,
            ),
            series(
                Some("0"),
                r#"block_size="16",engine="0",num_gpu_blocks="300""#,
            ),
            series(
                Some("0"),
                r#"block_size="16",engine="0",num_gpu_blocks="100""#,
            ),
        ];
        let config = cache_config_for(&infos, "m", Some("0")).expect("config");
        assert_eq!(config.block_size, Some(16));
        assert_eq!(config.num_gpu_blocks, None);
        assert_eq!(config.kv_capacity_tokens(), None);
        let fields: Vec<(&str, &str)> = config.fields.iter().collect();
        assert_eq!(fields, [("block_size", "16"), ("engine", "0")]);
    }

    #[test]
    fn a_series_naming_another_model_does_not_apply() {
        let infos = [CacheInfoSeries {
            engine: None,
            model: Some("other"),
            labels_raw: r#"model_name="other",block_size="32""#,
        }];
        assert_eq!(cache_config_for(&infos, "mine", None), None);
        assert!(cache_config_for(&infos, "other", None).is_some());
    }
}
