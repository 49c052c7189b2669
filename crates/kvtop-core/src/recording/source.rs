//! A Prometheus source's answers in a recording (what a console on `--prometheus` ingests): a
//! cycle's derived engines, GPUs, targets, failures and model quantiles, or the history read
//! at start-up. Each engine is written by number (its identity once), its sample as a scrape's
//! is, against its previous one (see `sample`), under a target number of its own that no
//! scrape target has, and each GPU likewise; the derived signals of each engine (and of each
//! model) against the ones it had in the answer before, so what Prometheus has not scraped
//! again since costs two bits a number; a backfilled series' points each against the point
//! before.

use super::DecodeError;
use super::sample::{self, Memory};
use super::values;
use super::wire::{Dec, Enc};
use crate::fleet::{
    BackfillReport, DerivedEngine, DerivedPayload, DerivedReport, DerivedSeries, InstanceKey,
    ModelSignals, QueryFailure, Signals, SourceReport, SourceTarget, TargetHealth, TargetId, Ts,
};
use crate::signals::SIGNALS;

/// The target number a source's GPUs are remembered under (its engines' samples each have
/// their own below it, see `sample_target`).
const SOURCE_TARGET: TargetId = TargetId(u32::MAX);

const CYCLE: u8 = 0;
const BACKFILL: u8 = 1;
const OK: u8 = 0;
const FAILED: u8 = 1;

/// A set of signals as numbers: the catalog's, then the GPU ones.
fn signal_values(s: &Signals) -> Vec<Option<f64>> {
    SIGNALS
        .iter()
        .map(|def| (def.get)(s))
        .chain([s.gpu_util, s.gpu_mem, s.gpu_temp, s.gpu_power, s.xid])
        .collect()
}

fn set_signal_values(s: &mut Signals, values: &[Option<f64>]) {
    let mut values = values.iter().copied();
    for def in &SIGNALS {
        *(def.field)(s) = values.next().flatten();
    }
    for field in [
        &mut s.gpu_util,
        &mut s.gpu_mem,
        &mut s.gpu_temp,
        &mut s.gpu_power,
        &mut s.xid,
    ] {
        *field = values.next().flatten();
    }
}

/// How many numbers a set of signals is written as.
fn signal_count() -> usize {
    SIGNALS.len() + 5
}

fn encode_signals(enc: &mut Enc<'_>, s: &Signals, before: &[Option<f64>]) -> Vec<Option<f64>> {
    let values = signal_values(s);
    values::encode(enc, &values, before);
    values
}

fn decode_signals(
    dec: &mut Dec<'_>,
    before: &[Option<f64>],
) -> Result<(Signals, Vec<Option<f64>>), DecodeError> {
    let values = values::decode(dec, signal_count(), before)?;
    let mut signals = Signals::default();
    set_signal_values(&mut signals, &values);
    Ok((signals, values))
}

fn encode_instance(enc: &mut Enc<'_>, key: &InstanceKey) {
    enc.str(&key.namespace);
    enc.str(&key.pod);
    enc.str(&key.instance);
}

fn decode_instance(dec: &mut Dec<'_>) -> Result<InstanceKey, DecodeError> {
    Ok(InstanceKey {
        namespace: dec.str()?,
        pod: dec.str()?,
        instance: dec.str()?,
    })
}

/// One optional number, exactly.
fn encode_number(enc: &mut Enc<'_>, value: Option<f64>) {
    values::encode(enc, &[value], &[]);
}

fn decode_number(dec: &mut Dec<'_>) -> Result<Option<f64>, DecodeError> {
    Ok(values::decode(dec, 1, &[])?.first().copied().flatten())
}

/// Whether [`records_of`] would split `report` (a start-up history of more than `most_points`).
pub fn needs_split(report: &SourceReport, most_points: usize) -> bool {
    match report {
        SourceReport::Backfill(b) => {
            b.series.iter().map(|s| s.points.len()).sum::<usize>() > most_points
        }
        SourceReport::Cycle(_) => false,
    }
}

/// The records of a source's answer at `at`: one, or for a start-up history of more than
/// `most_points` points, several, each of whole engines (every series of an instance in one),
/// in the order the fleet folds them in, so folding in the parts one after the other is
/// folding in the whole (and no record outgrows what a reader accepts).
pub fn records_of(at: Ts, report: SourceReport, most_points: usize) -> Vec<super::Record> {
    let record = |report| super::Record::Source { at, report };
    if !needs_split(&report, most_points) {
        return vec![record(report)];
    }
    let SourceReport::Backfill(backfill) = report else {
        return vec![record(report)];
    };
    let BackfillReport {
        source,
        mut series,
        failure,
    } = backfill;
    series.sort_by(|a, b| a.instance.cmp(&b.instance).then_with(|| a.id.cmp(&b.id)));
    let mut parts: Vec<Vec<DerivedSeries>> = vec![Vec::new()];
    let mut points = 0;
    for one in series {
        let same_instance = parts
            .last()
            .and_then(|part| part.last())
            .is_some_and(|last| last.instance == one.instance);
        if points + one.points.len() > most_points && !same_instance && points > 0 {
            parts.push(Vec::new());
            points = 0;
        }
        points += one.points.len();
        if let Some(part) = parts.last_mut() {
            part.push(one);
        }
    }
    parts
        .into_iter()
        .map(|series| {
            record(SourceReport::Backfill(BackfillReport {
                source: source.clone(),
                series,
                failure: failure.clone(),
            }))
        })
        .collect()
}

pub(crate) fn encode(enc: &mut Enc<'_>, report: &SourceReport, memory: &mut Memory) {
    match report {
        SourceReport::Cycle(cycle) => {
            enc.u8(CYCLE);
            encode_cycle(enc, cycle, memory);
        }
        SourceReport::Backfill(backfill) => {
            enc.u8(BACKFILL);
            encode_backfill(enc, backfill);
        }
    }
}

pub(crate) fn decode(dec: &mut Dec<'_>, memory: &mut Memory) -> Result<SourceReport, DecodeError> {
    match dec.u8()? {
        CYCLE => Ok(SourceReport::Cycle(decode_cycle(dec, memory)?)),
        BACKFILL => Ok(SourceReport::Backfill(decode_backfill(dec)?)),
        _ => Err(DecodeError::Malformed("an unknown kind of source answer")),
    }
}

/// What was last written (or read) of one engine of a source.
#[derive(Debug, Clone, Default)]
pub(crate) struct EngineMemory {
    key: (InstanceKey, crate::engine::EngineId),
    node: Option<String>,
    /// When its sample was scraped, its counter resets, then its signals.
    numbers: Vec<Option<f64>>,
}

/// The numbers of an engine, in the order they are written.
fn engine_numbers(engine: &DerivedEngine) -> Vec<Option<f64>> {
    let mut numbers = vec![engine.sampled_at, engine.counter_resets];
    numbers.extend(signal_values(&engine.signals));
    numbers
}

/// The target number an engine's sample is remembered under: its own (samples are written
/// against the previous one of the same target and engine identity, and a source's engines
/// often share an identity, e.g. every replica of a model).
fn sample_target(index: u32) -> TargetId {
    TargetId(SOURCE_TARGET.0 - 1 - index.min(SOURCE_TARGET.0 / 2))
}

/// Give a new engine of a source the next number.
fn remember(memory: &mut Memory, key: (InstanceKey, crate::engine::EngineId)) -> u32 {
    let index = u32::try_from(memory.source_engine_state.len()).unwrap_or(u32::MAX);
    memory.source_engines.insert(key.clone(), index);
    memory.source_engine_state.push(EngineMemory {
        key,
        ..EngineMemory::default()
    });
    index
}

/// An engine: its number (its identity in full the first time), its node when it changed,
/// its numbers against the ones before, and its sample as a scrape's.
fn encode_engine(enc: &mut Enc<'_>, engine: &DerivedEngine, memory: &mut Memory) {
    let key = (engine.instance.clone(), engine.sample.id.clone());
    let index = match memory.source_engines.get(&key) {
        Some(index) => {
            enc.varint(u64::from(*index) + 1);
            *index
        }
        None => {
            enc.varint(0);
            encode_instance(enc, &engine.instance);
            enc.str(&engine.sample.id.model);
            enc.str(&engine.sample.id.engine);
            remember(memory, key)
        }
    };
    let Some(state) = memory.source_engine_state.get_mut(index as usize) else {
        return;
    };
    if state.node == engine.node {
        enc.u8(0);
    } else {
        enc.u8(1);
        enc.opt_str(engine.node.as_deref());
        state.node.clone_from(&engine.node);
    }
    let numbers = engine_numbers(engine);
    values::encode(enc, &numbers, &state.numbers);
    state.numbers = numbers;
    sample::encode_engine(enc, sample_target(index), &engine.sample, memory);
}

fn decode_engine(dec: &mut Dec<'_>, memory: &mut Memory) -> Result<DerivedEngine, DecodeError> {
    let index = match dec.varint()? {
        0 => {
            let instance = decode_instance(dec)?;
            let id = crate::engine::EngineId {
                model: dec.str()?,
                engine: dec.str()?,
            };
            remember(memory, (instance, id))
        }
        n => u32::try_from(n - 1).map_err(|_| DecodeError::Malformed("a source engine number"))?,
    };
    let state = memory
        .source_engine_state
        .get_mut(index as usize)
        .ok_or(DecodeError::Malformed("a source engine number"))?;
    if dec.u8()? != 0 {
        state.node = dec.opt_str()?;
    }
    let numbers = values::decode(dec, 2 + signal_count(), &state.numbers)?;
    let mut signals = Signals::default();
    set_signal_values(&mut signals, numbers.get(2..).unwrap_or_default());
    let sampled_at = numbers.first().copied().flatten();
    let counter_resets = numbers.get(1).copied().flatten();
    state.numbers = numbers;
    let instance = state.key.0.clone();
    let node = state.node.clone();
    let sample = sample::decode_engine(dec, sample_target(index), memory)?;
    Ok(DerivedEngine {
        instance,
        node,
        sampled_at,
        sample,
        signals,
        counter_resets,
    })
}

fn encode_cycle(enc: &mut Enc<'_>, cycle: &DerivedReport, memory: &mut Memory) {
    enc.str(&cycle.source);
    enc.f64(cycle.at);
    enc.f64(cycle.took);
    let payload = match &cycle.outcome {
        Ok(payload) => payload,
        Err(error) => {
            enc.u8(FAILED);
            sample::encode_error(enc, error);
            return;
        }
    };
    enc.u8(OK);
    enc.varint(payload.engines.len() as u64);
    for engine in &payload.engines {
        encode_engine(enc, engine, memory);
    }
    match &payload.gpus {
        None => enc.u8(0),
        Some(gpus) => {
            enc.u8(1);
            enc.varint(gpus.len() as u64);
            for gpu in gpus {
                sample::encode_gpu(enc, SOURCE_TARGET, gpu, memory);
            }
        }
    }
    enc.varint(payload.queries as u64);
    enc.varint(payload.failures.len() as u64);
    for failure in &payload.failures {
        enc.str(&failure.signal);
        sample::encode_error(enc, &failure.error);
    }
    enc.varint(payload.bytes as u64);
    match &payload.targets {
        None => enc.u8(0),
        // Listed as in the answer before: said in a byte.
        Some(targets) if memory.source_targets.as_ref() == Some(targets) => enc.u8(2),
        Some(targets) => {
            enc.u8(1);
            enc.varint(targets.len() as u64);
            for target in targets {
                encode_instance(enc, &target.instance);
                enc.opt_str(target.node.as_deref());
                enc.u8(match target.health {
                    TargetHealth::Up => 0,
                    TargetHealth::Down => 1,
                    TargetHealth::Unknown => 2,
                });
                enc.opt_str(target.last_error.as_deref());
                encode_number(enc, target.scrape_interval);
            }
            memory.source_targets = Some(targets.clone());
        }
    }
    encode_number(enc, payload.window_secs);
    enc.varint(payload.models.len() as u64);
    for model in &payload.models {
        enc.str(&model.model);
        let before = memory
            .model_signals
            .get(&model.model)
            .map_or(&[][..], Vec::as_slice);
        let values = encode_signals(enc, &model.signals, before);
        memory.model_signals.insert(model.model.clone(), values);
    }
}

fn decode_cycle(dec: &mut Dec<'_>, memory: &mut Memory) -> Result<DerivedReport, DecodeError> {
    let source = dec.str()?;
    let at = dec.f64()?;
    let took = dec.f64()?;
    if dec.u8()? != OK {
        return Ok(DerivedReport {
            source,
            at,
            took,
            outcome: Err(sample::decode_error(dec)?),
        });
    }
    let count = dec.count()?;
    let mut engines = Vec::with_capacity(count);
    for _ in 0..count {
        engines.push(decode_engine(dec, memory)?);
    }
    let gpus = match dec.u8()? {
        0 => None,
        _ => {
            let count = dec.count()?;
            let mut gpus = Vec::with_capacity(count);
            for _ in 0..count {
                gpus.push(sample::decode_gpu(dec, SOURCE_TARGET, memory)?);
            }
            Some(gpus)
        }
    };
    let queries = usize::try_from(dec.varint()?).unwrap_or(usize::MAX);
    let count = dec.count()?;
    let mut failures = Vec::with_capacity(count);
    for _ in 0..count {
        failures.push(QueryFailure {
            signal: dec.str()?,
            error: sample::decode_error(dec)?,
        });
    }
    let bytes = usize::try_from(dec.varint()?).unwrap_or(usize::MAX);
    let targets = match dec.u8()? {
        0 => None,
        2 => Some(memory.source_targets.clone().ok_or(DecodeError::Malformed(
            "targets as before, with none before",
        ))?),
        _ => {
            let count = dec.count()?;
            let mut targets = Vec::with_capacity(count);
            for _ in 0..count {
                targets.push(SourceTarget {
                    instance: decode_instance(dec)?,
                    node: dec.opt_str()?,
                    health: match dec.u8()? {
                        0 => TargetHealth::Up,
                        1 => TargetHealth::Down,
                        2 => TargetHealth::Unknown,
                        _ => return Err(DecodeError::Malformed("a target health")),
                    },
                    last_error: dec.opt_str()?,
                    scrape_interval: decode_number(dec)?,
                });
            }
            memory.source_targets = Some(targets.clone());
            Some(targets)
        }
    };
    let window_secs = decode_number(dec)?;
    let count = dec.count()?;
    let mut models = Vec::with_capacity(count);
    for _ in 0..count {
        let model = dec.str()?;
        let before = memory
            .model_signals
            .get(&model)
            .map_or(&[][..], Vec::as_slice);
        let (signals, values) = decode_signals(dec, before)?;
        memory.model_signals.insert(model.clone(), values);
        models.push(ModelSignals { model, signals });
    }
    Ok(DerivedReport {
        source,
        at,
        took,
        outcome: Ok(DerivedPayload {
            engines,
            gpus,
            queries,
            failures,
            bytes,
            targets,
            window_secs,
            models,
        }),
    })
}

fn encode_backfill(enc: &mut Enc<'_>, backfill: &BackfillReport) {
    enc.str(&backfill.source);
    enc.opt_str(backfill.failure.as_deref());
    enc.varint(backfill.series.len() as u64);
    for series in &backfill.series {
        encode_instance(enc, &series.instance);
        enc.opt_str(series.node.as_deref());
        enc.str(&series.id.model);
        enc.str(&series.id.engine);
        enc.varint(series.points.len() as u64);
        let mut before = Vec::new();
        for (at, signals) in &series.points {
            enc.f64(*at);
            before = encode_signals(enc, signals, &before);
        }
    }
}

fn decode_backfill(dec: &mut Dec<'_>) -> Result<BackfillReport, DecodeError> {
    let source = dec.str()?;
    let failure = dec.opt_str()?;
    let count = dec.count()?;
    let mut series = Vec::with_capacity(count);
    for _ in 0..count {
        let instance = decode_instance(dec)?;
        let node = dec.opt_str()?;
        let id = crate::engine::EngineId {
            model: dec.str()?,
            engine: dec.str()?,
        };
        let n = dec.count()?;
        let mut points = Vec::with_capacity(n);
        let mut before = Vec::new();
        for _ in 0..n {
            let at = dec.f64()?;
            let (signals, values) = decode_signals(dec, &before)?;
            before = values;
            points.push((at, signals));
        }
        series.push(DerivedSeries {
            instance,
            node,
            id,
            points,
        });
    }
    Ok(BackfillReport {
        source,
        series,
        failure,
    })
}
