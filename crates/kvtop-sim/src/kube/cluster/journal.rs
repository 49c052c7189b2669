//! The cluster's change journal, which watches are served from: after every request and tick,
//! each stored object is compared with the copy last journaled, and every difference becomes
//! an ADDED, MODIFIED or DELETED event with a resource version of its own. A write that forgot
//! to bump the object's `resourceVersion` gets one here, so the resource version changes on
//! every write whatever code made it.

use std::collections::{HashMap, HashSet, VecDeque};

use serde_json::Value;

use super::Cluster;
use crate::kube::kinds::Kind;

/// Events kept for watches that resume from a resource version; older ones are gone (410).
const JOURNAL_CAPACITY: usize = 4_096;

/// What happened to an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    Added,
    Modified,
    Deleted,
}

/// One journaled change.
#[derive(Debug, Clone)]
pub(crate) struct Journaled {
    pub rv: u64,
    pub kind: Kind,
    pub change: Change,
    /// The object after the change (for a deletion: its last state, with the deletion's
    /// resource version).
    pub object: Value,
    /// The object before a modification, so a watch with selectors can tell an object that
    /// stopped matching (DELETED for that watch) from one that still matches.
    pub previous: Option<Value>,
}

/// The journal itself.
#[derive(Debug, Default)]
pub(crate) struct Journal {
    seen: HashMap<String, (Kind, Value)>,
    events: VecDeque<Journaled>,
    /// The resource version the journal starts after: a watch from before it cannot be served.
    oldest: u64,
    /// Every change up to this resource version is journaled.
    latest: u64,
}

/// Why a watch cannot start where the client asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Expired {
    pub requested: u64,
    pub oldest: u64,
}

fn uid_of(obj: &Value) -> String {
    obj["metadata"]["uid"].as_str().unwrap_or("").to_owned()
}

fn rv_of(obj: &Value) -> u64 {
    obj["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|rv| rv.parse().ok())
        .unwrap_or(0)
}

impl Cluster {
    /// Start the journal at the cluster as it is (no events for the initial objects).
    pub(super) fn start_journal(&mut self) {
        let mut seen = HashMap::new();
        for kind in Kind::ALL {
            for obj in self.objects(kind) {
                seen.insert(uid_of(obj), (kind, obj.clone()));
            }
        }
        self.journal = Journal {
            seen,
            events: VecDeque::new(),
            oldest: self.rv,
            latest: self.rv,
        };
    }

    /// Journal every change since the last call; returns whether there was any.
    pub(crate) fn record_changes(&mut self) -> bool {
        let mut present = HashSet::new();
        // (resource version, kind, index, whether the write kept the old resource version)
        let mut fresh: Vec<(u64, Kind, usize, bool)> = Vec::new();
        for kind in Kind::ALL {
            for (index, obj) in self.objects(kind).into_iter().enumerate() {
                let uid = uid_of(obj);
                match self.journal.seen.get(&uid) {
                    Some((_, before)) if before == obj => {}
                    Some((_, before)) => {
                        fresh.push((rv_of(obj), kind, index, rv_of(before) == rv_of(obj)));
                    }
                    None => fresh.push((rv_of(obj), kind, index, false)),
                }
                present.insert(uid);
            }
        }
        let gone: Vec<String> = self
            .journal
            .seen
            .keys()
            .filter(|uid| !present.contains(*uid))
            .cloned()
            .collect();
        if fresh.is_empty() && gone.is_empty() {
            self.journal.latest = self.rv;
            return false;
        }
        let last = self
            .journal
            .events
            .back()
            .map_or(self.journal.oldest, |e| e.rv);
        // Changes in the order they were made, as far as resource versions tell.
        fresh.sort_by_key(|(rv, ..)| *rv);
        for (current_rv, kind, index, stale_rv) in fresh {
            // A write that kept the old resource version, or one older than what watchers
            // have already seen, gets a new one.
            if stale_rv || current_rv <= last {
                let rv = self.bump();
                if let Some(obj) = self.object_mut(kind, index) {
                    obj["metadata"]["resourceVersion"] = rv.to_string().into();
                }
            }
            let Some(obj) = self.object_mut(kind, index).map(|o| o.clone()) else {
                continue;
            };
            let previous = self.journal.seen.insert(uid_of(&obj), (kind, obj.clone()));
            let change = if previous.is_some() {
                Change::Modified
            } else {
                Change::Added
            };
            self.push_event(Journaled {
                rv: rv_of(&obj),
                kind,
                change,
                object: obj,
                previous: previous.map(|(_, o)| o),
            });
        }
        for uid in gone {
            let Some((kind, mut obj)) = self.journal.seen.remove(&uid) else {
                continue;
            };
            let rv = self.bump();
            obj["metadata"]["resourceVersion"] = rv.to_string().into();
            self.push_event(Journaled {
                rv,
                kind,
                change: Change::Deleted,
                object: obj,
                previous: None,
            });
        }
        self.journal.latest = self.rv;
        true
    }

    fn push_event(&mut self, event: Journaled) {
        self.journal.events.push_back(event);
        while self.journal.events.len() > JOURNAL_CAPACITY {
            if let Some(dropped) = self.journal.events.pop_front() {
                self.journal.oldest = dropped.rv;
            }
        }
    }

    /// Changes of `kind` after resource version `after`, oldest first, or [`Expired`] when
    /// the journal no longer reaches back that far.
    pub(crate) fn changes_since(&self, kind: Kind, after: u64) -> Result<Vec<Journaled>, Expired> {
        if after < self.journal.oldest {
            return Err(Expired {
                requested: after,
                oldest: self.journal.oldest,
            });
        }
        Ok(self
            .journal
            .events
            .iter()
            .filter(|e| e.rv > after && e.kind == kind)
            .cloned()
            .collect())
    }

    /// The resource version up to which every change is journaled (a watch resumes there).
    pub(crate) fn journaled_version(&self) -> u64 {
        self.journal.latest
    }

    fn object_mut(&mut self, kind: Kind, index: usize) -> Option<&mut Value> {
        match kind {
            Kind::Pod => self.pods.get_mut(index).map(|p| &mut p.obj),
            Kind::Node => self.nodes.get_mut(index),
            Kind::Namespace => self.namespaces.get_mut(index),
            Kind::Service => self.services.get_mut(index),
            Kind::Event => self.events.get_mut(index).map(|e| &mut e.obj),
            Kind::EndpointSlice => self.endpoint_slices.get_mut(index),
            Kind::Deployment => self.deployments.get_mut(index).map(|d| &mut d.obj),
            Kind::ReplicaSet => self.replica_sets.get_mut(index).map(|(_, _, rs)| rs),
            Kind::Hpa => self.hpas.get_mut(index),
            Kind::Pdb => self.pdbs.get_mut(index),
            Kind::InferencePool => self.pools.get_mut(index),
            Kind::ScaledObject => self.scaled_objects.get_mut(index),
        }
    }
}
