//! PURE. The patch formats kube-rs sends: JSON merge patch (RFC 7386; strategic merge and
//! server-side apply bodies are applied the same way, which is exact for the maps kvtop
//! patches: labels, annotations, `spec.unschedulable`) and JSON Patch (RFC 6902).

use serde_json::Value;

/// The patch formats, by content type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchKind {
    Merge,
    Strategic,
    Apply,
    Json,
}

impl PatchKind {
    /// The format named by a `Content-Type` header.
    pub(crate) fn from_content_type(content_type: &str) -> Option<PatchKind> {
        let essence = content_type.split(';').next().unwrap_or("").trim();
        match essence {
            "application/merge-patch+json" => Some(PatchKind::Merge),
            "application/strategic-merge-patch+json" => Some(PatchKind::Strategic),
            "application/apply-patch+yaml" | "application/apply-patch+json" => {
                Some(PatchKind::Apply)
            }
            "application/json-patch+json" => Some(PatchKind::Json),
            _ => None,
        }
    }
}

/// Why a patch could not be applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatchError {
    /// The body is not valid for its format.
    Malformed(String),
    /// A JSON Patch `test` failed or a path does not exist.
    Failed(String),
}

/// Apply `patch` (already parsed JSON) to `target`.
pub fn apply(kind: PatchKind, target: &mut Value, patch: &Value) -> Result<(), PatchError> {
    match kind {
        PatchKind::Merge | PatchKind::Strategic | PatchKind::Apply => {
            if !patch.is_object() {
                return Err(PatchError::Malformed(
                    "a merge patch must be an object".into(),
                ));
            }
            merge(target, patch);
            Ok(())
        }
        PatchKind::Json => json_patch(target, patch),
    }
}

/// RFC 7386: objects merge key by key, `null` removes, anything else replaces.
fn merge(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(serde_json::Map::new());
    }
    if let Value::Object(map) = target {
        for (key, value) in patch {
            if value.is_null() {
                map.remove(key);
            } else {
                merge(map.entry(key.clone()).or_insert(Value::Null), value);
            }
        }
    }
}

/// RFC 6902 operations `add`, `remove`, `replace`, `test`, `move` and `copy`, applied in order
/// to a copy; the target changes only when every operation succeeds.
fn json_patch(target: &mut Value, patch: &Value) -> Result<(), PatchError> {
    let ops = patch
        .as_array()
        .ok_or_else(|| PatchError::Malformed("a JSON patch must be an array".into()))?;
    let mut doc = target.clone();
    for op in ops {
        let name = op
            .get("op")
            .and_then(Value::as_str)
            .ok_or_else(|| PatchError::Malformed("an operation has no \"op\"".into()))?;
        let path = op
            .get("path")
            .and_then(Value::as_str)
            .ok_or_else(|| PatchError::Malformed(format!("{name}: no \"path\"")))?;
        let value = || {
            op.get("value")
                .cloned()
                .ok_or_else(|| PatchError::Malformed(format!("{name} {path}: no \"value\"")))
        };
        let from = || {
            op.get("from")
                .and_then(Value::as_str)
                .ok_or_else(|| PatchError::Malformed(format!("{name} {path}: no \"from\"")))
        };
        match name {
            "add" => add(&mut doc, path, value()?)?,
            "remove" => {
                remove(&mut doc, path)?;
            }
            "replace" => {
                remove(&mut doc, path)?;
                add(&mut doc, path, value()?)?;
            }
            "test" => {
                let expected = value()?;
                if doc.pointer(path) != Some(&expected) {
                    return Err(PatchError::Failed(format!(
                        "test operation for path {path:?} failed"
                    )));
                }
            }
            "move" => {
                let moved = remove(&mut doc, from()?)?;
                add(&mut doc, path, moved)?;
            }
            "copy" => {
                let copied = doc
                    .pointer(from()?)
                    .cloned()
                    .ok_or_else(|| PatchError::Failed(format!("copy: no value at {path:?}")))?;
                add(&mut doc, path, copied)?;
            }
            other => {
                return Err(PatchError::Malformed(format!(
                    "unknown operation {other:?}"
                )));
            }
        }
    }
    *target = doc;
    Ok(())
}

/// Split a JSON pointer into its parent pointer and unescaped last token.
fn split_pointer(path: &str) -> Result<(&str, String), PatchError> {
    if path.is_empty() {
        return Err(PatchError::Failed(
            "the whole document cannot be replaced".into(),
        ));
    }
    let at = path
        .rfind('/')
        .ok_or_else(|| PatchError::Malformed(format!("{path:?} is not a JSON pointer")))?;
    let token = path
        .get(at + 1..)
        .unwrap_or("")
        .replace("~1", "/")
        .replace("~0", "~");
    Ok((path.get(..at).unwrap_or(""), token))
}

fn add(doc: &mut Value, path: &str, value: Value) -> Result<(), PatchError> {
    let (parent, token) = split_pointer(path)?;
    let missing = || PatchError::Failed(format!("path {path:?}: parent does not exist"));
    match doc.pointer_mut(parent).ok_or_else(missing)? {
        Value::Object(map) => {
            map.insert(token, value);
            Ok(())
        }
        Value::Array(items) => {
            let index = if token == "-" {
                items.len()
            } else {
                token
                    .parse::<usize>()
                    .ok()
                    .filter(|i| *i <= items.len())
                    .ok_or_else(|| PatchError::Failed(format!("path {path:?}: bad index")))?
            };
            items.insert(index, value);
            Ok(())
        }
        _ => Err(missing()),
    }
}

fn remove(doc: &mut Value, path: &str) -> Result<Value, PatchError> {
    let (parent, token) = split_pointer(path)?;
    let missing = || PatchError::Failed(format!("path {path:?} does not exist"));
    match doc.pointer_mut(parent).ok_or_else(missing)? {
        Value::Object(map) => map.remove(&token).ok_or_else(missing),
        Value::Array(items) => {
            let index = token
                .parse::<usize>()
                .ok()
                .filter(|i| *i < items.len())
                .ok_or_else(missing)?;
            Ok(items.remove(index))
        }
        _ => Err(missing()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_patch_sets_and_removes_labels() {
        let mut pod = json!({"metadata": {"labels": {"a": "1", "kvtop.dev/serving": "true"}}});
        let patch = json!({"metadata": {"labels": {"kvtop.dev/serving": null, "b": "2"}}});
        assert_eq!(apply(PatchKind::Merge, &mut pod, &patch), Ok(()));
        assert_eq!(pod, json!({"metadata": {"labels": {"a": "1", "b": "2"}}}));
        assert!(apply(PatchKind::Strategic, &mut pod, &json!([1])).is_err());
    }

    #[test]
    fn json_patch_with_escaped_keys_and_tests() {
        let mut pod = json!({"metadata": {"labels": {"kvtop.dev/serving": "true"}}});
        let ok = json!([
            {"op": "test", "path": "/metadata/labels/kvtop.dev~1serving", "value": "true"},
            {"op": "remove", "path": "/metadata/labels/kvtop.dev~1serving"},
            {"op": "add", "path": "/metadata/annotations", "value": {}},
            {"op": "add", "path": "/metadata/annotations/x", "value": "y"}
        ]);
        assert_eq!(apply(PatchKind::Json, &mut pod, &ok), Ok(()));
        assert_eq!(
            pod,
            json!({"metadata": {"labels": {}, "annotations": {"x": "y"}}})
        );
        let before = pod.clone();
        let failing = json!([
            {"op": "replace", "path": "/metadata/annotations/x", "value": "z"},
            {"op": "test", "path": "/metadata/annotations/x", "value": "y"}
        ]);
        assert!(matches!(
            apply(PatchKind::Json, &mut pod, &failing),
            Err(PatchError::Failed(_))
        ));
        assert_eq!(pod, before, "a failed patch changes nothing");
        let missing = json!([{"op": "remove", "path": "/spec/nothing"}]);
        assert!(apply(PatchKind::Json, &mut pod, &missing).is_err());
        let arrays = json!([{"op": "add", "path": "/list", "value": [1]},
                            {"op": "add", "path": "/list/-", "value": 2},
                            {"op": "move", "from": "/list/0", "path": "/first"}]);
        assert_eq!(apply(PatchKind::Json, &mut pod, &arrays), Ok(()));
        assert_eq!(pod["list"], json!([2]));
        assert_eq!(pod["first"], json!(1));
    }

    #[test]
    fn content_types_name_the_formats() {
        assert_eq!(
            PatchKind::from_content_type("application/merge-patch+json; charset=utf-8"),
            Some(PatchKind::Merge)
        );
        assert_eq!(
            PatchKind::from_content_type("application/apply-patch+yaml"),
            Some(PatchKind::Apply)
        );
        assert_eq!(PatchKind::from_content_type("text/plain"), None);
    }
}
