//! A gzip-encoded body (RFC 1952) inflated in one pass into one buffer, within a size cap.
//!
//! A scrape asks for gzip as Prometheus does (`Accept-Encoding: gzip`): a vLLM payload of
//! 48-120 KB travels as 5-12 KB. Inflating the whole body at once, into a buffer sized from the
//! gzip trailer, costs less than a streaming decoder's chunks and window copies (benches/README.md,
//! 29 November (9)), and the cap holds for the inflated bytes, so a gzip bomb stops at `limit`.

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

/// Inflate `input`, one gzip member or several in a row (as `gzip -c a b` writes them), into at
/// most `limit` bytes. Anything after the last member other than another member is an error,
/// as it is to Prometheus.
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
    let mut out = Vec::with_capacity(first_reserve(input, limit));
    let mut member = 0usize;
    loop {
        member += inflate_member(input.get(member..).unwrap_or_default(), limit, &mut out)?;
        match input.get(member..) {
            None | Some([]) => return Ok(out),
            Some([0x1f, 0x8b, ..]) => {}
            Some(_) => return Err(corrupt("bytes after the end of the gzip stream")),
        }
    }
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

/// Inflate the member at the start of `input`, appending to `out`; returns the bytes it took.
fn inflate_member(input: &[u8], limit: usize, out: &mut Vec<u8>) -> Result<usize, GunzipError> {
    let mut stream = Decompress::new_gzip(15);
    loop {
        if out.len() > limit {
            return Err(GunzipError::TooLarge);
        }
        if out.len() == out.capacity() {
            // Double, up to one byte past the cap.
            let room = out.len().max(4096).min(limit.saturating_add(1) - out.len());
            out.reserve_exact(room);
        }
        let taken = stream.total_in() as usize;
        let produced = out.len();
        let rest = input.get(taken..).unwrap_or_default();
        let status = stream
            .decompress_vec(rest, out, FlushDecompress::Finish)
            .map_err(|e| corrupt(e.message().unwrap_or("not a gzip stream")))?;
        match status {
            Status::StreamEnd if out.len() > limit => return Err(GunzipError::TooLarge),
            Status::StreamEnd => return Ok(stream.total_in() as usize),
            // Out of room: grow and go on. Neither room nor input used up: the input ended
            // inside the member.
            Status::Ok | Status::BufError
                if out.len() == out.capacity()
                    || stream.total_in() as usize > taken
                    || out.len() > produced => {}
            Status::Ok | Status::BufError => return Err(corrupt("the gzip stream is cut short")),
        }
    }
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
