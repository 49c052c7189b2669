//! One Prometheus cycle of a 1,000-engine and of a 10,000-engine fleet (and their GPUs, one
//! per engine): decoding the JSON answers of every query, merging them into one entry per
//! engine, and folding the result into the fleet.
//!
//! The answers are generated here in Prometheus' exact JSON shape (label order, value strings)
//! for the queries kvtop sends (`QueryPlan::every_cycle` with DCGM, plus `cache_config_info`):
//! per engine one series per signal, three per TTFT/ITL quantile query, eight DCGM fields per
//! GPU. Generation happens outside the timed region.

use std::fmt::Write as _;
use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use kvtop::sources::prometheus::decode::decode_answer;
use kvtop::sources::prometheus::merge::CycleMerge;
use kvtop::sources::prometheus::query::{QuerySpec, Shape};
use kvtop::sources::prometheus::{LabelMap, QueryPlan};
use kvtop_core::fleet::{
    DerivedPayload, DerivedReport, Fleet, FleetSettings, QuantileWindow, SourceReport,
};

/// Fleet sizes measured.
const FLEETS: [usize; 2] = [1_000, 10_000];
const GPUS_PER_NODE: usize = 8;
const T: f64 = 1_800_000_000.0;
const DCGM_FIELDS: [&str; 8] = [
    "GPU_UTIL",
    "FB_USED",
    "FB_FREE",
    "FB_RESERVED",
    "GPU_TEMP",
    "POWER_USAGE",
    "SM_CLOCK",
    "XID_ERRORS",
];

fn pod(i: usize) -> String {
    format!("vllm-llama-8b-6d4f9-{i:05}")
}

fn model(i: usize) -> &'static str {
    if i % 2 == 0 {
        "meta-llama/Llama-3.1-8B-Instruct"
    } else {
        "Qwen/Qwen2.5-7B-Instruct"
    }
}

/// Labels of engine `i` as `sum by (pod, namespace, instance, model_name, engine)` returns them
/// (Prometheus sorts label names).
fn engine_labels(i: usize) -> String {
    format!(
        r#""engine":"0","instance":"10.{}.{}.{}:8000","model_name":"{}","namespace":"llm","pod":"{}""#,
        i / 65536,
        (i / 256) % 256,
        i % 256,
        model(i),
        pod(i)
    )
}

fn vector(items: &str) -> Vec<u8> {
    format!(r#"{{"status":"success","data":{{"resultType":"vector","result":[{items}]}}}}"#)
        .into_bytes()
}

fn item(labels: &str, value: f64) -> String {
    format!(r#"{{"metric":{{{labels}}},"value":[{T},"{value}"]}}"#)
}

/// The answer to one query for the whole fleet.
fn answer(spec: &QuerySpec, engines: usize) -> Vec<u8> {
    let mut items = String::with_capacity(engines * 200);
    let mut push = |s: String| {
        if !items.is_empty() {
            items.push(',');
        }
        items.push_str(&s);
    };
    match &spec.shape {
        Shape::KvRaw => {
            for i in 0..engines {
                let labels = format!(
                    r#""__name__":"vllm:kv_cache_usage_perc",{},"job":"vllm""#,
                    engine_labels(i)
                );
                push(item(&labels, (i % 97) as f64 / 100.0));
            }
        }
        Shape::Engine(_) => {
            for i in 0..engines {
                push(item(&engine_labels(i), (i % 13) as f64 * 1.5));
            }
        }
        Shape::Sampled => {
            for i in 0..engines {
                push(item(&engine_labels(i), T - (i % 3) as f64));
            }
        }
        Shape::Resets => {
            for i in 0..engines {
                push(item(&engine_labels(i), (i % 500 == 0) as u8 as f64));
            }
        }
        Shape::ModelQuantiles => {
            // One model per 100 engines, each with every latency quantile.
            for model in 0..engines.div_ceil(100) {
                for def in kvtop_core::signals::SIGNALS.iter().filter(|d| {
                    matches!(d.derivation, kvtop_core::signals::Derivation::Quantile(..))
                }) {
                    let labels = format!(
                        r#""model_name":"org/model-{model}","kvtop_q":"{}""#,
                        def.name
                    );
                    push(item(&labels, 0.2 + (model % 5) as f64 * 0.1));
                }
            }
        }
        Shape::Process(_) => {
            for i in 0..engines {
                let labels = format!(
                    r#""instance":"10.{}.{}.{}:8000","namespace":"llm","pod":"{}""#,
                    i / 65536,
                    (i / 256) % 256,
                    i % 256,
                    pod(i)
                );
                push(item(&labels, 1.25));
            }
        }
        Shape::Quantiles(slots) => {
            for i in 0..engines {
                for (q, _) in slots {
                    let labels = format!(r#"{},"kvtop_q":"{q}""#, engine_labels(i));
                    push(item(&labels, 0.05 + (i % 7) as f64 * 0.01));
                }
            }
        }
        Shape::CacheConfig => {
            for i in 0..engines {
                let labels = format!(
                    r#""__name__":"vllm:cache_config_info","block_size":"16","cache_dtype":"auto","enable_prefix_caching":"True","engine":"0","gpu_memory_utilization":"0.9","instance":"10.{}.{}.{}:8000","job":"vllm","namespace":"llm","num_cpu_blocks":"0","num_gpu_blocks":"27763","pod":"{}""#,
                    i / 65536,
                    (i / 256) % 256,
                    i % 256,
                    pod(i)
                );
                push(item(&labels, 1.0));
            }
        }
        Shape::Dcgm => {
            for i in 0..engines {
                let node = i / GPUS_PER_NODE;
                let gpu = i % GPUS_PER_NODE;
                for field in DCGM_FIELDS {
                    let labels = format!(
                        r#""Hostname":"gpu-node-{node:03}","UUID":"GPU-{i:08x}-0000-0000-0000-000000000000","__name__":"DCGM_FI_DEV_{field}","container":"vllm","device":"nvidia{gpu}","gpu":"{gpu}","instance":"10.200.{}.{}:9400","job":"dcgm","modelName":"NVIDIA H100 80GB HBM3","namespace":"llm","pci_bus_id":"00000000:18:00.0","pod":"{}""#,
                        node / 256,
                        node % 256,
                        pod(i)
                    );
                    push(item(&labels, 42.0));
                }
            }
        }
        // Read for a past window only, never by the live cycle timed here.
        Shape::BucketRates { .. } => {}
    }
    vector(&items)
}

fn cycle_answers(plan: &QueryPlan, engines: usize) -> Vec<(QuerySpec, Vec<u8>)> {
    plan.every_cycle()
        .into_iter()
        .chain(plan.slow())
        .map(|spec| {
            let body = answer(&spec, engines);
            (spec, body)
        })
        .collect()
}

fn decode_and_merge(
    labels: &LabelMap,
    answers: &[(QuerySpec, Vec<u8>)],
) -> (
    Vec<kvtop_core::fleet::DerivedEngine>,
    Option<Vec<kvtop_core::engine::GpuSample>>,
) {
    let mut merge = CycleMerge::new(labels);
    for (spec, body) in answers {
        if let Ok(answer) = decode_answer(200, body) {
            merge.add(spec, &answer);
        }
    }
    merge.finish()
}

fn report(at: f64, payload: DerivedPayload) -> SourceReport {
    SourceReport::Cycle(DerivedReport {
        source: "http://prometheus:9090".into(),
        at,
        took: 0.05,
        outcome: Ok(payload),
    })
}

fn bench_cycle(c: &mut Criterion) {
    for engines in FLEETS {
        bench_fleet(c, engines);
    }
}

fn bench_fleet(c: &mut Criterion, fleet_size: usize) {
    let labels = LabelMap::default();
    let plan = QueryPlan::new(labels.clone(), QuantileWindow::M1, true);
    let answers = cycle_answers(&plan, fleet_size);
    let bytes: usize = answers.iter().map(|(_, b)| b.len()).sum();
    let mut line = String::new();
    let _ = write!(
        line,
        "prometheus cycle: {} queries per interval (+{} every 30 intervals), {} answer bytes for {fleet_size} engines",
        plan.every_cycle().len(),
        plan.slow().len(),
        bytes
    );
    eprintln!("{line}");

    let mut group = c.benchmark_group(format!("prometheus_{fleet_size}_engines"));
    group.sample_size(if fleet_size > 1_000 { 10 } else { 20 });
    group.measurement_time(Duration::from_secs(if fleet_size > 1_000 {
        30
    } else {
        10
    }));

    let kv = answers
        .iter()
        .find(|(spec, _)| spec.signal == "kv_usage")
        .map(|(_, body)| body.clone())
        .unwrap_or_default();
    group.bench_function("decode_kv_answer", |b| {
        b.iter(|| black_box(decode_answer(200, &kv).map(|a| a.series.len())));
    });

    group.bench_function("decode_and_merge_cycle", |b| {
        b.iter(|| {
            let (engines, gpus) = decode_and_merge(&labels, &answers);
            black_box((engines.len(), gpus.map(|g| g.len())));
        });
    });

    let (engines, gpus) = decode_and_merge(&labels, &answers);
    assert_eq!(engines.len(), fleet_size);
    let payload = DerivedPayload {
        engines,
        gpus,
        queries: plan.every_cycle().len(),
        failures: Vec::new(),
        bytes,
        targets: None,
        window_secs: Some(plan.window_secs()),
        models: Vec::new(),
    };
    let mut fleet = Fleet::new(FleetSettings::default());
    let mut at = T;
    for _ in 0..5 {
        at += 1.0;
        fleet.ingest_source(report(at, payload.clone()));
    }
    group.bench_function("fleet_ingest_derived", |b| {
        b.iter_batched(
            || {
                at += 1.0;
                report(at, payload.clone())
            },
            |r| {
                fleet.ingest_source(r);
                black_box(fleet.counts());
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

criterion_group!(benches, bench_cycle);
criterion_main!(benches);
