//! One scrape cycle of a 1,000-engine fleet: parse + alias + `Fleet::ingest` (snapshots, derived
//! signals, history) for every engine, and `Fleet::ingest` alone.
//!
//! Payloads: the synthetic vLLM V1 fixture (three models) split into one payload per model, used
//! as templates for 1,000 targets of one engine each. Values vary per engine and grow per cycle
//! (counters and histogram buckets scale together, so bucket layouts stay monotonic and windowed
//! quantiles have observations). Payload text is generated outside the timed region; the fleet
//! is warmed up with a few cycles first so every snapshot window holds data, and each timed
//! iteration is the next cycle, one interval later.

use std::fmt::Write as _;
use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use kvtop_core::engine::extract_engines;
use kvtop_core::fleet::{
    Fleet, FleetSettings, ScrapePayload, ScrapeReport, TargetId, TargetSpec, Ts,
};
use kvtop_core::metrics::parse;

const ENGINES: usize = 1000;
const INTERVAL: f64 = 1.0;
/// Cycles ingested before timing: more than the 15 s window, so rates and quantiles are live.
const WARM_UP_CYCLES: u32 = 20;
const START: Ts = 1.8e9;
const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/synthetic-v1-3models-prometheus_client.txt"
);

/// How a sample's value changes from engine to engine and cycle to cycle.
#[derive(Clone, Copy)]
enum Kind {
    /// Counters, histogram buckets, sums and counts: scaled per engine, growing per cycle.
    Cumulative,
    /// Gauges: scaled down by up to a quarter, varying per engine and cycle.
    Gauge,
    /// `_created` timestamps, `*_info` and start times: unchanged.
    Fixed,
}

enum TemplateLine {
    Verbatim(String),
    Sample {
        head: String,
        kind: Kind,
        value: f64,
    },
}

/// One model's part of the fixture plus the lines without a model (process, python, config).
struct Template(Vec<TemplateLine>);

fn model_of(line: &str) -> Option<&str> {
    let start = line.find("model_name=\"")? + "model_name=\"".len();
    let len = line.get(start..)?.find('"')?;
    line.get(start..start + len)
}

fn kind_of(name: &str) -> Kind {
    if name.ends_with("_created") || name.ends_with("_info") || name.contains("start_time") {
        Kind::Fixed
    } else if ["_total", "_bucket", "_sum", "_count"]
        .iter()
        .any(|suffix| name.ends_with(suffix))
    {
        Kind::Cumulative
    } else {
        Kind::Gauge
    }
}

fn templates() -> Vec<Template> {
    let text = std::fs::read_to_string(FIXTURE).unwrap_or_else(|e| panic!("{FIXTURE}: {e}"));
    let mut models: Vec<&str> = Vec::new();
    for model in text.lines().filter_map(model_of) {
        if !models.contains(&model) {
            models.push(model);
        }
    }
    models
        .iter()
        .map(|model| {
            let lines = text
                .lines()
                .filter(|line| model_of(line).is_none_or(|m| m == *model))
                .map(|line| {
                    if line.starts_with('#') {
                        return TemplateLine::Verbatim(line.to_owned());
                    }
                    let parsed = line
                        .rsplit_once(' ')
                        .and_then(|(head, value)| Some((head, value.parse::<f64>().ok()?)));
                    match parsed {
                        Some((head, value)) => {
                            let name = head.split('{').next().unwrap_or(head);
                            TemplateLine::Sample {
                                head: head.to_owned(),
                                kind: kind_of(name),
                                value,
                            }
                        }
                        None => TemplateLine::Verbatim(line.to_owned()),
                    }
                })
                .collect();
            Template(lines)
        })
        .collect()
}

/// The payload of engine `engine` at cycle `cycle`.
fn render(template: &Template, engine: usize, cycle: u32, out: &mut String) {
    out.clear();
    let scale = 0.5 + (engine % 101) as f64 / 100.0;
    let growth = 1.0 + 0.01 * f64::from(cycle);
    let wobble = 0.75 + 0.25 * ((engine * 7 + cycle as usize * 13) % 17) as f64 / 16.0;
    for line in &template.0 {
        match line {
            TemplateLine::Verbatim(text) => out.push_str(text),
            TemplateLine::Sample { head, kind, value } => {
                let value = match kind {
                    Kind::Cumulative => value * scale * growth,
                    Kind::Gauge => value * wobble,
                    Kind::Fixed => *value,
                };
                let _ = write!(out, "{head} {value}");
            }
        }
        out.push('\n');
    }
}

fn payloads(templates: &[Template], cycle: u32) -> Vec<String> {
    (0..ENGINES)
        .map(|engine| {
            let mut text = String::with_capacity(48 * 1024);
            if let Some(template) = templates.get(engine % templates.len()) {
                render(template, engine, cycle, &mut text);
            }
            text
        })
        .collect()
}

fn at(cycle: u32) -> Ts {
    START + f64::from(cycle) * INTERVAL
}

/// What a scrape worker does with a body: parse, map onto engines, wrap in a report.
fn report(target: TargetId, at: Ts, text: &str) -> ScrapeReport {
    let expo = parse(text);
    let payload = ScrapePayload {
        engines: extract_engines(&expo),
        gpus: Vec::new(),
        samples: expo.samples.len(),
        malformed: expo.malformed,
        first_error: expo.errors.first().cloned(),
        bytes: text.len(),
    };
    ScrapeReport {
        target,
        at,
        took: 0.01,
        outcome: Ok(payload),
    }
}

fn warmed_fleet(templates: &[Template]) -> (Fleet, Vec<TargetId>) {
    let mut fleet = Fleet::new(FleetSettings {
        interval: INTERVAL,
        ..FleetSettings::default()
    });
    let ids: Vec<TargetId> = (0..ENGINES)
        .map(|i| {
            fleet.add_target(TargetSpec {
                name: format!("vllm-{i:04}"),
                url: format!("http://10.0.{}.{}:8000/metrics", i / 250, i % 250),
            })
        })
        .collect();
    for cycle in 0..WARM_UP_CYCLES {
        for (id, text) in ids.iter().zip(payloads(templates, cycle)) {
            fleet.ingest(report(*id, at(cycle), &text));
        }
    }
    let bytes: usize = payloads(templates, 0).iter().map(String::len).sum();
    let with_quantiles = fleet
        .engines()
        .iter()
        .filter(|row| row.signals.ttft_p95.is_some())
        .count();
    eprintln!(
        "fleet: {} rows ({with_quantiles} with a live TTFT p95), {:.1} MiB of payload per cycle, \
         state {:.1} MiB after {WARM_UP_CYCLES} cycles",
        fleet.engines().len(),
        bytes as f64 / (1 << 20) as f64,
        fleet.memory_bytes() as f64 / (1 << 20) as f64,
    );
    (fleet, ids)
}

fn bench_cycle(c: &mut Criterion) {
    let templates = templates();
    let mut group = c.benchmark_group("ingest_1000_engines");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(15));

    let (mut fleet, ids) = warmed_fleet(&templates);
    let mut cycle = WARM_UP_CYCLES;
    group.bench_function("parse_alias_ingest", |b| {
        b.iter_batched(
            || {
                cycle += 1;
                (at(cycle), payloads(&templates, cycle))
            },
            |(at, texts)| {
                for (id, text) in ids.iter().zip(&texts) {
                    fleet.ingest(report(*id, at, text));
                }
                black_box(fleet.counts());
                texts
            },
            BatchSize::PerIteration,
        );
    });

    let (mut fleet, ids) = warmed_fleet(&templates);
    let mut cycle = WARM_UP_CYCLES;
    group.bench_function("fleet_ingest_only", |b| {
        b.iter_batched(
            || {
                cycle += 1;
                let at = at(cycle);
                let texts = payloads(&templates, cycle);
                ids.iter()
                    .zip(&texts)
                    .map(|(id, text)| report(*id, at, text))
                    .collect::<Vec<_>>()
            },
            |reports| {
                for report in reports {
                    fleet.ingest(report);
                }
                black_box(fleet.counts());
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

criterion_group!(benches, bench_cycle);
criterion_main!(benches);
