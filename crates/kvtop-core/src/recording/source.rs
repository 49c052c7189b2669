//! A Prometheus source's answers in a recording (what a console on `--prometheus` ingests): a
//! cycle's derived engines, GPUs, targets, failures and model quantiles, or the history read
//! at start-up. Each engine's sample and each GPU is written as a scrape's are, against the
//! previous one of the same identity (see `sample`), under a target number no scrape target
//! has; the derived signals are written whole (they are rates and quantiles that move every
//! cycle), a backfilled series' points each against the point before.

use super::DecodeError;
use super::sample::{self, Memory};
use super::values;
use super::wire::{Dec, Enc};
use crate::fleet::{
    BackfillReport, DerivedEngine, DerivedPayload, DerivedReport, DerivedSeries, InstanceKey,
    ModelSignals, QueryFailure, Signals, SourceReport, SourceTarget, TargetHealth, TargetId,
};
use crate::signals::SIGNALS;

/// The target number a source's engines and GPUs are remembered under.
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
        encode_instance(enc, &engine.instance);
        enc.opt_str(engine.node.as_deref());
        encode_number(enc, engine.sampled_at);
        encode_number(enc, engine.counter_resets);
        sample::encode_engine(enc, SOURCE_TARGET, &engine.sample, memory);
        encode_signals(enc, &engine.signals, &[]);
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
        }
    }
    encode_number(enc, payload.window_secs);
    enc.varint(payload.models.len() as u64);
    for model in &payload.models {
        enc.str(&model.model);
        encode_signals(enc, &model.signals, &[]);
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
        let instance = decode_instance(dec)?;
        let node = dec.opt_str()?;
        let sampled_at = decode_number(dec)?;
        let counter_resets = decode_number(dec)?;
        let sample = sample::decode_engine(dec, SOURCE_TARGET, memory)?;
        let (signals, _) = decode_signals(dec, &[])?;
        engines.push(DerivedEngine {
            instance,
            node,
            sampled_at,
            sample,
            signals,
            counter_resets,
        });
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
            Some(targets)
        }
    };
    let window_secs = decode_number(dec)?;
    let count = dec.count()?;
    let mut models = Vec::with_capacity(count);
    for _ in 0..count {
        let model = dec.str()?;
        let (signals, _) = decode_signals(dec, &[])?;
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
