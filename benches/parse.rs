//! Parser throughput on the synthetic three-model vLLM V1 payload (111 KB, ~1,000 samples).
//!
//! - `parse/kvtop`: `kvtop_core::metrics::parse` on the payload as scraped.
//! - `parse/prometheus-parse`: the `prometheus-parse` crate on the same payload with every ':'
//!   replaced by '_' (its name regex has no ':'), as the owned `String` lines its API takes. The
//!   replacement, the line split and the per-line `String`s are prepared outside the timed
//!   routine (`iter_batched`), and dropping its result is not timed either; only
//!   `Scrape::parse` is measured, which favours the baseline.
//! - `parse+extract/kvtop`: parse plus `engine::extract_engines` (the per-scrape hot path).
//! - `parse+extract/one_signal_120000_series`: a hostile payload, 120,000 series of one gauge and
//!   one histogram bucket bound for one engine (distinct `pid` labels, ~8 MB): the cost must grow
//!   linearly with the series, not with their square.

use std::hint::black_box;
use std::io;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use kvtop_core::engine::extract_engines;
use kvtop_core::metrics::parse;

const PAYLOAD: &str = include_str!("../tests/fixtures/synthetic-v1-3models-prometheus_client.txt");

fn bench_parse(c: &mut Criterion) {
    let bytes = PAYLOAD.len() as u64;

    let mut group = c.benchmark_group("parse");
    group.throughput(Throughput::Bytes(bytes));
    group.bench_function("kvtop", |b| b.iter(|| parse(black_box(PAYLOAD))));

    let underscored = PAYLOAD.replace(':', "_");
    let lines: Vec<String> = underscored.lines().map(str::to_owned).collect();
    group.bench_function("prometheus-parse", |b| {
        b.iter_batched(
            || lines.clone(),
            |owned| prometheus_parse::Scrape::parse(owned.into_iter().map(Ok::<String, io::Error>)),
            BatchSize::SmallInput,
        )
    });
    group.finish();

    let mut group = c.benchmark_group("parse+extract");
    group.throughput(Throughput::Bytes(bytes));
    group.bench_function("kvtop", |b| {
        b.iter(|| extract_engines(&parse(black_box(PAYLOAD))))
    });
    group.finish();

    let hostile = one_signal_many_series(120_000);
    let mut group = c.benchmark_group("parse+extract");
    group.throughput(Throughput::Bytes(hostile.len() as u64));
    group.sample_size(10);
    group.bench_function("one_signal_120000_series", |b| {
        b.iter(|| extract_engines(&parse(black_box(&hostile))))
    });
    group.finish();
}

/// `series` readings of the KV usage gauge and of one TTFT bucket bound, each under its own
/// `pid`, all for one engine.
fn one_signal_many_series(series: usize) -> String {
    let mut text = String::with_capacity(series * 160);
    text.push_str("# TYPE vllm:kv_cache_usage_perc gauge\n");
    for pid in 0..series {
        text.push_str(&format!(
            "vllm:kv_cache_usage_perc{{engine=\"0\",model_name=\"m\",pid=\"{pid}\"}} 0.5\n"
        ));
    }
    text.push_str("# TYPE vllm:time_to_first_token_seconds histogram\n");
    for pid in 0..series {
        text.push_str(&format!(
            "vllm:time_to_first_token_seconds_bucket{{engine=\"0\",le=\"0.5\",model_name=\"m\",pid=\"{pid}\"}} 1.0\n"
        ));
    }
    text
}

criterion_group!(benches, bench_parse);
criterion_main!(benches);
