//! DCGM exporter metrics mapped onto one typed sample per GPU.

use crate::metrics::parser::unescape;
use crate::metrics::{Exposition, LabelIter};

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
///
/// A GPU is identified by (`Hostname`|`hostname`, `gpu`, `UUID`) and appears as soon as any
/// `DCGM_FI_*` series names it, in order of first appearance; series without a `gpu` label
/// (exporter-level or placeholder values) are skipped. Kubernetes mapping: `exported_pod` /
/// `exported_namespace` first (Prometheus renamed the workload's own labels there because its
/// `pod`/`namespace` then name the exporter), then `pod` / `namespace`, then the old
/// `pod_name` / `pod_namespace`.
pub fn extract_gpus(expo: &Exposition<'_>) -> Vec<GpuSample> {
    let mut gpus: Vec<GpuParts<'_>> = Vec::new();
    for sample in &expo.samples {
        let Some(field) = sample.name.strip_prefix("DCGM_FI_") else {
            continue;
        };
        let labels = GpuLabels::scan(sample.labels_raw);
        let Some(gpu) = labels.gpu else {
            continue;
        };
        let key = (
            labels.hostname.unwrap_or(""),
            gpu,
            labels.uuid.unwrap_or(""),
        );
        let index = match gpus.iter().position(|g| g.key == key) {
            Some(index) => index,
            None => {
                gpus.push(GpuParts::new(key, labels.model_name.unwrap_or("")));
                gpus.len() - 1
            }
        };
        let Some(parts) = gpus.get_mut(index) else {
            continue;
        };
        parts.pod = parts.pod.or(labels.pod());
        parts.namespace = parts.namespace.or(labels.namespace());
        let value = Some(sample.value).filter(|v| !v.is_nan());
        let slot = match field {
            "DEV_GPU_UTIL" => &mut parts.sample.util_pct,
            "DEV_FB_USED" => &mut parts.sample.fb_used_mib,
            "DEV_FB_FREE" => &mut parts.sample.fb_free_mib,
            "DEV_FB_RESERVED" => &mut parts.sample.fb_reserved_mib,
            "DEV_GPU_TEMP" => &mut parts.sample.temp_c,
            "DEV_POWER_USAGE" => &mut parts.sample.power_w,
            "DEV_SM_CLOCK" => &mut parts.sample.sm_clock_mhz,
            "DEV_XID_ERRORS" => &mut parts.sample.xid,
            _ => continue,
        };
        if value.is_some() {
            *slot = value;
        }
    }
    gpus.into_iter().map(GpuParts::finish).collect()
}

/// Raw (still escaped) label values of one DCGM series.
#[derive(Default)]
struct GpuLabels<'a> {
    gpu: Option<&'a str>,
    uuid: Option<&'a str>,
    model_name: Option<&'a str>,
    hostname: Option<&'a str>,
    pod: Option<&'a str>,
    namespace: Option<&'a str>,
    exported_pod: Option<&'a str>,
    exported_namespace: Option<&'a str>,
    pod_name: Option<&'a str>,
    pod_namespace: Option<&'a str>,
}

impl<'a> GpuLabels<'a> {
    fn scan(labels_raw: &'a str) -> Self {
        let mut labels = GpuLabels::default();
        let mut iter = LabelIter::new(labels_raw);
        while let Some(label) = iter.next_raw() {
            let slot = match label.name {
                "gpu" => &mut labels.gpu,
                "UUID" => &mut labels.uuid,
                "modelName" => &mut labels.model_name,
                "Hostname" | "hostname" => &mut labels.hostname,
                "pod" => &mut labels.pod,
                "namespace" => &mut labels.namespace,
                "exported_pod" => &mut labels.exported_pod,
                "exported_namespace" => &mut labels.exported_namespace,
                "pod_name" => &mut labels.pod_name,
                "pod_namespace" => &mut labels.pod_namespace,
                _ => continue,
            };
            *slot = Some(label.value);
        }
        labels
    }

    fn pod(&self) -> Option<&'a str> {
        first_non_empty([self.exported_pod, self.pod, self.pod_name])
    }

    fn namespace(&self) -> Option<&'a str> {
        first_non_empty([self.exported_namespace, self.namespace, self.pod_namespace])
    }
}

fn first_non_empty(candidates: [Option<&str>; 3]) -> Option<&str> {
    candidates.into_iter().flatten().find(|v| !v.is_empty())
}

/// One GPU while the payload is read: identity and pod mapping still borrowed.
struct GpuParts<'a> {
    key: (&'a str, &'a str, &'a str),
    model_name: &'a str,
    pod: Option<&'a str>,
    namespace: Option<&'a str>,
    sample: GpuSample,
}

impl<'a> GpuParts<'a> {
    fn new(key: (&'a str, &'a str, &'a str), model_name: &'a str) -> Self {
        GpuParts {
            key,
            model_name,
            pod: None,
            namespace: None,
            sample: GpuSample::default(),
        }
    }

    fn finish(self) -> GpuSample {
        let (hostname, gpu, uuid) = self.key;
        let owned = |raw: &str| unescape(raw).into_owned();
        GpuSample {
            gpu: owned(gpu),
            uuid: owned(uuid),
            model_name: owned(self.model_name),
            hostname: owned(hostname),
            pod: self.pod.map(owned),
            namespace: self.namespace.map(owned),
            ..self.sample
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::parse;

    fn gpus(payload: &str) -> Vec<GpuSample> {
        let expo = parse(payload);
        assert_eq!(expo.malformed, 0, "{:?}", expo.errors);
        extract_gpus(&expo)
    }

    #[test]
    fn one_sample_per_gpu_with_every_field() {
        let all = gpus(
            "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"U0\",modelName=\"H100\",hostname=\"n1\"} 87\n\
             DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",UUID=\"U1\",modelName=\"H100\",hostname=\"n1\"} 12\n\
             DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"U0\",modelName=\"H100\",hostname=\"n1\"} 70000\n\
             DCGM_FI_DEV_FB_FREE{gpu=\"0\",UUID=\"U0\",modelName=\"H100\",hostname=\"n1\"} 10000\n\
             DCGM_FI_DEV_FB_RESERVED{gpu=\"0\",UUID=\"U0\",modelName=\"H100\",hostname=\"n1\"} 500\n\
             DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"U0\",modelName=\"H100\",hostname=\"n1\"} 61\n\
             DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"U0\",modelName=\"H100\",hostname=\"n1\"} 512.5\n\
             DCGM_FI_DEV_SM_CLOCK{gpu=\"0\",UUID=\"U0\",modelName=\"H100\",hostname=\"n1\"} 1980\n\
             DCGM_FI_DEV_XID_ERRORS{gpu=\"0\",UUID=\"U0\",modelName=\"H100\",hostname=\"n1\",err_code=\"79\"} 79\n\
             DCGM_FI_DEV_MEM_CLOCK{gpu=\"0\",UUID=\"U0\",modelName=\"H100\",hostname=\"n1\"} 2619\n",
        );
        assert_eq!(all.len(), 2);
        assert_eq!(
            all[0],
            GpuSample {
                gpu: "0".into(),
                uuid: "U0".into(),
                model_name: "H100".into(),
                hostname: "n1".into(),
                pod: None,
                namespace: None,
                util_pct: Some(87.0),
                fb_used_mib: Some(70000.0),
                fb_free_mib: Some(10000.0),
                fb_reserved_mib: Some(500.0),
                temp_c: Some(61.0),
                power_w: Some(512.5),
                sm_clock_mhz: Some(1980.0),
                xid: Some(79.0),
            }
        );
        assert_eq!(all[1].gpu, "1");
        assert_eq!(all[1].util_pct, Some(12.0));
        assert_eq!(all[1].temp_c, None);
    }

    #[test]
    fn series_without_a_gpu_label_are_skipped() {
        assert!(
            gpus("DCGM_FI_DEV_GPU_UTIL 0\nDCGM_FI_DEV_FAN_SPEED{Hostname=\"h\"} 0\n").is_empty()
        );
    }

    #[test]
    fn same_index_on_two_hosts_is_two_gpus() {
        let all = gpus(
            "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"A\",Hostname=\"h1\"} 40\n\
             DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"B\",Hostname=\"h2\"} 50\n",
        );
        let hosts: Vec<(&str, Option<f64>)> = all
            .iter()
            .map(|g| (g.hostname.as_str(), g.temp_c))
            .collect();
        assert_eq!(hosts, vec![("h1", Some(40.0)), ("h2", Some(50.0))]);
    }

    #[test]
    fn kubernetes_mapping_labels_in_order_of_trust() {
        let exported = gpus(
            "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",pod=\"dcgm-exporter-x\",namespace=\"gpu-operator\",exported_pod=\"vllm-0\",exported_namespace=\"llm\"} 1\n",
        );
        assert_eq!(exported[0].pod.as_deref(), Some("vllm-0"));
        assert_eq!(exported[0].namespace.as_deref(), Some("llm"));
        let direct = gpus("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",pod=\"vllm-1\",namespace=\"llm\"} 1\n");
        assert_eq!(direct[0].pod.as_deref(), Some("vllm-1"));
        assert_eq!(direct[0].namespace.as_deref(), Some("llm"));
        let old =
            gpus("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",pod_name=\"vllm-2\",pod_namespace=\"old\"} 1\n");
        assert_eq!(old[0].pod.as_deref(), Some("vllm-2"));
        assert_eq!(old[0].namespace.as_deref(), Some("old"));
        let empty = gpus("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",pod=\"\",namespace=\"\"} 1\n");
        assert_eq!(empty[0].pod, None);
        assert_eq!(empty[0].namespace, None);
    }

    #[test]
    fn nan_readings_stay_unknown() {
        let all =
            gpus("DCGM_FI_DEV_POWER_USAGE{gpu=\"0\"} NaN\nDCGM_FI_DEV_GPU_TEMP{gpu=\"0\"} 33\n");
        assert_eq!(all[0].power_w, None);
        assert_eq!(all[0].temp_c, Some(33.0));
    }
}
