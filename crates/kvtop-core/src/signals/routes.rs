//! Full exported names (prefix, name, histogram suffix) → what they carry, built once from the
//! catalog. The direct scrape looks a name up once per family, so this is on the hot path: one
//! hash of the name and one comparison, where a binary search over the 300-odd names made nine
//! (about a seventh of mapping a vLLM payload onto its engines).

use std::collections::HashMap;
use std::sync::OnceLock;

use foldhash::fast::FixedState;

use super::catalog::{EVIDENCE, METRICS};
use super::model::{Generation, Kind, MetricId, Vendor, VendorName};

/// Which series of a metric a name is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The value of a gauge, counter or info metric.
    Value,
    Bucket,
    Sum,
    Count,
}

/// What a name carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A catalog metric, under its `rank`-th name of the vendor (0 = preferred).
    Metric {
        metric: MetricId,
        rank: u8,
        part: Part,
    },
    /// Nothing read, but it tells which engine generation exported it.
    Evidence,
}

/// A known name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    pub target: Target,
    pub vendor: Vendor,
    pub proves: Option<Generation>,
}

/// The route of a full exported name (`vllm:kv_cache_usage_perc`,
/// `ray_vllm:e2e_request_latency_seconds_bucket`); `None` for names kvtop does not read.
pub fn route_of(name: &str) -> Option<Route> {
    table().get(name).copied()
}

/// Every full name with its route, as the catalog lists them (for tests and listings).
pub fn all() -> Vec<(Box<str>, Route)> {
    build()
}

/// Names are hashed with a fixed key: the table is built once and never takes a name from an
/// endpoint, so a payload can only look names up, never make a lookup slow.
fn table() -> &'static HashMap<Box<str>, Route, FixedState> {
    static TABLE: OnceLock<HashMap<Box<str>, Route, FixedState>> = OnceLock::new();
    TABLE.get_or_init(|| build().into_iter().collect())
}

const HISTOGRAM_PARTS: [(&str, Part); 3] = [
    ("_bucket", Part::Bucket),
    ("_sum", Part::Sum),
    ("_count", Part::Count),
];

fn build() -> Vec<(Box<str>, Route)> {
    let mut table = Vec::new();
    let mut add = |name: &VendorName, suffix: &str, target: Target| {
        for prefix in name.vendor.prefixes() {
            let full = format!("{prefix}{}{suffix}", name.name).into_boxed_str();
            let route = Route {
                target,
                vendor: name.vendor,
                proves: name.proves,
            };
            table.push((full, route));
        }
    };
    for def in &METRICS {
        for vendor in [Vendor::Vllm, Vendor::SGLang, Vendor::Process] {
            for (rank, name) in def.names_of(vendor).enumerate() {
                let rank = u8::try_from(rank).unwrap_or(u8::MAX);
                let target = |part| Target::Metric {
                    metric: def.id,
                    rank,
                    part,
                };
                if def.kind == Kind::Histogram {
                    for (suffix, part) in HISTOGRAM_PARTS {
                        add(name, suffix, target(part));
                    }
                } else {
                    add(name, "", target(Part::Value));
                }
            }
        }
    }
    for name in EVIDENCE {
        add(name, "", Target::Evidence);
    }
    table
}
