//! PURE. Renders one node's dcgm-exporter `/metrics` body: one series per GPU for each field,
//! with dcgm-exporter's HELP texts, label names and order, and its Kubernetes pod mapping
//! (`container`, `namespace`, `pod`) on GPUs that a pod holds.

use std::fmt::Write;

use super::format::push_label_value;
use super::gpu::GpuModel;

/// The pod holding a GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PodRef<'a> {
    pub pod: &'a str,
    pub namespace: &'a str,
    pub container: &'a str,
}

/// One GPU as the exporter sees it.
#[derive(Debug, Clone, Copy)]
pub struct GpuView<'a> {
    pub index: u32,
    pub uuid: &'a str,
    pub pci_bus_id: &'a str,
    pub hostname: &'a str,
    pub pod: Option<PodRef<'a>>,
    pub gpu: &'a GpuModel,
}

/// A value printed the way dcgm-exporter prints it.
enum Reading {
    Int(u64),
    /// Printed with six decimals, like dcgm-exporter's `%f`.
    Fixed(f64),
}

/// The exported fields: name, HELP text, TYPE, and how to read each from a GPU.
type Field = (
    &'static str,
    &'static str,
    &'static str,
    fn(&GpuModel) -> Reading,
);

const FIELDS: &[Field] = &[
    (
        "DCGM_FI_DEV_SM_CLOCK",
        "SM clock frequency (in MHz).",
        "gauge",
        |g| Reading::Int(u64::from(g.sm_clock_mhz())),
    ),
    (
        "DCGM_FI_DEV_GPU_TEMP",
        "GPU temperature (in C).",
        "gauge",
        |g| Reading::Int(u64::from(g.temp_c())),
    ),
    (
        "DCGM_FI_DEV_POWER_USAGE",
        "Power draw (in W).",
        "gauge",
        |g| Reading::Fixed(g.power_w()),
    ),
    (
        "DCGM_FI_DEV_GPU_UTIL",
        "GPU utilization (in %).",
        "gauge",
        |g| Reading::Int(u64::from(g.util_pct())),
    ),
    (
        "DCGM_FI_DEV_XID_ERRORS",
        "Value of the last XID error encountered.",
        "gauge",
        |g| Reading::Int(u64::from(g.xid())),
    ),
    (
        "DCGM_FI_DEV_FB_FREE",
        "Framebuffer memory free (in MiB).",
        "gauge",
        |g| Reading::Int(g.fb_free_mib()),
    ),
    (
        "DCGM_FI_DEV_FB_USED",
        "Framebuffer memory used (in MiB).",
        "gauge",
        |g| Reading::Int(g.fb_used_mib()),
    ),
    (
        "DCGM_FI_DEV_FB_RESERVED",
        "Framebuffer memory reserved (in MiB).",
        "gauge",
        |g| Reading::Int(g.fb_reserved_mib()),
    ),
];

/// Render the node's GPUs into `out` (cleared first).
pub fn render(out: &mut String, gpus: &[GpuView<'_>]) {
    out.clear();
    let labels: Vec<String> = gpus.iter().map(labels_of).collect();
    for (name, help, kind, read) in FIELDS {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} {kind}");
        for (view, labels) in gpus.iter().zip(&labels) {
            let _ = match read(view.gpu) {
                Reading::Int(v) => writeln!(out, "{name}{{{labels}}} {v}"),
                Reading::Fixed(v) => writeln!(out, "{name}{{{labels}}} {v:.6}"),
            };
        }
    }
}

fn labels_of(view: &GpuView<'_>) -> String {
    let mut s = String::with_capacity(256);
    let label = |s: &mut String, name: &str, value: &str| {
        if !s.is_empty() {
            s.push(',');
        }
        s.push_str(name);
        s.push_str("=\"");
        push_label_value(s, value);
        s.push('"');
    };
    label(&mut s, "gpu", &view.index.to_string());
    label(&mut s, "UUID", view.uuid);
    label(&mut s, "pci_bus_id", view.pci_bus_id);
    label(&mut s, "device", &format!("nvidia{}", view.index));
    label(&mut s, "modelName", view.gpu.spec().name);
    label(&mut s, "Hostname", view.hostname);
    if let Some(pod) = view.pod {
        label(&mut s, "container", pod.container);
        label(&mut s, "namespace", pod.namespace);
        label(&mut s, "pod", pod.pod);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::H100_SXM;

    #[test]
    fn renders_one_series_per_gpu_with_pod_mapping_only_where_a_pod_runs() {
        let busy = {
            let mut g = GpuModel::new(H100_SXM, 0.0);
            g.advance_to(1.0, 0.5, 0.9);
            g
        };
        let idle = GpuModel::new(H100_SXM, 0.0);
        let views = [
            GpuView {
                index: 0,
                uuid: "GPU-a",
                pci_bus_id: "00000000:18:00.0",
                hostname: "gpu-node-00",
                pod: Some(PodRef {
                    pod: "vllm-llama-8b-abcde-fghjk",
                    namespace: "llm",
                    container: "vllm",
                }),
                gpu: &busy,
            },
            GpuView {
                index: 1,
                uuid: "GPU-b",
                pci_bus_id: "00000000:2A:00.0",
                hostname: "gpu-node-00",
                pod: None,
                gpu: &idle,
            },
        ];
        let mut out = String::new();
        render(&mut out, &views);
        assert!(out.contains(
            "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-a\",pci_bus_id=\"00000000:18:00.0\",\
             device=\"nvidia0\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"gpu-node-00\",\
             container=\"vllm\",namespace=\"llm\",pod=\"vllm-llama-8b-abcde-fghjk\"} 50\n"
        ));
        assert!(out.contains(
            "DCGM_FI_DEV_FB_USED{gpu=\"1\",UUID=\"GPU-b\",pci_bus_id=\"00000000:2A:00.0\",\
             device=\"nvidia1\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"gpu-node-00\"} 0\n"
        ));
        assert!(out.contains("# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).\n"));
        assert!(out.contains("DCGM_FI_DEV_POWER_USAGE{gpu=\"1\""));
        let power_line = out
            .lines()
            .find(|l| l.starts_with("DCGM_FI_DEV_POWER_USAGE{gpu=\"1\""))
            .unwrap_or_default();
        assert!(power_line.ends_with(" 72.000000"), "{power_line}");
        for (name, _, _, _) in FIELDS {
            let series = out
                .lines()
                .filter(|l| l.starts_with(&format!("{name}{{")))
                .count();
            assert_eq!(series, 2, "{name}");
        }
    }
    #[test]
    fn the_kvtop_parser_reads_the_dcgm_body() {
        let gpu = GpuModel::new(H100_SXM, 0.0);
        let views: Vec<GpuView<'_>> = (0..8)
            .map(|i| GpuView {
                index: i,
                uuid: "GPU-0",
                pci_bus_id: "00000000:18:00.0",
                hostname: "gpu-node-00",
                pod: None,
                gpu: &gpu,
            })
            .collect();
        let mut out = String::new();
        render(&mut out, &views);
        let expo = kvtop_core::metrics::parse(&out);
        assert_eq!(expo.malformed, 0, "{:?}", expo.errors);
        assert_eq!(expo.samples.len(), FIELDS.len() * 8);
    }
}
