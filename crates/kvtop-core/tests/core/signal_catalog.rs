//! The catalog against itself and against the two paths built from it.

use kvtop_core::fleet::QuantileWindow;
use kvtop_core::signals::promql::{LabelMap, QueryPlan};
use kvtop_core::signals::routes::{Part, Target, all, route_of};
use kvtop_core::signals::*;
use kvtop_core::signals::{Derivation, Kind, MetricId, Signal, Vendor};

#[test]
fn tables_are_in_enum_order() {
    for (i, def) in METRICS.iter().enumerate() {
        assert_eq!(def.id as usize, i, "{:?}", def.id);
        assert!(!def.names.is_empty(), "{:?}", def.id);
    }
    for (i, def) in SIGNALS.iter().enumerate() {
        assert_eq!(def.id as usize, i, "{}", def.name);
    }
}

#[test]
fn every_name_has_one_route_and_fits_the_direct_slots() {
    let table = all();
    for (i, (name, _)) in table.iter().enumerate() {
        assert!(
            table.iter().skip(i + 1).all(|(other, _)| other != name),
            "{name} twice"
        );
    }
    for def in &METRICS {
        assert!(
            def.ranks() <= kvtop_core::engine::alias::RANKS,
            "{:?}",
            def.id
        );
    }
}

/// `(full name, metric, rank, part)` for every name a vendor may export.
fn exported_names() -> Vec<(String, MetricId, usize, Part)> {
    let mut out = Vec::new();
    for def in &METRICS {
        for vendor in [Vendor::Vllm, Vendor::SGLang, Vendor::Process] {
            for (rank, name) in def.names_of(vendor).enumerate() {
                let parts: &[(&str, Part)] = if def.kind == Kind::Histogram {
                    &[
                        ("_bucket", Part::Bucket),
                        ("_sum", Part::Sum),
                        ("_count", Part::Count),
                    ]
                } else {
                    &[("", Part::Value)]
                };
                for prefix in vendor.prefixes() {
                    for (suffix, part) in parts {
                        out.push((
                            format!("{prefix}{}{suffix}", name.name),
                            def.id,
                            rank,
                            *part,
                        ));
                    }
                }
            }
        }
    }
    out
}

#[test]
fn every_vendor_name_is_recognised_by_the_direct_path() {
    for (name, metric, rank, part) in exported_names() {
        let route = route_of(&name).map(|r| r.target);
        assert_eq!(
            route,
            Some(Target::Metric {
                metric,
                rank: rank as u8,
                part
            }),
            "{name}"
        );
    }
    for name in EVIDENCE {
        for prefix in name.vendor.prefixes() {
            let full = format!("{prefix}{}", name.name);
            let route = route_of(&full);
            assert_eq!(route.map(|r| r.target), Some(Target::Evidence), "{full}");
            assert_eq!(route.and_then(|r| r.proves), name.proves, "{full}");
        }
    }
    for unread in [
        "vllm:iteration_tokens_total",
        "vllm:iteration_tokens_total_bucket",
        "vllm:prompt_tokens_created",
        "vllm:kv_cache_usage_perc_created",
        "kv_cache_usage_perc",
        "process_open_fds",
        "",
    ] {
        assert_eq!(route_of(unread), None, "{unread}");
    }
}

#[test]
fn every_vendor_name_appears_in_the_generated_promql() {
    let plan = QueryPlan::new(LabelMap::default(), QuantileWindow::M1, false);
    let promql: Vec<String> = plan
        .every_cycle()
        .into_iter()
        .chain(plan.slow())
        .map(|q| q.promql)
        .collect();
    let all = promql.join("\n");
    let derived_from = |id: MetricId| {
        SIGNALS.iter().any(|s| match s.derivation {
            Derivation::Raw(m)
            | Derivation::RawByName(m)
            | Derivation::Rate(m)
            | Derivation::Quantile(m, _)
            | Derivation::Capacity(m) => m == id,
            Derivation::Ratio {
                numerator,
                denominator,
                fallback,
            } => numerator.metric == id || denominator.metric == id || fallback == Some(id),
            Derivation::AcceptanceLength { accepted, drafts } => accepted == id || drafts == id,
        })
    };
    // Every metric read feeds a signal (the drafts counter the mean acceptance length).
    let underived: Vec<MetricId> = METRICS
        .iter()
        .map(|def| def.id)
        .filter(|id| !derived_from(*id))
        .collect();
    assert_eq!(underived, []);
    for def in METRICS.iter().filter(|def| derived_from(def.id)) {
        for name in def.names {
            let mut wanted = name.canonical();
            if def.kind == Kind::Histogram {
                wanted.push_str("_bucket");
            }
            // Whole names only: `vllm:x` must not be found as the start of `vllm:x_total`.
            let found = all.match_indices(&wanted).any(|(at, _)| {
                let next = all.get(at + wanted.len()..).and_then(|r| r.chars().next());
                !next.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
            });
            assert!(found, "{wanted} is not queried");
        }
    }
    // The failed-request definition is the catalog's.
    assert!(all.contains(&format!(
        "{FINISHED_REASON_LABEL}=~\"{}\"",
        FAILED_REASONS.join("|")
    )));
}

#[test]
fn backfill_and_history_keep_the_same_signals() {
    use kvtop_core::fleet::Series;
    let kept: Vec<&str> = SIGNALS
        .iter()
        .filter(|s| s.history)
        .map(|s| s.name)
        .collect();
    assert_eq!(kept.len(), Series::COUNT);
    // Each kept signal is the value of one history series.
    let mut signals = kvtop_core::fleet::Signals::default();
    for (i, def) in SIGNALS.iter().filter(|s| s.history).enumerate() {
        def.set(&mut signals, i as f64 + 1.0);
    }
    let mut values: Vec<f64> = Series::ALL
        .iter()
        .filter_map(|s| s.value(&signals))
        .collect();
    values.sort_by(f64::total_cmp);
    let expected: Vec<f64> = (1..=kept.len()).map(|i| i as f64).collect();
    assert_eq!(values, expected, "{kept:?}");
}

#[test]
fn each_signal_reads_and_writes_its_own_field() {
    for (i, def) in SIGNALS.iter().enumerate() {
        let mut signals = kvtop_core::fleet::Signals::default();
        def.set(&mut signals, i as f64);
        assert_eq!((def.get)(&signals), Some(i as f64), "{}", def.name);
        for other in SIGNALS.iter().filter(|o| o.id != def.id) {
            assert_eq!(
                (other.get)(&signals),
                None,
                "{} wrote {}",
                def.name,
                other.name
            );
        }
    }
}

#[test]
fn quantile_signals_of_one_histogram_share_a_query_name() {
    for def in &SIGNALS {
        if let Derivation::Quantile(histogram, _) = def.derivation {
            assert_eq!(metric(histogram).kind, Kind::Histogram, "{}", def.name);
            for other in &SIGNALS {
                if let Derivation::Quantile(h, _) = other.derivation {
                    assert_eq!(h == histogram, other.query == def.query, "{}", other.name);
                }
            }
        }
    }
    assert_eq!(signal(Signal::TtftP95).query, "ttft");
    assert_eq!(
        signal_named("ttft_p95").map(|s| s.id),
        Some(Signal::TtftP95)
    );
}

#[test]
fn ratio_pairs_have_one_name_per_rank_of_the_same_vendor() {
    for def in &SIGNALS {
        if let Derivation::Ratio {
            numerator,
            denominator,
            ..
        } = def.derivation
        {
            let vendors = |id: MetricId| -> Vec<Vendor> {
                metric(id).names.iter().map(|n| n.vendor).collect()
            };
            assert_eq!(
                vendors(numerator.metric),
                vendors(denominator.metric),
                "{}",
                def.name
            );
        }
    }
}
