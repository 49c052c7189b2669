//! Scrape reports in a recording: each engine's (and GPU's) numbers coded against its previous
//! sample (see `values`), its identity written once and then referred to by number.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use super::DecodeError;
use super::values;
use super::wire::{Dec, Enc};
use crate::engine::EngineFlavor;
use crate::engine::{CacheConfig, CacheFields, EngineId, EngineSample, GpuSample, Histogram};
use crate::fleet::{InstanceKey, ScrapeError, ScrapePayload, ScrapeReport, TargetId};
use crate::metrics::Bucket;
use crate::metrics::number::as_int;

/// The plain numbers of a sample, in the order they are written.
const SCALARS: usize = 15;

fn scalars(s: &EngineSample) -> [Option<f64>; SCALARS] {
    [
        s.kv_usage,
        s.running,
        s.waiting,
        s.swapped,
        s.prefix_hit_rate_gauge,
        s.spec_acceptance_gauge,
        s.preemptions_total,
        s.prompt_tokens_total,
        s.generation_tokens_total,
        s.prefix_queries_total,
        s.prefix_hits_total,
        s.spec_drafts_total,
        s.spec_draft_tokens_total,
        s.spec_accepted_tokens_total,
        s.process_cpu_seconds_total,
    ]
}

fn set_scalars(s: &mut EngineSample, v: &[Option<f64>]) {
    let get = |i: usize| v.get(i).copied().flatten();
    s.kv_usage = get(0);
    s.running = get(1);
    s.waiting = get(2);
    s.swapped = get(3);
    s.prefix_hit_rate_gauge = get(4);
    s.spec_acceptance_gauge = get(5);
    s.preemptions_total = get(6);
    s.prompt_tokens_total = get(7);
    s.generation_tokens_total = get(8);
    s.prefix_queries_total = get(9);
    s.prefix_hits_total = get(10);
    s.spec_drafts_total = get(11);
    s.spec_draft_tokens_total = get(12);
    s.spec_accepted_tokens_total = get(13);
    s.process_cpu_seconds_total = get(14);
}

/// The histograms of a sample, in the order they are written.
const HISTOGRAMS: usize = 7;

fn histograms(s: &EngineSample) -> [Option<&Histogram>; HISTOGRAMS] {
    [
        s.ttft.as_ref(),
        s.itl.as_ref(),
        s.e2e.as_ref(),
        s.queue_time.as_ref(),
        s.tpot.as_ref(),
        s.prefill_time.as_ref(),
        s.decode_time.as_ref(),
    ]
}

fn histograms_mut(s: &mut EngineSample) -> [&mut Option<Histogram>; HISTOGRAMS] {
    [
        &mut s.ttft,
        &mut s.itl,
        &mut s.e2e,
        &mut s.queue_time,
        &mut s.tpot,
        &mut s.prefill_time,
        &mut s.decode_time,
    ]
}

fn flavor_code(f: EngineFlavor) -> u8 {
    match f {
        EngineFlavor::VllmV0 => 0,
        EngineFlavor::VllmV1 => 1,
        EngineFlavor::SGLang => 2,
        EngineFlavor::Unknown => 3,
    }
}

fn flavor_of(code: u8) -> EngineFlavor {
    match code {
        0 => EngineFlavor::VllmV0,
        1 => EngineFlavor::VllmV1,
        2 => EngineFlavor::SGLang,
        _ => EngineFlavor::Unknown,
    }
}

/// A histogram's numbers as written: with `per_bucket`, each bucket's own observations (its
/// cumulative count less the one below's) — observations land in a few buckets, so most of
/// these stay the same from one scrape to the next and take two bits — else the cumulative
/// counts; then sum and count.
fn histogram_numbers(h: &Histogram, per_bucket: bool) -> Vec<Option<f64>> {
    let mut below = 0.0;
    h.buckets
        .iter()
        .map(|b| {
            let own = if per_bucket { b.count - below } else { b.count };
            below = b.count;
            Some(own)
        })
        .chain([h.sum, h.count])
        .collect()
}

/// Whether a histogram's counts can be written per bucket and read back exactly: every count
/// an integer a float holds exactly.
fn per_bucket_exact(h: &Histogram) -> bool {
    h.buckets.iter().all(|b| as_int(b.count).is_some())
}

/// GPU numbers, in the order they are written.
fn gpu_values(g: &GpuSample) -> [Option<f64>; 9] {
    [
        g.util_pct,
        g.fb_used_mib,
        g.fb_free_mib,
        g.fb_reserved_mib,
        g.temp_c,
        g.power_w,
        g.sm_clock_mhz,
        g.xid,
        None,
    ]
}

fn set_gpu_values(g: &mut GpuSample, v: &[Option<f64>]) {
    let get = |i: usize| v.get(i).copied().flatten();
    g.util_pct = get(0);
    g.fb_used_mib = get(1);
    g.fb_free_mib = get(2);
    g.fb_reserved_mib = get(3);
    g.temp_c = get(4);
    g.power_w = get(5);
    g.sm_clock_mhz = get(6);
    g.xid = get(7);
}

/// What identifies a GPU in a recording.
fn gpu_labels(g: &GpuSample) -> [Option<&str>; 6] {
    [
        Some(g.gpu.as_str()),
        Some(g.uuid.as_str()),
        Some(g.model_name.as_str()),
        Some(g.hostname.as_str()),
        g.pod.as_deref(),
        g.namespace.as_deref(),
    ]
}

/// Per-engine and per-GPU memory of what was last written (or read), shared in shape by the
/// encoder and the decoder so both sides stay in step.
#[derive(Debug, Default, Clone)]
pub(crate) struct Memory {
    engines: HashMap<(TargetId, EngineId), u32>,
    engine_ids: Vec<(TargetId, EngineId)>,
    samples: HashMap<u32, EngineSample>,
    gpus: HashMap<(TargetId, [Option<String>; 6]), u32>,
    gpu_labels: Vec<GpuSample>,
    /// The numbers last written (or read) per GPU.
    gpu_samples: HashMap<u32, [Option<f64>; 9]>,
    /// The decoder's storage for the next engine sample (see `decode_engine`).
    spare: EngineSample,
    /// A Prometheus source's engines by number, what was last written (or read) of each, the
    /// signals of each model it summed and the targets it listed (see `source`).
    pub(super) source_engines: HashMap<(InstanceKey, EngineId), u32>,
    pub(super) source_engine_state: Vec<super::source::EngineMemory>,
    pub(super) model_signals: HashMap<String, Vec<Option<f64>>>,
    pub(super) source_targets: Option<Vec<crate::fleet::SourceTarget>>,
}

const OK: u8 = 0;
const FAILED: u8 = 1;

pub(crate) fn encode(enc: &mut Enc<'_>, report: &ScrapeReport, memory: &mut Memory) {
    enc.f64(report.at);
    enc.f64(report.took);
    enc.varint(u64::from(report.target.0));
    match &report.outcome {
        Ok(payload) => {
            enc.u8(OK);
            enc.varint(payload.samples as u64);
            enc.varint(payload.malformed as u64);
            enc.varint(payload.bytes as u64);
            enc.varint(payload.engines.len() as u64);
            for sample in &payload.engines {
                encode_engine(enc, report.target, sample, memory);
            }
            enc.varint(payload.gpus.len() as u64);
            for gpu in &payload.gpus {
                encode_gpu(enc, report.target, gpu, memory);
            }
        }
        Err(error) => {
            enc.u8(FAILED);
            encode_error(enc, error);
        }
    }
}

pub(super) fn encode_engine(
    enc: &mut Enc<'_>,
    target: TargetId,
    sample: &EngineSample,
    memory: &mut Memory,
) {
    let key = (target, sample.id.clone());
    let index = match memory.engines.get(&key) {
        Some(index) => {
            enc.varint(u64::from(*index) + 1);
            *index
        }
        None => {
            let index = u32::try_from(memory.engine_ids.len()).unwrap_or(u32::MAX);
            enc.varint(0);
            enc.str(&sample.id.model);
            enc.str(&sample.id.engine);
            memory.engines.insert(key.clone(), index);
            memory.engine_ids.push(key);
            index
        }
    };
    let before = memory.samples.get(&index);
    enc.u8(flavor_code(sample.flavor));
    let previous = before.map(scalars).unwrap_or_default();
    values::encode(enc, &scalars(sample), &previous);
    let before_hists = before.map(histograms).unwrap_or_default();
    for (h, b) in histograms(sample).into_iter().zip(before_hists) {
        encode_histogram(enc, h, b);
    }
    encode_labelled(
        enc,
        &sample.request_success_total,
        before.map(|b| b.request_success_total.as_slice()),
    );
    encode_labelled(
        enc,
        &sample.http_requests_total,
        before.map(|b| b.http_requests_total.as_slice()),
    );
    // The cache configuration rarely changes: written only when it did.
    if before.is_some_and(|b| b.cache_config == sample.cache_config) {
        enc.u8(0);
    } else {
        match &sample.cache_config {
            None => enc.u8(1),
            Some(config) => {
                enc.u8(2);
                encode_config(enc, config);
            }
        }
    }
    memory.samples.insert(index, sample.clone());
}

/// Counters by a label (finished requests by reason, HTTP requests by status): the numbers
/// against the same labels before, else the labels and numbers in full.
fn encode_labelled(enc: &mut Enc<'_>, now: &[(String, f64)], before: Option<&[(String, f64)]>) {
    let same_labels =
        before.is_some_and(|b| b.len() == now.len() && b.iter().zip(now).all(|(a, b)| a.0 == b.0));
    let numbers: Vec<Option<f64>> = now.iter().map(|(_, v)| Some(*v)).collect();
    match before.filter(|_| same_labels) {
        Some(before) => {
            enc.u8(0);
            let previous: Vec<Option<f64>> = before.iter().map(|(_, v)| Some(*v)).collect();
            values::encode(enc, &numbers, &previous);
        }
        None => {
            enc.u8(1);
            enc.varint(now.len() as u64);
            for (label, _) in now {
                enc.str(label);
            }
            values::encode(enc, &numbers, &[]);
        }
    }
}

fn encode_histogram(enc: &mut Enc<'_>, h: Option<&Histogram>, before: Option<&Histogram>) {
    let Some(h) = h else {
        enc.u8(0);
        return;
    };
    let same_layout = before.is_some_and(|b| {
        b.buckets.len() == h.buckets.len()
            && b.buckets
                .iter()
                .zip(&h.buckets)
                .all(|(x, y)| x.le.to_bits() == y.le.to_bits())
    });
    let per_bucket = per_bucket_exact(h);
    let numbers = histogram_numbers(h, per_bucket);
    match before.filter(|_| same_layout) {
        Some(before) => {
            enc.u8(1);
            enc.u8(u8::from(per_bucket));
            values::encode(enc, &numbers, &histogram_numbers(before, per_bucket));
        }
        None => {
            enc.u8(2);
            enc.u8(u8::from(per_bucket));
            enc.varint(h.buckets.len() as u64);
            for bucket in &h.buckets {
                enc.f64(bucket.le);
            }
            values::encode(enc, &numbers, &[]);
        }
    }
}

fn encode_config(enc: &mut Enc<'_>, c: &CacheConfig) {
    let int = |v: Option<u64>| v.map(|v| v as f64);
    values::encode(
        enc,
        &[
            int(c.block_size),
            int(c.num_gpu_blocks),
            int(c.num_cpu_blocks),
            c.gpu_memory_utilization,
            c.enable_prefix_caching.map(|b| if b { 1.0 } else { 0.0 }),
        ],
        &[],
    );
    enc.opt_str(c.cache_dtype.as_deref());
    enc.varint(c.fields.len() as u64);
    for (name, value) in c.fields.iter() {
        enc.str(name);
        enc.str(value);
    }
}

pub(super) fn encode_gpu(
    enc: &mut Enc<'_>,
    target: TargetId,
    gpu: &GpuSample,
    memory: &mut Memory,
) {
    let labels = gpu_labels(gpu).map(|l| l.map(str::to_owned));
    let key = (target, labels);
    let index = match memory.gpus.get(&key) {
        Some(index) => {
            enc.varint(u64::from(*index) + 1);
            *index
        }
        None => {
            enc.varint(0);
            for label in gpu_labels(gpu) {
                enc.opt_str(label);
            }
            let index = u32::try_from(memory.gpu_labels.len()).unwrap_or(u32::MAX);
            memory.gpus.insert(key, index);
            memory.gpu_labels.push(gpu.clone());
            index
        }
    };
    let previous = memory.gpu_samples.get(&index).copied().unwrap_or_default();
    let numbers = gpu_values(gpu);
    values::encode(enc, &numbers, &previous);
    memory.gpu_samples.insert(index, numbers);
}

pub(super) fn encode_error(enc: &mut Enc<'_>, error: &ScrapeError) {
    match error {
        ScrapeError::Timeout { after_ms } => {
            enc.u8(0);
            enc.varint(*after_ms);
        }
        ScrapeError::Refused => enc.u8(1),
        ScrapeError::Connect(text) => {
            enc.u8(2);
            enc.str(text);
        }
        ScrapeError::Http { status, reason } => {
            enc.u8(3);
            enc.varint(u64::from(*status));
            enc.opt_str(reason.as_deref());
        }
        ScrapeError::TooLarge { limit } => {
            enc.u8(4);
            enc.varint(*limit as u64);
        }
        ScrapeError::Body(text) => {
            enc.u8(5);
            enc.str(text);
        }
        ScrapeError::Empty => enc.u8(6),
        ScrapeError::NotMetrics(text) => {
            enc.u8(7);
            enc.str(text);
        }
        ScrapeError::TooManySeries { what, limit } => {
            enc.u8(8);
            enc.str(what);
            enc.varint(*limit as u64);
        }
        ScrapeError::TooManyRedirects => enc.u8(9),
        ScrapeError::Other(text) => {
            enc.u8(10);
            enc.str(text);
        }
    }
}

pub(crate) fn decode(dec: &mut Dec<'_>, memory: &mut Memory) -> Result<ScrapeReport, DecodeError> {
    let at = dec.f64()?;
    let took = dec.f64()?;
    let target =
        TargetId(u32::try_from(dec.varint()?).map_err(|_| DecodeError::Malformed("a target id"))?);
    let outcome = match dec.u8()? {
        OK => {
            let samples = usize::try_from(dec.varint()?).unwrap_or(usize::MAX);
            let malformed = usize::try_from(dec.varint()?).unwrap_or(usize::MAX);
            let bytes = usize::try_from(dec.varint()?).unwrap_or(usize::MAX);
            let count = dec.count()?;
            let mut engines = Vec::with_capacity(count);
            for _ in 0..count {
                engines.push(decode_engine(dec, target, memory)?);
            }
            let count = dec.count()?;
            let mut gpus = Vec::with_capacity(count);
            for _ in 0..count {
                gpus.push(decode_gpu(dec, target, memory)?);
            }
            Ok(ScrapePayload {
                engines,
                gpus,
                samples,
                malformed,
                // The first malformed line's text is not recorded, only how many there were.
                first_error: None,
                bytes,
            })
        }
        FAILED => Err(decode_error(dec)?),
        _ => return Err(DecodeError::Malformed("a scrape outcome")),
    };
    Ok(ScrapeReport {
        target,
        at,
        took,
        outcome,
    })
}

pub(super) fn decode_engine(
    dec: &mut Dec<'_>,
    target: TargetId,
    memory: &mut Memory,
) -> Result<EngineSample, DecodeError> {
    let index = match dec.varint()? {
        0 => {
            let id = EngineId {
                model: dec.str()?,
                engine: dec.str()?,
            };
            let index = u32::try_from(memory.engine_ids.len()).unwrap_or(u32::MAX);
            memory.engines.insert((target, id.clone()), index);
            memory.engine_ids.push((target, id));
            index
        }
        n => u32::try_from(n - 1).map_err(|_| DecodeError::Malformed("an engine number"))?,
    };
    // Decoded into the spare sample's storage, which then becomes the engine's previous
    // sample; the one it replaces is the next spare. So a record costs one copy of the
    // sample (the one handed out), and a damaged one leaves the memory as it was.
    let mut next = std::mem::take(&mut memory.spare);
    let decoded = decode_engine_into(
        dec,
        &mut next,
        memory.engine_ids.get(index as usize).map(|(_, id)| id),
        memory.samples.get(&index),
    );
    let same_config = match decoded {
        Ok(same_config) => same_config,
        Err(err) => {
            memory.spare = next;
            return Err(err);
        }
    };
    match memory.samples.entry(index) {
        Entry::Occupied(mut entry) => {
            let mut old = entry.insert(next);
            if same_config {
                // Moved, not copied: the configuration rarely changes and is the largest part.
                entry.get_mut().cache_config = old.cache_config.take();
            }
            memory.spare = old;
            Ok(entry.get().clone())
        }
        Entry::Vacant(entry) => Ok(entry.insert(next).clone()),
    }
}

/// Decode an engine's sample into `sample` (every field written, its storage reused), coded
/// against `before`. True when the cache configuration is `before`'s, which the caller then
/// moves over (it is left unset here).
fn decode_engine_into(
    dec: &mut Dec<'_>,
    sample: &mut EngineSample,
    id: Option<&EngineId>,
    before: Option<&EngineSample>,
) -> Result<bool, DecodeError> {
    let id = id.ok_or(DecodeError::Malformed("an engine never defined"))?;
    sample.id.model.clone_from(&id.model);
    sample.id.engine.clone_from(&id.engine);
    sample.flavor = flavor_of(dec.u8()?);
    let previous = before.map(scalars).unwrap_or_default();
    let mut values = [None; SCALARS];
    values::decode_each(
        dec,
        SCALARS,
        |i| previous.get(i).copied().flatten(),
        |i, v| {
            if let Some(slot) = values.get_mut(i) {
                *slot = v;
            }
        },
    )?;
    set_scalars(sample, &values);
    let before_hists: [Option<&Histogram>; HISTOGRAMS] =
        before.map_or([None; HISTOGRAMS], histograms);
    for (slot, b) in histograms_mut(sample).into_iter().zip(before_hists) {
        decode_histogram_into(dec, slot, b)?;
    }
    decode_labelled_into(
        dec,
        &mut sample.request_success_total,
        before.map(|b| b.request_success_total.as_slice()),
    )?;
    decode_labelled_into(
        dec,
        &mut sample.http_requests_total,
        before.map(|b| b.http_requests_total.as_slice()),
    )?;
    let (config, same) = match dec.u8()? {
        0 => (None, before.is_some()),
        1 => (None, false),
        2 => (Some(decode_config(dec)?), false),
        _ => return Err(DecodeError::Malformed("a cache configuration's tag")),
    };
    sample.cache_config = config;
    Ok(same)
}

/// Labelled counters (see `encode_labelled`) into `out`, its strings' storage reused.
fn decode_labelled_into(
    dec: &mut Dec<'_>,
    out: &mut Vec<(String, f64)>,
    before: Option<&[(String, f64)]>,
) -> Result<(), DecodeError> {
    let previous = match dec.u8()? {
        0 => {
            let before = before.unwrap_or_default();
            out.truncate(before.len());
            for (slot, (label, _)) in out.iter_mut().zip(before) {
                slot.0.clone_from(label);
            }
            for (label, _) in before.get(out.len()..).unwrap_or_default() {
                out.push((label.clone(), f64::NAN));
            }
            before
        }
        1 => {
            let count = dec.count()?;
            out.clear();
            out.reserve(count);
            for _ in 0..count {
                out.push((dec.str()?, f64::NAN));
            }
            &[]
        }
        _ => return Err(DecodeError::Malformed("labelled counters' tag")),
    };
    values::decode_each(
        dec,
        out.len(),
        |i| previous.get(i).map(|(_, v)| *v),
        |i, v| {
            if let Some(slot) = out.get_mut(i) {
                slot.1 = v.unwrap_or(f64::NAN);
            }
        },
    )
}

/// A histogram (see `encode_histogram`) into `slot`, its buckets' storage reused.
fn decode_histogram_into(
    dec: &mut Dec<'_>,
    slot: &mut Option<Histogram>,
    before: Option<&Histogram>,
) -> Result<(), DecodeError> {
    let tag = dec.u8()?;
    if tag == 0 {
        *slot = None;
        return Ok(());
    }
    let per_bucket = match dec.u8()? {
        0 => false,
        1 => true,
        _ => return Err(DecodeError::Malformed("a histogram's count form")),
    };
    let mut histogram = slot.take().unwrap_or_default();
    let buckets = &mut histogram.buckets;
    buckets.clear();
    // The bucket bounds: the previous histogram's (a change), else the record's own; the
    // counts are read next.
    let previous = match tag {
        1 => {
            let before = before.ok_or(DecodeError::Malformed("a histogram change without one"))?;
            buckets.extend(before.buckets.iter().map(|b| Bucket {
                le: b.le,
                count: f64::NAN,
            }));
            Some(before)
        }
        2 => {
            let count = dec.count()?;
            buckets.reserve(count);
            for _ in 0..count {
                buckets.push(Bucket {
                    le: dec.f64()?,
                    count: f64::NAN,
                });
            }
            None
        }
        _ => return Err(DecodeError::Malformed("a histogram's tag")),
    };
    let bounds = buckets.len();
    // The previous histogram's numbers as `histogram_numbers` writes them.
    let before_number = |i: usize| -> Option<f64> {
        let before = previous?;
        if i < bounds {
            let count = before.buckets.get(i)?.count;
            if per_bucket {
                let below = match i.checked_sub(1) {
                    Some(k) => before.buckets.get(k)?.count,
                    None => 0.0,
                };
                Some(count - below)
            } else {
                Some(count)
            }
        } else if i == bounds {
            before.sum
        } else {
            before.count
        }
    };
    let (mut sum, mut count, mut below) = (None, None, 0.0);
    values::decode_each(dec, bounds + 2, before_number, |i, v| {
        if let Some(bucket) = buckets.get_mut(i) {
            let own = v.unwrap_or(f64::NAN);
            bucket.count = if per_bucket { below + own } else { own };
            below = bucket.count;
        } else if i == bounds {
            sum = v;
        } else {
            count = v;
        }
    })?;
    histogram.sum = sum;
    histogram.count = count;
    *slot = Some(histogram);
    Ok(())
}

fn decode_config(dec: &mut Dec<'_>) -> Result<CacheConfig, DecodeError> {
    let numbers = values::decode(dec, 5, &[])?;
    let get = |i: usize| numbers.get(i).copied().flatten();
    let int = |v: Option<f64>| v.filter(|v| *v >= 0.0).map(|v| v as u64);
    let cache_dtype = dec.opt_str()?;
    let count = dec.count()?;
    let mut fields = CacheFields::default();
    for _ in 0..count {
        fields.push(&dec.str()?, &dec.str()?);
    }
    Ok(CacheConfig {
        block_size: int(get(0)),
        num_gpu_blocks: int(get(1)),
        num_cpu_blocks: int(get(2)),
        gpu_memory_utilization: get(3),
        enable_prefix_caching: get(4).map(|v| v != 0.0),
        cache_dtype,
        fields,
    })
}

pub(super) fn decode_gpu(
    dec: &mut Dec<'_>,
    target: TargetId,
    memory: &mut Memory,
) -> Result<GpuSample, DecodeError> {
    let index = match dec.varint()? {
        0 => {
            let mut labels: [Option<String>; 6] = Default::default();
            for label in &mut labels {
                *label = dec.opt_str()?;
            }
            let [gpu, uuid, model_name, hostname, pod, namespace] = labels.clone();
            let sample = GpuSample {
                gpu: gpu.unwrap_or_default(),
                uuid: uuid.unwrap_or_default(),
                model_name: model_name.unwrap_or_default(),
                hostname: hostname.unwrap_or_default(),
                pod,
                namespace,
                ..GpuSample::default()
            };
            let index = u32::try_from(memory.gpu_labels.len()).unwrap_or(u32::MAX);
            memory.gpus.insert((target, labels), index);
            memory.gpu_labels.push(sample);
            index
        }
        n => u32::try_from(n - 1).map_err(|_| DecodeError::Malformed("a GPU number"))?,
    };
    let mut gpu = memory
        .gpu_labels
        .get(index as usize)
        .cloned()
        .ok_or(DecodeError::Malformed("a GPU never defined"))?;
    let previous = memory.gpu_samples.get(&index).copied().unwrap_or_default();
    let mut numbers = [None; 9];
    values::decode_each(
        dec,
        numbers.len(),
        |i| previous.get(i).copied().flatten(),
        |i, v| {
            if let Some(slot) = numbers.get_mut(i) {
                *slot = v;
            }
        },
    )?;
    set_gpu_values(&mut gpu, &numbers);
    // What the sample keeps, as the encoder remembers it.
    memory.gpu_samples.insert(index, gpu_values(&gpu));
    Ok(gpu)
}

pub(super) fn decode_error(dec: &mut Dec<'_>) -> Result<ScrapeError, DecodeError> {
    Ok(match dec.u8()? {
        0 => ScrapeError::Timeout {
            after_ms: dec.varint()?,
        },
        1 => ScrapeError::Refused,
        2 => ScrapeError::Connect(dec.str()?),
        3 => ScrapeError::Http {
            status: u16::try_from(dec.varint()?)
                .map_err(|_| DecodeError::Malformed("an HTTP status"))?,
            reason: dec.opt_str()?,
        },
        4 => ScrapeError::TooLarge {
            limit: usize::try_from(dec.varint()?).unwrap_or(usize::MAX),
        },
        5 => ScrapeError::Body(dec.str()?),
        6 => ScrapeError::Empty,
        7 => ScrapeError::NotMetrics(dec.str()?),
        8 => {
            let what = match dec.str()?.as_str() {
                "engines" => "engines",
                _ => "series",
            };
            ScrapeError::TooManySeries {
                what,
                limit: usize::try_from(dec.varint()?).unwrap_or(usize::MAX),
            }
        }
        9 => ScrapeError::TooManyRedirects,
        10 => ScrapeError::Other(dec.str()?),
        _ => return Err(DecodeError::Malformed("a scrape error's tag")),
    })
}
