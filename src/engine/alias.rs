//! The alias table: vendor metric names -> typed signals, one `EngineSample` per engine.

use super::EngineSample;
use crate::metrics::Exposition;

/// Map a parsed payload onto one sample per engine (per `model_name` × `engine` label pair).
pub fn extract_engines(expo: &Exposition<'_>) -> Vec<EngineSample> {
    let _ = expo;
    todo!("extract_engines")
}
