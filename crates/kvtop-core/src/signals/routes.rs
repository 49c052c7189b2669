//! Full exported names (prefix, name, histogram suffix) → what they carry, built once from the
//! catalog. The direct scrape looks a name up once per family, so this is on the hot path: the
//! table is sorted by length then bytes, and a binary search mostly compares lengths.

use std::cmp::Ordering;
use std::sync::OnceLock;

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
    let table = table();
    table
        .binary_search_by(|(known, _)| by_length_then_bytes(known, name))
        .ok()
        .and_then(|i| table.get(i))
        .map(|(_, route)| *route)
}

/// Every full name with its route (for tests and listings).
pub fn all() -> &'static [(Box<str>, Route)] {
    table()
}

fn by_length_then_bytes(a: &str, b: &str) -> Ordering {
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

fn table() -> &'static [(Box<str>, Route)] {
    static TABLE: OnceLock<Vec<(Box<str>, Route)>> = OnceLock::new();
    TABLE.get_or_init(build)
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
    table.sort_by(|(a, _), (b, _)| by_length_then_bytes(a, b));
    table
}
