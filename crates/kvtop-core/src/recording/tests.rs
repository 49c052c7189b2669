use super::*;
use crate::engine::EngineSample;
use crate::engine::{extract_engines, extract_gpus};
use crate::fleet::{ScrapeError, ScrapePayload, Signals};
use crate::metrics::parse;

fn fixture(name: &str) -> String {
    let path = format!("{}/../../tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A good scrape of a real payload at `at`, its counters moved on by `step`.
fn scrape(at: Ts, step: f64) -> ScrapeReport {
    let text = fixture("synthetic-v1-3models-prometheus_client.txt");
    let expo = parse(&text);
    let mut engines = extract_engines(&expo);
    for engine in &mut engines {
        engine.generation_tokens_total = engine.generation_tokens_total.map(|v| v + step * 40.0);
        engine.kv_usage = engine.kv_usage.map(|v| v * (1.0 + step / 100.0));
        if let Some(h) = engine.ttft.as_mut() {
            for bucket in &mut h.buckets {
                bucket.count += step;
            }
            h.sum = h.sum.map(|s| s + step * 0.37);
        }
        // What newer vLLMs export beside it: the TPOT histogram and HTTP requests by status.
        engine.tpot = engine.itl.clone();
        engine.http_requests_total = vec![
            ("2xx".to_owned(), 1000.0 + step * 9.0),
            ("4xx".to_owned(), 3.0 + step),
        ];
    }
    let gpus = extract_gpus(&parse(&fixture("datadog-dcgm-exporter-metrics.txt")));
    ScrapeReport {
        target: TargetId(3),
        at,
        took: 0.012,
        outcome: Ok(ScrapePayload {
            engines,
            gpus,
            samples: 937,
            malformed: 2,
            first_error: None,
            bytes: 51_234,
        }),
    }
}

fn records() -> Vec<Record> {
    let mut out = vec![Record::Targets {
        at: 100.0,
        targets: vec![(
            TargetId(3),
            TargetSpec {
                name: "vllm-0".into(),
                url: "http://10.0.0.1:8000/metrics".into(),
            },
        )],
    }];
    for i in 0..5 {
        out.push(Record::Scrape(scrape(100.0 + f64::from(i), f64::from(i))));
        out.push(Record::Cycle {
            at: 100.5 + f64::from(i),
        });
    }
    out.push(Record::Scrape(ScrapeReport {
        target: TargetId(3),
        at: 106.0,
        took: 0.8,
        outcome: Err(ScrapeError::Http {
            status: 503,
            reason: Some("Service Unavailable".into()),
        }),
    }));
    out.push(Record::Logs {
        at: 106.5,
        lines: vec![(
            TargetId(3),
            vec![(106.2, "torch.OutOfMemoryError: CUDA out of memory".into())],
        )],
    });
    out.push(Record::Gap {
        at: 107.0,
        dropped: 4,
    });
    out.push(Record::Scrape(scrape(108.0, 8.0)));
    out
}

/// The format-1 frames of `records`, and where each ends.
fn encoded(records: &[Record]) -> (Vec<u8>, Vec<usize>) {
    let mut encoder = Encoder::v1();
    let mut bytes = Vec::new();
    let mut ends = Vec::new();
    for record in records {
        encoder.encode(record, &mut bytes);
        ends.push(bytes.len());
    }
    (bytes, ends)
}

fn read_all(bytes: &[u8]) -> (Vec<Record>, Option<String>) {
    let mut decoder = Decoder::new();
    let mut out = Vec::new();
    let mut rest = bytes;
    loop {
        match next_frame(rest) {
            Frame::Record(payload, len) => {
                match decoder.decode(payload) {
                    Ok(record) => out.push(record),
                    Err(e) => return (out, Some(e.to_string())),
                }
                rest = rest.get(len..).unwrap_or_default();
            }
            Frame::Incomplete if rest.is_empty() => return (out, None),
            Frame::Incomplete => return (out, Some("incomplete".into())),
            Frame::Damaged(why) => return (out, Some(why.into())),
        }
    }
}

/// A set of signals with every field set, each to its own number.
fn every_signal(base: f64) -> Signals {
    let mut signals = Signals::default();
    for (i, def) in crate::signals::SIGNALS.iter().enumerate() {
        def.set(&mut signals, base + i as f64 * 0.137);
    }
    signals.gpu_util = Some(base + 91.0);
    signals.gpu_mem = Some(base + 0.5);
    signals.gpu_temp = Some(71.0);
    signals.gpu_power = Some(f64::INFINITY);
    signals.xid = Some(-0.0);
    signals
}

/// What a Prometheus source answers: cycles with every part filled, a failed cycle, and the
/// history read at start-up.
fn source_records() -> Vec<Record> {
    use crate::fleet::{
        BackfillReport, DerivedEngine, DerivedPayload, DerivedReport, DerivedSeries, InstanceKey,
        ModelSignals, QueryFailure, SourceReport, SourceTarget, TargetHealth,
    };
    let text = fixture("synthetic-v1-3models-prometheus_client.txt");
    let samples = extract_engines(&parse(&text));
    let gpus = extract_gpus(&parse(&fixture("datadog-dcgm-exporter-metrics.txt")));
    let source = "http://prometheus:9090".to_owned();
    let cycle = |at: f64, step: f64| {
        let engines = samples
            .iter()
            .enumerate()
            .map(|(i, sample)| DerivedEngine {
                instance: InstanceKey::new("prod", &format!("vllm-{i}"), ""),
                node: (i % 2 == 0).then(|| format!("gpu-node-{i}")),
                sampled_at: Some(at - 0.7),
                sample: EngineSample {
                    kv_usage: sample.kv_usage.map(|k| k + step / 100.0),
                    ..sample.clone()
                },
                signals: Signals {
                    ttft_p95: Some(f64::NAN),
                    running: None,
                    ..every_signal(step + i as f64)
                },
                counter_resets: (i == 1).then_some(step),
            })
            .collect();
        Record::Source {
            at,
            report: SourceReport::Cycle(DerivedReport {
                source: source.clone(),
                at,
                took: 0.31,
                outcome: Ok(DerivedPayload {
                    engines,
                    gpus: (step > 0.0).then(|| gpus.clone()),
                    queries: 27,
                    failures: vec![QueryFailure {
                        signal: "ttft".into(),
                        error: ScrapeError::Timeout { after_ms: 2000 },
                    }],
                    bytes: 48_213,
                    targets: Some(vec![
                        SourceTarget {
                            instance: InstanceKey::new("prod", "vllm-0", ""),
                            node: Some("gpu-node-0".into()),
                            health: TargetHealth::Up,
                            last_error: None,
                            scrape_interval: Some(15.0),
                        },
                        SourceTarget {
                            instance: InstanceKey::new("", "", "10.0.0.9:8000"),
                            node: None,
                            health: TargetHealth::Down,
                            last_error: Some("connection refused".into()),
                            scrape_interval: None,
                        },
                        SourceTarget {
                            instance: InstanceKey::new("prod", "vllm-7", ""),
                            node: None,
                            health: TargetHealth::Unknown,
                            last_error: None,
                            scrape_interval: Some(1.0),
                        },
                    ]),
                    window_secs: Some(60.0),
                    models: vec![ModelSignals {
                        model: "Qwen/Qwen2.5-7B".into(),
                        signals: every_signal(step * 3.0),
                    }],
                }),
            }),
        }
    };
    vec![
        Record::Source {
            at: 200.0,
            report: SourceReport::Backfill(BackfillReport {
                source: source.clone(),
                series: vec![DerivedSeries {
                    instance: InstanceKey::new("prod", "vllm-0", ""),
                    node: Some("gpu-node-0".into()),
                    id: samples[0].id.clone(),
                    points: (0..5)
                        .map(|k| (140.0 + f64::from(k) * 15.0, every_signal(f64::from(k))))
                        .collect(),
                }],
                failure: Some("1 of 9 queries failed: 503".into()),
            }),
        },
        cycle(201.0, 0.0),
        cycle(202.0, 1.0),
        Record::Source {
            at: 203.0,
            report: SourceReport::Cycle(DerivedReport {
                source: source.clone(),
                at: 203.0,
                took: 10.0,
                outcome: Err(ScrapeError::Http {
                    status: 503,
                    reason: Some("Service Unavailable".into()),
                }),
            }),
        },
        cycle(204.0, 2.0),
    ]
}

#[test]
fn a_prometheus_sources_answers_come_back_as_they_were_written() {
    let records = source_records();
    // NaN is not equal to itself: compared as printed.
    let shown = |records: &[Record]| format!("{records:?}");
    let (bytes, _) = encoded(&records);
    let (back, problem) = read_all(&bytes);
    assert_eq!(problem, None);
    assert_eq!(shown(&back), shown(&records));
    assert!(shown(&records).contains("NaN"));
    // In blocks, among scrapes of the same engines (each remembered apart).
    let mut mixed = records.clone();
    mixed.splice(2..2, self::records());
    let (bytes, _) = blocks(&mixed, 3);
    let (back, problem) = read_blocks(&bytes);
    assert_eq!(problem, None);
    assert_eq!(shown(&back), shown(&mixed));
    // An answer Prometheus had nothing new for (it scrapes less often than it is asked) costs
    // a fraction of the first: its numbers are written as unchanged.
    let again = |at: f64| match &records[1] {
        Record::Source { report, .. } => Record::Source {
            at,
            report: report.clone(),
        },
        other => other.clone(),
    };
    let (bytes, ends) = encoded(&[again(1.0), again(2.0)]);
    let (first, second) = (ends[0], ends[1] - ends[0]);
    assert!(second * 4 < first, "{first} then {second} bytes");
    let (back, problem) = read_all(&bytes);
    assert_eq!(problem, None);
    assert_eq!(shown(&back), shown(&[again(1.0), again(2.0)]));
}

#[test]
fn a_large_start_up_history_is_recorded_in_parts_that_fold_in_as_the_whole() {
    use crate::fleet::{
        BackfillReport, DerivedSeries, Fleet, FleetSettings, InstanceKey, SourceReport,
    };
    let id = |engine: &str| crate::engine::EngineId {
        model: "m".into(),
        engine: engine.into(),
    };
    // Seven instances, two of them with two engines each, twelve points a series; listed out
    // of order.
    let series: Vec<DerivedSeries> = [6, 2, 0, 5, 1, 3, 4, 1, 5]
        .iter()
        .enumerate()
        .map(|(k, pod)| DerivedSeries {
            instance: InstanceKey::new("llm", &format!("vllm-{pod}"), ""),
            node: Some(format!("node-{pod}")),
            id: id(if k > 6 { "1" } else { "0" }),
            points: (0..12)
                .map(|p| {
                    (
                        1000.0 + f64::from(p) * 15.0,
                        every_signal(f64::from(p) + *pod as f64),
                    )
                })
                .collect(),
        })
        .collect();
    let whole = SourceReport::Backfill(BackfillReport {
        source: "http://prometheus:9090".into(),
        series,
        failure: Some("1 of 9 queries failed".into()),
    });
    let parts = super::source_records(1200.0, whole.clone(), 30);
    assert!(parts.len() >= 3, "{} parts", parts.len());
    // Whole instances: each is in one part only.
    let mut seen = std::collections::BTreeMap::new();
    for (k, part) in parts.iter().enumerate() {
        let Record::Source {
            report: SourceReport::Backfill(b),
            ..
        } = part
        else {
            panic!("{part:?}");
        };
        for s in &b.series {
            assert_eq!(
                *seen.entry(s.instance.clone()).or_insert(k),
                k,
                "{:?}",
                s.instance
            );
        }
    }
    assert_eq!(seen.len(), 7);
    assert_eq!(
        super::source_records(1200.0, whole.clone(), 10_000).len(),
        1
    );
    // Folded in part after part (as read back), the fleet is what the whole makes of it.
    let fleet = || Fleet::new(FleetSettings::default());
    let mut one = fleet();
    one.ingest_source(whole);
    let (bytes, _) = encoded(&parts);
    let (back, problem) = read_all(&bytes);
    assert_eq!(problem, None);
    let mut split = fleet();
    for record in back {
        if let Record::Source { report, .. } = record {
            split.ingest_source(report);
        }
    }
    let shown = |f: &Fleet| {
        format!(
            "{:?} {:?} {:?}",
            f.targets(),
            f.engines(),
            f.sources().collect::<Vec<_>>()
        )
    };
    assert_eq!(shown(&split), shown(&one));
}

#[test]
fn records_come_back_as_they_were_written() {
    let records = records();
    let (bytes, _) = encoded(&records);
    let (back, problem) = read_all(&bytes);
    assert_eq!(problem, None);
    assert_eq!(back, records);
}

#[test]
fn a_scrape_after_the_first_takes_a_fraction_of_its_size() {
    let mut encoder = Encoder::v1();
    let mut first = Vec::new();
    encoder.encode(&Record::Scrape(scrape(100.0, 0.0)), &mut first);
    let mut second = Vec::new();
    encoder.encode(&Record::Scrape(scrape(101.0, 1.0)), &mut second);
    assert!(
        second.len() * 4 < first.len(),
        "first {} bytes, second {} bytes",
        first.len(),
        second.len()
    );
}

#[test]
fn a_torn_last_record_ends_the_reading_after_the_good_ones() {
    let records = records();
    let (bytes, ends) = encoded(&records);
    for cut in [ends[4] + 3, ends[4] + 9, bytes.len() - 1] {
        let torn = bytes.get(..cut).unwrap_or_default();
        let (back, problem) = read_all(torn);
        assert_eq!(problem.as_deref(), Some("incomplete"));
        let whole = ends.iter().filter(|end| **end <= cut).count();
        assert_eq!(back.len(), whole);
        assert_eq!(back.as_slice(), records.get(..whole).unwrap_or_default());
    }
}

#[test]
fn a_damaged_record_is_found_by_its_checksum() {
    let records = records();
    let (mut bytes, ends) = encoded(&records);
    let flip = ends[2] + 20;
    if let Some(byte) = bytes.get_mut(flip) {
        *byte ^= 0x40;
    }
    let (back, problem) = read_all(&bytes);
    assert_eq!(back.len(), 3);
    assert_eq!(
        problem.as_deref(),
        Some("a record whose checksum does not match")
    );
    // A length beyond any record.
    let mut huge = u32::MAX.to_le_bytes().to_vec();
    huge.extend_from_slice(&[0; 12]);
    assert_eq!(
        next_frame(&huge),
        Frame::Damaged("a record length out of bounds")
    );
}

#[test]
fn garbage_frames_never_panic_the_decoder() {
    let mut decoder = Decoder::new();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for len in 0..400 {
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                (seed >> 24) as u8
            })
            .collect();
        let _ = decoder.decode(&bytes);
        for kind in [TARGETS, SCRAPE, LOGS, CYCLE, GAP, SOURCE] {
            let mut framed = vec![kind];
            framed.extend_from_slice(&bytes);
            let _ = decoder.decode(&framed);
        }
    }
}

#[test]
fn headers_name_what_is_wrong() {
    let header = Header {
        format: FORMAT_VERSION,
        kvtop: "0.1.0".into(),
        started: 1_700_000_000.0,
        source: "demo".into(),
        interval: 1.0,
        window: "1m".into(),
        history_full_secs: 600.0,
        history_total_secs: 3600.0,
        history_coarse_step: 10.0,
        restart_mark_secs: 120.0,
    };
    let bytes = encode_header(&header);
    assert_eq!(decode_header(&bytes), Ok((header, bytes.len())));
    assert_eq!(
        decode_header(b"# HELP vllm:num_requests_running"),
        Err(HeaderError::NotARecording)
    );
    let mut newer = bytes.clone();
    newer[8] = 9;
    assert_eq!(decode_header(&newer), Err(HeaderError::Newer(9)));
    assert_eq!(
        decode_header(bytes.get(..20).unwrap_or_default()),
        Err(HeaderError::Short)
    );
    let mut damaged = bytes.clone();
    damaged[14] = b'!';
    assert!(matches!(
        decode_header(&damaged),
        Err(HeaderError::Damaged(_))
    ));
}

/// `records` as format-2 blocks of `per_block` records each, and where each block ends.
fn blocks(records: &[Record], per_block: usize) -> (Vec<u8>, Vec<usize>) {
    let mut encoder = Encoder::new();
    let mut writer = block::BlockWriter::new();
    let mut bytes = Vec::new();
    let mut ends = Vec::new();
    for chunk in records.chunks(per_block) {
        let mut raw = Vec::new();
        for record in chunk {
            encoder.encode(record, &mut raw);
        }
        writer.write_block(&raw, &mut bytes);
        ends.push(bytes.len());
    }
    (bytes, ends)
}

/// The records of format-2 blocks, and why reading stopped early.
fn read_blocks(bytes: &[u8]) -> (Vec<Record>, Option<String>) {
    read_blocks_with(bytes, &mut block::BlockReader::new(), &mut Decoder::new())
}

/// The records of format-2 blocks read on by `reader` and `decoder`.
fn read_blocks_with(
    bytes: &[u8],
    reader: &mut block::BlockReader,
    decoder: &mut Decoder,
) -> (Vec<Record>, Option<String>) {
    let mut raw = Vec::new();
    let mut out = Vec::new();
    let mut rest = bytes;
    loop {
        match next_frame(rest) {
            Frame::Record(payload, len) => {
                if let Err(e) = reader.read_block(payload, &mut raw) {
                    return (out, Some(e.to_string()));
                }
                for record in block::records(&raw) {
                    match record.and_then(|r| decoder.decode(r)) {
                        Ok(record) => out.push(record),
                        Err(e) => return (out, Some(e.to_string())),
                    }
                }
                rest = rest.get(len..).unwrap_or_default();
            }
            Frame::Incomplete if rest.is_empty() => return (out, None),
            Frame::Incomplete => return (out, Some("incomplete".into())),
            Frame::Damaged(why) => return (out, Some(why.into())),
        }
    }
}

#[test]
fn blocks_give_back_the_records_written_in_them() {
    let records = records();
    for per_block in [1, 3, records.len()] {
        let (bytes, _) = blocks(&records, per_block);
        let (back, problem) = read_blocks(&bytes);
        assert_eq!(problem, None, "{per_block} a block");
        assert_eq!(back, records, "{per_block} a block");
    }
}

#[test]
fn a_reader_resumed_at_any_block_with_the_window_and_decoder_reads_on_the_same_records() {
    // Far more than deflate's window of record bytes, so references reach back past it.
    let seconds: Vec<Record> = (0..300)
        .map(|i| Record::Scrape(scrape(100.0 + f64::from(i), f64::from(i % 7))))
        .collect();
    let (bytes, ends) = blocks(&seconds, 3);
    let mut reader = block::BlockReader::new();
    reader.keep_window();
    let mut decoder = Decoder::new();
    let mut read = 0;
    let mut start = 0;
    let mut without_window_failed = 0;
    let mut tried = 0;
    for (k, end) in ends.iter().enumerate() {
        let (got, problem) = read_blocks_with(
            bytes.get(start..*end).unwrap_or_default(),
            &mut reader,
            &mut decoder,
        );
        assert_eq!(problem, None);
        read += got.len();
        start = *end;
        let window = reader.window().unwrap_or_default();
        assert!(window.len() <= block::WINDOW);
        // Resuming reads the rest again: every ninth block and the last ones are enough.
        if k % 9 != 0 && k + 3 < ends.len() {
            continue;
        }
        let rest = bytes.get(start..).unwrap_or_default();
        let mut resumed = block::BlockReader::resumed(window).unwrap_or_else(|e| panic!("{e}"));
        let (after, problem) = read_blocks_with(rest, &mut resumed, &mut decoder.clone());
        assert_eq!(problem, None, "resumed after block {k}");
        assert!(after == seconds[read..], "resumed after block {k}");
        // Without the bytes before, the stream cannot be read on (once there are any).
        if k + 1 < ends.len() {
            tried += 1;
            let mut blank = block::BlockReader::new();
            let (after, _) = read_blocks_with(rest, &mut blank, &mut decoder.clone());
            without_window_failed += usize::from(after != seconds[read..]);
        }
    }
    assert_eq!(read, seconds.len());
    assert_eq!(without_window_failed, tried);
    // The records outgrew the window: resuming late relied on its last bytes only.
    assert_eq!(reader.window().map(<[u8]>::len), Some(block::WINDOW));
}

#[test]
fn a_block_compresses_against_the_blocks_before_it() {
    // The same scrape shape again and again: after the first blocks, each block costs a
    // fraction of its records' bytes, as a busy engine's seconds do.
    let seconds: Vec<Record> = (0..40)
        .map(|i| Record::Scrape(scrape(100.0 + f64::from(i), f64::from(i))))
        .collect();
    let mut encoder = Encoder::new();
    let mut raw_total = 0;
    let mut writer = block::BlockWriter::new();
    let mut framed = Vec::new();
    let mut last_block = 0;
    for record in &seconds {
        let mut raw = Vec::new();
        encoder.encode(record, &mut raw);
        raw_total = raw.len();
        let before = framed.len();
        writer.write_block(&raw, &mut framed);
        last_block = framed.len() - before;
    }
    assert!(
        last_block * 2 < raw_total,
        "a block of {raw_total} record bytes took {last_block}"
    );
    let (back, problem) = read_blocks(&framed);
    assert_eq!((back, problem), (seconds, None));
}

#[test]
fn a_torn_last_block_ends_the_reading_after_the_whole_blocks() {
    let records = records();
    let (bytes, ends) = blocks(&records, 2);
    for cut in [ends[1] + 3, ends[1] + 9, bytes.len() - 1] {
        let (back, problem) = read_blocks(bytes.get(..cut).unwrap_or_default());
        assert_eq!(problem.as_deref(), Some("incomplete"));
        let whole = ends.iter().filter(|end| **end <= cut).count();
        assert_eq!(
            back.as_slice(),
            records.get(..2 * whole).unwrap_or_default()
        );
    }
}

#[test]
fn a_damaged_block_is_found_by_its_checksum() {
    let records = records();
    let (mut bytes, ends) = blocks(&records, 2);
    if let Some(byte) = bytes.get_mut(ends[1] + 12) {
        *byte ^= 0x10;
    }
    let (back, problem) = read_blocks(&bytes);
    assert_eq!(back.as_slice(), records.get(..4).unwrap_or_default());
    assert_eq!(
        problem.as_deref(),
        Some("a record whose checksum does not match")
    );
}

#[test]
fn garbage_blocks_never_panic_the_reader() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut raw = Vec::new();
    for len in 0..300 {
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                (seed >> 24) as u8
            })
            .collect();
        let mut reader = block::BlockReader::new();
        let mut payload = vec![1u8];
        payload.extend_from_slice(&bytes);
        let _ = reader.read_block(&payload, &mut raw);
        let _ = reader.read_block(&bytes, &mut raw);
        for record in block::records(&bytes) {
            let _ = record.map(|r| Decoder::new().decode(r));
        }
    }
    // A block claiming more bytes than a record may have is refused before any allocation.
    let mut huge = vec![1u8];
    Enc::new(&mut huge).varint(u64::MAX >> 1);
    assert!(
        block::BlockReader::new()
            .read_block(&huge, &mut raw)
            .is_err()
    );
}

/// A pod whose vLLM container was OOM-killed and restarted, with its events and log lines.
fn oom_killed_pod() -> crate::kube_model::PodInfo {
    let mut pod = crate::kube_model::PodInfo::for_test("prod", "vllm-0");
    pod.restarts = 3;
    pod.last_termination = Some(crate::kube_model::Termination {
        reason: "OOMKilled".into(),
        exit_code: 137,
        finished_at: Some(104.25),
        message: None,
    });
    pod.events
        .replace(vec!["Back-off restarting failed container".into()]);
    pod.logs.extend(["INFO: Started server process".to_owned()]);
    pod.refresh();
    pod
}

#[test]
fn kubernetes_updates_come_back_as_they_were_written() {
    let pod = oom_killed_pod();
    let mut records = records();
    records.insert(
        1,
        Record::Kube {
            at: 100.2,
            change: KubeChange::Pods {
                pods: vec![(TargetId(3), pod.clone())],
                gone: Vec::new(),
            },
        },
    );
    records.push(Record::Kube {
        at: 108.5,
        change: KubeChange::Logs {
            key: pod.key.clone(),
            lines: vec!["torch.OutOfMemoryError: CUDA out of memory".into()],
        },
    });
    records.push(Record::Kube {
        at: 108.6,
        change: KubeChange::Problem {
            context: "prod".into(),
            task: "events".into(),
            error: Some("forbidden: \u{1b}[31mevents".into()),
        },
    });
    let (bytes, _) = blocks(&records, 4);
    let (back, problem) = read_blocks(&bytes);
    assert_eq!(problem, None);
    assert_eq!(back, records);
    let (bytes, _) = encoded(&records);
    assert_eq!(read_all(&bytes), (records, None));
}

#[test]
fn action_notes_come_back_as_they_were_written() {
    let note = |phase| ActionNote {
        run: 1,
        action: "drain".into(),
        context: "prod".into(),
        namespace: Some("llm".into()),
        target: "vllm-0".into(),
        dry_run: false,
        phase,
    };
    let mut records = records();
    records.insert(
        2,
        Record::Action {
            at: 101.5,
            note: note(ActionPhase::Started {
                steps: vec!["PATCH /api/v1/namespaces/llm/pods/vllm-0".into()],
            }),
        },
    );
    records.push(Record::Action {
        at: 109.0,
        note: note(ActionPhase::Failed {
            step: 0,
            message: "forbidden: \u{1b}]0;x\u{7}".into(),
            done: Vec::new(),
        }),
    });
    let (bytes, _) = blocks(&records, 3);
    assert_eq!(read_blocks(&bytes), (records.clone(), None));
    let (bytes, _) = encoded(&records);
    assert_eq!(read_all(&bytes), (records, None));
}

#[test]
fn a_replay_has_the_pods_the_recording_saw() {
    let mut fleet = crate::fleet::Fleet::new(crate::fleet::FleetSettings::default());
    fleet.set_targets(&[(
        TargetId(3),
        TargetSpec {
            name: "vllm-0".into(),
            url: "http://10.0.0.1:8000/metrics".into(),
        },
    )]);
    let pod = oom_killed_pod();
    let mut pods = std::collections::BTreeMap::new();
    let changes = kube::snapshot(&{
        let mut live = fleet.clone();
        live.set_pod_info(TargetId(3), pod.clone());
        live
    });
    assert_eq!(changes.len(), 1);
    for change in changes {
        change.apply_to_pods(&mut fleet, &mut pods);
    }
    KubeChange::Logs {
        key: pod.key.clone(),
        lines: vec!["torch.OutOfMemoryError: CUDA out of memory".into()],
    }
    .apply_to_pods(&mut fleet, &mut pods);
    let replayed = fleet.pod_info(TargetId(3)).cloned();
    let replayed = replayed.unwrap_or_else(|| panic!("no pod on target 3"));
    assert_eq!(replayed.restarts, 3);
    assert_eq!(replayed.facts, pod.facts);
    assert_eq!(
        replayed.logs.lines().last().map(String::as_str),
        Some("torch.OutOfMemoryError: CUDA out of memory")
    );
    KubeChange::Pods {
        pods: Vec::new(),
        gone: vec![pod.key.clone()],
    }
    .apply_to_pods(&mut fleet, &mut pods);
    assert!(pods.is_empty());
}

#[test]
fn a_damaged_kubernetes_update_is_refused_not_misread() {
    let mut payload = Vec::new();
    let mut enc = wire::Enc::new(&mut payload);
    enc.u8(KUBE);
    enc.f64(100.0);
    enc.varint(2);
    enc.bytes(b"{}");
    assert_eq!(
        Decoder::new().decode(&payload),
        Err(DecodeError::Malformed(
            "a Kubernetes update that is not valid"
        ))
    );
}
