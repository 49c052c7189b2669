//! Which exporter dialect an engine speaks, decided once for both paths from the evidence each
//! path has: the direct scrape sees every name, Prometheus the KV-usage series' names.
//!
//! SGLang's prefix decides alone. Otherwise V1 evidence (an `engine` label, or a name only V1
//! exports) wins over V0 evidence: V1 releases up to 0.11 still export the deprecated V0 names
//! (`gpu_cache_usage_perc`, `time_per_output_token_seconds`) next to the new ones.

use super::model::{Generation, Vendor};

/// Which exporter dialect the signals were read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EngineFlavor {
    /// vLLM V0 engine (`gpu_cache_usage_perc`, `time_per_output_token_seconds`, swapped requests, ...).
    VllmV0,
    /// vLLM V1 engine (`engine` label, `kv_cache_usage_perc`, token-based prefix cache counters, ...).
    VllmV1,
    SGLang,
    #[default]
    Unknown,
}

/// What the names and labels of one engine's series said so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlavorEvidence {
    sglang: bool,
    v1: bool,
    v0: bool,
}

impl FlavorEvidence {
    /// A series with a name of `vendor` that proves `proves` (see the catalog).
    pub fn name(&mut self, vendor: Vendor, proves: Option<Generation>) {
        self.sglang |= vendor == Vendor::SGLang;
        match proves {
            Some(Generation::V1) => self.v1 = true,
            Some(Generation::V0) => self.v0 = true,
            None => {}
        }
    }

    /// A series with vLLM V1's data-parallel `engine` label.
    pub fn engine_label(&mut self) {
        self.v1 = true;
    }

    pub fn flavor(self) -> EngineFlavor {
        if self.sglang {
            EngineFlavor::SGLang
        } else if self.v1 {
            EngineFlavor::VllmV1
        } else if self.v0 {
            EngineFlavor::VllmV0
        } else {
            EngineFlavor::Unknown
        }
    }
}
