//! Recordings (`kvtop --record FILE`): what the console ingested, as bytes, so that a replay
//! (`kvtop replay`, `kvtop check --replay`) feeds the same fleet model and rules the same data
//! at the same instants. This module is the format only; files are read and written by the app.
//!
//! # Format
//! - A header: the magic `KVTOPREC`, the format version (u16, little-endian), the length of a
//!   JSON document (u32) and the document ([`Header`]: when, what sources, fleet settings).
//! - Then frames, each its length (u32), a CRC-32 of its bytes (u32) and the bytes. A frame
//!   whose bytes are not all there (a crash while writing) or whose checksum does not match
//!   ends what can be read, and the reader says where.
//! - Version 1: each frame is one record: a kind byte and the record ([`Record`]).
//! - Version 2 (written now): each frame is a block of records compressed together, the
//!   blocks of a file one deflate stream ([`block`]); inside, each record is its length (a
//!   varint) and the same bytes as in version 1.
//! - [`Record::Kube`] (a Kubernetes update, as JSON) and [`Record::Action`] (an action's start
//!   or end, as JSON) came after the first version-2 files without a new version: nothing
//!   else changed, so a file without them is read by every version-2 reader, and an earlier
//!   reader meeting one cannot misread it: it stops there, saying at which byte and replaying
//!   what came before (as for a damaged record). [`Record::Source`] (a Prometheus source's
//!   answer) came later the same way.
//! - Scrape reports are written against the previous report of the same engine or GPU (its
//!   identity once, then a number; numbers as changes, see `values`), so a record depends on the
//!   ones before it in the same file. A [`Record::Gap`] says records were dropped (a slow disk):
//!   both sides forget what came before, and what follows is written in full.

pub mod action;
pub mod block;
pub mod kube;
mod sample;
mod source;
mod values;
pub mod wire;

use crate::fleet::{ScrapeReport, SourceReport, TargetId, TargetSpec, Ts};
pub use action::{ActionNote, ActionPhase};
pub use kube::KubeChange;
pub use source::{needs_split as source_needs_split, records_of as source_records};
use wire::{Dec, Enc};

/// The first bytes of every recording.
pub const MAGIC: &[u8; 8] = b"KVTOPREC";
/// The format this build writes, and the newest it reads.
pub const FORMAT_VERSION: u16 = 2;
/// The first format, whose frames are single records (still read).
pub const FORMAT_V1: u16 = 1;
/// Longest header document accepted.
const MAX_HEADER: u32 = 1 << 20;
/// Longest record accepted (a scrape of a large fleet; a damaged length is caught by this).
pub const MAX_RECORD: u32 = 64 << 20;

/// What a recording says about itself.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Header {
    /// Format version (also in the binary header; kept here for humans reading the JSON).
    pub format: u16,
    /// The kvtop that wrote it.
    pub kvtop: String,
    /// When recording started, Unix seconds.
    pub started: Ts,
    /// What the console watched (its header's source line).
    pub source: String,
    /// Scrape interval, seconds.
    pub interval: f64,
    /// Quantile window label (`15s`, `1m`, `5m`).
    pub window: String,
    /// History spans of the fleet, seconds.
    pub history_full_secs: f64,
    pub history_total_secs: f64,
    pub history_coarse_step: f64,
    /// How long a restart stays marked, seconds.
    pub restart_mark_secs: f64,
}

/// One thing the console ingested (or did), with its time.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    /// Every target the fleet scrapes from `at` (written first and whenever the set changes).
    Targets {
        at: Ts,
        targets: Vec<(TargetId, TargetSpec)>,
    },
    /// A scrape's outcome.
    Scrape(ScrapeReport),
    /// Log lines the text rules read, per target: `(written at, line)`.
    Logs {
        at: Ts,
        lines: Vec<(TargetId, Vec<(Ts, String)>)>,
    },
    /// The rules ran at `at`: a replay evaluates them at the same instants.
    Cycle { at: Ts },
    /// `dropped` records were not written before this one (the disk was too slow); what
    /// follows does not depend on anything before.
    Gap { at: Ts, dropped: u64 },
    /// A Kubernetes update the console folded in at `at`.
    Kube { at: Ts, change: KubeChange },
    /// An action run from the console started or ended at `at`.
    Action { at: Ts, note: ActionNote },
    /// What a Prometheus source answered, folded in at `at`.
    Source { at: Ts, report: SourceReport },
}

impl Record {
    /// When it happened.
    pub fn at(&self) -> Ts {
        match self {
            Record::Targets { at, .. }
            | Record::Logs { at, .. }
            | Record::Cycle { at }
            | Record::Gap { at, .. }
            | Record::Kube { at, .. }
            | Record::Action { at, .. }
            | Record::Source { at, .. } => *at,
            Record::Scrape(report) => report.at,
        }
    }
}

/// Why bytes are not a record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("the record ends early")]
    Short,
    #[error("damaged: {0}")]
    Malformed(&'static str),
}

/// Why bytes are not a recording's header.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    #[error(
        "not a kvtop recording (it does not start with {MAGIC:?})",
        MAGIC = "KVTOPREC"
    )]
    NotARecording,
    #[error(
        "recorded in format {0}, newer than this kvtop reads ({FORMAT_VERSION}): use a newer kvtop"
    )]
    Newer(u16),
    #[error("the header ends early")]
    Short,
    #[error("the header is damaged: {0}")]
    Damaged(String),
}

/// The bytes of a header.
pub fn encode_header(header: &Header) -> Vec<u8> {
    let json = serde_json::to_vec(header).unwrap_or_default();
    let mut out = Vec::with_capacity(MAGIC.len() + 6 + json.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&u32::try_from(json.len()).unwrap_or(u32::MAX).to_le_bytes());
    out.extend_from_slice(&json);
    out
}

/// The header at the start of `bytes`, and how many bytes it took.
pub fn decode_header(bytes: &[u8]) -> Result<(Header, usize), HeaderError> {
    let magic = bytes.get(..MAGIC.len()).ok_or(HeaderError::Short)?;
    if magic != MAGIC {
        return Err(HeaderError::NotARecording);
    }
    let fixed = |range: std::ops::Range<usize>| bytes.get(range).ok_or(HeaderError::Short);
    let version = u16::from_le_bytes(fixed(8..10)?.try_into().map_err(|_| HeaderError::Short)?);
    if version > FORMAT_VERSION {
        return Err(HeaderError::Newer(version));
    }
    let len = u32::from_le_bytes(fixed(10..14)?.try_into().map_err(|_| HeaderError::Short)?);
    if len > MAX_HEADER {
        return Err(HeaderError::Damaged(format!("a {len}-byte header")));
    }
    let end = 14 + len as usize;
    let json = fixed(14..end)?;
    let mut header: Header =
        serde_json::from_slice(json).map_err(|e| HeaderError::Damaged(e.to_string()))?;
    // The binary version is the one the frames follow.
    header.format = version;
    Ok((header, end))
}

/// What is at the start of some bytes after the header.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A whole record's bytes, and the frame's length.
    Record(&'a [u8], usize),
    /// Not all of a frame is there (yet): the end of what was written.
    Incomplete,
    /// A frame whose length or checksum is wrong.
    Damaged(&'static str),
}

const FRAME_HEAD: usize = 8;

/// The frame at the start of `bytes`.
pub fn next_frame(bytes: &[u8]) -> Frame<'_> {
    let (Some(len), Some(crc)) = (bytes.get(..4), bytes.get(4..FRAME_HEAD)) else {
        return Frame::Incomplete;
    };
    let len = u32::from_le_bytes(len.try_into().unwrap_or_default());
    let crc = u32::from_le_bytes(crc.try_into().unwrap_or_default());
    if len == 0 || len > MAX_RECORD {
        return Frame::Damaged("a record length out of bounds");
    }
    let end = FRAME_HEAD + len as usize;
    let Some(payload) = bytes.get(FRAME_HEAD..end) else {
        return Frame::Incomplete;
    };
    if crc32fast::hash(payload) != crc {
        return Frame::Damaged("a record whose checksum does not match");
    }
    Frame::Record(payload, end)
}

const TARGETS: u8 = 1;
const SCRAPE: u8 = 2;
const LOGS: u8 = 3;
const CYCLE: u8 = 4;
const GAP: u8 = 5;
const KUBE: u8 = 6;
const ACTION: u8 = 7;
const SOURCE: u8 = 8;

/// Turns records into bytes, each scrape written against the one before of its engine: as a
/// block's records (format 2, see [`block`]) or, for tests of what older files hold, as
/// format 1's frames.
#[derive(Debug, Default, Clone)]
pub struct Encoder {
    memory: sample::Memory,
    payload: Vec<u8>,
    v1_frames: bool,
}

impl Encoder {
    /// An encoder of records for a format-2 block.
    pub fn new() -> Self {
        Encoder::default()
    }

    /// An encoder of format-1 frames (each record framed with its checksum).
    pub fn v1() -> Self {
        Encoder {
            v1_frames: true,
            ..Encoder::default()
        }
    }

    /// Forget what was written: the next records do not depend on earlier ones (after a
    /// record was dropped, or in a new file).
    pub fn reset(&mut self) {
        self.memory = sample::Memory::default();
    }

    /// Append `record`'s frame to `out`.
    pub fn encode(&mut self, record: &Record, out: &mut Vec<u8>) {
        self.payload.clear();
        let mut enc = Enc::new(&mut self.payload);
        match record {
            Record::Targets { at, targets } => {
                enc.u8(TARGETS);
                enc.f64(*at);
                enc.varint(targets.len() as u64);
                for (id, spec) in targets {
                    enc.varint(u64::from(id.0));
                    enc.str(&spec.name);
                    enc.str(&spec.url);
                }
            }
            Record::Scrape(report) => return self.encode_scrape(report, out),
            Record::Logs { at, lines } => {
                enc.u8(LOGS);
                enc.f64(*at);
                enc.varint(lines.len() as u64);
                for (target, lines) in lines {
                    enc.varint(u64::from(target.0));
                    enc.varint(lines.len() as u64);
                    for (t, line) in lines {
                        enc.f64(*t);
                        enc.str(line);
                    }
                }
            }
            Record::Cycle { at } => {
                enc.u8(CYCLE);
                enc.f64(*at);
            }
            Record::Gap { at, dropped } => {
                enc.u8(GAP);
                enc.f64(*at);
                enc.varint(*dropped);
                self.reset();
            }
            Record::Kube { at, change } => {
                enc.u8(KUBE);
                enc.f64(*at);
                json_document(&mut enc, change);
            }
            Record::Action { at, note } => {
                enc.u8(ACTION);
                enc.f64(*at);
                json_document(&mut enc, note);
            }
            Record::Source { at, report } => return self.encode_source(*at, report, out),
        }
        self.frame(out);
    }

    /// Append the frame of a source record for `report` at `at` to `out`: as
    /// [`encode`](Self::encode) of `Record::Source`, without a copy of the report.
    pub fn encode_source(&mut self, at: Ts, report: &SourceReport, out: &mut Vec<u8>) {
        self.payload.clear();
        let mut enc = Enc::new(&mut self.payload);
        enc.u8(SOURCE);
        enc.f64(at);
        source::encode(&mut enc, report, &mut self.memory);
        self.frame(out);
    }

    /// Append the frame of a scrape record for `report` to `out`: as [`encode`](Self::encode)
    /// of `Record::Scrape`, without a copy of the report.
    pub fn encode_scrape(&mut self, report: &ScrapeReport, out: &mut Vec<u8>) {
        self.payload.clear();
        let mut enc = Enc::new(&mut self.payload);
        enc.u8(SCRAPE);
        sample::encode(&mut enc, report, &mut self.memory);
        self.frame(out);
    }

    /// Put the record in `payload` onto `out`: its length and bytes in a block, or its frame.
    fn frame(&self, out: &mut Vec<u8>) {
        if self.v1_frames {
            frame(&self.payload, out);
        } else {
            Enc::new(out).varint(self.payload.len() as u64);
            out.extend_from_slice(&self.payload);
        }
    }
}

/// Frame `payload` onto `out`: length, checksum, bytes.
fn frame(payload: &[u8], out: &mut Vec<u8>) {
    let len = u32::try_from(payload.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    out.extend_from_slice(payload);
}

/// Turns frames' bytes back into records.
#[derive(Debug, Default, Clone)]
pub struct Decoder {
    memory: sample::Memory,
}

impl Decoder {
    pub fn new() -> Self {
        Decoder::default()
    }

    /// The record in a format-1 frame's bytes (see [`next_frame`]) or in a block's record.
    pub fn decode(&mut self, payload: &[u8]) -> Result<Record, DecodeError> {
        let mut dec = Dec::new(payload);
        let record = match dec.u8()? {
            TARGETS => {
                let at = dec.f64()?;
                let count = dec.count()?;
                let mut targets = Vec::with_capacity(count);
                for _ in 0..count {
                    let id = target_id(&mut dec)?;
                    let name = dec.str()?;
                    let url = dec.str()?;
                    targets.push((id, TargetSpec { name, url }));
                }
                Record::Targets { at, targets }
            }
            SCRAPE => Record::Scrape(sample::decode(&mut dec, &mut self.memory)?),
            LOGS => {
                let at = dec.f64()?;
                let count = dec.count()?;
                let mut lines = Vec::with_capacity(count);
                for _ in 0..count {
                    let target = target_id(&mut dec)?;
                    let n = dec.count()?;
                    let mut of_target = Vec::with_capacity(n);
                    for _ in 0..n {
                        of_target.push((dec.f64()?, dec.str()?));
                    }
                    lines.push((target, of_target));
                }
                Record::Logs { at, lines }
            }
            CYCLE => Record::Cycle { at: dec.f64()? },
            GAP => {
                self.memory = sample::Memory::default();
                Record::Gap {
                    at: dec.f64()?,
                    dropped: dec.varint()?,
                }
            }
            KUBE => {
                let at = dec.f64()?;
                let change = read_json_document(&mut dec, "a Kubernetes update that is not valid")?;
                Record::Kube { at, change }
            }
            ACTION => {
                let at = dec.f64()?;
                let note = read_json_document(&mut dec, "an action record that is not valid")?;
                Record::Action { at, note }
            }
            SOURCE => {
                let at = dec.f64()?;
                let report = source::decode(&mut dec, &mut self.memory)?;
                Record::Source { at, report }
            }
            _ => {
                return Err(DecodeError::Malformed(
                    "a kind of record this kvtop does not know (from a newer kvtop?)",
                ));
            }
        };
        if !dec.is_done() {
            return Err(DecodeError::Malformed("bytes after the record"));
        }
        Ok(record)
    }
}

/// A record's JSON document: its length and bytes. Serializing plain data with string keys
/// cannot fail; an empty document would be refused on reading, never misread. Not a `str`: a
/// pod's log lines may pass the 1 MiB that bounds a string; the record's bound holds.
fn json_document(enc: &mut Enc<'_>, value: &impl serde::Serialize) {
    let json = serde_json::to_vec(value).unwrap_or_default();
    enc.varint(json.len() as u64);
    enc.bytes(&json);
}

/// The document [`json_document`] wrote, or `damaged` as the reason it is not one.
fn read_json_document<T: serde::de::DeserializeOwned>(
    dec: &mut Dec<'_>,
    damaged: &'static str,
) -> Result<T, DecodeError> {
    let len = dec.count()?;
    serde_json::from_slice(dec.bytes(len)?).map_err(|_| DecodeError::Malformed(damaged))
}

fn target_id(dec: &mut Dec<'_>) -> Result<TargetId, DecodeError> {
    u32::try_from(dec.varint()?)
        .map(TargetId)
        .map_err(|_| DecodeError::Malformed("a target id"))
}

#[cfg(test)]
mod tests;
