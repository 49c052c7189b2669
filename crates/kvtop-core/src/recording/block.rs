//! Format 2's blocks: the records encoded in a moment (a scrape cycle's worth, see the app's
//! writer) compressed as one frame. All blocks of a file are one deflate stream, flushed at
//! each block's end: a block is read with what the blocks before it taught the decompressor,
//! so each compresses against the whole file so far (the records of one engine repeat their
//! shape every second) and still ends on a byte boundary, so a crash loses at most the block
//! being written and what was flushed before it reads back.
//!
//! Inside a block, records are written as their length (a varint) and their bytes: the
//! block's frame already carries a checksum over all of them.

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

use super::wire::{Dec, Enc};
use super::{DecodeError, MAX_RECORD};

/// A block's first byte: deflate, continuing the stream of the blocks before it.
const DEFLATE_STREAM: u8 = 1;

/// Deflate level: past 3 the gain on delta-coded records is a few per cent for twice the CPU
/// (measured with `cargo bench --bench recording`).
const LEVEL: u32 = 3;

/// Compresses the blocks of one file.
pub struct BlockWriter {
    stream: Compress,
}

impl std::fmt::Debug for BlockWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockWriter")
            .field("in", &self.stream.total_in())
            .field("out", &self.stream.total_out())
            .finish()
    }
}

impl Default for BlockWriter {
    fn default() -> Self {
        BlockWriter::new()
    }
}

impl BlockWriter {
    /// The writer for a new file (its stream starts afresh).
    pub fn new() -> Self {
        BlockWriter {
            stream: Compress::new(Compression::new(LEVEL), false),
        }
    }

    /// Append the frame of a block holding `records` (as [`Encoder`](super::Encoder) writes
    /// them) to `out`.
    pub fn write_block(&mut self, records: &[u8], out: &mut Vec<u8>) {
        let mut payload = Vec::with_capacity(records.len() / 2 + 64);
        Enc::new(&mut payload).u8(DEFLATE_STREAM);
        Enc::new(&mut payload).varint(records.len() as u64);
        let mut rest = records;
        loop {
            // Room for what deflate may add to incompressible input, and the flush marker.
            payload.reserve(rest.len() + rest.len() / 16 + 64);
            let before = self.stream.total_in();
            let status = self
                .stream
                .compress_vec(rest, &mut payload, FlushCompress::Sync);
            let took = usize::try_from(self.stream.total_in() - before).unwrap_or(rest.len());
            rest = rest.get(took..).unwrap_or_default();
            // Done once all input is in and the flush left spare room (else more is pending).
            let spare = payload.capacity() > payload.len();
            if rest.is_empty() && spare || !matches!(status, Ok(Status::Ok)) {
                break;
            }
        }
        super::frame(&payload, out);
    }
}

/// How far back deflate refers: the bytes a reader resumed mid-file must be given again.
pub const WINDOW: usize = 32 * 1024;

/// Decompresses the blocks of one file, in order.
pub struct BlockReader {
    stream: Decompress,
    /// The last [`WINDOW`] bytes the blocks held, when kept (see
    /// [`keep_window`](Self::keep_window)).
    window: Option<Vec<u8>>,
}

impl std::fmt::Debug for BlockReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockReader")
            .field("in", &self.stream.total_in())
            .finish()
    }
}

impl Default for BlockReader {
    fn default() -> Self {
        BlockReader::new()
    }
}

impl BlockReader {
    pub fn new() -> Self {
        BlockReader {
            stream: Decompress::new(false),
            window: None,
        }
    }

    /// A reader that goes on at a block's start, given the last [`WINDOW`] bytes of the
    /// blocks before it (as [`window`](Self::window) gave them): the blocks are one deflate
    /// stream, whose next block may refer back that far. It keeps the window too.
    pub fn resumed(window: &[u8]) -> Result<Self, DecodeError> {
        let mut stream = Decompress::new(false);
        if !window.is_empty() {
            stream
                .set_dictionary(window)
                .map_err(|_| DecodeError::Malformed("a resume window deflate refuses"))?;
        }
        let kept = window.get(window.len().saturating_sub(WINDOW)..);
        Ok(BlockReader {
            stream,
            window: Some(kept.unwrap_or_default().to_vec()),
        })
    }

    /// Keep the last [`WINDOW`] bytes of the blocks read, so the file can be read on from a
    /// later block by [`resumed`](Self::resumed).
    pub fn keep_window(&mut self) {
        self.window.get_or_insert_with(Vec::new);
    }

    /// The last [`WINDOW`] bytes of the blocks read so far (`None` unless kept).
    pub fn window(&self) -> Option<&[u8]> {
        self.window.as_deref()
    }

    /// The records' bytes of a block frame's payload (see [`next_frame`](super::next_frame)),
    /// put in `raw`.
    pub fn read_block(&mut self, payload: &[u8], raw: &mut Vec<u8>) -> Result<(), DecodeError> {
        let mut dec = Dec::new(payload);
        if dec.u8()? != DEFLATE_STREAM {
            return Err(DecodeError::Malformed("an unknown kind of block"));
        }
        let len = dec.varint()?;
        if len > u64::from(MAX_RECORD) {
            return Err(DecodeError::Malformed(
                "a block longer than a record can be",
            ));
        }
        let len = usize::try_from(len).map_err(|_| DecodeError::Malformed("a block's length"))?;
        let mut input = payload.get(dec.position()..).unwrap_or_default();
        raw.clear();
        raw.reserve_exact(len);
        while raw.len() < len {
            let before = self.stream.total_in();
            let had = raw.len();
            let status = self
                .stream
                .decompress_vec(input, raw, FlushDecompress::Sync)
                .map_err(|_| DecodeError::Malformed("a block that does not decompress"))?;
            let took = usize::try_from(self.stream.total_in() - before).unwrap_or(input.len());
            input = input.get(took..).unwrap_or_default();
            let stuck = took == 0 && raw.len() == had;
            if stuck || !matches!(status, Status::Ok) || input.is_empty() {
                break;
            }
        }
        // The sync flush marker may be left over once all the records are out.
        if !input.is_empty() {
            let mut marker = Vec::with_capacity(16);
            let _ = self
                .stream
                .decompress_vec(input, &mut marker, FlushDecompress::Sync);
            if !marker.is_empty() {
                return Err(DecodeError::Malformed("a block longer than it says"));
            }
        }
        if raw.len() != len {
            return Err(DecodeError::Malformed("a block shorter than it says"));
        }
        if let Some(window) = self.window.as_mut() {
            window.extend_from_slice(
                raw.get(raw.len().saturating_sub(WINDOW)..)
                    .unwrap_or_default(),
            );
            let excess = window.len().saturating_sub(WINDOW);
            window.drain(..excess);
        }
        Ok(())
    }
}

/// The records' bytes in a block's raw bytes, in order.
pub fn records(raw: &[u8]) -> impl Iterator<Item = Result<&[u8], DecodeError>> {
    let mut dec = Dec::new(raw);
    std::iter::from_fn(move || {
        if dec.is_done() {
            return None;
        }
        let record = dec.count().and_then(|len| dec.bytes(len));
        if record.is_err() {
            // Nothing after a damaged length can be found.
            dec = Dec::new(&[]);
        }
        Some(record)
    })
}

/// How many records a block's raw bytes hold (what a dropped block loses).
pub fn count_records(raw: &[u8]) -> u64 {
    records(raw).count() as u64
}
