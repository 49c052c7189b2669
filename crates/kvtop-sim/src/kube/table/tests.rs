//! Tables of a simulated cluster's objects and of hand-written ones in the states it does not reach.

use serde_json::{Value, json};

use super::values::{array, human_duration, int, name, quantity, since, text, timestamp};
use super::*;
use crate::kube::cluster::{Cluster, DeleteOptions};
use crate::kube::engines::EngineLink;
use crate::kube::objects::time;
use crate::kube::patch::PatchKind;
use kvtop_core::kube_model::{FieldSelector, LabelSelector};

use crate::kube::cluster::test_support::{self, T0};
const IMAGE: &str = "vllm/vllm-openai:v0.10.1.1";

/// Four engines (llama 0, 2; qwen 1, 3 with 3 down; 0 was OOMKilled before), ticked at T0.
fn cluster() -> (Cluster, EngineLink) {
    let (mut cluster, engines) = test_support::cluster(Default::default());
    cluster.tick(T0, &engines);
    (cluster, engines)
}

fn list(c: &Cluster, kind: Kind) -> (Vec<Value>, Value) {
    let (labels, fields) = (LabelSelector::default(), FieldSelector::default());
    let list = c
        .list(kind, None, &labels, &fields, None, None)
        .unwrap_or_default();
    (array(&list["items"]).to_vec(), list["metadata"].clone())
}

fn render(kind: Kind, items: &[Value], now: f64) -> Value {
    table(kind, items, json!({}), now, &TableOptions::default())
}

fn rows(t: &Value) -> Vec<Vec<Value>> {
    array(&t["rows"])
        .iter()
        .map(|r| array(&r["cells"]).to_vec())
        .collect()
}

/// The cells of the one row of a table of `obj`.
fn cells(kind: Kind, obj: Value, now: f64) -> Vec<Value> {
    rows(&render(kind, &[obj], now))
        .into_iter()
        .next()
        .unwrap_or_default()
}

fn row_of(t: &Value, name_column: usize, name: &str) -> Vec<Value> {
    rows(t)
        .into_iter()
        .find(|r| r.get(name_column) == Some(&json!(name)))
        .unwrap_or_default()
}

fn first_pod(c: &Cluster, engine: usize) -> String {
    c.pods_of(engine).first().cloned().unwrap_or_default()
}

#[test]
fn human_durations_follow_apimachinery() {
    let cases: &[(f64, &str)] = &[
        (-2.0, "<invalid>"),
        (-1.9, "0s"),
        (-0.5, "0s"),
        (0.0, "0s"),
        (45.9, "45s"),
        (119.0, "119s"),
        (120.0, "2m"),
        (303.0, "5m3s"),
        (599.0, "9m59s"),
        (600.0, "10m"),
        (179.0 * 60.0 + 59.0, "179m"),
        (3.0 * 3600.0, "3h"),
        (3.0 * 3600.0 + 2.0 * 60.0 + 59.0, "3h2m"),
        (8.0 * 3600.0, "8h"),
        (47.0 * 3600.0 + 59.0 * 60.0, "47h"),
        (2.0 * 86_400.0 + 3.0 * 3600.0, "2d3h"),
        (7.0 * 86_400.0, "7d"),
        (8.0 * 86_400.0, "8d"),
        (729.0 * 86_400.0, "729d"),
        (730.0 * 86_400.0, "2y"),
        (731.0 * 86_400.0, "2y1d"),
        (8.0 * 365.0 * 86_400.0 + 86_400.0, "8y"),
    ];
    for (seconds, expected) in cases {
        assert_eq!(human_duration(*seconds), *expected, "{seconds}");
    }
    assert_eq!(since(&Value::Null, T0), "<unknown>");
    assert_eq!(since(&json!("not a time"), T0), "<unknown>");
    assert_eq!(since(&json!(time(T0 - 61.0)), T0), "61s");
}

#[test]
fn simulated_pods_read_as_kubectl_shows_them() {
    let (c, _) = cluster();
    let (items, _) = list(&c, Kind::Pod);
    let t = render(Kind::Pod, &items, T0);
    let node = |name: &str, ready: &str, status: &str, restarts: &str, age: &str| {
        vec![
            json!(name),
            json!(ready),
            json!(status),
            json!(restarts),
            json!(age),
            json!("127.0.0.1"),
            json!("gpu-node-00"),
            json!("<none>"),
            json!("<none>"),
        ]
    };
    // Engine 0's previous container was OOMKilled as its current one started, 3 s ago.
    let pressured = first_pod(&c, 0);
    assert_eq!(
        row_of(&t, 0, &pressured),
        node(&pressured, "1/1", "Running", "1 (3s ago)", "3s")
    );
    let healthy = first_pod(&c, 2);
    assert_eq!(
        row_of(&t, 0, &healthy),
        node(&healthy, "1/1", "Running", "0", "3s")
    );
    // Created 300 s ago; its fourth failure was 251 s after it started, 49 s ago.
    let crashing = first_pod(&c, 3);
    assert_eq!(
        row_of(&t, 0, &crashing),
        node(&crashing, "0/1", "CrashLoopBackOff", "4 (49s ago)", "5m")
    );
    assert_eq!(rows(&t).len(), 4);
}

#[test]
fn a_deleted_pod_is_terminating_and_its_unscheduled_replacement_pending() {
    let (mut c, engines) = cluster();
    let old = first_pod(&c, 2);
    let deleted = c.delete_pod(&old, &DeleteOptions::default(), T0 + 1.0, &engines);
    assert!(deleted.is_ok());
    c.tick(T0 + 1.5, &engines);
    let replacement = first_pod(&c, 2);
    let (items, _) = list(&c, Kind::Pod);
    let t = render(Kind::Pod, &items, T0 + 1.5);
    let terminating = row_of(&t, 0, &old);
    assert_eq!(terminating.get(2), Some(&json!("Terminating")));
    assert_eq!(
        row_of(&t, 0, &replacement),
        vec![
            json!(replacement),
            json!("0/1"),
            json!("Pending"),
            json!("0"),
            json!("0s"),
            json!("<none>"),
            json!("<none>"),
            json!("<none>"),
            json!("<none>"),
        ]
    );
}

fn pod(status: Value) -> Value {
    json!({
        "metadata": {"name": "p", "creationTimestamp": time(T0 - 90.0)},
        "spec": {"containers": [{"name": "a", "image": "i"}], "nodeName": "n1"},
        "status": status,
    })
}

fn status_of(row: &[Value]) -> (&Value, &Value, &Value) {
    (&row[1], &row[2], &row[3])
}

#[test]
fn pod_status_is_derived_from_the_container_states() {
    let cases: Vec<(Value, [&str; 3])> = vec![
        (
            json!({"phase": "Pending", "containerStatuses": [{"name": "a", "ready": false, "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}}]}),
            ["0/1", "ContainerCreating", "0"],
        ),
        (
            json!({"phase": "Running", "containerStatuses": [{"name": "a", "ready": false, "restartCount": 2,
                "state": {"terminated": {"reason": "OOMKilled", "exitCode": 137}},
                "lastState": {"terminated": {"reason": "OOMKilled", "exitCode": 137, "finishedAt": time(T0 - 123.0)}}}]}),
            ["0/1", "OOMKilled", "2 (2m3s ago)"],
        ),
        (
            json!({"phase": "Running", "containerStatuses": [{"name": "a", "ready": false, "restartCount": 0,
                "state": {"terminated": {"exitCode": 3}}}]}),
            ["0/1", "ExitCode:3", "0"],
        ),
        (
            json!({"phase": "Running", "containerStatuses": [{"name": "a", "ready": false, "restartCount": 0,
                "state": {"terminated": {"exitCode": 0, "signal": 9}}}]}),
            ["0/1", "Signal:9", "0"],
        ),
        (
            json!({"phase": "Failed", "containerStatuses": [{"name": "a", "ready": false, "restartCount": 1,
                "state": {"terminated": {"reason": "Error", "exitCode": 1}}}]}),
            ["0/1", "Error", "1"],
        ),
        (
            json!({"phase": "Pending", "reason": "Evicted"}),
            ["0/1", "Evicted", "0"],
        ),
        (
            json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}),
            ["0/1", "SchedulingGated", "0"],
        ),
        (json!({}), ["0/1", "", "0"]),
    ];
    for (status, [ready, reason, restarts]) in cases {
        let row = cells(Kind::Pod, pod(status.clone()), T0);
        assert_eq!(
            status_of(&row),
            (&json!(ready), &json!(reason), &json!(restarts)),
            "{status}"
        );
    }
}

#[test]
fn init_containers_sidecars_and_completion() {
    let mut init = pod(json!({"phase": "Pending", "initContainerStatuses": [
        {"name": "fetch", "ready": false, "restartCount": 0, "state": {"waiting": {"reason": "PodInitializing"}}}
    ]}));
    init["spec"]["initContainers"] = json!([{"name": "fetch"}, {"name": "warm"}]);
    assert_eq!(cells(Kind::Pod, init.clone(), T0)[2], "Init:0/2");
    init["status"]["initContainerStatuses"][0]["state"] =
        json!({"waiting": {"reason": "CrashLoopBackOff"}});
    assert_eq!(
        cells(Kind::Pod, init.clone(), T0)[2],
        "Init:CrashLoopBackOff"
    );
    init["status"]["initContainerStatuses"][0]["state"] = json!({"terminated": {"exitCode": 2}});
    assert_eq!(cells(Kind::Pod, init, T0)[2], "Init:ExitCode:2");

    // A started sidecar counts as a ready container of the running pod.
    let mut sidecar = pod(json!({
        "phase": "Running",
        "conditions": [{"type": "Initialized", "status": "True"}, {"type": "Ready", "status": "True"}],
        "initContainerStatuses": [{"name": "proxy", "ready": true, "started": true, "restartCount": 1,
            "state": {"running": {}}, "lastState": {"terminated": {"exitCode": 1, "finishedAt": time(T0 - 10.0)}}}],
        "containerStatuses": [{"name": "a", "ready": true, "restartCount": 0, "state": {"running": {}}}],
    }));
    sidecar["spec"]["initContainers"] = json!([{"name": "proxy", "restartPolicy": "Always"}]);
    let row = cells(Kind::Pod, sidecar, T0);
    assert_eq!(
        status_of(&row),
        (&json!("2/2"), &json!("Running"), &json!("1 (10s ago)"))
    );

    let done = json!({
        "metadata": {"name": "job", "creationTimestamp": time(T0 - 7_200.0)},
        "spec": {"containers": [{"name": "a"}, {"name": "b"}]},
        "status": {"phase": "Succeeded", "containerStatuses": [
            {"name": "a", "ready": false, "restartCount": 0, "state": {"terminated": {"reason": "Completed", "exitCode": 0}}},
            {"name": "b", "ready": false, "restartCount": 0, "state": {"terminated": {"reason": "Completed", "exitCode": 0}}}
        ]}
    });
    let t = render(Kind::Pod, &[done], T0);
    assert_eq!(
        rows(&t)[0][..5],
        [
            json!("job"),
            json!("0/2"),
            json!("Completed"),
            json!("0"),
            json!("120m")
        ]
    );
    assert_eq!(
        t["rows"][0]["conditions"],
        json!([{"type": "Completed", "status": "True", "reason": "Succeeded", "message": "The pod has completed successfully."}])
    );

    // One container finished, the other still runs: not Completed.
    let mut half = pod(
        json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}], "containerStatuses": [
            {"name": "a", "ready": true, "restartCount": 0, "state": {"running": {}}},
            {"name": "b", "ready": false, "restartCount": 0, "state": {"terminated": {"reason": "Completed", "exitCode": 0}}}
        ]}),
    );
    half["spec"]["containers"] = json!([{"name": "a"}, {"name": "b"}]);
    assert_eq!(
        cells(Kind::Pod, half, T0)[1..3],
        [json!("1/2"), json!("NotReady")]
    );
}

#[test]
fn pod_wide_columns_and_deletion_states() {
    let mut p = pod(json!({
        "phase": "Running",
        "podIPs": [{"ip": "10.1.2.3"}, {"ip": "fd00::3"}],
        "nominatedNodeName": "n2",
        "conditions": [{"type": "example.com/lb", "status": "True"}, {"type": "example.com/dns", "status": "False"}],
        "containerStatuses": [{"name": "a", "ready": true, "restartCount": 0, "state": {"running": {}}}],
    }));
    p["spec"]["readinessGates"] = json!([
        {"conditionType": "example.com/lb"}, {"conditionType": "example.com/dns"}, {"conditionType": "example.com/none"}
    ]);
    assert_eq!(
        cells(Kind::Pod, p.clone(), T0),
        [
            json!("p"),
            json!("1/1"),
            json!("Running"),
            json!("0"),
            json!("90s"),
            json!("10.1.2.3"),
            json!("n1"),
            json!("n2"),
            json!("1/3")
        ]
    );
    p["metadata"]["deletionTimestamp"] = json!(time(T0 + 30.0));
    assert_eq!(cells(Kind::Pod, p.clone(), T0)[2], "Terminating");
    p["status"]["reason"] = json!("NodeLost");
    assert_eq!(cells(Kind::Pod, p.clone(), T0)[2], "Unknown");
    p["status"]["reason"] = Value::Null;
    p["status"]["phase"] = json!("Succeeded");
    p["status"]["containerStatuses"][0]["state"] =
        json!({"terminated": {"reason": "Completed", "exitCode": 0}});
    assert_eq!(
        cells(Kind::Pod, p, T0)[2],
        "Completed",
        "a finished pod is not terminating"
    );
}

#[test]
fn nodes_show_readiness_cordons_and_roles() {
    let (mut c, engines) = cluster();
    let (items, _) = list(&c, Kind::Node);
    let expected = [
        json!("gpu-node-00"),
        json!("Ready"),
        json!("<none>"),
        json!("24h"),
        json!("v1.33.1"),
        json!("127.0.0.1"),
        json!("<none>"),
        json!("Ubuntu 24.04.2 LTS"),
        json!("6.8.0-60-generic"),
        json!("containerd://1.7.27"),
    ];
    assert_eq!(rows(&render(Kind::Node, &items, T0)), [expected.to_vec()]);
    let cordon = json!({"spec": {"unschedulable": true}});
    let patched = c.patch(
        Kind::Node,
        None,
        "gpu-node-00",
        PatchKind::Merge,
        &cordon,
        false,
        T0,
        &engines,
    );
    assert!(patched.is_ok());
    let (items, _) = list(&c, Kind::Node);
    assert_eq!(
        rows(&render(Kind::Node, &items, T0))[0][1],
        "Ready,SchedulingDisabled"
    );

    let bare = json!({
        "metadata": {"name": "cp", "creationTimestamp": time(T0 - 3.0 * 86_400.0),
            "labels": {"node-role.kubernetes.io/control-plane": "", "node-role.kubernetes.io/": "x", "kubernetes.io/role": "master"}},
        "spec": {"unschedulable": true},
        "status": {"conditions": [{"type": "Ready", "status": "Unknown"}],
            "addresses": [{"type": "ExternalIP", "address": "203.0.113.9"}]}
    });
    assert_eq!(
        cells(Kind::Node, bare, T0),
        [
            json!("cp"),
            json!("NotReady,SchedulingDisabled"),
            json!("control-plane,master"),
            json!("3d"),
            json!(""),
            json!("<none>"),
            json!("203.0.113.9"),
            json!("<unknown>"),
            json!("<unknown>"),
            json!("<unknown>")
        ]
    );
    let unknown = json!({"metadata": {"name": "x"}, "status": {}});
    assert_eq!(
        cells(Kind::Node, unknown, T0)[1..4],
        [json!("Unknown"), json!("<none>"), json!("<unknown>")]
    );
}

#[test]
fn namespaces_services_and_endpoint_slices() {
    let (c, _) = cluster();
    let (namespaces, _) = list(&c, Kind::Namespace);
    assert_eq!(
        rows(&render(Kind::Namespace, &namespaces, T0))[0],
        [json!("llm"), json!("Active"), json!("24h")]
    );

    let (items, _) = list(&c, Kind::Service);
    let t = render(Kind::Service, &items, T0);
    assert_eq!(
        row_of(&t, 0, "vllm-llama-8b"),
        [
            json!("vllm-llama-8b"),
            json!("ClusterIP"),
            json!("10.96.10.10"),
            json!("<none>"),
            json!("8000/TCP"),
            json!("24h"),
            json!(
                "app.kubernetes.io/component=serving-engine,app.kubernetes.io/name=vllm,model=llama-8b"
            )
        ]
    );
    let lb = json!({"metadata": {"name": "lb"}, "spec": {"type": "LoadBalancer", "clusterIPs": ["10.0.0.1"],
        "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]}});
    assert_eq!(
        cells(Kind::Service, lb.clone(), T0)[..5],
        [
            json!("lb"),
            json!("LoadBalancer"),
            json!("10.0.0.1"),
            json!("<pending>"),
            json!("80:30080/TCP,53/UDP")
        ]
    );
    let mut ready = lb;
    ready["status"] = json!({"loadBalancer": {"ingress": [{"ip": "198.51.100.7"}, {"hostname": "lb.example.com"}, {"ip": "198.51.100.7"}]}});
    ready["spec"]["externalIPs"] = json!(["192.0.2.1"]);
    assert_eq!(
        cells(Kind::Service, ready, T0)[3],
        "198.51.100.7,lb.example.com,192.0.2.1"
    );
    let headless = json!({"metadata": {"name": "h"}, "spec": {"type": "ExternalName", "externalName": "db.example.com"}});
    assert_eq!(
        cells(Kind::Service, headless, T0)[2..5],
        [json!("<none>"), json!("db.example.com"), json!("<none>")]
    );

    let slice = |endpoints: Value, ports: Value| {
        json!({"metadata": {"name": "vllm-llama-8b-abcde", "creationTimestamp": time(T0 - 303.0)},
            "addressType": "IPv4", "endpoints": endpoints, "ports": ports})
    };
    let endpoint = |ip: &str, ready: bool| {
        json!({"addresses": [ip], "conditions": {"ready": ready}, "nodeName": "gpu-node-00",
            "targetRef": {"kind": "Pod", "name": "p", "namespace": "llm"}})
    };
    let four = json!([
        endpoint("10.0.0.1", true),
        endpoint("10.0.0.2", false),
        endpoint("10.0.0.3", true),
        endpoint("10.0.0.4", true)
    ]);
    assert_eq!(
        cells(
            Kind::EndpointSlice,
            slice(
                four,
                json!([{"name": "http", "port": 8000, "protocol": "TCP"}])
            ),
            T0
        ),
        [
            json!("vllm-llama-8b-abcde"),
            json!("IPv4"),
            json!("8000"),
            json!("10.0.0.1,10.0.0.2,10.0.0.3 + 1 more..."),
            json!("5m3s")
        ]
    );
    assert_eq!(
        cells(
            Kind::EndpointSlice,
            slice(json!([]), json!([{"name": "http"}, {}])),
            T0
        )[2..4],
        [json!("http,*"), json!("<unset>")]
    );
}

#[test]
fn events_read_with_object_source_and_counts() {
    let (c, _) = cluster();
    let (items, _) = list(&c, Kind::Event);
    let crashing = first_pod(&c, 3);
    let backoff = items
        .iter()
        .find(|e| e["reason"] == "BackOff")
        .cloned()
        .unwrap_or_default();
    let row = cells(Kind::Event, backoff.clone(), T0 + 65.0);
    assert_eq!(
        row[..9],
        [
            json!("65s"),
            json!("Warning"),
            json!("BackOff"),
            json!(format!("pod/{crashing}")),
            json!("spec.containers{vllm}"),
            json!("kubelet, gpu-node-00"),
            json!(text(&backoff["message"])),
            json!("65s"),
            json!(int(&backoff["count"]))
        ]
    );
    assert_eq!(row[9], backoff["metadata"]["name"]);
    assert!(int(&backoff["count"]) > 1, "aggregated: {backoff}");

    // An events.k8s.io-style event: no timestamps but eventTime and a series, no source.
    let series = json!({
        "metadata": {"name": "e"},
        "type": "Normal", "reason": "Scaled", "message": "  scaled up\n",
        "involvedObject": {"kind": "Deployment"},
        "reportingComponent": "deployment-controller",
        "eventTime": "2025-06-15T16:26:40.000000Z",
        "series": {"count": 7, "lastObservedTime": time(T0 - 600.0)}
    });
    let first_seen = timestamp(&series["eventTime"]).map(|t| human_duration(T0 - t));
    assert_eq!(
        cells(Kind::Event, series, T0),
        [
            json!("10m"),
            json!("Normal"),
            json!("Scaled"),
            json!("deployment"),
            json!(""),
            json!("deployment-controller"),
            json!("scaled up"),
            json!(first_seen),
            json!(7),
            json!("e")
        ]
    );
    let once = json!({"metadata": {"name": "o"}, "involvedObject": {"kind": "Node", "name": "n"}, "firstTimestamp": time(T0 - 5.0)});
    let row = cells(Kind::Event, once, T0);
    assert_eq!(row[0], "5s", "no lastTimestamp: the first one");
    assert_eq!(row[8], 1, "no count: once");
    assert_eq!(cells(Kind::Event, json!({}), T0)[0], "<unknown>");
}

#[test]
fn deployments_and_replica_sets() {
    let (c, _) = cluster();
    let (items, _) = list(&c, Kind::Deployment);
    let t = render(Kind::Deployment, &items, T0);
    assert_eq!(
        row_of(&t, 0, "vllm-qwen-7b"),
        [
            json!("vllm-qwen-7b"),
            json!("1/2"),
            json!(2),
            json!(1),
            json!("24h"),
            json!("vllm"),
            json!(IMAGE),
            json!("app.kubernetes.io/name=vllm,model=qwen-7b")
        ]
    );
    let (items, _) = list(&c, Kind::ReplicaSet);
    let t = render(Kind::ReplicaSet, &items, T0);
    let rs = items
        .iter()
        .find(|r| text(&r["metadata"]["name"]).starts_with("vllm-llama-8b-"))
        .map(|r| name(r).to_owned())
        .unwrap_or_default();
    let hash = rs.trim_start_matches("vllm-llama-8b-");
    assert_eq!(
        row_of(&t, 0, &rs),
        [
            json!(rs),
            json!(2),
            json!(2),
            json!(2),
            json!("24h"),
            json!("vllm"),
            json!(IMAGE),
            json!(format!(
                "app.kubernetes.io/name=vllm,model=llama-8b,pod-template-hash={hash}"
            ))
        ]
    );

    let bare = json!({"metadata": {"name": "d"}, "spec": {
        "selector": {"matchLabels": {"b": "2"}, "matchExpressions": [
            {"key": "a", "operator": "In", "values": ["y", "x"]},
            {"key": "c", "operator": "DoesNotExist"},
            {"key": "b2", "operator": "Exists"},
            {"key": "d", "operator": "NotIn", "values": ["z"]}
        ]},
        "template": {"spec": {"containers": [{"name": "one", "image": "i1"}, {"name": "two", "image": "i2"}]}}
    }});
    assert_eq!(
        cells(Kind::Deployment, bare.clone(), T0),
        [
            json!("d"),
            json!("0/0"),
            json!(0),
            json!(0),
            json!("<unknown>"),
            json!("one,two"),
            json!("i1,i2"),
            json!("a in (x,y),b=2,b2,!c,d notin (z)")
        ]
    );
    let invalid = json!({"metadata": {"name": "d"}, "spec": {"selector": {"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}}});
    assert_eq!(cells(Kind::Deployment, invalid.clone(), T0)[7], "<invalid>");
    assert_eq!(cells(Kind::ReplicaSet, invalid, T0)[7], "<error>");
    let empty = json!({"metadata": {"name": "r"}, "spec": {"selector": {}}});
    assert_eq!(cells(Kind::ReplicaSet, empty.clone(), T0)[7], "<none>");
    assert_eq!(cells(Kind::Deployment, empty, T0)[7], "");
}

#[test]
fn hpas_and_pdbs() {
    let (c, _) = cluster();
    let (items, _) = list(&c, Kind::Hpa);
    let t = render(Kind::Hpa, &items, T0);
    let llama = row_of(&t, 0, "vllm-llama-8b");
    let current = items
        .iter()
        .find(|h| name(h) == "vllm-llama-8b")
        .map(|h| quantity(&h["status"]["currentMetrics"][0]["pods"]["current"]["averageValue"]))
        .unwrap_or_default();
    assert_eq!(
        llama,
        [
            json!("vllm-llama-8b"),
            json!("Deployment/vllm-llama-8b"),
            json!(format!("{current}/50")),
            json!("2"),
            json!(2),
            json!(2),
            json!("24h")
        ]
    );

    let pods_metric = json!({"type": "Pods", "pods": {"metric": {"name": "m"}, "target": {"type": "AverageValue", "averageValue": "50"}}});
    let fresh = json!({"metadata": {"name": "h"}, "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "d"}, "maxReplicas": 4,
        "metrics": [pods_metric]}, "status": {}});
    assert_eq!(
        cells(Kind::Hpa, fresh, T0)[..6],
        [
            json!("h"),
            json!("Deployment/d"),
            json!("<unknown>/50"),
            json!("<unset>"),
            json!(4),
            json!(0)
        ]
    );
    let cpu = json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}});
    let memory = json!({"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1Gi"}}});
    let many = json!({"metadata": {"name": "h"}, "spec": {"metrics": [cpu, memory, pods_metric]},
        "status": {"currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 12}}}]}});
    assert_eq!(
        cells(Kind::Hpa, many, T0)[2],
        "cpu: 12%/80%, memory: <unknown>/1Gi + 1 more..."
    );
    let external = json!({"type": "External", "external": {"metric": {"name": "queue"},
        "target": {"type": "AverageValue", "averageValue": "30"}}});
    let object = json!({"type": "Object", "object": {"metric": {"name": "rps"},
        "target": {"type": "Value", "value": "10k"}}});
    let mixed = json!({"metadata": {"name": "h"}, "spec": {"metrics": [external, object]},
    "status": {"currentMetrics": [
        {"type": "External", "external": {"current": {"averageValue": "12"}}},
        {"type": "Object", "object": {"current": {"value": "8k"}}}
    ]}});
    assert_eq!(cells(Kind::Hpa, mixed, T0)[2], "12/30 (avg), 8k/10k");
    let none = json!({"metadata": {"name": "h"}, "spec": {}});
    assert_eq!(
        cells(Kind::Hpa, none, T0)[1..3],
        [json!("/"), json!("<none>")]
    );

    let (items, _) = list(&c, Kind::Pdb);
    assert_eq!(
        row_of(&render(Kind::Pdb, &items, T0), 0, "vllm-llama-8b"),
        [
            json!("vllm-llama-8b"),
            json!("2"),
            json!("N/A"),
            json!(0),
            json!("24h")
        ]
    );
    let percent = json!({"metadata": {"name": "p"}, "spec": {"maxUnavailable": "25%"}, "status": {"disruptionsAllowed": 1}});
    assert_eq!(
        cells(Kind::Pdb, percent, T0)[1..4],
        [json!("N/A"), json!("25%"), json!(1)]
    );
}

#[test]
fn the_table_carries_columns_list_metadata_and_the_requested_object() {
    let (c, _) = cluster();
    let (items, metadata) = list(&c, Kind::Pod);
    let mut paged = metadata.clone();
    paged["continue"] = json!("3");
    paged["remainingItemCount"] = json!(1);
    let t = table(Kind::Pod, &items, paged, T0, &TableOptions::default());
    assert_eq!(t["kind"], "Table");
    assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(
        t["metadata"],
        json!({"resourceVersion": metadata["resourceVersion"], "continue": "3", "remainingItemCount": 1})
    );
    let names: Vec<(&str, i64)> = array(&t["columnDefinitions"])
        .iter()
        .map(|c| (text(&c["name"]), int(&c["priority"])))
        .collect();
    assert_eq!(
        names,
        [
            ("Name", 0),
            ("Ready", 0),
            ("Status", 0),
            ("Restarts", 0),
            ("Age", 0),
            ("IP", 1),
            ("Node", 1),
            ("Nominated Node", 1),
            ("Readiness Gates", 1)
        ]
    );
    assert_eq!(t["columnDefinitions"][0]["format"], "name");
    assert_eq!(t["columnDefinitions"][1]["format"], "");
    assert!(text(&t["columnDefinitions"][4]["description"]).starts_with("CreationTimestamp is"));
    let first = &t["rows"][0];
    assert_eq!(
        first["object"],
        json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": items[0]["metadata"]})
    );
    assert!(first.get("conditions").is_none());

    let whole = TableOptions {
        include_object: IncludeObject::Object,
        headers: false,
    };
    let t = table(Kind::Pod, &items, json!({}), T0, &whole);
    assert_eq!(t["rows"][0]["object"], items[0]);
    assert_eq!(t.get("columnDefinitions"), Some(&Value::Null));
    assert_eq!(t["metadata"], json!({}));
    let bare = TableOptions {
        include_object: IncludeObject::None,
        headers: true,
    };
    let t = table(Kind::Pod, &items, json!({}), T0, &bare);
    assert_eq!(t["rows"][0].get("object"), Some(&Value::Null));
    assert_eq!(rows(&t).len(), items.len());

    // Every kind's rows are as wide as its columns.
    for kind in Kind::ALL {
        let (items, _) = list(&c, kind);
        let t = render(kind, &items, T0);
        let width = array(&t["columnDefinitions"]).len();
        for row in rows(&t) {
            assert_eq!(row.len(), width, "{kind:?}");
        }
        assert!(
            array(&t["columnDefinitions"])
                .iter()
                .all(|c| !text(&c["description"]).is_empty())
        );
    }
    assert!(rows(&render(Kind::Event, &[], T0)).is_empty());
}

#[test]
fn include_object_reads_as_the_api_server_does() {
    assert_eq!(IncludeObject::from_query(None), Ok(IncludeObject::Metadata));
    assert_eq!(
        IncludeObject::from_query(Some("")),
        Ok(IncludeObject::Metadata)
    );
    assert_eq!(
        IncludeObject::from_query(Some("None")),
        Ok(IncludeObject::None)
    );
    assert_eq!(
        IncludeObject::from_query(Some("Object")),
        Ok(IncludeObject::Object)
    );
    assert_eq!(
        IncludeObject::from_query(Some("object")),
        Err("unrecognized includeObject value: \"object\"".to_owned())
    );
}
