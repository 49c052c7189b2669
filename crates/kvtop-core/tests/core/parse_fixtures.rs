//! The parser and the alias table on every real payload in `tests/fixtures/`. Expected values
//! were read off the fixture files by hand (line counts with grep, values from the lines).

use kvtop_core::engine::{EngineFlavor, EngineSample, GpuSample, extract_engines, extract_gpus};
use kvtop_core::metrics::{Bucket, LineError, MetricType, parse};

fn fixture(name: &str) -> String {
    let path = format!("{}/../../tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn engine<'a>(engines: &'a [EngineSample], model: &str) -> &'a EngineSample {
    engines
        .iter()
        .find(|e| e.id.model == model)
        .unwrap_or_else(|| panic!("no engine for {model}"))
}

fn bucket(le: f64, count: f64) -> Bucket {
    Bucket { le, count }
}

const LLAMA: &str = "meta-llama/Llama-3.1-8B-Instruct";
const QWEN: &str = "Qwen/Qwen2.5-72B-Instruct";
const MISTRAL: &str = "mistralai/Mistral-7B-Instruct-v0.3";

#[test]
fn every_fixture_parses_with_the_expected_line_accounting() {
    // (file, samples = non-comment lines minus `...` lines, `...` lines, TYPE lines)
    let cases = [
        ("synthetic-v1-3models-prometheus_client.txt", 937, 0, 55),
        ("v0.4-v0.5-era-metrics.txt", 120, 0, 29),
        ("v1-early-2025-design-doc-partial.txt", 14, 3, 4),
        ("v1-usage-doc-iteration-tokens-partial.txt", 9, 1, 1),
        ("datadog-dcgm-exporter-metrics.txt", 38, 0, 38),
    ];
    for (file, samples, malformed, types) in cases {
        let text = fixture(file);
        let expo = parse(&text);
        assert_eq!(expo.samples.len(), samples, "{file} samples");
        assert_eq!(
            expo.malformed, malformed,
            "{file} malformed: {:?}",
            expo.errors
        );
        assert_eq!(expo.types.len(), types, "{file} TYPE lines");
        assert!(!expo.saw_eof, "{file}");
    }
}

#[test]
fn synthetic_v1_three_models() {
    let text = fixture("synthetic-v1-3models-prometheus_client.txt");
    let expo = parse(&text);
    assert_eq!(
        expo.metric_type("vllm:iteration_tokens_total"),
        Some(MetricType::Histogram)
    );
    let engines = extract_engines(&expo);
    let ids: Vec<(&str, &str)> = engines
        .iter()
        .map(|e| (e.id.model.as_str(), e.id.engine.as_str()))
        .collect();
    assert_eq!(ids, vec![(LLAMA, "0"), (QWEN, "0"), (MISTRAL, "0")]);
    assert!(engines.iter().all(|e| e.flavor == EngineFlavor::VllmV1));

    let mistral = engine(&engines, MISTRAL);
    assert_eq!(mistral.kv_usage, Some(0.9656968490207513));
    assert_eq!(mistral.running, Some(42.0));
    assert_eq!(mistral.waiting, Some(18.0));
    assert_eq!(mistral.swapped, None);
    assert_eq!(mistral.generation_tokens_total, Some(1_501_145.0));
    assert_eq!(mistral.prefix_queries_total, Some(436_154.0));
    assert_eq!(mistral.prefix_hits_total, Some(7_740_921.0));
    assert_eq!(
        mistral.request_success_total,
        vec![
            ("stop".to_string(), 24_839.0),
            ("length".to_string(), 98_649.0),
            ("abort".to_string(), 4_536.0),
        ]
    );
    assert_eq!(mistral.requests_finished_total(), Some(128_024.0));

    let ttft = mistral.ttft.as_ref().expect("TTFT");
    assert_eq!(ttft.buckets.len(), 23);
    assert_eq!(ttft.buckets.iter().filter(|b| b.le.is_finite()).count(), 22);
    assert_eq!(ttft.buckets[0], bucket(0.001, 0.0));
    assert_eq!(ttft.buckets[3], bucket(0.02, 6.0));
    assert_eq!(ttft.buckets[8], bucket(0.25, 221.0));
    assert_eq!(ttft.buckets[21], bucket(2560.0, 300.0));
    assert_eq!(ttft.buckets[22], bucket(f64::INFINITY, 300.0));
    assert_eq!(ttft.count, Some(300.0));
    assert_eq!(ttft.sum, Some(59.48327417708067));

    let e2e = mistral.e2e.as_ref().expect("e2e");
    assert_eq!(e2e.buckets.len(), 22);
    assert_eq!(e2e.buckets[5], bucket(2.0, 54.0));
    assert_eq!(e2e.sum, Some(2174.4172973157124));

    let llama = engine(&engines, LLAMA);
    assert_eq!(llama.kv_usage, Some(0.7415504997598329));
    assert_eq!(llama.running, Some(14.0));
    assert_eq!(llama.waiting, Some(0.0));
    assert_eq!(llama.preemptions_total, Some(2_341_057.0));
    assert_eq!(llama.prefix_queries_total, Some(4_108_603.0));
    assert_eq!(llama.prefix_hits_total, Some(3_744_854.0));
    let queue = llama.queue_time.as_ref().expect("queue time");
    assert_eq!(queue.buckets.first(), Some(&bucket(0.3, 206.0)));
    assert_eq!(queue.sum, Some(138.17257074691588));
    assert_eq!(
        llama.ttft.as_ref().map(|h| h.buckets[2]),
        Some(bucket(0.01, 2.0))
    );

    // Only the deprecated name carries ITL in this payload.
    let qwen = engine(&engines, QWEN);
    assert_eq!(qwen.prompt_tokens_total, Some(3_152_731.0));
    let itl = qwen
        .itl
        .as_ref()
        .expect("ITL from time_per_output_token_seconds");
    assert_eq!(itl.buckets.len(), 20);
    assert_eq!(itl.buckets[1], bucket(0.025, 105.0));
    assert_eq!(itl.buckets[18], bucket(80.0, 300.0));
    assert_eq!(itl.sum, Some(10.054665708053676));

    for e in &engines {
        assert_eq!(e.process_cpu_seconds_total, Some(0.09999999999999999));
        assert_eq!(e.spec_drafts_total, None);
        assert_eq!(e.prefix_hit_rate_gauge, None);
        // Three cache_config_info series share engine="0" and name no model: the block
        // counts disagree (19849, 27899, 81003), so capacity is unknown while the shared
        // fields are kept.
        let config = e.cache_config.as_ref().expect("cache config");
        assert_eq!(config.block_size, Some(16));
        assert_eq!(config.num_gpu_blocks, None);
        assert_eq!(config.kv_capacity_tokens(), None);
        assert_eq!(config.enable_prefix_caching, Some(true));
        assert_eq!(config.gpu_memory_utilization, Some(0.9));
        assert_eq!(config.cache_dtype.as_deref(), Some("auto"));
        assert_eq!(config.num_cpu_blocks, Some(0));
        assert_eq!(config.fields.len(), 7);
    }
}

#[test]
fn v0_era_engine() {
    let text = fixture("v0.4-v0.5-era-metrics.txt");
    let engines = extract_engines(&parse(&text));
    assert_eq!(engines.len(), 1);
    let e = &engines[0];
    assert_eq!(e.id.model, "facebook/opt-125m");
    assert_eq!(e.id.engine, "");
    assert_eq!(e.flavor, EngineFlavor::VllmV0);
    assert_eq!(e.kv_usage, Some(0.0));
    assert_eq!(e.running, Some(0.0));
    assert_eq!(e.waiting, Some(0.0));
    assert_eq!(e.swapped, Some(0.0));
    assert_eq!(e.preemptions_total, Some(0.0));
    assert_eq!(e.prompt_tokens_total, Some(5.0));
    assert_eq!(e.generation_tokens_total, Some(7.0));
    // Not exported by this engine: unknown, not zero.
    assert_eq!(e.prefix_queries_total, None);
    assert_eq!(e.prefix_hits_total, None);
    assert_eq!(e.prefix_hit_rate_gauge, None);
    assert_eq!(e.queue_time, None);
    assert_eq!(e.request_success_total, vec![("length".to_string(), 1.0)]);
    assert_eq!(e.process_cpu_seconds_total, Some(10.950000000000001));

    let ttft = e.ttft.as_ref().expect("TTFT");
    assert_eq!(ttft.buckets.len(), 17);
    assert_eq!(ttft.buckets[9], bucket(0.5, 1.0));
    assert_eq!(ttft.buckets[15], bucket(10.0, 1.0));
    assert_eq!(ttft.sum, Some(0.31326723098754883));

    let itl = e
        .itl
        .as_ref()
        .expect("ITL from time_per_output_token_seconds");
    assert_eq!(itl.buckets.len(), 14);
    assert_eq!(itl.buckets[1], bucket(0.025, 0.0));
    assert_eq!(itl.buckets[2], bucket(0.05, 6.0));
    assert_eq!(itl.buckets[13], bucket(f64::INFINITY, 6.0));
    assert_eq!(itl.count, Some(6.0));
    assert_eq!(itl.sum, Some(0.19016313552856445));

    assert_eq!(e.e2e.as_ref().map(|h| h.buckets.len()), Some(11));

    let config = e.cache_config.as_ref().expect("cache config");
    assert_eq!(config.num_gpu_blocks, Some(7281));
    assert_eq!(config.block_size, Some(16));
    assert_eq!(config.kv_capacity_tokens(), Some(7281 * 16));
    assert_eq!(config.enable_prefix_caching, Some(false));
    assert_eq!(config.num_cpu_blocks, Some(0));
    assert_eq!(config.fields.len(), 10);
    assert_eq!(config.fields.get("swap_space_bytes"), Some("4294967296"));
}

#[test]
fn design_doc_excerpt_counts_elisions_and_keeps_the_rest() {
    let text = fixture("v1-early-2025-design-doc-partial.txt");
    let expo = parse(&text);
    assert_eq!(
        expo.errors,
        vec![
            LineError {
                line: 4,
                reason: "bad metric name"
            },
            LineError {
                line: 8,
                reason: "bad metric name"
            },
            LineError {
                line: 14,
                reason: "bad metric name"
            },
        ]
    );
    let engines = extract_engines(&expo);
    assert_eq!(engines.len(), 1);
    let e = &engines[0];
    assert_eq!(e.id.model, LLAMA);
    assert_eq!(e.id.engine, "");
    // Nothing in the excerpt tells V0 from early V1.
    assert_eq!(e.flavor, EngineFlavor::Unknown);
    assert_eq!(e.running, Some(8.0));
    assert_eq!(e.generation_tokens_total, Some(27_453.0));
    assert_eq!(e.kv_usage, None);
    assert_eq!(e.requests_finished_total(), Some(132.0));
    let ttft = e.ttft.as_ref().expect("TTFT");
    assert_eq!(ttft.buckets.len(), 8);
    assert_eq!(ttft.buckets[3], bucket(0.02, 13.0));
    assert_eq!(ttft.buckets[7], bucket(0.1, 140.0));
    assert_eq!(ttft.count, Some(140.0));
    assert_eq!(ttft.sum, None);
    assert_eq!(e.process_cpu_seconds_total, None);
    assert_eq!(e.cache_config, None);
}

#[test]
fn iteration_tokens_total_is_a_histogram_not_a_counter() {
    let text = fixture("v1-usage-doc-iteration-tokens-partial.txt");
    let expo = parse(&text);
    assert_eq!(
        expo.metric_type("vllm:iteration_tokens_total"),
        Some(MetricType::Histogram)
    );
    assert_eq!(
        expo.errors,
        vec![LineError {
            line: 12,
            reason: "bad metric name"
        }]
    );
    // The histogram's nine samples all parse...
    let names: Vec<&str> = expo.samples.iter().map(|s| s.name).collect();
    assert_eq!(names[0], "vllm:iteration_tokens_total_sum");
    assert!(
        names[1..]
            .iter()
            .all(|n| *n == "vllm:iteration_tokens_total_bucket")
    );
    assert_eq!(expo.samples[8].label("le").as_deref(), Some("512.0"));
    // ...but carry no signal kvtop reads: in particular they are not read as a token counter,
    // so the excerpt yields no engine at all.
    assert_eq!(extract_engines(&expo), Vec::new());
}

#[test]
fn dcgm_exporter_gpus() {
    let text = fixture("datadog-dcgm-exporter-metrics.txt");
    let expo = parse(&text);
    assert_eq!(extract_engines(&expo), Vec::new());
    let gpus = extract_gpus(&expo);
    assert_eq!(gpus.len(), 3);

    assert_eq!(
        gpus[0],
        GpuSample {
            gpu: "0".into(),
            uuid: "GPU-20c56d28-0da5-6d26-a36a-e7af1ce2586e".into(),
            model_name: "Tesla T4".into(),
            hostname: "424773df46e0".into(),
            pod: None,
            namespace: None,
            util_pct: Some(0.0),
            fb_used_mib: Some(0.0),
            fb_free_mib: Some(15109.0),
            fb_reserved_mib: None,
            temp_c: Some(25.0),
            power_w: Some(8.969),
            sm_clock_mhz: Some(300.0),
            xid: Some(0.0),
        }
    );

    let second = &gpus[1];
    assert_eq!(second.uuid, "GPU-9ef1b6d0-3643-5dd7-b823-c0ec20dcf2d5");
    assert_eq!(second.hostname, "551bdf382151");
    assert_eq!(second.fb_reserved_mib, Some(15109.0));
    assert_eq!(second.util_pct, None);
    assert_eq!(second.temp_c, None);

    let a10g = &gpus[2];
    assert_eq!(a10g.model_name, "NVIDIA A10G");
    assert_eq!(a10g.uuid, "GPU-abc");
    assert_eq!(a10g.hostname, "ip-11111");
    assert_eq!(a10g.pod.as_deref(), Some("ray-1111111"));
    assert_eq!(a10g.namespace.as_deref(), Some("ray-llm"));
    assert_eq!(a10g.util_pct, None);
}
