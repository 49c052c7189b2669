//! Recording (`--record`): the cost of encoding one second of scrapes and of compressing it
//! into a block, and the bytes it takes, for 8 and for 1,000 engines; and reading a recording
//! back (decompress and decode) at the same sizes.
//!
//! Samples: the V1 fixture's three engines as templates (with TPOT beside ITL and HTTP
//! requests by status, as newer vLLMs export), one engine per target, moved on each second the
//! way a busy engine moves: token counters by a few thousand, request counters by a few, ITL
//! and TPOT by thousands of observations over a few buckets and the per-request histograms
//! (TTFT, e2e, queue, prefill, decode) by a few observations, at random, KV usage and queue
//! gauges wandering. The bytes per engine-second are printed before the timings
//! (`recorded: …`).

use std::hint::black_box;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use kvtop_core::engine::{EngineSample, Histogram, extract_engines};
use kvtop_core::fleet::{ScrapePayload, ScrapeReport, TargetId, Ts};
use kvtop_core::metrics::parse;
use kvtop_core::recording::block::{self, BlockReader, BlockWriter};
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
    for (_, v) in &mut s.http_requests_total {
        *v += noise.count(3.0);
    }
    let per_token = [&mut s.itl, &mut s.tpot];
    let per_request = [
        &mut s.ttft,
        &mut s.e2e,
        &mut s.queue_time,
        &mut s.prefill_time,
        &mut s.decode_time,
    ];
    // Every generated token is an ITL (and TPOT) observation; a finished request is one
    // observation of each per-request histogram.
    for (h, mean) in per_token
        .into_iter()
        .map(|h| (h, 3000.0))
        .chain(per_request.into_iter().map(|h| (h, 3.0)))
    {
        if let Some(h) = h.as_mut() {
            observe(h, noise.count(mean), noise);
        }
    }
}

/// Add `observations` to `h`: they land around a bucket a third of the way up (latencies sit
/// in the lower buckets), spread over a few buckets at random, so which buckets move and by how
/// much differs from one second to the next as on a real engine.
fn observe(h: &mut Histogram, observations: f64, noise: &mut Noise) {
    let n = h.buckets.len();
    if n == 0 {
        return;
    }
    let centre = n / 3;
    let mut own = vec![0.0; n];
    let mut left = observations;
    // Large counts: split across the centre bucket and its neighbours by random weights;
    // a handful: each observation lands on its own.
    if observations > 50.0 {
        let spread: Vec<f64> = (0..7).map(|_| 0.2 + noise.next()).collect();
        let total: f64 = spread.iter().sum();
        for (k, w) in spread.iter().enumerate() {
            let i = (centre + k).saturating_sub(3).min(n - 1);
            let share = (observations * w / total).floor().min(left);
            own[i] += share;
            left -= share;
        }
        own[centre] += left;
    } else {
        for _ in 0..observations as usize {
            let offset = (noise.next() * 6.0) as usize;
            let i = (centre + offset).saturating_sub(2).min(n - 1);
            own[i] += 1.0;
        }
    }
    let mut cumulative = 0.0;
    for (bucket, add) in h.buckets.iter_mut().zip(own) {
        cumulative += add;
        bucket.count += cumulative;
    }
    h.count = h.count.map(|c| c + observations);
    h.sum = h
        .sum
        .map(|s| s + observations * 0.02 * (1.0 + noise.next()));
}

/// `seconds` seconds of scrapes of `engines` engines, one report per engine per second.
fn seconds_of_scrapes(engines: usize, seconds: usize) -> Vec<Vec<ScrapeReport>> {
    let text = std::fs::read_to_string(FIXTURE).unwrap_or_else(|e| panic!("{FIXTURE}: {e}"));
    let templates = extract_engines(&parse(&text));
    let mut noise = Noise(0x9e37_79b9_7f4a_7c15);
    let mut current: Vec<EngineSample> = (0..engines)
        .map(|i| {
            let mut sample = templates[i % templates.len()].clone();
            // What newer vLLMs export beside it: TPOT next to ITL, HTTP requests by status.
            if sample.tpot.is_none() {
                sample.tpot = sample.itl.clone();
            }
            sample.http_requests_total = vec![("2xx".to_owned(), 1000.0), ("4xx".to_owned(), 3.0)];
            sample
        })
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

/// One block per second of scrapes (the console hands the writer a cycle's records at a
/// time): the raw record bytes of each second and the file's bytes (header left out).
fn encode_all(
    encoder: &mut Encoder,
    blocks: &mut BlockWriter,
    seconds: &[Vec<ScrapeReport>],
    raw: &mut Vec<u8>,
    out: &mut Vec<u8>,
) -> usize {
    let mut raw_bytes = 0;
    for reports in seconds {
        raw.clear();
        for report in reports {
            encoder.encode_scrape(report, raw);
        }
        encoder.encode(&Record::Cycle { at: reports[0].at }, raw);
        raw_bytes += raw.len();
        blocks.write_block(raw, out);
    }
    raw_bytes
}

fn bench(c: &mut Criterion) {
    for engines in [8usize, 1000] {
        let warm = seconds_of_scrapes(engines, 31);
        let (first, rest) = warm.split_at(30);
        // Size: 29 s after the first (full) samples, per engine-second and per hour.
        let mut encoder = Encoder::new();
        let mut blocks = BlockWriter::new();
        let mut raw = Vec::new();
        let mut bytes = Vec::new();
        let first_raw = encode_all(&mut encoder, &mut blocks, &first[..1], &mut raw, &mut bytes);
        let after_first = bytes.len();
        let rest_raw = encode_all(&mut encoder, &mut blocks, &first[1..], &mut raw, &mut bytes);
        let engine_seconds = 29.0 * engines as f64;
        let per_engine_second = (bytes.len() - after_first) as f64 / engine_seconds;
        let raw_per_engine_second = rest_raw as f64 / engine_seconds;
        eprintln!(
            "recorded: {engines} engines, {per_engine_second:.1} B per engine-second after the \
             first sample ({} B, {} B before compression), {:.1} MB per hour at 1 s; before \
             compression {raw_per_engine_second:.1} B, {:.1} MB per hour",
            after_first / engines,
            first_raw / engines,
            per_engine_second * engines as f64 * 3600.0 / 1e6,
            raw_per_engine_second * engines as f64 * 3600.0 / 1e6,
        );
        let second = rest[0].clone();
        let mut group = c.benchmark_group(format!("recording_{engines}"));
        group.bench_function("encode one second", |b| {
            let mut out = Vec::with_capacity(1 << 20);
            // Encoding against the same previous second each time: the encoder's memory holds
            // second 30, `second` is 31; the copy is made outside the timing.
            b.iter_batched_ref(
                || encoder.clone(),
                |encoder| {
                    out.clear();
                    for report in &second {
                        encoder.encode_scrape(report, &mut out);
                    }
                    black_box(out.len())
                },
                BatchSize::SmallInput,
            );
        });
        group.bench_function("compress one second", |b| {
            let mut encoder = encoder.clone();
            raw.clear();
            for report in &second {
                encoder.encode_scrape(report, &mut raw);
            }
            let mut out = Vec::with_capacity(1 << 20);
            // A block after the 30 s before it, as in the file (the copy outside the timing).
            b.iter_batched_ref(
                || {
                    let mut blocks = BlockWriter::new();
                    let mut primed = Vec::new();
                    let mut encoder = Encoder::new();
                    let mut scratch = Vec::new();
                    encode_all(&mut encoder, &mut blocks, first, &mut scratch, &mut primed);
                    blocks
                },
                |blocks| {
                    out.clear();
                    blocks.write_block(&raw, &mut out);
                    black_box(out.len())
                },
                BatchSize::LargeInput,
            );
        });
        group.bench_function("decode 30 seconds", |b| {
            b.iter(|| {
                let mut decoder = Decoder::new();
                let mut reader = BlockReader::new();
                let mut raw = Vec::new();
                let mut rest = bytes.as_slice();
                let mut records = 0usize;
                while let Frame::Record(payload, len) = next_frame(rest) {
                    if reader.read_block(payload, &mut raw).is_ok() {
                        for record in block::records(&raw).flatten() {
                            if decoder.decode(record).is_ok() {
                                records += 1;
                            }
                        }
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
