//! A gzip-encoded body (RFC 1952) inflated in one pass into one buffer, within a size cap.
//!
//! A scrape asks for gzip as Prometheus does (`Accept-Encoding: gzip`): a vLLM payload of
//! 48-120 KB travels as 5-12 KB. Inflating the whole body at once into one buffer costs less than
//! a streaming decoder's chunks and window copies (benches/README.md, 29 November (9)), and the
//! cap holds for the inflated bytes, so a gzip bomb stops at `limit`. A [`Gunzip`] kept from body
//! to body also keeps its inflater and buffer, so a scrape makes no large allocation at all:
//! the gzip header and trailer are read here, around a raw deflate stream, because only a raw
//! stream keeps its state across a reset.

use flate2::{Decompress, FlushDecompress, Status};

/// Why a gzip body could not be inflated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GunzipError {
    /// More than `limit` bytes once inflated.
    #[error("more than the limit once inflated")]
    TooLarge,
    /// Not gzip, damaged (a failed CRC-32 or length check) or cut short.
    #[error("{0}")]
    Corrupt(String),
}

/// The most bytes reserved ahead of inflating: the trailer's length is the sender's claim, so
/// past this the buffer grows as bytes come out.
const MAX_RESERVE: usize = 1 << 20;

/// Inflate `input` (see [`Gunzip::inflate`]) into a buffer of its own.
///
/// ```
/// use kvtop_core::metrics::gzip::{GunzipError, gunzip_capped};
/// // `printf 'up 1\n' | gzip -n`
/// let body = [
///     0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0x2b, 0x2d, 0x50, 0x30, 0xe4, 2, 0, 0x72, 0x90,
///     0xea, 0x82, 5, 0, 0, 0,
/// ];
/// assert_eq!(gunzip_capped(&body, 64).unwrap(), b"up 1\n");
/// assert_eq!(gunzip_capped(&body, 4), Err(GunzipError::TooLarge));
/// ```
pub fn gunzip_capped(input: &[u8], limit: usize) -> Result<Vec<u8>, GunzipError> {
    let mut gunzip = Gunzip::new();
    gunzip.inflate(input, limit)?;
    Ok(std::mem::take(&mut gunzip.out))
}

/// What the last member's trailer says it holds (its length modulo 2^32): the sender's claim,
/// exact for an honest single-member body; 0 when `input` is too short to be gzip.
pub fn claimed_len(input: &[u8]) -> usize {
    match input.last_chunk::<4>() {
        Some(isize) if input.len() >= 18 => u32::from_le_bytes(*isize) as usize,
        _ => 0,
    }
}

/// Room for the [`claimed_len`], at least the compressed size and at most `limit` + 1 (one byte
/// past the cap shows it was passed).
fn first_reserve(input: &[u8], limit: usize) -> usize {
    claimed_len(input)
        .max(input.len())
        .min(MAX_RESERVE)
        .min(limit.saturating_add(1))
}

/// An inflater and its output buffer, kept from body to body.
pub struct Gunzip {
    stream: Decompress,
    out: Vec<u8>,
}

impl Default for Gunzip {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Gunzip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gunzip")
            .field("buffer", &self.out.capacity())
            .finish()
    }
}

impl Gunzip {
    pub fn new() -> Self {
        Gunzip {
            stream: Decompress::new(false),
            out: Vec::new(),
        }
    }

    /// Inflate `input`, one gzip member or several in a row (as `gzip -c a b` writes them),
    /// into at most `limit` bytes, each member's CRC-32 and length checked. Anything after the
    /// last member other than another member is an error, as it is to Prometheus. The buffer is
    /// kept for the next body (at most [`MAX_RESERVE`] of it past a larger one).
    pub fn inflate(&mut self, input: &[u8], limit: usize) -> Result<&[u8], GunzipError> {
        if self.out.capacity() > MAX_RESERVE {
            self.out = Vec::new();
        }
        self.out.clear();
        self.out.reserve(first_reserve(input, limit));
        let mut at = 0usize;
        loop {
            let rest = input.get(at..).unwrap_or_default();
            at += header_len(rest)?;
            let start = self.out.len();
            self.stream.reset(false);
            at += self.inflate_raw(input.get(at..).unwrap_or_default(), limit)?;
            let trailer = input
                .get(at..at + 8)
                .ok_or_else(|| corrupt("the gzip stream is cut short"))?;
            let member = self.out.get(start..).unwrap_or_default();
            if trailer[..4] != crc32fast::hash(member).to_le_bytes() {
                return Err(corrupt("incorrect data check"));
            }
            if trailer[4..] != (member.len() as u32).to_le_bytes() {
                return Err(corrupt("incorrect length check"));
            }
            at += 8;
            match input.get(at..) {
                None | Some([]) => return Ok(&self.out),
                Some([0x1f, 0x8b, ..]) => {}
                Some(_) => return Err(corrupt("bytes after the end of the gzip stream")),
            }
        }
    }

    /// Inflate the raw deflate stream at the start of `input`, appending to the buffer; returns
    /// the bytes it took.
    fn inflate_raw(&mut self, input: &[u8], limit: usize) -> Result<usize, GunzipError> {
        let out = &mut self.out;
        loop {
            if out.len() > limit {
                return Err(GunzipError::TooLarge);
            }
            if out.len() == out.capacity() {
                // Double, up to one byte past the cap.
                let room = out.len().max(4096).min(limit.saturating_add(1) - out.len());
                out.reserve_exact(room);
            }
            let taken = self.stream.total_in() as usize;
            let produced = out.len();
            let rest = input.get(taken..).unwrap_or_default();
            let status = self
                .stream
                .decompress_vec(rest, out, FlushDecompress::Finish)
                .map_err(|e| corrupt(e.message().unwrap_or("invalid deflate data")))?;
            match status {
                Status::StreamEnd if out.len() > limit => return Err(GunzipError::TooLarge),
                Status::StreamEnd => return Ok(self.stream.total_in() as usize),
                // Out of room: grow and go on. Neither room nor input used up: the input ended
                // inside the member.
                Status::Ok | Status::BufError
                    if out.len() == out.capacity()
                        || self.stream.total_in() as usize > taken
                        || out.len() > produced => {}
                Status::Ok | Status::BufError => {
                    return Err(corrupt("the gzip stream is cut short"));
                }
            }
        }
    }
}

/// The length of the gzip member header at the start of `input` (RFC 1952 2.3): the fixed ten
/// bytes, then the optional extra field, name, comment and header CRC its flags announce.
fn header_len(input: &[u8]) -> Result<usize, GunzipError> {
    const FHCRC: u8 = 0x02;
    const FEXTRA: u8 = 0x04;
    const FNAME: u8 = 0x08;
    const FCOMMENT: u8 = 0x10;
    const RESERVED: u8 = 0xe0;
    let cut = || corrupt("the gzip stream is cut short");
    let fixed = input.first_chunk::<10>().ok_or_else(cut)?;
    if fixed[..2] != [0x1f, 0x8b] {
        return Err(corrupt("incorrect header check"));
    }
    if fixed[2] != 8 {
        return Err(corrupt("unknown compression method"));
    }
    let flags = fixed[3];
    if flags & RESERVED != 0 {
        return Err(corrupt("unknown header flags set"));
    }
    let mut at = 10usize;
    if flags & FEXTRA != 0 {
        let len = input.get(at..at + 2).ok_or_else(cut)?;
        at += 2 + usize::from(u16::from_le_bytes([len[0], len[1]]));
    }
    for flag in [FNAME, FCOMMENT] {
        if flags & flag != 0 {
            let tail = input.get(at..).ok_or_else(cut)?;
            at += tail.iter().position(|b| *b == 0).ok_or_else(cut)? + 1;
        }
    }
    if flags & FHCRC != 0 {
        let stored = input.get(at..at + 2).ok_or_else(cut)?;
        let head = input.get(..at).ok_or_else(cut)?;
        if stored != (crc32fast::hash(head) as u16).to_le_bytes() {
            return Err(corrupt("header crc mismatch"));
        }
        at += 2;
    }
    if at > input.len() {
        return Err(cut());
    }
    Ok(at)
}

fn corrupt(why: &str) -> GunzipError {
    GunzipError::Corrupt(why.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::Compression;
    use flate2::write::GzEncoder;
    use proptest::prelude::*;
    use std::io::Write;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
        encoder.write_all(data).expect("writing to a Vec");
        encoder.finish().expect("writing to a Vec")
    }

    fn payload(lines: usize) -> Vec<u8> {
        (0..lines)
            .map(|i| format!("vllm:num_requests_running{{engine=\"{i}\"}} {}\n", i * 7))
            .collect::<String>()
            .into_bytes()
    }

    #[test]
    fn a_body_comes_out_whole_at_and_below_its_size() {
        let body = payload(2_000);
        let packed = gzip(&body);
        assert_eq!(gunzip_capped(&packed, body.len()), Ok(body.clone()));
        assert_eq!(
            gunzip_capped(&packed, body.len() - 1),
            Err(GunzipError::TooLarge)
        );
    }

    #[test]
    fn a_trailer_that_lies_about_the_length_only_changes_the_first_reservation() {
        let body = payload(3_000);
        for claimed in [0u32, 7, 1 << 31, u32::MAX] {
            let mut packed = gzip(&body);
            let at = packed.len() - 4;
            packed[at..].copy_from_slice(&claimed.to_le_bytes());
            // The length check of the trailer fails; nothing beyond the cap is reserved.
            assert!(matches!(
                gunzip_capped(&packed, 1 << 20),
                Err(GunzipError::Corrupt(_))
            ));
        }
        assert!(first_reserve(&gzip(&body), 1000) <= 1001);
        assert_eq!(first_reserve(&[0x1f, 0x8b], 1000), 2);
    }

    #[test]
    fn a_bomb_stops_at_the_cap() {
        let packed = gzip(&vec![b'a'; 8 << 20]);
        assert!(packed.len() < 20 << 10);
        assert_eq!(gunzip_capped(&packed, 1 << 20), Err(GunzipError::TooLarge));
    }

    #[test]
    fn members_in_a_row_are_one_body() {
        let mut packed = gzip(b"up 1\n");
        packed.extend(gzip(b"up 2\n"));
        assert_eq!(
            gunzip_capped(&packed, 64).as_deref(),
            Ok(&b"up 1\nup 2\n"[..])
        );
    }

    #[test]
    fn damaged_truncated_or_trailing_bytes_are_errors() {
        let body = payload(500);
        let packed = gzip(&body);
        let cut = &packed[..packed.len() / 2];
        assert_eq!(
            gunzip_capped(cut, 1 << 20),
            Err(corrupt("the gzip stream is cut short"))
        );
        let mut flipped = packed.clone();
        let at = flipped.len() - 6;
        flipped[at] ^= 0xff;
        assert!(matches!(
            gunzip_capped(&flipped, 1 << 20),
            Err(GunzipError::Corrupt(_))
        ));
        let mut trailing = packed.clone();
        trailing.extend_from_slice(b"\n\n");
        assert_eq!(
            gunzip_capped(&trailing, 1 << 20),
            Err(corrupt("bytes after the end of the gzip stream"))
        );
        assert!(matches!(
            gunzip_capped(b"# TYPE up gauge\nup 1\n", 1 << 20),
            Err(GunzipError::Corrupt(_))
        ));
        assert!(matches!(
            gunzip_capped(&[], 1 << 20),
            Err(GunzipError::Corrupt(_))
        ));
    }

    #[test]
    fn optional_header_fields_are_skipped_and_the_header_crc_checked() {
        let mut encoder = flate2::GzBuilder::new()
            .filename("metrics.txt")
            .comment("scraped")
            .extra(vec![1, 2, 3, 4])
            .write(Vec::new(), Compression::default());
        encoder.write_all(b"up 1\n").expect("writing to a Vec");
        let packed = encoder.finish().expect("writing to a Vec");
        assert_eq!(gunzip_capped(&packed, 64).as_deref(), Ok(&b"up 1\n"[..]));

        // The same member with a header CRC (flag 2) after the fixed header.
        let plain = gzip(b"up 2\n");
        let mut with_crc = plain[..10].to_vec();
        with_crc[3] |= 0x02;
        let crc = crc32fast::hash(&with_crc) as u16;
        with_crc.extend_from_slice(&crc.to_le_bytes());
        with_crc.extend_from_slice(&plain[10..]);
        assert_eq!(gunzip_capped(&with_crc, 64).as_deref(), Ok(&b"up 2\n"[..]));
        with_crc[10] ^= 1;
        assert_eq!(
            gunzip_capped(&with_crc, 64),
            Err(corrupt("header crc mismatch"))
        );

        let mut reserved = plain.clone();
        reserved[3] |= 0x20;
        assert_eq!(
            gunzip_capped(&reserved, 64),
            Err(corrupt("unknown header flags set"))
        );
        let mut method = plain.clone();
        method[2] = 7;
        assert_eq!(
            gunzip_capped(&method, 64),
            Err(corrupt("unknown compression method"))
        );
        // A name that never ends.
        let mut endless = plain[..10].to_vec();
        endless[3] |= 0x08;
        endless.extend_from_slice(b"metrics.txt");
        assert_eq!(
            gunzip_capped(&endless, 64),
            Err(corrupt("the gzip stream is cut short"))
        );
    }

    #[test]
    fn a_kept_inflater_reads_body_after_body_whatever_came_before() {
        let mut gunzip = Gunzip::new();
        let small = payload(10);
        let large = payload(3_000);
        let packed_small = gzip(&small);
        let packed_large = gzip(&large);
        assert_eq!(gunzip.inflate(&packed_large, 1 << 20), Ok(&large[..]));
        assert_eq!(gunzip.inflate(&packed_small, 1 << 20), Ok(&small[..]));
        let cut = &packed_large[..packed_large.len() / 3];
        assert!(gunzip.inflate(cut, 1 << 20).is_err());
        assert_eq!(
            gunzip.inflate(&packed_large, 100),
            Err(GunzipError::TooLarge)
        );
        assert_eq!(gunzip.inflate(&packed_large, 1 << 20), Ok(&large[..]));
        // A body past the most kept does not stay.
        let huge = vec![b'x'; 3 << 20];
        assert_eq!(
            gunzip.inflate(&gzip(&huge), 4 << 20).map(<[u8]>::len),
            Ok(3 << 20)
        );
        assert_eq!(gunzip.inflate(&packed_small, 1 << 20), Ok(&small[..]));
        assert!(gunzip.out.capacity() <= MAX_RESERVE);
    }

    proptest! {
        #[test]
        fn any_body_round_trips_and_any_bytes_fail_cleanly(
            data in proptest::collection::vec(any::<u8>(), 0..20_000),
            limit in 0usize..30_000,
        ) {
            let packed = gzip(&data);
            let result = gunzip_capped(&packed, limit);
            if data.len() <= limit {
                prop_assert_eq!(result, Ok(data.clone()));
            } else {
                prop_assert_eq!(result, Err(GunzipError::TooLarge));
            }
            // Arbitrary bytes (the payload itself, not gzip) never panic.
            let _ = gunzip_capped(&data, limit);
        }
    }
}
