//! Reading fields of stored objects and writing them as the printers do: Go's zero values for
//! absent fields, ages, quantities, label selectors.

use std::collections::BTreeSet;

use serde_json::Value;

/// A string field, `""` when absent (Go's zero value, which the printers start from).
pub(super) fn text(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

/// An integer field, 0 when absent.
pub(super) fn int(v: &Value) -> i64 {
    v.as_i64().unwrap_or(0)
}

pub(super) fn array(v: &Value) -> &[Value] {
    v.as_array().map_or(&[], Vec::as_slice)
}

pub(super) fn name(obj: &Value) -> &str {
    text(&obj["metadata"]["name"])
}

pub(super) fn or_placeholder(s: &str, placeholder: &str) -> String {
    if s.is_empty() {
        placeholder.to_owned()
    } else {
        s.to_owned()
    }
}

/// A `metav1.Time` in seconds since the epoch; `None` for the zero time (absent or unreadable).
pub(super) fn timestamp(v: &Value) -> Option<f64> {
    let t = v.as_str()?.parse::<k8s_openapi::jiff::Timestamp>().ok()?;
    Some(t.as_second() as f64 + f64::from(t.subsec_nanosecond()) / 1e9)
}

/// How long ago `v` was, as the printers write it (`<unknown>` for the zero time).
pub(super) fn since(v: &Value, now: f64) -> String {
    match timestamp(v) {
        Some(t) => human_duration(now - t),
        None => "<unknown>".to_owned(),
    }
}

pub(super) fn age(obj: &Value, now: f64) -> String {
    since(&obj["metadata"]["creationTimestamp"], now)
}

/// A duration in seconds the way `kubectl` and the API server write ages (apimachinery's
/// `HumanDuration`): two significant units at most, coarser as it grows; up to a second in the
/// future is clock skew and reads `0s`, beyond that `<invalid>`.
pub(super) fn human_duration(seconds: f64) -> String {
    // Whole seconds, truncated towards zero as Go's int(d.Seconds()).
    let secs = seconds.trunc() as i64;
    if secs < -1 {
        return "<invalid>".to_owned();
    }
    if secs < 0 {
        return "0s".to_owned();
    }
    if secs < 120 {
        return format!("{secs}s");
    }
    let minutes = secs / 60;
    if minutes < 10 {
        return with_remainder(minutes, "m", secs % 60, "s");
    }
    if minutes < 3 * 60 {
        return format!("{minutes}m");
    }
    let hours = secs / 3600;
    if hours < 8 {
        return with_remainder(hours, "h", minutes % 60, "m");
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    let days = hours / 24;
    if hours < 24 * 8 {
        return with_remainder(days, "d", hours % 24, "h");
    }
    if hours < 24 * 365 * 2 {
        return format!("{days}d");
    }
    let years = days / 365;
    if hours < 24 * 365 * 8 {
        return with_remainder(years, "y", days % 365, "d");
    }
    format!("{years}y")
}

fn with_remainder(major: i64, major_unit: &str, minor: i64, minor_unit: &str) -> String {
    if minor == 0 {
        format!("{major}{major_unit}")
    } else {
        format!("{major}{major_unit}{minor}{minor_unit}")
    }
}

/// A `resource.Quantity` as written; a missing one prints as Go prints a nil quantity.
pub(super) fn quantity(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => "<nil>".to_owned(),
    }
}

/// An `IntOrString`.
pub(super) fn int_or_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Labels as `k=v,k=v` sorted by key (`labels.FormatLabels`), `<none>` when there are none.
pub(super) fn format_labels(map: &Value) -> String {
    let Some(map) = map.as_object().filter(|m| !m.is_empty()) else {
        return "<none>".to_owned();
    };
    // serde_json's map is ordered by key.
    map.iter()
        .map(|(k, v)| format!("{k}={}", text(v)))
        .collect::<Vec<_>>()
        .join(",")
}

/// A `metav1.LabelSelector` as selector text (`LabelSelectorAsSelector(..).String()`):
/// requirements sorted by key, `""` for an absent or empty selector, `Err` when an operator or
/// its values are invalid.
pub(super) fn selector_string(selector: &Value) -> Result<String, ()> {
    let mut requirements: Vec<(String, String)> = Vec::new();
    if let Some(labels) = selector["matchLabels"].as_object() {
        for (k, v) in labels {
            requirements.push((k.clone(), format!("{k}={}", text(v))));
        }
    }
    for expr in array(&selector["matchExpressions"]) {
        let key = text(&expr["key"]);
        let values: BTreeSet<&str> = array(&expr["values"]).iter().map(text).collect();
        let joined = values.iter().copied().collect::<Vec<_>>().join(",");
        let rendered = match text(&expr["operator"]) {
            "In" if !values.is_empty() => format!("{key} in ({joined})"),
            "NotIn" if !values.is_empty() => format!("{key} notin ({joined})"),
            "Exists" if values.is_empty() => key.to_owned(),
            "DoesNotExist" if values.is_empty() => format!("!{key}"),
            _ => return Err(()),
        };
        requirements.push((key.to_owned(), rendered));
    }
    requirements.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(requirements
        .into_iter()
        .map(|(_, r)| r)
        .collect::<Vec<_>>()
        .join(","))
}

/// Container names and images of a pod template, comma-separated.
pub(super) fn container_cells(template: &Value) -> (String, String) {
    let containers = array(&template["spec"]["containers"]);
    let names: Vec<&str> = containers.iter().map(|c| text(&c["name"])).collect();
    let images: Vec<&str> = containers.iter().map(|c| text(&c["image"])).collect();
    (names.join(","), images.join(","))
}

/// Up to three items, then `+ N more...`; `<unset>` for none.
pub(super) fn list_with_more(items: Vec<String>) -> String {
    const SHOWN: usize = 3;
    let total = items.len();
    let shown = items.into_iter().take(SHOWN).collect::<Vec<_>>().join(",");
    if total > SHOWN {
        format!("{shown} + {} more...", total - SHOWN)
    } else if shown.is_empty() {
        "<unset>".to_owned()
    } else {
        shown
    }
}
