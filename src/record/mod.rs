//! Recording what the console ingests to a file (`--record FILE`) and reading it back for a
//! replay. The format is `kvtop_core::recording`; this module does the file work.
//!
//! **Never blocking the console.** Records are encoded where they happen (the event loop; a
//! scrape report codes in microseconds) and handed to a writer thread through a bounded
//! queue, a console cycle's records at a time; the writer compresses each such chunk into a
//! block of the file (format 2, `kvtop_core::recording::block`), off the event loop. When the queue is full (a slow or stuck disk) the record is dropped, counted (the
//! header shows the count), and the next record written says how many were lost and starts
//! afresh, so what follows never depends on a record that is not in the file. Writes are
//! buffered and flushed at least every second, so a crash loses at most the records of the
//! last moments, and a block torn by it is ignored on reading. A dropped chunk never reaches
//! the compressor, so the blocks written stay one readable stream.
//!
//! **Rotation.** A file that reaches its size or age limit is closed and renamed `FILE.1`
//! (older ones move to `.2`, … up to `keep`); recording goes on in a new `FILE`, which starts
//! with a header and the targets, so each file replays alone. A file already at `FILE` when
//! recording starts is rotated away the same way: nothing is ever overwritten.

mod kube;
mod reader;

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use kvtop_core::fleet::{Fleet, ScrapeReport, TargetId, TargetSpec, Ts};
use kvtop_core::recording::block::{BlockWriter, count_records};
use kvtop_core::recording::{Encoder, Header, KubeChange, Record, encode_header};

pub use kube::change_of;
pub use reader::{ReadProblem, Recording, RecordingError, ResumePoint, open, resume};

/// The header of a recording of `fleet`, watched as `source`, starting at `now`.
pub fn header_for(fleet: &Fleet, source: &str, now: Ts) -> Header {
    let settings = fleet.settings();
    Header {
        format: kvtop_core::recording::FORMAT_VERSION,
        kvtop: env!("CARGO_PKG_VERSION").to_owned(),
        started: now,
        source: source.to_owned(),
        interval: settings.interval,
        window: settings.window.label().to_owned(),
        history_full_secs: settings.history_full_secs,
        history_total_secs: settings.history_total_secs,
        history_coarse_step: settings.history_coarse_step,
        restart_mark_secs: settings.restart_mark_secs,
    }
}

/// The fleet settings a recording was made with.
pub fn fleet_settings(header: &Header) -> kvtop_core::fleet::FleetSettings {
    let window = [
        kvtop_core::fleet::QuantileWindow::S15,
        kvtop_core::fleet::QuantileWindow::M1,
        kvtop_core::fleet::QuantileWindow::M5,
    ]
    .into_iter()
    .find(|w| w.label() == header.window)
    .unwrap_or_default();
    kvtop_core::fleet::FleetSettings {
        interval: header.interval,
        window,
        restart_mark_secs: header.restart_mark_secs,
        history_full_secs: header.history_full_secs,
        history_total_secs: header.history_total_secs,
        history_coarse_step: header.history_coarse_step,
    }
}

/// Chunks of encoded records queued for the writer.
const QUEUE: usize = 256;
/// The writer flushes its buffer at least this often while records arrive: a crash loses at
/// most this much.
const FLUSH_EVERY: Duration = Duration::from_secs(1);
/// Points of a source's start-up history a record holds at most: a few MB, far below the
/// most a reader takes in one record (`MAX_RECORD`, 64 MiB).
const BACKFILL_POINTS_PER_RECORD: usize = 20_000;

/// Records encoded into one chunk before it is queued.
const CHUNK_BYTES: usize = 64 << 10;

/// When a file is rotated, and how many rotated files are kept.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rotation {
    pub max_bytes: u64,
    pub max_age_secs: f64,
    pub keep: usize,
}

impl Default for Rotation {
    fn default() -> Self {
        Rotation {
            max_bytes: 512 << 20,
            max_age_secs: 6.0 * 3600.0,
            keep: 5,
        }
    }
}

/// What the console shows of a recording.
#[derive(Debug, Default)]
pub struct RecordStats {
    /// Records written to the queue.
    pub written: AtomicU64,
    /// Records dropped because the writer fell behind.
    pub dropped: AtomicU64,
    /// Bytes encoded (before compression).
    pub bytes: AtomicU64,
    /// Bytes in the current file (after compression), as far as the writer got.
    pub file_bytes: AtomicU64,
    /// Files the writer started after the first (rotations done).
    pub rotations: AtomicU64,
    /// The writer's last failure (a full disk), if any.
    pub failure: Mutex<Option<String>>,
}

impl RecordStats {
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    pub fn failure(&self) -> Option<String> {
        self.failure.lock().ok().and_then(|f| f.clone())
    }
}

enum Chunk {
    /// Encoded records, compressed into one block.
    Bytes(Vec<u8>),
    /// Close the file, rotate it, start a new one with this header and these first records.
    Rotate { header: Vec<u8>, records: Vec<u8> },
}

/// Encodes what the console ingests and hands it to the writer thread.
pub struct Recorder {
    path: PathBuf,
    header: Header,
    encoder: Encoder,
    chunk: Vec<u8>,
    tx: Option<SyncSender<Chunk>>,
    writer: Option<JoinHandle<()>>,
    stats: Arc<RecordStats>,
    rotation: Rotation,
    /// Records dropped since the last one that reached the queue.
    unsent: u64,
    /// Rotations asked of the writer (the size of the current file is known once it did them).
    rotations: u64,
    /// Start time of the current file.
    file_started: Ts,
    /// The targets as last recorded, and when the rules last ran.
    targets: Vec<(TargetId, TargetSpec)>,
    last_cycle: Option<Ts>,
    /// The file does not hold what is known from Kubernetes (it is new, or records were
    /// dropped): the next Kubernetes records start with all of it.
    kube_unknown: bool,
}

/// Why recording cannot start.
#[derive(Debug, thiserror::Error)]
#[error("cannot record to {path}: {source}")]
pub struct StartError {
    path: String,
    source: std::io::Error,
}

impl Recorder {
    /// Start recording to `path` (rotating away what is there), with `header` first.
    pub fn start(path: &Path, header: Header, rotation: Rotation) -> Result<Recorder, StartError> {
        let start_error = |source| StartError {
            path: reader::display(path),
            source,
        };
        if path.exists() {
            rotate(path, rotation.keep).map_err(start_error)?;
        }
        let mut file = OpenOptions::new()
            .create_new(true)
            .write(true)
            .open(path)
            .map_err(start_error)?;
        let first = encode_header(&header);
        file.write_all(&first).map_err(start_error)?;
        let stats = Arc::new(RecordStats::default());
        stats
            .file_bytes
            .store(first.len() as u64, Ordering::Relaxed);
        let (tx, rx) = sync_channel(QUEUE);
        let writer = {
            let stats = Arc::clone(&stats);
            let path = path.to_path_buf();
            std::thread::Builder::new()
                .name("kvtop-record".into())
                .spawn(move || write_loop(file, &path, rotation.keep, rx, &stats))
                .map_err(start_error)?
        };
        let started = header.started;
        Ok(Recorder {
            path: path.to_path_buf(),
            header,
            encoder: Encoder::new(),
            chunk: Vec::new(),
            tx: Some(tx),
            writer: Some(writer),
            stats,
            rotation,
            unsent: 0,
            rotations: 0,
            file_started: started,
            targets: Vec::new(),
            last_cycle: None,
            kube_unknown: true,
        })
    }

    /// What the console shows of it.
    pub fn stats(&self) -> Arc<RecordStats> {
        Arc::clone(&self.stats)
    }

    /// Where it records.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Record one thing.
    pub fn record(&mut self, record: &Record) {
        self.write(record.at(), |encoder, out| encoder.encode(record, out));
    }

    /// Record what a Prometheus source answered, folded in at `at`: a large start-up history
    /// as several records of whole engines.
    pub fn record_source(&mut self, at: Ts, report: &kvtop_core::fleet::SourceReport) {
        use kvtop_core::recording::{source_needs_split, source_records};
        if !source_needs_split(report, BACKFILL_POINTS_PER_RECORD) {
            // A cycle's answer, written without a copy.
            self.write(at, |encoder, out| encoder.encode_source(at, report, out));
            return;
        }
        for record in source_records(at, report.clone(), BACKFILL_POINTS_PER_RECORD) {
            self.record(&record);
        }
    }

    /// Record a scrape without copying it (the event loop hands it on to the fleet).
    pub fn record_scrape(&mut self, report: &ScrapeReport) {
        self.write(report.at, |encoder, out| encoder.encode_scrape(report, out));
    }

    /// Encode one record at `at` with `encode`, after a gap record if some were dropped.
    fn write(&mut self, at: Ts, encode: impl FnOnce(&mut Encoder, &mut Vec<u8>)) {
        if self.unsent > 0 {
            let gap = Record::Gap {
                at,
                dropped: self.unsent,
            };
            self.encoder.encode(&gap, &mut self.chunk);
            // The targets again: what follows the gap stands alone.
            let targets = Record::Targets {
                at,
                targets: self.targets.clone(),
            };
            self.encoder.encode(&targets, &mut self.chunk);
            self.unsent = 0;
            self.kube_unknown = true;
        }
        let before = self.chunk.len();
        encode(&mut self.encoder, &mut self.chunk);
        self.stats.written.fetch_add(1, Ordering::Relaxed);
        self.stats
            .bytes
            .fetch_add((self.chunk.len() - before) as u64, Ordering::Relaxed);
        if self.chunk.len() >= CHUNK_BYTES {
            self.flush();
        }
        let age = at - self.file_started;
        // The file's size is what the writer wrote of it (compressed), once it has started it.
        let full = self.stats.rotations.load(Ordering::Relaxed) == self.rotations
            && self.stats.file_bytes.load(Ordering::Relaxed) >= self.rotation.max_bytes;
        if full || age >= self.rotation.max_age_secs {
            self.rotate(at);
        }
    }

    /// Record the fleet's targets if they changed, and a rules cycle if the rules ran at `evaluated`.
    pub fn observe(&mut self, fleet: &Fleet, evaluated: Option<Ts>, now: Ts) {
        self.observe_targets(fleet, now);
        if let Some(at) = evaluated.filter(|at| Some(*at) != self.last_cycle) {
            self.last_cycle = Some(at);
            self.record(&Record::Cycle { at });
        }
    }

    /// Record Kubernetes updates folded into `fleet` by `now`, after the targets they made.
    /// When the file does not hold what is known from Kubernetes yet, every pod of `fleet`
    /// and what `state` gives (the rest of what the console knows) come first, so each file
    /// replays alone. Nothing is written for a fleet without pods and no updates.
    pub fn record_kube(
        &mut self,
        fleet: &Fleet,
        now: Ts,
        changes: Vec<KubeChange>,
        state: impl FnOnce() -> Vec<KubeChange>,
    ) {
        let mut all = Vec::new();
        if self.kube_unknown {
            all = kvtop_core::recording::kube::snapshot(fleet);
            if !all.is_empty() {
                all.extend(state());
                self.kube_unknown = false;
            }
        }
        all.extend(changes);
        if all.is_empty() {
            return;
        }
        self.observe_targets(fleet, now);
        for change in all {
            self.record(&Record::Kube { at: now, change });
        }
    }

    /// Record the fleet's scraped targets if they changed (a Prometheus source's own targets
    /// come back with its recorded answers).
    fn observe_targets(&mut self, fleet: &Fleet, now: Ts) {
        let scraped = || {
            fleet
                .targets()
                .iter()
                .filter(|t| fleet.source_of(t.id).is_none())
        };
        let same = self.targets.len() == scraped().count()
            && self
                .targets
                .iter()
                .zip(scraped())
                .all(|((id, spec), t)| *id == t.id && *spec == t.spec);
        if !same {
            self.targets = scraped().map(|t| (t.id, t.spec.clone())).collect();
            self.record(&Record::Targets {
                at: now,
                targets: self.targets.clone(),
            });
        }
    }

    /// Queue what was encoded; a full queue drops it (counted) instead of waiting.
    pub fn flush(&mut self) {
        if self.chunk.is_empty() {
            return;
        }
        let chunk = std::mem::take(&mut self.chunk);
        self.send(Chunk::Bytes(chunk));
    }

    fn send(&mut self, chunk: Chunk) {
        let Some(tx) = &self.tx else {
            return;
        };
        match tx.try_send(chunk) {
            Ok(()) => {}
            Err(TrySendError::Full(Chunk::Bytes(bytes))) => {
                let records = count_records(&bytes);
                self.stats.dropped.fetch_add(records, Ordering::Relaxed);
                self.unsent += records;
                // What comes next must not depend on what was dropped.
                self.encoder.reset();
            }
            Err(TrySendError::Full(rotate @ Chunk::Rotate { .. })) => {
                // The new file must still start: wait for room (rare, and bounded by the
                // writer's progress).
                let _ = tx.send(rotate);
            }
            Err(TrySendError::Disconnected(_)) => self.tx = None,
        }
    }

    fn rotate(&mut self, now: Ts) {
        self.flush();
        self.encoder.reset();
        self.header.started = now;
        self.file_started = now;
        let header = encode_header(&self.header);
        let mut records = Vec::new();
        self.encoder.encode(
            &Record::Targets {
                at: now,
                targets: self.targets.clone(),
            },
            &mut records,
        );
        self.rotations += 1;
        self.kube_unknown = true;
        self.send(Chunk::Rotate { header, records });
    }

    /// Write what is queued and stop the writer (at exit).
    pub fn finish(&mut self) {
        self.flush();
        self.tx = None;
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Move `path` to `path.1`, `.1` to `.2`, … keeping `keep` of them.
fn rotate(path: &Path, keep: usize) -> std::io::Result<()> {
    let numbered = |n: usize| {
        let mut name = path.as_os_str().to_owned();
        name.push(format!(".{n}"));
        PathBuf::from(name)
    };
    if keep == 0 {
        return std::fs::remove_file(path);
    }
    let _ = std::fs::remove_file(numbered(keep));
    for n in (1..keep).rev() {
        let from = numbered(n);
        if from.exists() {
            std::fs::rename(&from, numbered(n + 1))?;
        }
    }
    std::fs::rename(path, numbered(1))
}

fn write_loop(file: File, path: &Path, keep: usize, rx: Receiver<Chunk>, stats: &RecordStats) {
    let mut out = Some(BufWriter::with_capacity(256 << 10, file));
    let mut blocks = BlockWriter::new();
    let mut block = Vec::new();
    let mut last_flush = Instant::now();
    let fail = |err: std::io::Error| {
        if let Ok(mut failure) = stats.failure.lock() {
            *failure = Some(format!("recording: {err}"));
        }
    };
    loop {
        let chunk = match rx.recv_timeout(FLUSH_EVERY) {
            Ok(chunk) => chunk,
            Err(RecvTimeoutError::Timeout) => {
                if let Some(Err(err)) = out.as_mut().map(BufWriter::flush) {
                    fail(err);
                }
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => break,
        };
        block.clear();
        match chunk {
            Chunk::Bytes(records) => blocks.write_block(&records, &mut block),
            Chunk::Rotate { header, records } => {
                if let Some(mut old) = out.take() {
                    if let Err(err) = old.flush() {
                        fail(err);
                    }
                }
                let opened = rotate(path, keep)
                    .and_then(|()| OpenOptions::new().create_new(true).write(true).open(path));
                match opened {
                    Ok(file) => {
                        let mut new = BufWriter::with_capacity(256 << 10, file);
                        if let Err(err) = new.write_all(&header) {
                            fail(err);
                        }
                        out = Some(new);
                    }
                    Err(err) => fail(err),
                }
                // A new file is a new compressed stream.
                blocks = BlockWriter::new();
                blocks.write_block(&records, &mut block);
                stats
                    .file_bytes
                    .store(header.len() as u64, Ordering::Relaxed);
                stats.rotations.fetch_add(1, Ordering::Relaxed);
            }
        }
        if let Some(Err(err)) = out.as_mut().map(|o| o.write_all(&block)) {
            fail(err);
        }
        stats
            .file_bytes
            .fetch_add(block.len() as u64, Ordering::Relaxed);
        if last_flush.elapsed() >= FLUSH_EVERY {
            last_flush = Instant::now();
            if let Some(Err(err)) = out.as_mut().map(BufWriter::flush) {
                fail(err);
            }
        }
    }
    if let Some(Err(err)) = out.as_mut().map(BufWriter::flush) {
        fail(err);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kvtop_core::engine::{EngineId, EngineSample};
    use kvtop_core::fleet::ScrapePayload;

    fn header(at: Ts) -> Header {
        Header {
            format: kvtop_core::recording::FORMAT_VERSION,
            kvtop: "test".into(),
            started: at,
            source: "test".into(),
            interval: 1.0,
            window: "1m".into(),
            history_full_secs: 600.0,
            history_total_secs: 3600.0,
            history_coarse_step: 10.0,
            restart_mark_secs: 120.0,
        }
    }

    fn scrape(at: Ts) -> ScrapeReport {
        let sample = EngineSample {
            id: EngineId {
                model: "m".into(),
                engine: "0".into(),
            },
            // Numbers that do not repeat, so the blocks do not compress to nothing.
            kv_usage: Some((at * 0.618_033).fract()),
            generation_tokens_total: Some((at * at).floor()),
            ..EngineSample::default()
        };
        ScrapeReport {
            target: TargetId(0),
            at,
            took: (at * 0.001).fract(),
            outcome: Ok(ScrapePayload {
                engines: vec![sample],
                gpus: Vec::new(),
                samples: 10,
                malformed: 0,
                first_error: None,
                bytes: 1000,
            }),
        }
    }

    /// Every record of a file, and whether reading stopped early.
    fn read(path: &Path) -> (usize, Option<ReadProblem>) {
        let mut recording = open(path).unwrap_or_else(|e| panic!("{e}"));
        let records = recording.by_ref().count();
        (records, recording.problem().cloned())
    }

    #[test]
    fn a_file_at_its_size_limit_is_rotated_and_each_file_replays_alone() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("rec.kvr");
        let rotation = Rotation {
            max_bytes: 4096,
            max_age_secs: 1e9,
            keep: 3,
        };
        let start = 1_800_000_000.0;
        let mut recorder =
            Recorder::start(&path, header(start), rotation).unwrap_or_else(|e| panic!("{e}"));
        let stats = recorder.stats();
        let mut at = start;
        // Until the writer has started a second file and written into it (bounded).
        for _ in 0..2000 {
            at += 1.0;
            recorder.record_scrape(&scrape(at));
            recorder.flush();
            if stats.rotations.load(Ordering::Relaxed) >= 2 {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        // The newest file may hold only what a new file starts with: two more scrapes go into
        // it (far below the limit), whenever the writer gets to them.
        for _ in 0..2 {
            at += 1.0;
            recorder.record_scrape(&scrape(at));
        }
        recorder.finish();
        assert!(stats.rotations.load(Ordering::Relaxed) >= 2);
        let rotated = dir.path().join("rec.kvr.1");
        let size = std::fs::metadata(&rotated).map_or(0, |m| m.len());
        // Rotated once the writer had written its limit: a few blocks past it at most.
        assert!((4096..4096 + 2048).contains(&size), "{size} bytes");
        for file in [&rotated, &path] {
            let (records, problem) = read(file);
            assert_eq!(problem, None, "{}", file.display());
            assert!(records > 1, "{}: {records} records", file.display());
        }
    }

    /// Read `path` to its end, and at every point where it can be resumed, resume a second
    /// reading there: it must read on to the same records. How many points were tried.
    fn resumed_readings_read_on_alike(path: &Path) -> usize {
        let mut recording = open(path).unwrap_or_else(|e| panic!("{e}"));
        recording.keep_resume_points();
        let all: Vec<Record> = open(path).unwrap_or_else(|e| panic!("{e}")).collect();
        let mut read = 0;
        let mut tried = 0;
        loop {
            if let Some(point) = recording.resume_point() {
                assert_eq!(point.records(), read as u64);
                let rest: Vec<Record> = resume(path, &point)
                    .unwrap_or_else(|e| panic!("{e}"))
                    .collect();
                assert!(rest == all[read..], "resumed after {read} records");
                tried += 1;
            }
            if recording.next().is_none() {
                break;
            }
            read += 1;
        }
        assert_eq!(read, all.len());
        tried
    }

    #[test]
    fn a_recording_resumed_where_a_reading_stood_reads_on_to_the_same_records() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("rec.kvr");
        let rotation = Rotation {
            max_bytes: u64::MAX,
            max_age_secs: 1e9,
            keep: 1,
        };
        let start = 1_800_000_000.0;
        let mut recorder =
            Recorder::start(&path, header(start), rotation).unwrap_or_else(|e| panic!("{e}"));
        for i in 0..400 {
            let at = start + f64::from(i);
            recorder.record_scrape(&scrape(at));
            recorder.record_scrape(&ScrapeReport {
                target: TargetId(1),
                ..scrape(at + 0.5)
            });
            // A block now and then, as the console's cycles hand them over.
            if i % 3 == 0 {
                recorder.flush();
            }
        }
        recorder.finish();
        let tried = resumed_readings_read_on_alike(&path);
        assert!(tried > 10, "{tried} points");
        // Format 1 (no blocks): any record is a point.
        let v1 =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recording-v1-kv-thrash.kvr");
        assert!(resumed_readings_read_on_alike(&v1) > 100);
    }

    /// The Kubernetes records of a file.
    fn kube_records(path: &Path) -> Vec<KubeChange> {
        let recording = open(path).unwrap_or_else(|e| panic!("{e}"));
        recording
            .filter_map(|record| match record {
                Record::Kube { change, .. } => Some(change),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn every_file_starts_with_the_pods_known_so_each_replays_alone() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("rec.kvr");
        let rotation = Rotation {
            max_bytes: u64::MAX,
            max_age_secs: 60.0,
            keep: 2,
        };
        let start = 1_800_000_000.0;
        let mut fleet = Fleet::new(kvtop_core::fleet::FleetSettings::default());
        let id = fleet.add_target(TargetSpec {
            name: "vllm-0".into(),
            url: "http://10.0.0.1:8000/metrics".into(),
        });
        let mut pod = kvtop_core::kube_model::PodInfo::for_test("prod", "vllm-0");
        pod.restarts = 4;
        fleet.set_pod_info(id, pod.clone());
        let mut recorder =
            Recorder::start(&path, header(start), rotation).unwrap_or_else(|e| panic!("{e}"));
        let problem = || {
            vec![KubeChange::Problem {
                context: "prod".into(),
                task: "events".into(),
                error: Some("forbidden".into()),
            }]
        };
        recorder.record_kube(&fleet, start, Vec::new(), problem);
        let logs = KubeChange::Logs {
            key: pod.key.clone(),
            lines: vec!["INFO: ready".into()],
        };
        recorder.record_kube(&fleet, start + 1.0, vec![logs.clone()], problem);
        // Past the file's age: the next record goes to a new file.
        recorder.record_scrape(&scrape(start + 61.0));
        recorder.record_kube(&fleet, start + 62.0, Vec::new(), problem);
        recorder.finish();

        let first = kube_records(&dir.path().join("rec.kvr.1"));
        let snapshot = KubeChange::Pods {
            pods: vec![(id, pod)],
            gone: Vec::new(),
        };
        assert_eq!(
            first,
            vec![snapshot.clone(), problem().remove(0), logs],
            "the state once, then the updates"
        );
        assert_eq!(kube_records(&path), vec![snapshot, problem().remove(0)]);
    }
}
