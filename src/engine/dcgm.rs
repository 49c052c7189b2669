//! DCGM exporter metrics mapped onto one typed sample per GPU.

/// One GPU as seen by dcgm-exporter. Unknown fields stay `None`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GpuSample {
    /// `gpu` label (index on the node).
    pub gpu: String,
    pub uuid: String,
    pub model_name: String,
    /// `Hostname` / `hostname` label.
    pub hostname: String,
    /// Kubernetes mapping (`pod`/`namespace`, or `exported_pod`/`exported_namespace`).
    pub pod: Option<String>,
    pub namespace: Option<String>,
    pub util_pct: Option<f64>,
    pub fb_used_mib: Option<f64>,
    pub fb_free_mib: Option<f64>,
    pub fb_reserved_mib: Option<f64>,
    pub temp_c: Option<f64>,
    pub power_w: Option<f64>,
    pub sm_clock_mhz: Option<f64>,
    /// Last XID error code (0 = none).
    pub xid: Option<f64>,
}

/// Map a dcgm-exporter payload onto one sample per GPU.
pub fn extract_gpus(expo: &crate::metrics::Exposition<'_>) -> Vec<GpuSample> {
    let _ = expo;
    todo!("extract_gpus")
}
