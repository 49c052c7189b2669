//! PURE. The `meta.k8s.io/v1` `Table` the API server answers `kubectl get` with: the same columns,
//! cell formats and placeholders as the real server's printers (k8s.io/kubernetes
//! `pkg/printers/internalversion`), so the real `kubectl` prints what it prints against a real
//! cluster. Like the real server, every column is sent (it prints "wide"); kubectl drops the
//! `priority: 1` columns itself unless asked for `-o wide`.

// The routes serve these tables once content negotiation asks for them (wired in routes.rs).

use serde_json::{Value, json};

mod columns;
mod pod;
mod printers;
mod values;

use super::kinds::Kind;
use columns::columns;
use printers::{
    deployment_row, endpoint_slice_row, event_row, hpa_row, node_row, pdb_row, replica_set_row,
    service_row,
};
use values::{age, name, text};

/// What each row carries besides its cells (`?includeObject=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum IncludeObject {
    None,
    /// A `PartialObjectMetadata` (the API server's default).
    #[default]
    Metadata,
    Object,
}

impl IncludeObject {
    /// The value of `?includeObject=`; `Err` carries the API server's 400 message.
    pub(crate) fn from_query(value: Option<&str>) -> Result<IncludeObject, String> {
        match value.unwrap_or("") {
            "None" => Ok(IncludeObject::None),
            "Metadata" | "" => Ok(IncludeObject::Metadata),
            "Object" => Ok(IncludeObject::Object),
            other => Err(format!("unrecognized includeObject value: {other:?}")),
        }
    }
}

/// How to render a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TableOptions {
    pub include_object: IncludeObject,
    /// `false` leaves the column definitions out (watch events after the first).
    pub headers: bool,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            include_object: IncludeObject::Metadata,
            headers: true,
        }
    }
}

/// The table of `items` (objects as the JSON API returns them) of `kind`; `list_metadata` is the
/// list's metadata (`resourceVersion`, `continue`, `remainingItemCount`), `now` simulated seconds
/// since the Unix epoch (ages are counted to it).
pub(crate) fn table(
    kind: Kind,
    items: &[Value],
    list_metadata: Value,
    now: f64,
    opts: &TableOptions,
) -> Value {
    let rows: Vec<Value> = items
        .iter()
        .map(|item| {
            let (cells, conditions) = row_cells(kind, item, now);
            let mut row = json!({
                "cells": cells,
                "object": row_object(item, opts.include_object),
            });
            if !conditions.is_empty() {
                row["conditions"] = Value::Array(conditions);
            }
            row
        })
        .collect();
    // The real server's Table has no `omitempty` on these: without headers the definitions
    // are `null`, and `metadata` is always there.
    let column_definitions = if opts.headers {
        Value::Array(columns(kind).iter().map(|c| c.definition()).collect())
    } else {
        Value::Null
    };
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta(&list_metadata),
        "columnDefinitions": column_definitions,
        "rows": rows,
    })
}

/// The `ListMeta` fields a table keeps from its list.
fn list_meta(meta: &Value) -> Value {
    let mut out = serde_json::Map::new();
    for key in ["resourceVersion", "continue"] {
        if let Some(v) = meta[key].as_str().filter(|s| !s.is_empty()) {
            out.insert(key.to_owned(), v.into());
        }
    }
    if let Some(n) = meta["remainingItemCount"].as_i64() {
        out.insert("remainingItemCount".to_owned(), n.into());
    }
    Value::Object(out)
}

/// A row's `object`; the real server writes `null` when told to include none.
fn row_object(item: &Value, include: IncludeObject) -> Value {
    match include {
        IncludeObject::None => Value::Null,
        IncludeObject::Metadata => json!({
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": item["metadata"].clone(),
        }),
        IncludeObject::Object => item.clone(),
    }
}

/// A row's cells and its conditions (only finished pods have any).
fn row_cells(kind: Kind, obj: &Value, now: f64) -> (Vec<Value>, Vec<Value>) {
    let cells = match kind {
        Kind::Pod => return pod::pod_row(obj, now),
        Kind::Node => node_row(obj, now),
        Kind::Namespace => vec![
            name(obj).into(),
            text(&obj["status"]["phase"]).into(),
            age(obj, now).into(),
        ],
        Kind::Service => service_row(obj, now),
        Kind::Event => event_row(obj, now),
        Kind::EndpointSlice => endpoint_slice_row(obj, now),
        Kind::Deployment => deployment_row(obj, now),
        Kind::ReplicaSet => replica_set_row(obj, now),
        Kind::Hpa => hpa_row(obj, now),
        Kind::Pdb => pdb_row(obj, now),
        Kind::InferencePool | Kind::ScaledObject => vec![name(obj).into(), age(obj, now).into()],
    };
    (cells, Vec::new())
}

#[cfg(test)]
mod tests;
