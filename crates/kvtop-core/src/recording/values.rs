//! Numbers coded against the same numbers of the previous record of the same engine or GPU:
//! a 2-bit tag per value (same as before, unknown, integer change, raw), four tags a byte,
//! then what the tags need. Counters and bucket counts are integers that change by little, so
//! most values take a quarter of a byte or a byte or two; a value is always restored exactly
//! (bit for bit), whatever it is.

use super::DecodeError;
use super::wire::{Dec, Enc};
use crate::metrics::number::as_int;

const SAME: u8 = 0;
const UNKNOWN: u8 = 1;
const INTEGER_STEP: u8 = 2;
const RAW: u8 = 3;

/// How `value` is coded after `before`.
fn tag(value: Option<f64>, before: Option<f64>) -> (u8, Option<i64>) {
    let Some(v) = value else {
        return (if before.is_none() { SAME } else { UNKNOWN }, None);
    };
    if before.is_some_and(|b| b.to_bits() == v.to_bits()) {
        return (SAME, None);
    }
    // An integer change from the value before (or from 0 when it was unknown); -0.0 is not an
    // integer here, so its sign survives.
    let base = before.unwrap_or(0.0);
    match (as_int(v), as_int(base)) {
        (Some(v_int), Some(b_int)) if !(v == 0.0 && v.is_sign_negative()) => {
            (INTEGER_STEP, v_int.checked_sub(b_int))
        }
        _ => (RAW, None),
    }
}

/// Write `values` coded against `before` (the same length, or shorter: missing ones are
/// unknown).
pub(crate) fn encode(enc: &mut Enc<'_>, values: &[Option<f64>], before: &[Option<f64>]) {
    let tags: Vec<(u8, Option<i64>)> = values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let (tag, step) = tag(*v, before.get(i).copied().flatten());
            match (tag, step) {
                // An integer change too large for i64 is written raw.
                (INTEGER_STEP, None) => (RAW, None),
                other => other,
            }
        })
        .collect();
    for chunk in tags.chunks(4) {
        let mut byte = 0u8;
        for (slot, (tag, _)) in chunk.iter().enumerate() {
            byte |= tag << (2 * slot);
        }
        enc.u8(byte);
    }
    for ((tag, step), value) in tags.iter().zip(values) {
        match (*tag, step, value) {
            (INTEGER_STEP, Some(step), _) => enc.signed(*step),
            (RAW, _, Some(v)) => enc.f64(*v),
            _ => {}
        }
    }
}

/// Read `count` values coded against `before`.
pub(crate) fn decode(
    dec: &mut Dec<'_>,
    count: usize,
    before: &[Option<f64>],
) -> Result<Vec<Option<f64>>, DecodeError> {
    let mut values = Vec::with_capacity(count.min(1 << 16));
    decode_each(
        dec,
        count,
        |i| before.get(i).copied().flatten(),
        |_, value| values.push(value),
    )?;
    Ok(values)
}

/// Read `count` values, the `i`th coded against `before(i)`, handing each to `put(i, value)`
/// in order: decoding straight into where the values go, without a vector per record.
pub(crate) fn decode_each(
    dec: &mut Dec<'_>,
    count: usize,
    before: impl Fn(usize) -> Option<f64>,
    mut put: impl FnMut(usize, Option<f64>),
) -> Result<(), DecodeError> {
    let tags = dec.bytes(count.div_ceil(4))?;
    for i in 0..count {
        let tag = tags
            .get(i / 4)
            .map_or(UNKNOWN, |byte| (byte >> (2 * (i % 4))) & 0b11);
        let before = before(i);
        put(
            i,
            match tag {
                SAME => before,
                UNKNOWN => None,
                INTEGER_STEP => {
                    let base = before.and_then(as_int).unwrap_or(0);
                    let value = base
                        .checked_add(dec.signed()?)
                        .ok_or(DecodeError::Malformed("an integer change out of range"))?;
                    Some(value as f64)
                }
                _ => Some(dec.f64()?),
            },
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(values: &[Option<f64>], before: &[Option<f64>]) -> (Vec<Option<f64>>, usize) {
        let mut bytes = Vec::new();
        encode(&mut Enc::new(&mut bytes), values, before);
        let mut dec = Dec::new(&bytes);
        let back = decode(&mut dec, values.len(), before).unwrap_or_else(|e| panic!("{e}"));
        assert!(dec.is_done());
        (back, bytes.len())
    }

    fn bits(values: &[Option<f64>]) -> Vec<Option<u64>> {
        values.iter().map(|v| v.map(f64::to_bits)).collect()
    }

    #[test]
    fn every_value_comes_back_bit_for_bit() {
        let before = [
            Some(10.0),
            None,
            Some(0.5),
            Some(-3.0),
            Some(1e300),
            Some(7.0),
            None,
        ];
        let values = [
            Some(12.0),
            Some(4.0),
            Some(0.5),
            Some(-0.0),
            Some(f64::INFINITY),
            None,
            Some(f64::NAN),
        ];
        let (back, _) = round_trip(&values, &before);
        assert_eq!(bits(&back), bits(&values));
    }

    #[test]
    fn unchanged_and_small_counter_steps_take_little_room() {
        let before: Vec<Option<f64>> = (0..20).map(|i| Some(f64::from(i) * 1000.0)).collect();
        let mut values = before.clone();
        values[3] = Some(3005.0);
        values[9] = Some(9000.0 + 120.0);
        let (back, len) = round_trip(&values, &before);
        assert_eq!(back, values);
        // 5 tag bytes and two one- or two-byte steps.
        assert!(len <= 5 + 3, "{len} bytes");
    }

    #[test]
    fn damaged_input_is_an_error_not_a_panic() {
        let mut bytes = Vec::new();
        encode(&mut Enc::new(&mut bytes), &[Some(1.5), Some(2.5)], &[]);
        for cut in 0..bytes.len() {
            let truncated = bytes.get(..cut).unwrap_or_default();
            assert!(decode(&mut Dec::new(truncated), 2, &[]).is_err());
        }
        // A huge integer step from a huge base.
        let mut huge = Vec::new();
        let mut enc = Enc::new(&mut huge);
        enc.u8(INTEGER_STEP);
        enc.signed(i64::MAX);
        let before = [Some(9.0e15)];
        assert!(decode(&mut Dec::new(&huge), 1, &before).is_err());
    }
}
