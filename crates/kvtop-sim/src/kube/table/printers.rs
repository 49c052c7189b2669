//! The printers of the other kinds: one row of cells per object.

use std::collections::BTreeSet;

use serde_json::Value;

use super::values::{
    age, array, container_cells, format_labels, int, int_or_string, list_with_more, name,
    or_placeholder, quantity, selector_string, since, text, timestamp,
};

pub(super) fn node_row(node: &Value, now: f64) -> Vec<Value> {
    let status = &node["status"];
    // The last condition of a type wins, as in the printer's map.
    let ready = array(&status["conditions"])
        .iter()
        .rev()
        .find(|c| c["type"] == "Ready");
    let mut states = vec![match ready {
        Some(c) if c["status"] == "True" => "Ready",
        Some(_) => "NotReady",
        None => "Unknown",
    }];
    if node["spec"]["unschedulable"] == true {
        states.push("SchedulingDisabled");
    }
    let mut roles = BTreeSet::new();
    if let Some(labels) = node["metadata"]["labels"].as_object() {
        for (key, value) in labels {
            if let Some(role) = key.strip_prefix("node-role.kubernetes.io/") {
                if !role.is_empty() {
                    roles.insert(role.to_owned());
                }
            } else if key == "kubernetes.io/role" && !text(value).is_empty() {
                roles.insert(text(value).to_owned());
            }
        }
    }
    let roles = roles.into_iter().collect::<Vec<_>>().join(",");
    let address = |type_: &str| {
        array(&status["addresses"])
            .iter()
            .find(|a| a["type"] == type_)
            .map_or("<none>".to_owned(), |a| text(&a["address"]).to_owned())
    };
    let info = &status["nodeInfo"];
    vec![
        name(node).into(),
        states.join(",").into(),
        or_placeholder(&roles, "<none>").into(),
        age(node, now).into(),
        text(&info["kubeletVersion"]).into(),
        address("InternalIP").into(),
        address("ExternalIP").into(),
        or_placeholder(text(&info["osImage"]), "<unknown>").into(),
        or_placeholder(text(&info["kernelVersion"]), "<unknown>").into(),
        or_placeholder(text(&info["containerRuntimeVersion"]), "<unknown>").into(),
    ]
}

pub(super) fn service_row(svc: &Value, now: f64) -> Vec<Value> {
    let spec = &svc["spec"];
    let type_ = text(&spec["type"]);
    let cluster_ip = array(&spec["clusterIPs"])
        .first()
        .map_or("<none>".to_owned(), |ip| text(ip).to_owned());
    let external_ips: Vec<String> = array(&spec["externalIPs"])
        .iter()
        .map(|ip| text(ip).to_owned())
        .collect();
    let external = match type_ {
        "ClusterIP" | "NodePort" if external_ips.is_empty() => "<none>".to_owned(),
        "ClusterIP" | "NodePort" => external_ips.join(","),
        "LoadBalancer" => {
            // Each ingress point once (the printer collects them in a set), in ingress order.
            let mut all: Vec<String> = Vec::new();
            for ingress in array(&svc["status"]["loadBalancer"]["ingress"]) {
                let shown = first_non_empty(text(&ingress["ip"]), text(&ingress["hostname"]));
                if !shown.is_empty() && !all.iter().any(|s| s == shown) {
                    all.push(shown.to_owned());
                }
            }
            all.extend(external_ips);
            if all.is_empty() {
                "<pending>".to_owned()
            } else {
                all.join(",")
            }
        }
        "ExternalName" => text(&spec["externalName"]).to_owned(),
        _ => "<unknown>".to_owned(),
    };
    let ports: Vec<String> = array(&spec["ports"])
        .iter()
        .map(|p| {
            // The API server defaults an unset protocol to TCP before it stores the Service.
            let protocol = or_placeholder(text(&p["protocol"]), "TCP");
            match int(&p["nodePort"]) {
                0 => format!("{}/{protocol}", int(&p["port"])),
                node_port => format!("{}:{node_port}/{protocol}", int(&p["port"])),
            }
        })
        .collect();
    vec![
        name(svc).into(),
        type_.into(),
        cluster_ip.into(),
        external.into(),
        or_placeholder(&ports.join(","), "<none>").into(),
        age(svc, now).into(),
        format_labels(&spec["selector"]).into(),
    ]
}

pub(super) fn event_row(event: &Value, now: f64) -> Vec<Value> {
    let first = if timestamp(&event["firstTimestamp"]).is_some() {
        since(&event["firstTimestamp"], now)
    } else {
        since(&event["eventTime"], now)
    };
    let mut last = if timestamp(&event["lastTimestamp"]).is_some() {
        since(&event["lastTimestamp"], now)
    } else {
        first.clone()
    };
    let series = &event["series"];
    let count = if series.is_object() {
        last = since(&series["lastObservedTime"], now);
        int(&series["count"])
    } else {
        // Events of the events.k8s.io API that happened once carry no count.
        match int(&event["count"]) {
            0 => 1,
            n => n,
        }
    };
    let involved = &event["involvedObject"];
    let kind = text(&involved["kind"]).to_lowercase();
    let target = match text(&involved["name"]) {
        "" => kind,
        object => format!("{kind}/{object}"),
    };
    let component = first_non_empty(
        text(&event["source"]["component"]),
        text(&event["reportingComponent"]),
    );
    let instance = first_non_empty(
        text(&event["source"]["host"]),
        text(&event["reportingInstance"]),
    );
    let source = if instance.is_empty() {
        component.to_owned()
    } else {
        format!("{component}, {instance}")
    };
    vec![
        last.into(),
        text(&event["type"]).into(),
        text(&event["reason"]).into(),
        target.into(),
        text(&involved["fieldPath"]).into(),
        source.into(),
        text(&event["message"]).trim().into(),
        first.into(),
        count.into(),
        name(event).into(),
    ]
}

fn first_non_empty<'a>(a: &'a str, b: &'a str) -> &'a str {
    if a.is_empty() { b } else { a }
}

pub(super) fn endpoint_slice_row(slice: &Value, now: f64) -> Vec<Value> {
    let ports = array(&slice["ports"])
        .iter()
        .map(|p| match (&p["port"], text(&p["name"])) {
            (Value::Number(n), _) => n.to_string(),
            (_, port_name) if p["name"].is_string() => port_name.to_owned(),
            _ => "*".to_owned(),
        })
        .collect();
    let addresses = array(&slice["endpoints"])
        .iter()
        .flat_map(|e| array(&e["addresses"]).iter().map(|a| text(a).to_owned()))
        .collect();
    vec![
        name(slice).into(),
        text(&slice["addressType"]).into(),
        list_with_more(ports).into(),
        list_with_more(addresses).into(),
        age(slice, now).into(),
    ]
}

pub(super) fn deployment_row(d: &Value, now: f64) -> Vec<Value> {
    let status = &d["status"];
    let (containers, images) = container_cells(&d["spec"]["template"]);
    let selector = selector_string(&d["spec"]["selector"]).unwrap_or_else(|()| "<invalid>".into());
    vec![
        name(d).into(),
        format!(
            "{}/{}",
            int(&status["readyReplicas"]),
            int(&d["spec"]["replicas"])
        )
        .into(),
        int(&status["updatedReplicas"]).into(),
        int(&status["availableReplicas"]).into(),
        age(d, now).into(),
        containers.into(),
        images.into(),
        selector.into(),
    ]
}

pub(super) fn replica_set_row(rs: &Value, now: f64) -> Vec<Value> {
    let status = &rs["status"];
    let (containers, images) = container_cells(&rs["spec"]["template"]);
    let selector = match selector_string(&rs["spec"]["selector"]) {
        Ok(s) if s.is_empty() => "<none>".to_owned(),
        Ok(s) => s,
        Err(()) => "<error>".to_owned(),
    };
    vec![
        name(rs).into(),
        int(&rs["spec"]["replicas"]).into(),
        int(&status["replicas"]).into(),
        int(&status["readyReplicas"]).into(),
        age(rs, now).into(),
        containers.into(),
        images.into(),
        selector.into(),
    ]
}

pub(super) fn hpa_row(hpa: &Value, now: f64) -> Vec<Value> {
    let spec = &hpa["spec"];
    let target = &spec["scaleTargetRef"];
    let min = match &spec["minReplicas"] {
        Value::Number(n) => n.to_string(),
        _ => "<unset>".to_owned(),
    };
    vec![
        name(hpa).into(),
        format!("{}/{}", text(&target["kind"]), text(&target["name"])).into(),
        hpa_targets(
            array(&spec["metrics"]),
            array(&hpa["status"]["currentMetrics"]),
        )
        .into(),
        min.into(),
        int(&spec["maxReplicas"]).into(),
        int(&hpa["status"]["currentReplicas"]).into(),
        age(hpa, now).into(),
    ]
}

/// The TARGETS cell: `current/target` per metric (the status at the same position is the
/// metric's current value), at most two, then `+ N more...`.
fn hpa_targets(specs: &[Value], statuses: &[Value]) -> String {
    const SHOWN: usize = 2;
    if specs.is_empty() {
        return "<none>".to_owned();
    }
    let list: Vec<String> = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| hpa_metric(spec, statuses.get(i).unwrap_or(&Value::Null)))
        .collect();
    let count = list.len();
    let shown = list.into_iter().take(SHOWN).collect::<Vec<_>>().join(", ");
    if count > SHOWN {
        format!("{shown} + {} more...", count - SHOWN)
    } else {
        shown
    }
}

/// `quantity(v)` when the status part it sits in was reported, else `<unknown>`.
fn reported(present: bool, v: &Value) -> String {
    if present {
        quantity(v)
    } else {
        "<unknown>".to_owned()
    }
}

/// One metric of the TARGETS cell.
fn hpa_metric(spec: &Value, status: &Value) -> String {
    let source = text(&spec["type"]);
    let field = match source {
        "Pods" => "pods",
        "External" => "external",
        "Object" => "object",
        "Resource" => "resource",
        "ContainerResource" => "containerResource",
        _ => return "<unknown type>".to_owned(),
    };
    let target = &spec[field]["target"];
    let reported_part = &status[field];
    let current = &reported_part["current"];
    match source {
        "Pods" => format!(
            "{}/{}",
            reported(reported_part.is_object(), &current["averageValue"]),
            quantity(&target["averageValue"])
        ),
        "External" | "Object" if target["averageValue"].is_null() => format!(
            "{}/{}",
            reported(reported_part.is_object(), &current["value"]),
            quantity(&target["value"])
        ),
        "External" | "Object" => format!(
            "{}/{} (avg)",
            reported(!current["averageValue"].is_null(), &current["averageValue"]),
            quantity(&target["averageValue"])
        ),
        // Resource and ContainerResource name the resource.
        _ => {
            let resource = text(&spec[field]["name"]);
            if target["averageValue"].is_null() {
                let now = current["averageUtilization"]
                    .as_i64()
                    .map_or_else(|| "<unknown>".to_owned(), |u| format!("{u}%"));
                let goal = target["averageUtilization"]
                    .as_i64()
                    .map_or_else(|| "<auto>".to_owned(), |u| format!("{u}%"));
                format!("{resource}: {now}/{goal}")
            } else {
                format!(
                    "{resource}: {}/{}",
                    reported(reported_part.is_object(), &current["averageValue"]),
                    quantity(&target["averageValue"])
                )
            }
        }
    }
}

pub(super) fn pdb_row(pdb: &Value, now: f64) -> Vec<Value> {
    let spec = &pdb["spec"];
    let bound = |v: &Value| int_or_string(v).unwrap_or_else(|| "N/A".to_owned());
    vec![
        name(pdb).into(),
        bound(&spec["minAvailable"]).into(),
        bound(&spec["maxUnavailable"]).into(),
        int(&pdb["status"]["disruptionsAllowed"]).into(),
        age(pdb, now).into(),
    ]
}
