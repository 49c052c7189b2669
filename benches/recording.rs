//! Recording (`--record`): the cost of encoding one second of scrapes, and the bytes it takes,
//! for 8 and for 1,000 engines; and reading a recording back (decode) at the same sizes.
//!
//! Samples: the V1 fixture's three engines as templates, one engine per target, moved on each
//! second the way a busy engine moves: token counters by a few thousand, request counters by a
//! few, each histogram's observations spread over its buckets, KV usage and queue gauges
//! wandering. The bytes per engine-second are printed before the timings (`recorded: …`).

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use kvtop_core::engine::{EngineSample, extract_engines};
use kvtop_core::fleet::{ScrapePayload, ScrapeReport, TargetId, Ts};
use kvtop_core::metrics::parse;
use kvtop_core::recording::{Decoder, Encoder, Frame, Record, next_frame};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/synthetic-v1-3models-prometheus_client.txt"
);
const START: Ts = 1.8e9;

/// A tiny deterministic generator (xorshift), so runs compare.
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }

    fn count(&mut self, mean: f64) -> f64 {
        (mean * 2.0 * self.next()).round()
    }
}

/// One second of a busy engine.
fn advance(s: &mut EngineSample, noise: &mut Noise) {
    let bump = |v: &mut Option<f64>, by: f64| *v = v.map(|x| x + by);
    bump(&mut s.generation_tokens_total, noise.count(3000.0));
    bump(&mut s.prompt_tokens_total, noise.count(9000.0));
    bump(&mut s.prefix_queries_total, noise.count(9000.0));
    bump(&mut s.prefix_hits_total, noise.count(7000.0));
    bump(&mut s.process_cpu_seconds_total, 0.9 + 0.2 * noise.next());
    if noise.next() < 0.05 {
        bump(&mut s.preemptions_total, 1.0);
    }
    for (_, v) in &mut s.request_success_total {
        *v += noise.count(3.0);
    }
    s.kv_usage = s
        .kv_usage
        .map(|k| (k + 0.02 * (noise.next() - 0.5)).clamp(0.0, 1.0));
    s.running = Some(noise.count(40.0));
    s.waiting = Some(noise.count(2.0));
    for h in [&mut s.ttft, &mut s.itl, &mut s.e2e, &mut s.queue_time]
        .into_iter()
        .flatten()
    {
        let observations = noise.count(if h.buckets.len() > 20 { 3000.0 } else { 8.0 });
        let mut cumulative: f64 = 0.0;
        let n = h.buckets.len().max(1);
        for (i, bucket) in h.buckets.iter_mut().enumerate() {
            // Observations land in the lower-middle buckets, as latencies do.
            let share = if i < n / 2 {
                2.0 * i as f64 / n as f64
            } else {
                1.0
            };
            cumulative = cumulative.max((observations * share * share).round());
            bucket.count += cumulative;
        }
        h.count = h.count.map(|c| c + observations);
        h.sum = h
            .sum
            .map(|s| s + observations * 0.02 * (1.0 + noise.next()));
    }
}

/// `seconds` seconds of scrapes of `engines` engines, one report per engine per second.
fn seconds_of_scrapes(engines: usize, seconds: usize) -> Vec<Vec<ScrapeReport>> {
    let text = std::fs::read_to_string(FIXTURE).unwrap_or_else(|e| panic!("{FIXTURE}: {e}"));
    let templates = extract_engines(&parse(&text));
    let mut noise = Noise(0x9e37_79b9_7f4a_7c15);
    let mut current: Vec<EngineSample> = (0..engines)
        .map(|i| templates[i % templates.len()].clone())
        .collect();
    (0..seconds)
        .map(|second| {
            current
                .iter_mut()
                .enumerate()
                .map(|(i, sample)| {
                    advance(sample, &mut noise);
                    ScrapeReport {
                        target: TargetId(i as u32),
                        at: START + second as f64 + i as f64 / engines as f64,
                        took: 0.004,
                        outcome: Ok(ScrapePayload {
                            engines: vec![sample.clone()],
                            gpus: Vec::new(),
                            samples: 330,
                            malformed: 0,
                            first_error: None,
                            bytes: 37_000,
                        }),
                    }
                })
                .collect()
        })
        .collect()
}

fn encode_all(encoder: &mut Encoder, seconds: &[Vec<ScrapeReport>], out: &mut Vec<u8>) {
    for reports in seconds {
        for report in reports {
            encoder.encode(&Record::Scrape(report.clone()), out);
        }
        encoder.encode(&Record::Cycle { at: reports[0].at }, out);
    }
}

fn bench(c: &mut Criterion) {
    for engines in [8usize, 1000] {
        let warm = seconds_of_scrapes(engines, 31);
        let (first, rest) = warm.split_at(30);
        // Size: 30 s after the first (full) samples, per engine-second and per hour.
        let mut encoder = Encoder::new();
        let mut bytes = Vec::new();
        encode_all(&mut encoder, &first[..1], &mut bytes);
        let after_first = bytes.len();
        encode_all(&mut encoder, &first[1..], &mut bytes);
        let per_engine_second = (bytes.len() - after_first) as f64 / (29.0 * engines as f64);
        eprintln!(
            "recorded: {engines} engines, {per_engine_second:.0} B per engine-second after the \
             first sample ({} B), {:.1} MB per hour at 1 s",
            after_first / engines,
            per_engine_second * engines as f64 * 3600.0 / 1e6
        );
        let second = rest[0].clone();
        let mut group = c.benchmark_group(format!("recording_{engines}"));
        group.bench_function("encode one second", |b| {
            let mut out = Vec::with_capacity(1 << 20);
            b.iter(|| {
                out.clear();
                // Encoding against the same previous second each time: the encoder's memory
                // holds second 30, `second` is 31.
                let mut encoder = encoder.clone();
                encode_all(&mut encoder, std::slice::from_ref(&second), &mut out);
                black_box(out.len())
            });
        });
        group.bench_function("decode 30 seconds", |b| {
            b.iter(|| {
                let mut decoder = Decoder::new();
                let mut rest = bytes.as_slice();
                let mut records = 0usize;
                while let Frame::Record(payload, len) = next_frame(rest) {
                    if decoder.decode(payload).is_ok() {
                        records += 1;
                    }
                    rest = rest.get(len..).unwrap_or_default();
                }
                black_box(records)
            });
        });
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);
