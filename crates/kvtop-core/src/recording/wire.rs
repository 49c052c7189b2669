//! The primitives of the recording format: little-endian fixed-size numbers, LEB128 varints,
//! zigzag-encoded signed deltas and length-prefixed strings. Decoding never panics: every read
//! is bounds-checked and a short or malformed input is a [`DecodeError`].

use super::DecodeError;

/// Bytes being written.
#[derive(Debug)]
pub struct Enc<'a> {
    out: &'a mut Vec<u8>,
}

impl<'a> Enc<'a> {
    pub fn new(out: &'a mut Vec<u8>) -> Self {
        Enc { out }
    }

    fn put(&mut self, bytes: &[u8]) {
        self.out.extend_from_slice(bytes);
    }

    pub fn u8(&mut self, v: u8) {
        self.put(&[v]);
    }

    pub fn varint(&mut self, mut v: u64) {
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                self.u8(byte);
                return;
            }
            self.u8(byte | 0x80);
        }
    }

    /// Bytes as they are (their length written before them).
    pub fn bytes(&mut self, bytes: &[u8]) {
        self.put(bytes);
    }

    pub fn signed(&mut self, v: i64) {
        self.varint(((v << 1) ^ (v >> 63)) as u64);
    }

    pub fn f64(&mut self, v: f64) {
        self.put(&v.to_le_bytes());
    }

    pub fn str(&mut self, s: &str) {
        self.varint(s.len() as u64);
        self.put(s.as_bytes());
    }

    pub fn opt_str(&mut self, s: Option<&str>) {
        match s {
            None => self.u8(0),
            Some(s) => {
                self.u8(1);
                self.str(s);
            }
        }
    }
}

/// Bytes being read.
#[derive(Debug, Clone)]
pub struct Dec<'a> {
    bytes: &'a [u8],
    at: usize,
}

/// Longest string accepted (a log line or an error text is far shorter).
const MAX_STR: u64 = 1 << 20;

impl<'a> Dec<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Dec { bytes, at: 0 }
    }

    /// How many bytes were read.
    pub fn position(&self) -> usize {
        self.at
    }

    /// The next `n` bytes as they are.
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        self.take(n)
    }

    /// Whether every byte was read.
    pub fn is_done(&self) -> bool {
        self.at >= self.bytes.len()
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let end = self.at.checked_add(n).ok_or(DecodeError::Short)?;
        let slice = self.bytes.get(self.at..end).ok_or(DecodeError::Short)?;
        self.at = end;
        Ok(slice)
    }

    pub fn u8(&mut self) -> Result<u8, DecodeError> {
        self.take(1)?.first().copied().ok_or(DecodeError::Short)
    }

    pub fn varint(&mut self) -> Result<u64, DecodeError> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.u8()?;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(DecodeError::Malformed("varint longer than 64 bits"))
    }

    pub fn signed(&mut self) -> Result<i64, DecodeError> {
        let v = self.varint()?;
        Ok(((v >> 1) as i64) ^ -((v & 1) as i64))
    }

    pub fn f64(&mut self) -> Result<f64, DecodeError> {
        let bytes: [u8; 8] = self.take(8)?.try_into().map_err(|_| DecodeError::Short)?;
        Ok(f64::from_le_bytes(bytes))
    }

    /// A count of items that follow, bounded by what is left to read (each item takes at least
    /// one byte), so a damaged length cannot make a reader allocate without bound.
    pub fn count(&mut self) -> Result<usize, DecodeError> {
        let n = self.varint()?;
        let left = (self.bytes.len() - self.at.min(self.bytes.len())) as u64;
        if n > left {
            return Err(DecodeError::Malformed("a length beyond the record"));
        }
        usize::try_from(n).map_err(|_| DecodeError::Malformed("a length beyond the record"))
    }

    pub fn str(&mut self) -> Result<String, DecodeError> {
        let n = self.varint()?;
        if n > MAX_STR {
            return Err(DecodeError::Malformed("a string longer than 1 MiB"));
        }
        let bytes = self.take(usize::try_from(n).map_err(|_| DecodeError::Short)?)?;
        String::from_utf8(bytes.to_vec())
            .map_err(|_| DecodeError::Malformed("a string not in UTF-8"))
    }

    pub fn opt_str(&mut self) -> Result<Option<String>, DecodeError> {
        match self.u8()? {
            0 => Ok(None),
            1 => self.str().map(Some),
            _ => Err(DecodeError::Malformed("an optional string's tag")),
        }
    }
}
