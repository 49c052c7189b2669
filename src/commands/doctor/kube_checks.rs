//! The Kubernetes half of `kvtop doctor`: the kubeconfig, each context's API server and
//! version, what discovery finds (and which selectors matched), and the RBAC kvtop needs for
//! watching and for each action, asked with SelfSubjectAccessReviews as the actions do.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};

use super::report::{Check, Verdict};
use crate::actions::execute::review_access;
use crate::actions::{ActionKind, PolicyChoices, build_plan, policy_for};
use crate::config::KubernetesConfig;
use crate::sources::kube::{ApiCall, ClusterClient, discovery::recognizer};
use kvtop_core::actions::plan::Access;
use kvtop_core::kube_model::{
    ConvertOptions, EndpointDefaults, LabelSelector, MatchedBy, PodInfo, pod_info,
};

const AREA: &str = "kubernetes";

/// The actions whose permissions are reviewed, each against a target discovery found.
const ACTIONS: [ActionKind; 7] = [
    ActionKind::DrainPod,
    ActionKind::Undrain,
    ActionKind::RestartPod,
    ActionKind::RolloutRestart,
    ActionKind::Cordon,
    ActionKind::Uncordon,
    ActionKind::DrainNode,
];

/// An engine pod found in a context, for the endpoint checks.
pub struct FoundEngine {
    pub cluster: ClusterClient,
    pub info: PodInfo,
}

/// Every Kubernetes check; the engine pods found, for the endpoint checks.
pub async fn run(settings: &KubernetesConfig, checks: &mut Vec<Check>) -> Vec<FoundEngine> {
    let clusters = match crate::commands::stop_signals::connect_kube(settings).await {
        Ok(clusters) => clusters,
        Err(err) => {
            let source = match &settings.kubeconfig {
                Some(path) => format!("--kubeconfig {}", path.display()),
                None => "$KUBECONFIG or ~/.kube/config".to_owned(),
            };
            checks.push(
                Check::new(AREA, "kubeconfig", Verdict::Fail)
                    .detail(err.to_string())
                    .fix(format!(
                        "kvtop read {source}: pass --kubeconfig FILE or set KUBECONFIG, and \
                         --context NAME (`kubectl config get-contexts` lists them)"
                    )),
            );
            return Vec::new();
        }
    };
    checks.push(Check::new(AREA, "kubeconfig", Verdict::Ok).detail(format!(
        "contexts: {}",
        clusters
            .iter()
            .map(|c| c.context.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    )));
    let mut found = Vec::new();
    for cluster in clusters {
        found.extend(check_context(&cluster, settings, checks).await);
    }
    found
}

async fn check_context(
    cluster: &ClusterClient,
    settings: &KubernetesConfig,
    checks: &mut Vec<Check>,
) -> Vec<FoundEngine> {
    let ctx = cluster.context.as_str();
    let limit = settings.api_timeout;
    let version = ApiCall::new("get", "version")
        .context(ctx)
        .run(limit, cluster.client.apiserver_version())
        .await;
    match version {
        Ok(info) => checks.push(
            Check::new(AREA, format!("context {ctx}: API server"), Verdict::Ok).detail(format!(
                "reachable, Kubernetes {} ({})",
                info.git_version, info.platform
            )),
        ),
        Err(err) => {
            checks.push(
                Check::new(AREA, format!("context {ctx}: API server"), Verdict::Fail)
                    .detail(err.to_string())
                    .fix(format!(
                        "check the network (VPN, proxy) to the context's server and its \
                         credentials: `kubectl --context {ctx} version`"
                    )),
            );
            return Vec::new();
        }
    }
    let namespace = if settings.all_namespaces {
        None
    } else {
        Some(
            settings
                .namespace
                .clone()
                .unwrap_or_else(|| cluster.default_namespace.clone()),
        )
    };
    check_read_access(cluster, namespace.as_deref(), settings, checks).await;
    let engines = discover(cluster, namespace.as_deref(), settings, checks).await;
    check_actions(cluster, &engines, settings, checks).await;
    engines
        .into_iter()
        .map(|info| FoundEngine {
            cluster: cluster.clone(),
            info,
        })
        .collect()
}

/// What watching needs: pods listed (required), their logs, the proxy to their metrics, and
/// events (each a lost feature when denied).
async fn check_read_access(
    cluster: &ClusterClient,
    namespace: Option<&str>,
    settings: &KubernetesConfig,
    checks: &mut Vec<Check>,
) {
    let ctx = cluster.context.as_str();
    let reads = [
        ("list", "", "pods", None, true, "discovery"),
        ("watch", "", "pods", None, false, "following pods"),
        (
            "get",
            "",
            "pods",
            Some("log"),
            false,
            "the log tail and log rules",
        ),
        (
            "get",
            "",
            "pods",
            Some("proxy"),
            false,
            "scraping pods the network cannot reach",
        ),
        ("list", "", "events", None, false, "the pods' events"),
        (
            "list",
            "apps",
            "deployments",
            None,
            false,
            "the Deployments view",
        ),
    ];
    for (verb, group, resource, subresource, required, used_for) in reads {
        let access = Access {
            verb: verb.into(),
            group: group.into(),
            resource: resource.into(),
            subresource: subresource.map(str::to_owned),
            namespace: namespace.map(str::to_owned),
            name: None,
        };
        let what = access_words(&access);
        let name = format!("context {ctx}: RBAC {what}");
        let check = match review_access(cluster, access, settings.api_timeout).await {
            Ok(answer) if answer.allowed => {
                Check::new(AREA, name, Verdict::Ok).detail(format!("allowed ({used_for})"))
            }
            Ok(answer) => Check::new(
                AREA,
                name,
                if required {
                    Verdict::Fail
                } else {
                    Verdict::Warn
                },
            )
            .detail(format!(
                "denied{}: no {used_for}",
                if answer.reason.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", answer.reason)
                }
            ))
            .fix(format!("ask for a Role granting {what}")),
            Err(err) => Check::new(AREA, name, Verdict::Warn)
                .detail(format!("cannot ask (SelfSubjectAccessReview): {err}"))
                .fix("the API server must serve authorization.k8s.io/v1"),
        };
        checks.push(check);
    }
}

/// `list pods in llm`, `get pods/log in any namespace`.
fn access_words(access: &Access) -> String {
    let resource = match &access.subresource {
        Some(sub) => format!("{}/{sub}", access.resource),
        None => access.resource.clone(),
    };
    let resource = if access.group.is_empty() {
        resource
    } else {
        format!("{resource}.{}", access.group)
    };
    let place = match (&access.namespace, &access.name) {
        (Some(ns), _) => format!(" in {ns}"),
        (None, Some(_)) => String::new(),
        (None, None) => " in any namespace".to_owned(),
    };
    format!("{} {resource}{place}", access.verb)
}

/// List the pods as discovery does and say how many are engines and what recognised them.
async fn discover(
    cluster: &ClusterClient,
    namespace: Option<&str>,
    settings: &KubernetesConfig,
    checks: &mut Vec<Check>,
) -> Vec<PodInfo> {
    let ctx = cluster.context.as_str();
    let name = format!("context {ctx}: discovery");
    let place = namespace.map_or("every namespace".to_owned(), |ns| format!("namespace {ns}"));
    let pods = match list_pods(cluster, namespace, settings).await {
        Ok(pods) => pods,
        Err(err) => {
            checks.push(
                Check::new(AREA, name, Verdict::Fail)
                    .detail(err.to_string())
                    .fix("kvtop needs to list pods (see the RBAC check above)"),
            );
            return Vec::new();
        }
    };
    let recognizer = recognizer(settings);
    let selectors: Vec<(String, LabelSelector)> = settings
        .selectors
        .iter()
        .filter_map(|s| LabelSelector::parse(s).ok().map(|p| (s.clone(), p)))
        .collect();
    let mut by_selector: BTreeMap<&str, usize> = BTreeMap::new();
    let (mut by_image, mut by_command) = (0, 0);
    let endpoint = EndpointDefaults {
        port: settings.metrics_port,
        path: settings.metrics_path.clone(),
    };
    let options = ConvertOptions {
        context: ctx,
        endpoint: &endpoint,
        routing_label: settings.routing_label.as_deref(),
        event_lines: 0,
        log_lines: 0,
    };
    let mut engines = Vec::new();
    let empty = BTreeMap::new();
    for pod in &pods {
        let Some(recognized) = recognizer.recognize(pod) else {
            continue;
        };
        match recognized.by {
            MatchedBy::Selector => {
                let labels = pod.metadata.labels.as_ref().unwrap_or(&empty);
                for (text, selector) in &selectors {
                    if selector.matches(labels) {
                        *by_selector.entry(text.as_str()).or_default() += 1;
                    }
                }
            }
            MatchedBy::Image => by_image += 1,
            MatchedBy::Command => by_command += 1,
        }
        if let Some(info) = pod_info(pod, &options) {
            engines.push(info);
        }
    }
    let mut matched: Vec<String> = by_selector
        .iter()
        .map(|(selector, n)| format!("-l {selector}: {n}"))
        .collect();
    if by_image > 0 {
        matched.push(format!("vLLM/SGLang image: {by_image}"));
    }
    if by_command > 0 {
        matched.push(format!("vLLM/SGLang command: {by_command}"));
    }
    let found = format!(
        "{} engine pod(s) among {} pod(s) in {place}",
        engines.len(),
        pods.len()
    );
    checks.push(if engines.is_empty() {
        let searched = if settings.recognizes_workloads() {
            format!(
                "searched the default selectors ({}) and pods running vLLM or SGLang",
                settings.selectors.join(", ")
            )
        } else {
            format!("searched -l {}", settings.selectors.join(" or -l "))
        };
        Check::new(AREA, name, Verdict::Fail)
            .detail(format!("{found}; {searched}"))
            .fix("name the engines' namespace with -n NS (or -A) and their labels with -l SELECTOR")
    } else {
        Check::new(AREA, name, Verdict::Ok)
            .detail(format!("{found}; matched by {}", matched.join(", ")))
    });
    engines
}

/// The pods discovery looks at: the namespace's pods with the default selectors, else those
/// matching any of the user's selectors.
async fn list_pods(
    cluster: &ClusterClient,
    namespace: Option<&str>,
    settings: &KubernetesConfig,
) -> Result<Vec<Pod>, crate::sources::kube::KubeError> {
    let api: Api<Pod> = match namespace {
        Some(ns) => Api::namespaced(cluster.client.clone(), ns),
        None => Api::all(cluster.client.clone()),
    };
    let call = ApiCall::new("list", "pods")
        .namespace(namespace)
        .context(&cluster.context);
    if settings.recognizes_workloads() {
        let list = call
            .run(settings.api_timeout, api.list(&ListParams::default()))
            .await?;
        return Ok(list.items);
    }
    let mut by_uid: BTreeMap<String, Pod> = BTreeMap::new();
    for selector in &settings.selectors {
        let params = ListParams::default().labels(selector);
        let list = call.run(settings.api_timeout, api.list(&params)).await?;
        for pod in list.items {
            let key = pod.metadata.uid.clone().unwrap_or_else(|| {
                format!(
                    "{}/{}",
                    pod.metadata.namespace.as_deref().unwrap_or_default(),
                    pod.metadata.name.as_deref().unwrap_or_default()
                )
            });
            by_uid.insert(key, pod);
        }
    }
    Ok(by_uid.into_values().collect())
}

/// Each action planned against an engine discovery found (its pod, Deployment and node), and
/// every API call of the plan reviewed. A denied action is a warning: the console still
/// watches, without that action.
async fn check_actions(
    cluster: &ClusterClient,
    engines: &[PodInfo],
    settings: &KubernetesConfig,
    checks: &mut Vec<Check>,
) {
    let ctx = cluster.context.as_str();
    let policy = policy_for(settings, ctx, &PolicyChoices::default());
    if policy.read_only {
        checks.push(
            Check::new(AREA, format!("context {ctx}: actions"), Verdict::Skip)
                .detail("read-only: kvtop offers no action here"),
        );
        return;
    }
    // Prefer an engine with a Deployment and a node: every action then has a target.
    let Some(sample) = engines
        .iter()
        .find(|e| deployment_of(e).is_some() && e.node.is_some())
        .or_else(|| engines.first())
    else {
        checks.push(
            Check::new(AREA, format!("context {ctx}: actions"), Verdict::Skip)
                .detail("no engine pod to plan an action against"),
        );
        return;
    };
    let namespace = sample.key.namespace.as_str();
    for kind in ACTIONS {
        let name = format!("context {ctx}: RBAC for {}", kind.name());
        let target = match kind.target_kind() {
            "deployment" => deployment_of(sample),
            "node" => sample.node.clone(),
            _ => Some(sample.key.name.clone()),
        };
        let Some(target) = target else {
            checks.push(Check::new(AREA, name, Verdict::Skip).detail(format!(
                "pod {} has no {}",
                sample.key.name,
                kind.target_kind()
            )));
            continue;
        };
        let planned = build_plan(
            cluster,
            kind,
            namespace,
            &target,
            &policy,
            settings.api_timeout,
        )
        .await;
        let plan = match planned {
            Ok((plan, _)) => plan,
            Err(err) => {
                checks.push(
                    Check::new(AREA, name, Verdict::Warn)
                        .detail(format!("cannot plan it on {target}: {err}"))
                        .fix(format!(
                            "the plan's reads need the same RBAC as `kvtop {} {target} --dry-run`",
                            kind.name()
                        )),
                );
                continue;
            }
        };
        let mut denied = Vec::new();
        let mut failure = None;
        for access in plan.accesses() {
            let what = access_words(&access);
            match review_access(cluster, access, settings.api_timeout).await {
                Ok(answer) if answer.allowed => {}
                Ok(_) => denied.push(what),
                Err(err) => failure = Some(err.to_string()),
            }
        }
        checks.push(match (denied.is_empty(), failure) {
            (_, Some(err)) => Check::new(AREA, name, Verdict::Warn)
                .detail(format!("cannot ask (SelfSubjectAccessReview): {err}")),
            (true, None) => Check::new(AREA, name, Verdict::Ok).detail(format!(
                "allowed (planned on {} {target})",
                kind.target_kind()
            )),
            (false, None) => Check::new(AREA, name, Verdict::Warn)
                .detail(format!("denied: {}", denied.join("; ")))
                .fix(format!(
                    "ask for a Role granting {}, or run with --read-only",
                    denied.join(", ")
                )),
        });
    }
}

fn deployment_of(info: &PodInfo) -> Option<String> {
    info.owner.as_ref().and_then(|o| o.deployment.clone())
}
