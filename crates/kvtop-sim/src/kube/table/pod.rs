//! The pods printer: READY, STATUS and RESTARTS derived from the container states the way the
//! API server derives them.

use serde_json::{Value, json};

use super::values::{age, array, human_duration, int, name, or_placeholder, text, timestamp};

fn condition_true(status: &Value, type_: &str) -> bool {
    array(&status["conditions"])
        .iter()
        .any(|c| c["type"] == type_ && c["status"] == "True")
}

/// The later of two `finishedAt` times.
fn later(current: Option<f64>, candidate: Option<f64>) -> Option<f64> {
    match (current, candidate) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

pub(super) fn pod_row(pod: &Value, now: f64) -> (Vec<Value>, Vec<Value>) {
    let spec = &pod["spec"];
    let status = &pod["status"];
    let phase = text(&status["phase"]);
    let mut reason = or_placeholder(text(&status["reason"]), phase);
    if array(&status["conditions"])
        .iter()
        .any(|c| c["type"] == "PodScheduled" && c["reason"] == "SchedulingGated")
    {
        reason = "SchedulingGated".to_owned();
    }
    let conditions = match phase {
        "Succeeded" => vec![
            json!({"type": "Completed", "status": "True", "reason": "Succeeded", "message": "The pod has completed successfully."}),
        ],
        "Failed" => vec![
            json!({"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}),
        ],
        _ => Vec::new(),
    };

    let init_specs = array(&spec["initContainers"]);
    // Sidecars (init containers restarted always) count as containers of the pod.
    let restartable = |name: &str| {
        init_specs
            .iter()
            .any(|c| c["name"] == name && c["restartPolicy"] == "Always")
    };
    let total = array(&spec["containers"]).len()
        + init_specs
            .iter()
            .filter(|c| c["restartPolicy"] == "Always")
            .count();
    let mut ready = 0usize;
    let mut restarts = 0i64;
    let mut last_restart: Option<f64> = None;
    let mut sidecar_restarts = 0i64;
    let mut last_sidecar_restart: Option<f64> = None;

    let mut initializing = false;
    for (i, c) in array(&status["initContainerStatuses"]).iter().enumerate() {
        let finished = timestamp(&c["lastState"]["terminated"]["finishedAt"]);
        restarts += int(&c["restartCount"]);
        last_restart = later(last_restart, finished);
        let sidecar = restartable(text(&c["name"]));
        if sidecar {
            sidecar_restarts += int(&c["restartCount"]);
            last_sidecar_restart = later(last_sidecar_restart, finished);
        }
        let terminated = c["state"]["terminated"].is_object();
        let waiting = text(&c["state"]["waiting"]["reason"]);
        if terminated && int(&c["state"]["terminated"]["exitCode"]) == 0 {
            continue;
        }
        if sidecar && c["started"] == true {
            if c["ready"] == true {
                ready += 1;
            }
            continue;
        }
        reason = if terminated {
            let t = &c["state"]["terminated"];
            match text(&t["reason"]) {
                "" if int(&t["signal"]) != 0 => format!("Init:Signal:{}", int(&t["signal"])),
                "" => format!("Init:ExitCode:{}", int(&t["exitCode"])),
                r => format!("Init:{r}"),
            }
        } else if !waiting.is_empty() && waiting != "PodInitializing" {
            format!("Init:{waiting}")
        } else {
            format!("Init:{i}/{}", init_specs.len())
        };
        initializing = true;
        break;
    }

    if !initializing || condition_true(status, "Initialized") {
        restarts = sidecar_restarts;
        last_restart = last_sidecar_restart;
        let mut has_running = false;
        for c in array(&status["containerStatuses"]).iter().rev() {
            restarts += int(&c["restartCount"]);
            last_restart = later(
                last_restart,
                timestamp(&c["lastState"]["terminated"]["finishedAt"]),
            );
            let state = &c["state"];
            let waiting = text(&state["waiting"]["reason"]);
            let terminated = &state["terminated"];
            if !waiting.is_empty() {
                reason = waiting.to_owned();
            } else if !text(&terminated["reason"]).is_empty() {
                reason = text(&terminated["reason"]).to_owned();
            } else if terminated.is_object() {
                reason = if int(&terminated["signal"]) != 0 {
                    format!("Signal:{}", int(&terminated["signal"]))
                } else {
                    format!("ExitCode:{}", int(&terminated["exitCode"]))
                };
            } else if c["ready"] == true && state["running"].is_object() {
                has_running = true;
                ready += 1;
            }
        }
        // A pod whose finished container reads Completed still runs if another one does.
        if reason == "Completed" && has_running {
            reason = if condition_true(status, "Ready") {
                "Running".to_owned()
            } else {
                "NotReady".to_owned()
            };
        }
    }

    let deleting = pod["metadata"]["deletionTimestamp"].is_string();
    if deleting && text(&status["reason"]) == "NodeLost" {
        reason = "Unknown".to_owned();
    } else if deleting && phase != "Succeeded" && phase != "Failed" {
        reason = "Terminating".to_owned();
    }

    let restarts_cell = match last_restart {
        Some(at) if restarts != 0 => {
            format!("{restarts} ({} ago)", human_duration(now - at))
        }
        _ => restarts.to_string(),
    };

    let pod_ip = array(&status["podIPs"])
        .first()
        .map_or("", |ip| text(&ip["ip"]));
    let gates = array(&spec["readinessGates"]);
    let readiness_gates = if gates.is_empty() {
        "<none>".to_owned()
    } else {
        let passing = gates
            .iter()
            .filter(|g| {
                array(&status["conditions"])
                    .iter()
                    .find(|c| c["type"] == g["conditionType"])
                    .is_some_and(|c| c["status"] == "True")
            })
            .count();
        format!("{passing}/{}", gates.len())
    };
    let cells = vec![
        name(pod).into(),
        format!("{ready}/{total}").into(),
        reason.into(),
        restarts_cell.into(),
        age(pod, now).into(),
        or_placeholder(pod_ip, "<none>").into(),
        or_placeholder(text(&spec["nodeName"]), "<none>").into(),
        or_placeholder(text(&status["nominatedNodeName"]), "<none>").into(),
        readiness_gates.into(),
    ];
    (cells, conditions)
}
