//! Parser throughput on the synthetic three-model vLLM V1 payload (111 KB, ~1,000 samples).
//!
//! - `parse/kvtop`: `kvtop_core::metrics::parse` on the payload as scraped.
//! - `parse/prometheus-parse`: the `prometheus-parse` crate on the same payload with every ':'
//!   replaced by '_' (its name regex has no ':'), as the owned `String` lines its API takes. The
//!   replacement, the line split and the per-line `String`s are prepared outside the timed
//!   routine (`iter_batched`), and dropping its result is not timed either; only
//!   `Scrape::parse` is measured, which favours the baseline.
//! - `parse+extract/kvtop`: parse plus `engine::extract_engines` (the per-scrape hot path).

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
}

criterion_group!(benches, bench_parse);
criterion_main!(benches);
