//! The console's Kubernetes state and how updates from the Kubernetes source change it:
//! discovered pods become fleet targets (and scrape commands), pods that go away are removed,
//! events and log lines land in each pod's buffers, Deployments are kept for their view.

use std::collections::BTreeMap;

use super::Command;
use super::state::{App, NoticeKind};
use crate::sources::kube::KubeUpdate;
use crate::sources::kube::fleet_pods::{remove_pod, target_name, upsert_pod};
use kvtop_core::fleet::{TargetId, Ts};
use kvtop_core::kube_model::{
    ContextSearch, DeploymentSummary, PodInfo, PodKey, ScrapeRoute, ScrapeVia, explain_empty,
};
use kvtop_core::recording::KubeChange;

/// How long a Kubernetes problem stays in the footer, seconds.
const PROBLEM_NOTICE_SECS: f64 = 30.0;

/// What the console knows from Kubernetes besides the fleet's pods.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KubeView {
    /// Pods are discovered (the console was started with `--kube` or `[kubernetes]`).
    pub enabled: bool,
    pub scrape_via: ScrapeVia,
    /// Names carry the context (several contexts are watched).
    pub show_context: bool,
    /// Names carry the namespace (all namespaces are watched).
    pub show_namespace: bool,
    /// The fleet target of each discovered pod.
    pub targets: BTreeMap<PodKey, TargetId>,
    /// Targets scraped through the API server's proxy (absent: direct).
    pub routes: BTreeMap<TargetId, ScrapeRoute>,
    /// Deployments of every context, sorted by context, namespace, name.
    pub deployments: Vec<DeploymentSummary>,
    /// Current problems by (context, task).
    pub problems: BTreeMap<(String, String), String>,
    /// The Deployments view is open (`d`).
    pub deployments_open: bool,
    /// The pod whose log is being followed.
    pub followed: Option<PodKey>,
    /// The last discovery round of each context: what it searched and found.
    pub searches: BTreeMap<String, ContextSearch>,
}

impl KubeView {
    /// Discovery over `contexts` contexts, scraping with `scrape_via`.
    pub fn new(scrape_via: ScrapeVia, contexts: usize, all_namespaces: bool) -> KubeView {
        KubeView {
            enabled: true,
            scrape_via,
            show_context: contexts > 1,
            show_namespace: all_namespaces,
            ..KubeView::default()
        }
    }

    /// Why the fleet is empty, once every context that reported found no engine: what was
    /// searched and, per context, why nothing matched. Empty while there is nothing to say.
    pub fn empty_explanation(&self) -> Vec<String> {
        if !self.enabled || !self.targets.is_empty() {
            return Vec::new();
        }
        let searches: Vec<ContextSearch> = self.searches.values().cloned().collect();
        if searches.iter().any(|s| s.engines() > 0) {
            return Vec::new();
        }
        explain_empty(&searches)
    }

    /// The fleet name of a pod: `[context/][namespace/]pod`.
    pub(crate) fn target_name(&self, key: &PodKey) -> String {
        target_name(key, self.show_context, self.show_namespace)
    }
}

/// Fold one Kubernetes update into the state.
pub fn apply(app: &mut App, update: KubeUpdate, now: Ts) -> Vec<Command> {
    let mut commands = Vec::new();
    match update {
        KubeUpdate::Pods { changed, gone, .. } => commands = apply_pods(app, changed, gone),
        KubeUpdate::Events { key, messages } => {
            if let Some(pod) = pod_mut(app, &key) {
                pod.events.replace(messages);
                app.dirty = true;
            }
        }
        KubeUpdate::Logs { key, lines } => {
            if let Some(pod) = pod_mut(app, &key) {
                pod.logs.extend(lines);
                app.dirty = true;
            }
        }
        KubeUpdate::Workloads {
            context,
            deployments,
        } => {
            let view = &mut app.kube;
            view.deployments.retain(|d| d.context != context);
            view.deployments.extend(deployments);
            view.deployments.sort_by(|a, b| {
                (&a.context, &a.namespace, &a.name).cmp(&(&b.context, &b.namespace, &b.name))
            });
            app.dirty = true;
        }
        KubeUpdate::Problem {
            context,
            task,
            error,
        } => record_problem(app, (context, task.to_owned()), error, now),
        KubeUpdate::Searched(search) => {
            app.kube.searches.insert(search.context.clone(), search);
            app.dirty = true;
        }
        KubeUpdate::Route { target, route } => {
            match route {
                ScrapeRoute::Proxy => app.kube.routes.insert(target, route),
                ScrapeRoute::Direct => app.kube.routes.remove(&target),
            };
            app.dirty = true;
        }
    }
    commands
}

/// Fold one recorded Kubernetes update into the state (`kvtop replay`): as [`apply`] does
/// the live one, except that pods keep the targets the recording gave them and nothing is
/// scraped.
pub fn apply_recorded(app: &mut App, change: KubeChange, now: Ts) {
    // A recording with Kubernetes updates was made with discovery: its views are there.
    app.kube.enabled = true;
    let update = match change {
        KubeChange::Pods { .. } | KubeChange::Events { .. } | KubeChange::Logs { .. } => {
            if let KubeChange::Pods { gone, .. } = &change {
                for key in gone {
                    if let Some(id) = app.kube.targets.get(key) {
                        app.kube.routes.remove(id);
                    }
                }
            }
            change.apply_to_pods(&mut app.fleet, &mut app.kube.targets);
            app.dirty = true;
            return;
        }
        KubeChange::Problem {
            context,
            task,
            error,
        } => return record_problem(app, (context, task), error, now),
        KubeChange::Workloads {
            context,
            deployments,
        } => KubeUpdate::Workloads {
            context,
            deployments,
        },
        KubeChange::Searched(search) => KubeUpdate::Searched(search),
        KubeChange::Route { target, route } => KubeUpdate::Route { target, route },
    };
    apply(app, update, now);
}

impl KubeView {
    /// What a recording needs besides the pods to show this view as it is (a new file, or
    /// after records were dropped): the Deployments, discovery searches, routes and problems.
    pub fn recorded_state(&self) -> Vec<KubeChange> {
        let mut out = Vec::new();
        let mut contexts: Vec<&str> = self
            .deployments
            .iter()
            .map(|d| d.context.as_str())
            .collect();
        contexts.dedup();
        for context in contexts {
            out.push(KubeChange::Workloads {
                context: context.to_owned(),
                deployments: self
                    .deployments
                    .iter()
                    .filter(|d| d.context == context)
                    .cloned()
                    .collect(),
            });
        }
        out.extend(self.searches.values().cloned().map(KubeChange::Searched));
        out.extend(self.routes.iter().map(|(target, route)| KubeChange::Route {
            target: *target,
            route: *route,
        }));
        out.extend(
            self.problems
                .iter()
                .map(|((context, task), error)| KubeChange::Problem {
                    context: context.clone(),
                    task: task.clone(),
                    error: Some(error.clone()),
                }),
        );
        out
    }
}

/// Pods gone stop being scraped; new or changed ones are (re)scraped.
fn apply_pods(app: &mut App, changed: Vec<PodInfo>, gone: Vec<PodKey>) -> Vec<Command> {
    let mut commands = Vec::new();
    for key in gone {
        if let Some(id) = remove_pod(&mut app.fleet, &mut app.kube.targets, &key) {
            app.kube.routes.remove(&id);
            commands.push(Command::StopScrape(id));
        }
    }
    for pod in changed {
        let name = app.kube.target_name(&pod.key);
        let via = app.kube.scrape_via;
        if let Some(scrape) = upsert_pod(&mut app.fleet, &mut app.kube.targets, name, pod, via) {
            commands.push(Command::ScrapePod(scrape));
        }
    }
    app.dirty = true;
    commands
}

/// A problem of one (context, task) appeared (shown in the footer too) or went away.
fn record_problem(
    app: &mut App,
    slot: (String, String),
    error: Option<impl std::fmt::Display>,
    now: Ts,
) {
    match error {
        Some(error) => {
            let text = error.to_string();
            tracing::warn!(message = %text, "kubernetes");
            app.kube.problems.insert(slot, text.clone());
            app.notice = Some(super::state::Notice {
                kind: NoticeKind::Problem(text),
                until: now + PROBLEM_NOTICE_SECS,
            });
        }
        None => {
            app.kube.problems.remove(&slot);
        }
    }
    app.dirty = true;
}

fn pod_mut<'a>(app: &'a mut App, key: &PodKey) -> Option<&'a mut PodInfo> {
    let id = *app.kube.targets.get(key)?;
    app.fleet.pod_info_mut(id)
}

/// When the selected row's pod is not the followed one, follow it.
pub(crate) fn follow_selection(app: &mut App) -> Option<Command> {
    if !app.kube.enabled {
        return None;
    }
    let selected = app
        .selected
        .as_ref()
        .and_then(|row| app.fleet.pod_info(row.target))
        .map(|pod| &pod.key);
    if selected == app.kube.followed.as_ref() {
        return None;
    }
    let selected = selected.cloned();
    app.kube.followed = selected.clone();
    Some(Command::FollowLogs(selected))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::sources::kube::{ApiCall, KubeErrorKind};
    use crate::theme::Theme;
    use kvtop_core::fleet::{Fleet, FleetSettings};
    use kvtop_core::kube_model::{EndpointDefaults, MetricsEndpoint};

    const T0: Ts = 1_000.0;

    fn app() -> App {
        let mut app = App::new(
            Fleet::new(FleetSettings::default()),
            Theme::fallback(),
            "test".into(),
            Duration::from_secs(1),
            Duration::from_secs(300),
        );
        app.kube = KubeView::new(ScrapeVia::Auto, 2, false);
        app
    }

    fn pod(context: &str, name: &str, ip: Option<&str>, rv: &str) -> PodInfo {
        PodInfo {
            resource_version: rv.into(),
            node: Some("n1".into()),
            endpoint: MetricsEndpoint::choose(
                &BTreeMap::new(),
                &[],
                ip,
                &EndpointDefaults::default(),
            ),
            ..PodInfo::for_test(context, name)
        }
    }

    fn pods(changed: Vec<PodInfo>, gone: Vec<PodKey>) -> KubeUpdate {
        KubeUpdate::Pods {
            context: "a".into(),
            changed,
            gone,
        }
    }

    #[test]
    fn a_new_pod_becomes_a_named_target_with_a_scrape_command() {
        let mut app = app();
        let commands = apply(
            &mut app,
            pods(vec![pod("a", "vllm-0", Some("10.0.0.1"), "1")], vec![]),
            T0,
        );
        let target = app.fleet.targets()[0].clone();
        assert_eq!(
            target.spec.name, "a/vllm-0",
            "several contexts: the context labels it"
        );
        assert_eq!(target.spec.url, "http://10.0.0.1:8000/metrics");
        match commands.as_slice() {
            [Command::ScrapePod(s)] => {
                assert_eq!(s.target, target.id);
                assert_eq!(s.via, ScrapeVia::Auto);
            }
            other => panic!("{other:?}"),
        }
        assert!(app.fleet.pod_info(target.id).is_some());
    }

    #[test]
    fn an_update_keeps_buffers_and_rescrapes_only_when_the_endpoint_moves() {
        let mut app = app();
        apply(&mut app, pods(vec![pod("a", "p", None, "1")], vec![]), T0);
        let key = pod("a", "p", None, "1").key;
        apply(
            &mut app,
            KubeUpdate::Logs {
                key: key.clone(),
                lines: vec!["INFO started".into()],
            },
            T0,
        );
        let same = apply(&mut app, pods(vec![pod("a", "p", None, "2")], vec![]), T0);
        assert!(same.is_empty());
        let moved = apply(
            &mut app,
            pods(vec![pod("a", "p", Some("10.0.0.9"), "3")], vec![]),
            T0,
        );
        assert!(
            matches!(moved.as_slice(), [Command::ScrapePod(s)] if s.endpoint.pod_ip.as_deref() == Some("10.0.0.9"))
        );
        let id = app.kube.targets[&key];
        let info = app
            .fleet
            .pod_info(id)
            .cloned()
            .unwrap_or_else(|| panic!("no pod"));
        assert_eq!(info.logs.lines(), ["INFO started"]);
        assert_eq!(info.resource_version, "3");
        assert_eq!(app.fleet.targets().len(), 1);
    }

    #[test]
    fn a_pod_that_goes_away_is_removed_and_its_worker_stopped() {
        let mut app = app();
        apply(
            &mut app,
            pods(
                vec![pod("a", "p", None, "1"), pod("a", "q", None, "1")],
                vec![],
            ),
            T0,
        );
        let key = pod("a", "p", None, "1").key;
        let id = app.kube.targets[&key];
        let commands = apply(&mut app, pods(vec![], vec![key.clone()]), T0);
        assert_eq!(commands, vec![Command::StopScrape(id)]);
        assert_eq!(app.fleet.targets().len(), 1);
        assert!(app.fleet.pod_info(id).is_none());
        assert!(!app.kube.targets.contains_key(&key));
    }

    #[test]
    fn events_replace_and_problems_show_once_then_clear() {
        let mut app = app();
        apply(&mut app, pods(vec![pod("a", "p", None, "1")], vec![]), T0);
        let key = pod("a", "p", None, "1").key;
        apply(
            &mut app,
            KubeUpdate::Events {
                key: key.clone(),
                messages: vec!["Warning BackOff: x".into()],
            },
            T0,
        );
        let id = app.kube.targets[&key];
        assert_eq!(
            app.fleet.pod_info(id).map(|p| p.events.lines().to_vec()),
            Some(vec!["Warning BackOff: x".to_owned()])
        );
        let error = ApiCall::new("list", "pods")
            .context("a")
            .error(KubeErrorKind::Timeout {
                after: Duration::from_secs(5),
            });
        apply(
            &mut app,
            KubeUpdate::Problem {
                context: "a".into(),
                task: "pods",
                error: Some(error),
            },
            T0,
        );
        assert_eq!(app.kube.problems.len(), 1);
        assert!(
            matches!(&app.notice, Some(n) if matches!(&n.kind, NoticeKind::Problem(t) if t.contains("no answer within 5.0s")))
        );
        apply(
            &mut app,
            KubeUpdate::Problem {
                context: "a".into(),
                task: "pods",
                error: None,
            },
            T0,
        );
        assert!(app.kube.problems.is_empty());
    }

    #[test]
    fn the_selected_pod_is_followed_once() {
        let mut app = app();
        apply(&mut app, pods(vec![pod("a", "p", None, "1")], vec![]), T0);
        app.selected = Some(crate::app::RowKey {
            target: app.kube.targets[&pod("a", "p", None, "1").key],
            id: Default::default(),
        });
        let first = follow_selection(&mut app);
        assert!(matches!(first, Some(Command::FollowLogs(Some(ref k))) if k.name == "p"));
        assert_eq!(follow_selection(&mut app), None);
    }

    /// The console of a replay, whose recorded targets were set before its Kubernetes updates.
    fn replay_app() -> App {
        let mut app = App::new(
            Fleet::new(FleetSettings::default()),
            Theme::fallback(),
            "replay".into(),
            Duration::from_secs(1),
            Duration::from_secs(300),
        );
        app.fleet.set_targets(&[(
            TargetId(7),
            kvtop_core::fleet::TargetSpec {
                name: "a/vllm-0".into(),
                url: "http://10.0.0.1:8000/metrics".into(),
            },
        )]);
        app
    }

    #[test]
    fn a_replay_shows_the_recorded_pods_on_their_recorded_targets_and_scrapes_nothing() {
        let mut live = app();
        let pod = pod("a", "vllm-0", Some("10.0.0.1"), "1");
        let commands = apply(&mut live, pods(vec![pod.clone()], vec![]), T0);
        assert_eq!(commands.len(), 1, "the live console scrapes it");
        apply(
            &mut live,
            KubeUpdate::Searched(ContextSearch {
                context: "a".into(),
                namespace: Some("llm".into()),
                selectors: vec!["app=vllm".into()],
                by_workload: false,
                outcome: kvtop_core::kube_model::SearchOutcome::Listed {
                    pods: 1,
                    engines: 1,
                },
            }),
            T0,
        );
        live.kube
            .problems
            .insert(("a".into(), "events".into()), "events: forbidden".into());

        let mut replay = replay_app();
        let recorded = KubeChange::Pods {
            pods: vec![(TargetId(7), pod.clone())],
            gone: Vec::new(),
        };
        apply_recorded(&mut replay, recorded, T0);
        for change in live.kube.recorded_state() {
            apply_recorded(&mut replay, change, T0);
        }
        apply_recorded(
            &mut replay,
            KubeChange::Events {
                key: pod.key.clone(),
                messages: vec!["Back-off restarting failed container".into()],
            },
            T0,
        );
        assert!(replay.kube.enabled, "the pods view is there");
        assert_eq!(replay.kube.targets.get(&pod.key), Some(&TargetId(7)));
        let shown = replay
            .fleet
            .pod_info(TargetId(7))
            .map(|p| p.events.lines().to_vec());
        assert_eq!(
            shown,
            Some(vec!["Back-off restarting failed container".to_owned()])
        );
        assert_eq!(replay.kube.searches, live.kube.searches);
        assert_eq!(replay.kube.problems, live.kube.problems);
        assert_eq!(replay.fleet.targets().len(), 1, "no target of its own");

        apply_recorded(
            &mut replay,
            KubeChange::Pods {
                pods: Vec::new(),
                gone: vec![pod.key.clone()],
            },
            T0,
        );
        assert!(replay.kube.targets.is_empty());
    }
}
