//! `?watch=true`: a stream of newline-delimited watch events read from the cluster's change
//! journal, the way the API server serves them: without a resource version, synthetic ADDED
//! events for what exists first; from a resource version, every change after it, or an ERROR
//! event with a 410 `Expired` Status when the journal no longer reaches back that far; an
//! object that stops matching the selectors is DELETED for this watch and one that starts
//! matching is ADDED; BOOKMARK events when the client allows them; the stream ends after
//! `timeoutSeconds`.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::time::Instant;

use super::cluster::{Change, Expired, selects};
use super::kinds::Kind;
use super::routes::Shared;
use super::status::ApiError;
use kvtop_core::kube_model::{FieldSelector, LabelSelector};

/// How often a watch that allows bookmarks gets one (the API server sends them about once a
/// minute; sooner here, so short test watches see them).
const BOOKMARK_EVERY: Duration = Duration::from_secs(5);
/// A watch without `timeoutSeconds` ends after this long, as the API server's
/// `--min-request-timeout` (1800 s) bounds it.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1_800);

/// What a watch asks for.
#[derive(Clone)]
pub(crate) struct WatchRequest {
    pub kind: Kind,
    pub namespace: Option<String>,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    /// `None`: start with the current state (`resourceVersion` unset or `0`).
    pub since: Option<u64>,
    pub timeout: Option<Duration>,
    pub bookmarks: bool,
    /// `sendInitialEvents=true`: end the initial state with a bookmark marked
    /// `k8s.io/initial-events-end`.
    pub initial_events_end: bool,
    /// Render each object as a one-row Table (the client asked for `as=Table`).
    pub render: Option<Render>,
}

/// Renders an object for a watch event (a server-side Table row); `first` is true for the
/// stream's first event, which alone carries the column definitions.
pub(crate) type Render = Arc<dyn Fn(Kind, &Value, f64, bool) -> Value + Send + Sync>;

/// Start serving a watch.
pub(crate) fn serve(shared: Arc<Shared>, req: WatchRequest) -> Response {
    let changes = shared.changes.subscribe();
    let started = shared.with_cluster(|c, _| {
        let rv = c.journaled_version();
        match req.since {
            None => {
                let objects: Vec<Value> = c
                    .objects(req.kind)
                    .into_iter()
                    .filter(|o| in_scope(o, &req))
                    .cloned()
                    .collect();
                Ok((objects, rv))
            }
            Some(since) => c
                .changes_since(req.kind, since)
                .map(|_| (Vec::new(), since)),
        }
    });
    let now = Instant::now();
    let mut stream = WatchStream {
        deadline: now + req.timeout.unwrap_or(DEFAULT_TIMEOUT),
        next_bookmark: now + BOOKMARK_EVERY,
        shared,
        changes,
        cursor: 0,
        pending: VecDeque::new(),
        sent_any: false,
        done: false,
        req,
    };
    match started {
        Ok((initial, cursor)) => {
            stream.cursor = cursor;
            for object in initial {
                stream.push("ADDED", object);
            }
            if stream.req.initial_events_end && stream.req.bookmarks {
                let mut bookmark = stream.bookmark_object();
                bookmark["metadata"]["annotations"] = json!({"k8s.io/initial-events-end": "true"});
                stream.push_raw("BOOKMARK", bookmark);
            }
        }
        Err(expired) => stream.expire(&expired),
    }
    let body = futures_util::stream::unfold(stream, |mut s| async move {
        let chunk = s.next_chunk().await?;
        Some((Ok::<Bytes, std::io::Error>(chunk), s))
    });
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        Body::from_stream(body),
    )
        .into_response()
}

fn in_scope(obj: &Value, req: &WatchRequest) -> bool {
    req.namespace
        .as_deref()
        .is_none_or(|ns| obj["metadata"]["namespace"] == ns)
        && selects(obj, &req.labels, &req.fields)
}

struct WatchStream {
    shared: Arc<Shared>,
    changes: watch::Receiver<u64>,
    req: WatchRequest,
    /// Every change up to this resource version has been considered.
    cursor: u64,
    pending: VecDeque<Bytes>,
    sent_any: bool,
    done: bool,
    deadline: Instant,
    next_bookmark: Instant,
}

impl WatchStream {
    fn push(&mut self, kind_of_event: &str, object: Value) {
        let object = match &self.req.render {
            Some(render) => {
                let now = self.shared.engines.now();
                let first = !self.sent_any;
                render(self.req.kind, &object, now, first)
            }
            None => object,
        };
        self.push_raw(kind_of_event, object);
    }

    fn push_raw(&mut self, kind_of_event: &str, object: Value) {
        let mut line = serde_json::to_vec(&json!({"type": kind_of_event, "object": object}))
            .unwrap_or_default();
        line.push(b'\n');
        self.pending.push_back(Bytes::from(line));
        self.sent_any = true;
    }

    fn bookmark_object(&self) -> Value {
        json!({
            "kind": self.req.kind.kind_name(),
            "apiVersion": self.req.kind.api_version(),
            "metadata": {"resourceVersion": self.cursor.to_string(), "creationTimestamp": null},
        })
    }

    fn expire(&mut self, expired: &Expired) {
        let status = ApiError::expired(format!(
            "too old resource version: {} ({})",
            expired.requested, expired.oldest
        ))
        .body();
        self.push_raw("ERROR", status);
        self.done = true;
    }

    /// Read the journal past the cursor and queue what this watch should see.
    fn catch_up(&mut self) {
        let kind = self.req.kind;
        let cursor = self.cursor;
        let read = self.shared.with_cluster(|c, _| {
            c.changes_since(kind, cursor)
                .map(|events| (events, c.journaled_version()))
        });
        match read {
            Ok((events, latest)) => {
                for event in events {
                    let now_in = in_scope(&event.object, &self.req);
                    let was_in = event
                        .previous
                        .as_ref()
                        .is_some_and(|p| in_scope(p, &self.req));
                    let shown = match event.change {
                        Change::Added if now_in => Some("ADDED"),
                        Change::Deleted if now_in => Some("DELETED"),
                        Change::Modified if now_in && was_in => Some("MODIFIED"),
                        Change::Modified if now_in => Some("ADDED"),
                        Change::Modified if was_in => Some("DELETED"),
                        _ => None,
                    };
                    if let Some(word) = shown {
                        self.push(word, event.object);
                    }
                }
                self.cursor = latest.max(self.cursor);
            }
            Err(expired) => self.expire(&expired),
        }
    }

    async fn next_chunk(&mut self) -> Option<Bytes> {
        loop {
            if let Some(chunk) = self.pending.pop_front() {
                return Some(chunk);
            }
            if self.done || *self.shared.stop.borrow() || Instant::now() >= self.deadline {
                return None;
            }
            let wake = if self.req.bookmarks {
                self.deadline.min(self.next_bookmark)
            } else {
                self.deadline
            };
            let mut stop = self.shared.stop.clone();
            tokio::select! {
                changed = self.changes.changed() => {
                    if changed.is_err() {
                        return None;
                    }
                    self.catch_up();
                }
                _ = tokio::time::sleep_until(wake) => {
                    if self.req.bookmarks && Instant::now() >= self.next_bookmark {
                        self.catch_up();
                        let bookmark = self.bookmark_object();
                        self.push_raw("BOOKMARK", bookmark);
                        self.next_bookmark = Instant::now() + BOOKMARK_EVERY;
                    }
                }
                _ = stop.wait_for(|s| *s) => return None,
            }
        }
    }
}
