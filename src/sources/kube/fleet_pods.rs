//! PURE. Discovered pods folded into a fleet: each pod a target (named `[context/][namespace/]pod`),
//! updated in place with its text buffers kept, scraped again when its endpoint moves, removed
//! when it goes away. The console and `kvtop check --kube` both fold their pods here.

use std::collections::BTreeMap;

use super::update::PodScrape;
use kvtop_core::fleet::{Fleet, TargetId, TargetSpec};
use kvtop_core::kube_model::{PodInfo, PodKey, ScrapeVia};

/// The fleet name of a pod: `[context/][namespace/]pod`, the context when several are watched,
/// the namespace when all are.
pub fn target_name(key: &PodKey, show_context: bool, show_namespace: bool) -> String {
    let mut name = String::new();
    if show_context {
        name.push_str(&key.context);
        name.push('/');
    }
    if show_namespace {
        name.push_str(&key.namespace);
        name.push('/');
    }
    name.push_str(&key.name);
    name
}

/// Remove a discovered pod's target from `fleet`; its id, to stop its scrape.
pub fn remove_pod(
    fleet: &mut Fleet,
    targets: &mut BTreeMap<PodKey, TargetId>,
    key: &PodKey,
) -> Option<TargetId> {
    let id = targets.remove(key)?;
    fleet.remove_target(id);
    Some(id)
}

/// Add a new pod to `fleet` as a target named `name`, or update a known one (keeping its event
/// and log buffers); how to scrape it when its endpoint is new or changed. The console and
/// `kvtop check --kube` both fold discovered pods into their fleet here.
pub fn upsert_pod(
    fleet: &mut Fleet,
    targets: &mut BTreeMap<PodKey, TargetId>,
    name: String,
    mut pod: PodInfo,
    via: ScrapeVia,
) -> Option<PodScrape> {
    let display_url = pod
        .endpoint
        .direct_url()
        .unwrap_or_else(|| pod.endpoint.proxy_path(&pod.key.namespace, &pod.key.name));
    if let Some(&id) = targets.get(&pod.key) {
        let endpoint_changed = match fleet.pod_info_mut(id) {
            Some(old) => {
                pod.keep_text_from(old);
                old.endpoint != pod.endpoint
            }
            None => true,
        };
        let scrape = endpoint_changed.then(|| PodScrape {
            target: id,
            key: pod.key.clone(),
            endpoint: pod.endpoint.clone(),
            via,
        });
        fleet.set_pod_info(id, pod);
        return scrape;
    }
    let id = fleet.add_target(TargetSpec {
        name,
        url: display_url,
    });
    targets.insert(pod.key.clone(), id);
    let scrape = PodScrape {
        target: id,
        key: pod.key.clone(),
        endpoint: pod.endpoint.clone(),
        via,
    };
    fleet.set_pod_info(id, pod);
    Some(scrape)
}
