//! Reading a recording: the header, then records one by one. What cannot be read ends the
//! reading with a [`ReadProblem`] naming the file and the byte offset; what came before it is
//! replayed.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use kvtop_core::recording::block::{BlockReader, records};
use kvtop_core::recording::{
    Decoder, FORMAT_V1, Frame, Header, HeaderError, MAX_RECORD, Record, decode_header, next_frame,
};
use kvtop_core::safe_text;

/// Why a recording cannot be replayed at all.
#[derive(Debug, thiserror::Error)]
pub enum RecordingError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Header { path: String, source: HeaderError },
}

/// Why reading stopped before the end of the file.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadProblem {
    pub path: String,
    /// Byte offset of the record that could not be read.
    pub offset: u64,
    pub reason: String,
    /// Records read before it.
    pub records: u64,
}

impl std::fmt::Display for ReadProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {} at byte {}; the {} record(s) before it are replayed",
            self.path, self.reason, self.offset, self.records
        )
    }
}

/// Where a recording can be read on from without reading what comes before: the frame after
/// a whole block, with what reading on needs of the records before it (the decoder's memory
/// of each engine's previous numbers and, in format 2, deflate's window).
#[derive(Debug, Clone)]
pub struct ResumePoint {
    offset: u64,
    records: u64,
    decoder: Decoder,
    window: Option<Vec<u8>>,
}

impl ResumePoint {
    /// How many records come before it.
    pub fn records(&self) -> u64 {
        self.records
    }
}

/// An open recording.
pub struct Recording {
    path: PathBuf,
    header: Header,
    input: BufReader<File>,
    decoder: Decoder,
    /// Format 2's decompressor (format 1 frames are single records).
    blocks: Option<BlockReader>,
    /// Records of the last block not handed out yet, and its bytes.
    pending: VecDeque<Record>,
    raw: Vec<u8>,
    /// Offset of the next frame.
    offset: u64,
    records: u64,
    buf: Vec<u8>,
    problem: Option<ReadProblem>,
}

/// Open a recording and read its header.
pub fn open(path: &Path) -> Result<Recording, RecordingError> {
    let shown = display(path);
    let io = |source| RecordingError::Io {
        path: shown.clone(),
        source,
    };
    let mut input = BufReader::with_capacity(1 << 20, File::open(path).map_err(io)?);
    // The header: magic, version, length, then the document.
    let mut head = vec![0u8; 14];
    let got = read_up_to(&mut input, &mut head).map_err(io)?;
    head.truncate(got);
    let header_error = |source| RecordingError::Header {
        path: shown.clone(),
        source,
    };
    let json_len = match decode_header(&head) {
        Err(HeaderError::Short) if got == 14 => {
            let len = head.get(10..14).unwrap_or_default();
            u32::from_le_bytes(len.try_into().unwrap_or_default()) as usize
        }
        Err(err) => return Err(header_error(err)),
        Ok(_) => 0,
    };
    let mut json = vec![0u8; json_len.min(1 << 20)];
    let got_json = read_up_to(&mut input, &mut json).map_err(io)?;
    head.extend_from_slice(json.get(..got_json).unwrap_or_default());
    let (header, len) = decode_header(&head).map_err(header_error)?;
    Ok(Recording {
        path: path.to_path_buf(),
        blocks: (header.format > FORMAT_V1).then(BlockReader::new),
        header,
        input,
        decoder: Decoder::new(),
        pending: VecDeque::new(),
        raw: Vec::new(),
        offset: len as u64,
        records: 0,
        buf: Vec::new(),
        problem: None,
    })
}

/// Open the recording at `path` again and read on from `point` (taken from a reading of the
/// same file).
pub fn resume(path: &Path, point: &ResumePoint) -> Result<Recording, RecordingError> {
    let mut recording = open(path)?;
    let io = |source| RecordingError::Io {
        path: display(path),
        source,
    };
    recording
        .input
        .seek(SeekFrom::Start(point.offset))
        .map_err(io)?;
    if let (Some(blocks), Some(window)) = (recording.blocks.as_mut(), point.window.as_deref()) {
        *blocks = BlockReader::resumed(window)
            .map_err(|e| io(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?;
    }
    recording.decoder = point.decoder.clone();
    recording.offset = point.offset;
    recording.records = point.records;
    Ok(recording)
}

impl Recording {
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Keep what [`resume_point`](Self::resume_point) needs as the reading goes (format 2:
    /// the last 32 KiB of the blocks).
    pub fn keep_resume_points(&mut self) {
        if let Some(blocks) = self.blocks.as_mut() {
            blocks.keep_window();
        }
    }

    /// Where the reading stands, to read on from there later through [`resume`]: `None` within
    /// a block, once a problem stopped the reading, or when resume points were not kept.
    pub fn resume_point(&self) -> Option<ResumePoint> {
        if !self.pending.is_empty() || self.problem.is_some() {
            return None;
        }
        let window = match &self.blocks {
            Some(blocks) => Some(blocks.window()?.to_vec()),
            None => None,
        };
        Some(ResumePoint {
            offset: self.offset,
            records: self.records,
            decoder: self.decoder.clone(),
            window,
        })
    }

    /// Why reading stopped early, once it has.
    pub fn problem(&self) -> Option<&ReadProblem> {
        self.problem.as_ref()
    }

    fn stop(&mut self, reason: &str) -> Option<Record> {
        self.problem = Some(ReadProblem {
            path: display(&self.path),
            offset: self.offset,
            reason: reason.to_owned(),
            records: self.records,
        });
        None
    }
}

impl Iterator for Recording {
    type Item = Record;

    fn next(&mut self) -> Option<Record> {
        if let Some(record) = self.pending.pop_front() {
            return Some(record);
        }
        if self.problem.is_some() {
            return None;
        }
        self.buf.resize(8, 0);
        let got = match read_up_to(&mut self.input, &mut self.buf) {
            Ok(got) => got,
            Err(err) => return self.stop(&format!("read error ({err})")),
        };
        if got == 0 {
            return None;
        }
        if got < 8 {
            return self.stop("a record cut short (the recording ends mid-record)");
        }
        let len = self
            .buf
            .get(..4)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u32::from_le_bytes);
        if len == 0 || len > MAX_RECORD {
            return self.stop("a record length out of bounds (damaged)");
        }
        self.buf.resize(8 + len as usize, 0);
        let got = match self
            .buf
            .get_mut(8..)
            .map(|rest| read_up_to(&mut self.input, rest))
        {
            Some(Ok(got)) => got,
            Some(Err(err)) => return self.stop(&format!("read error ({err})")),
            None => 0,
        };
        if got < len as usize {
            return self.stop("a record cut short (the recording ends mid-record)");
        }
        let payload = match next_frame(&self.buf) {
            Frame::Record(payload, _) => payload,
            Frame::Incomplete => return self.stop("a record cut short"),
            Frame::Damaged(why) => return self.stop(why),
        };
        let Some(blocks) = self.blocks.as_mut() else {
            let record = self.decoder.decode(payload);
            return self.one(record);
        };
        if let Err(err) = blocks.read_block(payload, &mut self.raw) {
            return self.stop(&err.to_string());
        }
        // The block's records, up to one that cannot be read (those before it are replayed).
        let mut damaged = None;
        for record in records(&self.raw) {
            match record.and_then(|r| self.decoder.decode(r)) {
                Ok(record) => self.pending.push_back(record),
                Err(err) => {
                    damaged = Some(err.to_string());
                    break;
                }
            }
        }
        self.records += self.pending.len() as u64;
        match damaged {
            Some(why) => {
                self.stop(&why);
            }
            None => self.offset += self.buf.len() as u64,
        }
        self.pending.pop_front().or_else(|| self.next())
    }
}

impl Recording {
    /// Hand out a format-1 frame's record, or stop at it.
    fn one(
        &mut self,
        record: Result<Record, kvtop_core::recording::DecodeError>,
    ) -> Option<Record> {
        match record {
            Ok(record) => {
                self.offset += self.buf.len() as u64;
                self.records += 1;
                Some(record)
            }
            Err(err) => self.stop(&err.to_string()),
        }
    }
}

/// Read until `buf` is full or the input ends; how many bytes were read.
fn read_up_to(input: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while let Some(rest) = buf.get_mut(filled..).filter(|r| !r.is_empty()) {
        match input.read(rest) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    Ok(filled)
}

pub(crate) fn display(path: &Path) -> String {
    safe_text::line(&path.display().to_string()).into_owned()
}
