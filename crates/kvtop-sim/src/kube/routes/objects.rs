//! Collections and objects of every kind: list (JSON or server-side Table), watch, get,
//! patch, delete, and the `deployments/scale` subresource.

use std::sync::Arc;
use std::time::Duration;

use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::{Req, Shared, respond, respond_as, truthy};
use crate::kube::cluster::{DeleteOptions, check_fields};
use crate::kube::kinds::Kind;
use crate::kube::patch::{self, PatchError, PatchKind};
use crate::kube::status::{ApiError, json_body};
use crate::kube::table::{self, IncludeObject, TableOptions};
use crate::kube::watch::{self, WatchRequest};
use crate::kube::wire::{self, BodyKind, ProtobufKind, Representation};
use kvtop_core::kube_model::{FieldSelector, LabelSelector};

fn selectors(req: &Req) -> Result<(LabelSelector, FieldSelector), ApiError> {
    let text = |key: &str| req.query.get(key).map_or("", String::as_str);
    let labels = LabelSelector::parse(text("labelSelector"))
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let fields = FieldSelector::parse(text("fieldSelector"))
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    Ok((labels, fields))
}

/// `?includeObject=` of a Table request (the API server's default is `Metadata`).
fn include_object(req: &Req) -> Result<IncludeObject, ApiError> {
    IncludeObject::from_query(req.query.get("includeObject").map(String::as_str))
        .map_err(ApiError::bad_request)
}

/// The response in the representation the client asked for: JSON as is, or a Table of the
/// list's items (or of the one object).
fn represent(s: &Shared, kind: Kind, req: &Req, value: Value) -> Response {
    let chosen = match wire::negotiate_without_protobuf(req.accept()) {
        Ok(chosen) => chosen,
        Err(err) => return err.into_response(),
    };
    match chosen {
        Representation::Table => {
            let include = match include_object(req) {
                Ok(include) => include,
                Err(err) => return err.into_response(),
            };
            let (items, metadata) = match value.get("items").and_then(Value::as_array) {
                Some(items) => (items.clone(), value["metadata"].clone()),
                None => (
                    vec![value.clone()],
                    json!({"resourceVersion": value["metadata"]["resourceVersion"]}),
                ),
            };
            let opts = TableOptions {
                include_object: include,
                headers: true,
            };
            json_body(&table::table(
                kind,
                &items,
                metadata,
                s.engines.now(),
                &opts,
            ))
        }
        Representation::Json | Representation::Protobuf => json_body(&value),
    }
}

/// GET on a collection: a list, or a watch with `?watch=true`.
pub(super) fn list_or_watch(s: Arc<Shared>, kind: Kind, req: Req) -> Response {
    let watching = truthy(&req.query, "watch");
    let verb = if watching { "watch" } else { "list" };
    let checked = s.with_cluster(|c, _| c.authorize(&req.target.access(verb, kind, None)));
    let checked = checked.and_then(|()| {
        let (labels, fields) = selectors(&req)?;
        check_fields(kind, &fields)?;
        Ok((labels, fields))
    });
    let (labels, fields) = match checked {
        Ok(selected) => selected,
        Err(err) => return err.into_response(),
    };
    if watching {
        return start_watch(s, kind, &req, labels, fields);
    }
    let limit = req.query.get("limit").and_then(|l| l.parse().ok());
    let result = s.with_cluster(|c, _| {
        c.list(
            kind,
            req.target.namespace.as_deref(),
            &labels,
            &fields,
            limit,
            req.query.get("continue").map(String::as_str),
        )
    });
    match result {
        Ok(list) => represent(&s, kind, &req, list),
        Err(err) => err.into_response(),
    }
}

fn start_watch(
    s: Arc<Shared>,
    kind: Kind,
    req: &Req,
    labels: LabelSelector,
    fields: FieldSelector,
) -> Response {
    let since = match req.query.get("resourceVersion").map(String::as_str) {
        None | Some("") | Some("0") => None,
        Some(rv) => match rv.parse::<u64>() {
            Ok(rv) => Some(rv),
            Err(_) => {
                return ApiError::bad_request(format!("resourceVersion: Invalid value: {rv:?}"))
                    .into_response();
            }
        },
    };
    let timeout = req
        .query
        .get("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .map(Duration::from_secs);
    let render: Option<watch::Render> = match wire::negotiate_without_protobuf(req.accept()) {
        Ok(Representation::Table) => {
            let include = match include_object(req) {
                Ok(include) => include,
                Err(err) => return err.into_response(),
            };
            Some(Arc::new(
                move |kind: Kind, obj: &Value, now: f64, first: bool| {
                    let opts = TableOptions {
                        include_object: include,
                        headers: first,
                    };
                    let metadata = json!({"resourceVersion": obj["metadata"]["resourceVersion"]});
                    table::table(kind, std::slice::from_ref(obj), metadata, now, &opts)
                },
            ))
        }
        Ok(_) => None,
        Err(err) => return err.into_response(),
    };
    watch::serve(
        s,
        WatchRequest {
            kind,
            namespace: req.target.namespace.clone(),
            labels,
            fields,
            since,
            timeout,
            bookmarks: truthy(&req.query, "allowWatchBookmarks"),
            initial_events_end: truthy(&req.query, "sendInitialEvents"),
            render,
        },
    )
}

/// GET on one object (also `pods/status` and `deployments/status`).
pub(super) fn get_one(s: Arc<Shared>, kind: Kind, req: Req) -> Response {
    let result = s.with_cluster(|c, _| {
        c.authorize(&req.target.access("get", kind, None))?;
        c.get(kind, req.target.namespace.as_deref(), req.target.name())
    });
    match result {
        Ok(obj) => represent(&s, kind, &req, obj),
        Err(err) => err.into_response(),
    }
}

/// A patch body: JSON of a patch type the API accepts.
fn patch_body(req: &Req) -> Result<(PatchKind, Value), ApiError> {
    let content_type = req.content_type().unwrap_or("");
    let patch_kind = PatchKind::from_content_type(content_type)
        .ok_or_else(|| ApiError::unsupported_media(content_type))?;
    let body = serde_json::from_slice(&req.body)
        .map_err(|e| ApiError::bad_request(format!("the patch is not JSON: {e}")))?;
    Ok((patch_kind, body))
}

pub(super) fn patch(s: Arc<Shared>, kind: Kind, req: Req) -> Response {
    let (patch_kind, body) = match patch_body(&req) {
        Ok(parsed) => parsed,
        Err(err) => return err.into_response(),
    };
    respond(s.with_cluster(|c, now| {
        c.authorize(&req.target.access("patch", kind, None))?;
        c.patch(
            kind,
            req.target.namespace.as_deref(),
            req.target.name(),
            patch_kind,
            &body,
            req.dry_run(),
            now,
            &s.engines,
        )
    }))
}

/// `DeleteOptions` from the body (JSON or protobuf) and the query, validated as the API
/// server validates them.
pub(super) fn delete_options(req: &Req, body: &Value) -> Result<DeleteOptions, ApiError> {
    let dry_run_values: Vec<String> = match &body["dryRun"] {
        Value::Array(values) => values
            .iter()
            .map(|v| v.as_str().unwrap_or("").to_owned())
            .collect(),
        _ => req.query.get("dryRun").cloned().into_iter().collect(),
    };
    for value in &dry_run_values {
        if value != "All" {
            return Err(ApiError::bad_request(format!(
                "dryRun: Unsupported value: \"{value}\": supported values: \"All\""
            )));
        }
    }
    let grace_seconds = match body["gracePeriodSeconds"].as_i64() {
        Some(g) => Some(g),
        None => match req.query.get("gracePeriodSeconds") {
            Some(g) => Some(g.parse::<i64>().map_err(|_| {
                ApiError::bad_request(format!("gracePeriodSeconds: {g:?} is not a number"))
            })?),
            None => None,
        },
    };
    if grace_seconds.is_some_and(|g| g < 0) {
        return Err(ApiError::invalid(
            "DeleteOptions",
            "",
            "gracePeriodSeconds: Invalid value: must be >= 0",
        ));
    }
    let policy = body["propagationPolicy"]
        .as_str()
        .map(str::to_owned)
        .or_else(|| req.query.get("propagationPolicy").cloned());
    if let Some(policy) = policy.as_deref() {
        if !matches!(policy, "Orphan" | "Background" | "Foreground") {
            return Err(ApiError::invalid(
                "DeleteOptions",
                "",
                &format!(
                    "propagationPolicy: Unsupported value: \"{policy}\": supported values: \"Foreground\", \"Background\", \"Orphan\""
                ),
            ));
        }
    }
    let precondition = |key: &str| body["preconditions"][key].as_str().map(str::to_owned);
    Ok(DeleteOptions {
        dry_run: !dry_run_values.is_empty(),
        uid: precondition("uid"),
        resource_version: precondition("resourceVersion"),
        grace_seconds,
    })
}

pub(super) fn delete(s: Arc<Shared>, kind: Kind, req: Req) -> Response {
    let opts = wire::decode_body(req.content_type(), &req.body, BodyKind::DeleteOptions)
        .and_then(|body| delete_options(&req, &body));
    let opts = match opts {
        Ok(opts) => opts,
        Err(err) => return err.into_response(),
    };
    respond(s.with_cluster(|c, now| {
        c.authorize(&req.target.access("delete", kind, None))?;
        c.get(kind, req.target.namespace.as_deref(), req.target.name())?;
        c.delete_pod(req.target.name(), &opts, now, &s.engines)
    }))
}

/// GET `deployments/NAME/scale`.
pub(super) fn get_scale(s: Arc<Shared>, kind: Kind, req: Req) -> Response {
    scale_response(
        &req,
        s.with_cluster(|c, _| {
            c.authorize(&req.target.access("get", kind, Some("scale")))?;
            c.scale_of(req.target.namespace.as_deref(), req.target.name())
        }),
    )
}

fn scale_response(req: &Req, result: Result<Value, ApiError>) -> Response {
    match result {
        Ok(scale) => respond_as(req.accept(), 200, ProtobufKind::Scale, &scale),
        Err(err) => err.into_response(),
    }
}

fn set_scale(s: &Shared, kind: Kind, req: &Req, scale: &Value) -> Response {
    let Some(replicas) = scale["spec"]["replicas"].as_i64() else {
        return ApiError::invalid("Scale", req.target.name(), "spec.replicas: Required value")
            .into_response();
    };
    scale_response(req, s.with_cluster(|c, now| {
        c.authorize(&req.target.access("update", kind, Some("scale")))?;
        let current = c.scale_of(req.target.namespace.as_deref(), req.target.name())?;
        if let Some(rv) = scale["metadata"]["resourceVersion"].as_str() {
            if current["metadata"]["resourceVersion"] != rv {
                return Err(ApiError::conflict(
                    "deployments.apps",
                    req.target.name(),
                    "the object has been modified; please apply your changes to the latest version and try again",
                ));
            }
        }
        c.scale_deployment(
            req.target.namespace.as_deref(),
            req.target.name(),
            replicas,
            req.dry_run(),
            now,
        )
    }))
}

/// PATCH `deployments/NAME/scale` (kubectl scale sends a merge patch of the Scale).
pub(super) fn patch_scale(s: Arc<Shared>, kind: Kind, req: Req) -> Response {
    let (patch_kind, body) = match patch_body(&req) {
        Ok(parsed) => parsed,
        Err(err) => return err.into_response(),
    };
    let current =
        s.with_cluster(|c, _| c.scale_of(req.target.namespace.as_deref(), req.target.name()));
    let mut scale = match current {
        Ok(scale) => scale,
        Err(err) => return err.into_response(),
    };
    if let Err(e) = patch::apply(patch_kind, &mut scale, &body) {
        return match e {
            PatchError::Malformed(m) => ApiError::bad_request(m),
            PatchError::Failed(m) => ApiError::invalid("Scale", req.target.name(), &m),
        }
        .into_response();
    }
    set_scale(&s, kind, &req, &scale)
}

/// PUT `deployments/NAME/scale` with a Scale body (JSON or protobuf).
pub(super) fn put_scale(s: Arc<Shared>, kind: Kind, req: Req) -> Response {
    match wire::decode_body(req.content_type(), &req.body, BodyKind::Scale) {
        Ok(scale) => set_scale(&s, kind, &req, &scale),
        Err(err) => err.into_response(),
    }
}
