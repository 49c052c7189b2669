//! Merging hand-written answers; every expected value is read off the JSON.

use super::*;
use crate::sources::prometheus::decode::decode_answer;
use crate::sources::prometheus::query::QueryPlan;
use kvtop_core::engine::EngineFlavor;
use kvtop_core::fleet::QuantileWindow;

fn plan() -> QueryPlan {
    QueryPlan::new(LabelMap::default(), QuantileWindow::M1, true)
}

fn spec(signal: &str) -> QuerySpec {
    plan()
        .every_cycle()
        .into_iter()
        .chain(plan().slow())
        .find(|q| q.signal == signal)
        .unwrap_or_else(|| panic!("no query {signal}"))
}

fn vector(items: &str) -> String {
    format!(r#"{{"status":"success","data":{{"resultType":"vector","result":[{items}]}}}}"#)
}

fn add(merge: &mut CycleMerge<'_>, signal: &str, body: &str) {
    let answer = decode_answer(200, body.as_bytes()).expect("answer");
    merge.add(&spec(signal), &answer);
}

const A0: &str =
    r#""pod":"vllm-a","namespace":"llm","instance":"10.0.0.1:8000","model_name":"m","engine":"0""#;
const A1: &str =
    r#""pod":"vllm-a","namespace":"llm","instance":"10.0.0.1:8000","model_name":"m","engine":"1""#;
const B0: &str =
    r#""pod":"vllm-b","namespace":"llm","instance":"10.0.0.2:8000","model_name":"m","engine":"0""#;

#[test]
fn answers_merge_into_one_entry_per_engine() {
    let labels = LabelMap::default();
    let mut merge = CycleMerge::new(&labels);
    add(
        &mut merge,
        "kv_usage",
        &vector(&format!(
            r#"{{"metric":{{"__name__":"vllm:kv_cache_usage_perc",{A0},"pid":"1"}},"value":[1,"0.25"]}},
               {{"metric":{{"__name__":"vllm:kv_cache_usage_perc",{A0},"pid":"2"}},"value":[1,"0.5"]}},
               {{"metric":{{"__name__":"vllm:gpu_cache_usage_perc",{B0}}},"value":[1,"0.75"]}}"#
        )),
    );
    add(
        &mut merge,
        "running",
        &vector(&format!(
            r#"{{"metric":{{{A0}}},"value":[1,"3"]}},{{"metric":{{{A1}}},"value":[1,"4"]}},
               {{"metric":{{{B0}}},"value":[1,"5"]}}"#
        )),
    );
    add(
        &mut merge,
        "gen_tps",
        &vector(&format!(r#"{{"metric":{{{A0}}},"value":[1,"120.5"]}}"#)),
    );
    add(
        &mut merge,
        "ttft",
        &vector(&format!(
            r#"{{"metric":{{{A0},"kvtop_q":"0.5"}},"value":[1,"0.1"]}},
               {{"metric":{{{A0},"kvtop_q":"0.95"}},"value":[1,"0.4"]}},
               {{"metric":{{{A0},"kvtop_q":"0.99"}},"value":[1,"NaN"]}}"#
        )),
    );
    add(
        &mut merge,
        "cpu",
        &vector(
            r#"{"metric":{"pod":"vllm-a","namespace":"llm","instance":"10.0.0.1:8000"},"value":[1,"1.5"]}"#,
        ),
    );
    let (engines, gpus) = merge.finish();
    assert!(gpus.is_none());
    type Summary<'a> = (&'a str, &'a str, Option<f64>, Option<f64>, EngineFlavor);
    let summary: Vec<Summary<'_>> = engines
        .iter()
        .map(|e| {
            (
                e.instance.name(),
                e.sample.id.engine.as_str(),
                e.signals.kv_usage,
                e.signals.running,
                e.sample.flavor,
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            // Two pid series of one engine: the higher usage.
            ("vllm-a", "0", Some(0.5), Some(3.0), EngineFlavor::VllmV1),
            // Named by `running` only: it exists, its KV usage is unknown.
            ("vllm-a", "1", None, Some(4.0), EngineFlavor::Unknown),
            // The old name with an engine index is V1.
            ("vllm-b", "0", Some(0.75), Some(5.0), EngineFlavor::VllmV1),
        ]
    );
    let a0 = &engines[0];
    assert_eq!(a0.signals.gen_tps, Some(120.5));
    assert_eq!(a0.signals.ttft_p50, Some(0.1));
    assert_eq!(a0.signals.ttft_p95, Some(0.4));
    assert_eq!(a0.signals.ttft_p99, None);
    // CPU is per process: both engines of vllm-a.
    assert_eq!(a0.signals.cpu_cores, Some(1.5));
    assert_eq!(engines[1].signals.cpu_cores, Some(1.5));
    assert_eq!(engines[2].signals.cpu_cores, None);
    assert_eq!(a0.sample.kv_usage, Some(0.5));
    assert_eq!(
        a0.instance,
        InstanceKey {
            namespace: "llm".into(),
            pod: "vllm-a".into(),
            instance: String::new()
        }
    );
}

#[test]
fn values_of_engines_no_gauge_names_are_dropped() {
    let labels = LabelMap::default();
    let mut merge = CycleMerge::new(&labels);
    add(
        &mut merge,
        "gen_tps",
        &vector(&format!(r#"{{"metric":{{{B0}}},"value":[1,"10"]}}"#)),
    );
    assert!(merge.finish().0.is_empty());
}

#[test]
fn series_without_a_pod_label_are_told_apart_by_instance() {
    let labels = LabelMap::default();
    let mut merge = CycleMerge::new(&labels);
    add(
        &mut merge,
        "running",
        &vector(
            r#"{"metric":{"instance":"10.0.0.9:8000","model_name":"m"},"value":[1,"2"]},
               {"metric":{"instance":"10.0.0.8:8000","model_name":"m"},"value":[1,"1"]}"#,
        ),
    );
    let (engines, _) = merge.finish();
    let names: Vec<&str> = engines.iter().map(|e| e.instance.name()).collect();
    assert_eq!(names, ["10.0.0.8:8000", "10.0.0.9:8000"]);
    assert_eq!(engines[0].sample.flavor, EngineFlavor::Unknown);
}

#[test]
fn cache_config_fields_exclude_target_labels_and_give_the_capacity() {
    let labels = LabelMap::default();
    let mut merge = CycleMerge::new(&labels);
    add(
        &mut merge,
        "running",
        &vector(&format!(
            r#"{{"metric":{{{A0}}},"value":[1,"1"]}},{{"metric":{{{A1}}},"value":[1,"1"]}}"#
        )),
    );
    add(
        &mut merge,
        "cache_config",
        &vector(
            r#"{"metric":{"__name__":"vllm:cache_config_info","job":"vllm","pod":"vllm-a","namespace":"llm","instance":"10.0.0.1:8000","engine":"1","block_size":"16","num_gpu_blocks":"1000","enable_prefix_caching":"True"},"value":[1,"1"]}"#,
        ),
    );
    let (engines, _) = merge.finish();
    // Engine 0 has no cache_config_info series of its own.
    assert_eq!(engines[0].sample.cache_config, None);
    let config = engines[1].sample.cache_config.clone().unwrap_or_default();
    let fields: Vec<(&str, &str)> = config.fields.iter().collect();
    assert_eq!(
        fields,
        [
            ("block_size", "16"),
            ("num_gpu_blocks", "1000"),
            ("enable_prefix_caching", "True"),
        ]
    );
    // 1000 blocks × 16 tokens.
    assert_eq!(engines[1].signals.kv_capacity_tokens, Some(16_000.0));
    assert_eq!(config.enable_prefix_caching, Some(true));
}

#[test]
fn dcgm_series_become_gpus_with_the_workload_s_pod() {
    let labels = LabelMap::default();
    let mut merge = CycleMerge::new(&labels);
    let gpu0 = r#""gpu":"0","UUID":"GPU-a","modelName":"H100","Hostname":"node-1","pod":"dcgm-exporter-x","namespace":"gpu-operator","exported_pod":"vllm-a","exported_namespace":"llm""#;
    let gpu1 = r#""gpu":"1","UUID":"GPU-b","modelName":"H100","instance":"10.1.0.1:9400""#;
    add(
        &mut merge,
        "dcgm",
        &vector(&format!(
            r#"{{"metric":{{"__name__":"DCGM_FI_DEV_GPU_UTIL",{gpu0}}},"value":[1,"87"]}},
               {{"metric":{{"__name__":"DCGM_FI_DEV_FB_USED",{gpu0}}},"value":[1,"70000"]}},
               {{"metric":{{"__name__":"DCGM_FI_DEV_XID_ERRORS",{gpu0},"err_code":"79"}},"value":[1,"79"]}},
               {{"metric":{{"__name__":"DCGM_FI_DEV_GPU_TEMP",{gpu1}}},"value":[1,"41"]}},
               {{"metric":{{"__name__":"DCGM_FI_DEV_MEM_CLOCK",{gpu1}}},"value":[1,"2619"]}}"#
        )),
    );
    let (_, gpus) = merge.finish();
    let gpus = gpus.unwrap_or_default();
    assert_eq!(gpus.len(), 2);
    assert_eq!(
        gpus[0],
        GpuSample {
            gpu: "0".into(),
            uuid: "GPU-a".into(),
            model_name: "H100".into(),
            hostname: "node-1".into(),
            pod: Some("vllm-a".into()),
            namespace: Some("llm".into()),
            util_pct: Some(87.0),
            fb_used_mib: Some(70000.0),
            xid: Some(79.0),
            ..GpuSample::default()
        }
    );
    // No host label: the exporter's instance stands for the host.
    assert_eq!(gpus[1].hostname, "10.1.0.1:9400");
    assert_eq!(gpus[1].temp_c, Some(41.0));
    assert_eq!(gpus[1].pod, None);
}

#[test]
fn range_answers_line_up_by_time_per_engine() {
    let labels = LabelMap::default();
    let mut merge = RangeMerge::new(&labels);
    let matrix = |items: String| {
        format!(r#"{{"status":"success","data":{{"resultType":"matrix","result":[{items}]}}}}"#)
    };
    let body = matrix(format!(
        r#"{{"metric":{{"__name__":"vllm:kv_cache_usage_perc",{A0}}},"values":[[100,"0.1"],[110,"0.2"],[120,"NaN"]]}}"#
    ));
    let answer = decode_answer(200, body.as_bytes()).expect("answer");
    merge.add(&spec("kv_usage"), &answer);
    let body = matrix(format!(
        r#"{{"metric":{{{A0},"kvtop_q":"0.95"}},"values":[[110,"0.3"],[120,"0.4"]]}}"#
    ));
    let answer = decode_answer(200, body.as_bytes()).expect("answer");
    merge.add(&spec("ttft"), &answer);
    let series = merge.finish();
    assert_eq!(series.len(), 1);
    let points: Vec<(f64, Option<f64>, Option<f64>)> = series[0]
        .points
        .iter()
        .map(|(t, s)| (*t, s.kv_usage, s.ttft_p95))
        .collect();
    assert_eq!(
        points,
        [
            (100.0, Some(0.1), None),
            (110.0, Some(0.2), Some(0.3)),
            (120.0, None, Some(0.4))
        ]
    );
    assert_eq!(series[0].id.engine, "0");
}

#[test]
fn disputed_cache_config_keeps_only_the_agreed_fields_as_a_direct_scrape_does() {
    let labels = LabelMap::default();
    let mut merge = CycleMerge::new(&labels);
    add(
        &mut merge,
        "running",
        &vector(&format!(r#"{{"metric":{{{A0}}},"value":[1,"1"]}}"#)),
    );
    // A target serving two models under one engine index: two configurations apply.
    add(
        &mut merge,
        "cache_config",
        &vector(
            r#"{"metric":{"__name__":"vllm:cache_config_info","pod":"vllm-a","namespace":"llm","instance":"10.0.0.1:8000","engine":"0","block_size":"16","num_gpu_blocks":"1000"},"value":[1,"1"]},
               {"metric":{"__name__":"vllm:cache_config_info","pod":"vllm-a","namespace":"llm","instance":"10.0.0.1:8000","engine":"0","block_size":"16","num_gpu_blocks":"2000"},"value":[1,"1"]}"#,
        ),
    );
    let (engines, _) = merge.finish();
    let config = engines[0].sample.cache_config.clone().unwrap_or_default();
    assert_eq!(config.block_size, Some(16));
    assert_eq!(config.num_gpu_blocks, None);
    assert_eq!(engines[0].signals.kv_capacity_tokens, None);
}

/// One engine as reported by a scrape (`job`) and a replica.
fn reported(job: &str, replica: &str) -> String {
    let replica = if replica.is_empty() {
        String::new()
    } else {
        format!(r#","prometheus_replica":"{replica}""#)
    };
    format!(r#"{A0},"job":"{job}"{replica}"#)
}

#[test]
fn an_engine_reported_by_two_jobs_is_one_engine_with_one_reports_values() {
    let labels = LabelMap::default();
    let mut merge = CycleMerge::new(&labels);
    let (pods, monitor) = (
        reported("kubernetes-pods", ""),
        reported("vllm-monitor", ""),
    );
    add(
        &mut merge,
        "running",
        &vector(&format!(
            r#"{{"metric":{{{pods}}},"value":[1,"3"]}},{{"metric":{{{monitor}}},"value":[1,"3"]}}"#
        )),
    );
    add(
        &mut merge,
        "gen_tps",
        &vector(&format!(
            r#"{{"metric":{{{pods}}},"value":[1,"4020"]}},{{"metric":{{{monitor}}},"value":[1,"4030"]}}"#
        )),
    );
    add(
        &mut merge,
        "sampled",
        &vector(&format!(
            r#"{{"metric":{{{pods}}},"value":[1,"99.5"]}},{{"metric":{{{monitor}}},"value":[1,"100.5"]}}"#
        )),
    );
    assert_eq!(
        merge.engine_jobs().iter().collect::<Vec<_>>(),
        ["kubernetes-pods", "vllm-monitor"]
    );
    let (engines, _) = merge.finish();
    assert_eq!(engines.len(), 1);
    // The freshest report is taken, never the sum (8050).
    assert_eq!(engines[0].signals.running, Some(3.0));
    assert_eq!(engines[0].signals.gen_tps, Some(4030.0));
    assert_eq!(engines[0].sampled_at, Some(100.5));
}

#[test]
fn an_ha_pair_is_one_engine_and_a_signal_one_replica_lacks_comes_from_the_other() {
    let labels = LabelMap::default();
    let mut merge = CycleMerge::new(&labels);
    let (a, b) = (reported("vllm", "prom-0"), reported("vllm", "prom-1"));
    add(
        &mut merge,
        "running",
        &vector(&format!(
            r#"{{"metric":{{{a}}},"value":[1,"7"]}},{{"metric":{{{b}}},"value":[1,"7"]}}"#
        )),
    );
    add(
        &mut merge,
        "waiting",
        &vector(&format!(r#"{{"metric":{{{b}}},"value":[1,"2"]}}"#)),
    );
    add(
        &mut merge,
        "gen_tps",
        &vector(&format!(
            r#"{{"metric":{{{a}}},"value":[1,"100"]}},{{"metric":{{{b}}},"value":[1,"101"]}}"#
        )),
    );
    let (engines, _) = merge.finish();
    assert_eq!(engines.len(), 1);
    assert_eq!(engines[0].signals.running, Some(7.0));
    // Same sample time: the first replica by name, prom-0.
    assert_eq!(engines[0].signals.gen_tps, Some(100.0));
    assert_eq!(engines[0].signals.waiting, Some(2.0));
}

#[test]
fn configured_replica_labels_are_the_ones_told_apart() {
    let labels = LabelMap {
        replicas: vec!["cluster_replica".into()],
        ..LabelMap::default()
    };
    let mut merge = CycleMerge::new(&labels);
    add(
        &mut merge,
        "running",
        &vector(&format!(
            r#"{{"metric":{{{A0},"cluster_replica":"x"}},"value":[1,"1"]}},
               {{"metric":{{{A0},"cluster_replica":"y"}},"value":[1,"2"]}}"#
        )),
    );
    let (engines, _) = merge.finish();
    assert_eq!(engines.len(), 1);
    assert_eq!(engines[0].signals.running, Some(1.0));
}
