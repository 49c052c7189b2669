use super::*;
use crate::engine::EngineId;
use crate::fleet::TargetId;
use crate::rules::RuleSet;

fn engine(n: u32, model: &str) -> Arc<Subject> {
    Arc::new(Subject::Engine {
        target: TargetId(n),
        id: EngineId {
            model: model.into(),
            engine: "0".into(),
        },
        name: format!("e{n}"),
    })
}

fn finding(rule: &str, severity: Severity, subject: &Arc<Subject>, fired: Ts) -> Finding {
    Finding {
        rule_id: rule.into(),
        title: format!("title of {rule}").into(),
        severity,
        subject: Arc::clone(subject),
        since: fired,
        fired_at: Some(fired),
        state: FindingState::Firing,
        evidence: Vec::new(),
        cause: "".into(),
        action: "".into(),
        suggest: None,
        source: "".into(),
        frozen: false,
    }
}

fn builtin_explains() -> Explains {
    let rules = RuleSet::builtin().unwrap_or_else(|e| panic!("{e}"));
    Explains::of(rules.rules())
}

const CRIT: Severity = Severity::Critical;
const WARN: Severity = Severity::Warning;
const INFO: Severity = Severity::Info;

fn no_traffic(_: &Subject) -> Option<f64> {
    None
}

#[test]
fn the_builtin_explanations_follow_the_chain() {
    let explains = builtin_explains();
    assert!(explains.explains("cuda-oom", "crash-loop"));
    assert!(explains.explains("cuda-oom", "engine-down"));
    assert!(explains.explains("cuda-oom", "engine-unreachable"));
    assert!(explains.explains("oom-chunked-prefill", "cuda-oom"));
    // Transitively, through cuda-oom.
    assert!(explains.explains("oom-chunked-prefill", "engine-down"));
    assert!(!explains.explains("crash-loop", "cuda-oom"));
    assert!(!explains.explains("engine-down", "engine-down"));
}

#[test]
fn explained_ids_name_builtin_rules() {
    let rules = RuleSet::builtin().unwrap_or_else(|e| panic!("{e}"));
    for rule in rules.rules() {
        for id in &rule.explains {
            assert!(rules.get(id).is_some(), "{} explains unknown {id}", rule.id);
        }
    }
}

#[test]
fn one_engine_s_findings_fold_under_the_most_specific_cause() {
    let e = engine(1, "m");
    let findings = [
        finding("crash-loop", CRIT, &e, 10.0),
        finding("engine-down", CRIT, &e, 5.0),
        finding("cuda-oom", CRIT, &e, 12.0),
        finding("oom-chunked-prefill", CRIT, &e, 12.0),
        finding("engine-unreachable", WARN, &e, 4.0),
        finding("chunked-prefill-batch-big", WARN, &e, 1.0),
    ];
    let incidents = fold(&findings, &builtin_explains(), no_traffic);
    assert_eq!(incidents.len(), 1, "{incidents:#?}");
    let incident = &incidents[0];
    assert_eq!(&*incident.head.rule_id, "oom-chunked-prefill");
    assert_eq!(incident.severity, CRIT);
    assert_eq!(incident.symptoms.len(), 5);
    assert_eq!(incident.members.len(), 6);
    assert_eq!(incident.since, 1.0, "from the first finding that fired");
    assert_eq!(incident.place(), "e1");
    // Most severe symptoms first.
    assert_eq!(incident.symptoms[0].severity, CRIT);
    assert_eq!(incident.symptoms[4].severity, WARN);
}

#[test]
fn unrelated_findings_of_an_engine_are_one_incident_headed_by_the_worst() {
    let e = engine(1, "m");
    let findings = [
        finding("cpu-high", WARN, &e, 1.0),
        finding("kv-full", CRIT, &e, 2.0),
    ];
    let incidents = fold(&findings, &builtin_explains(), no_traffic);
    assert_eq!(incidents.len(), 1);
    assert_eq!(&*incidents[0].head.rule_id, "kv-full");
    assert_eq!(&*incidents[0].symptoms[0].rule_id, "cpu-high");
}

#[test]
fn one_rule_on_several_engines_of_a_model_is_one_incident() {
    let (a, b, c) = (engine(1, "m"), engine(2, "m"), engine(3, "other"));
    let findings = [
        finding("kv-high", WARN, &a, 3.0),
        finding("kv-high", WARN, &b, 2.0),
        finding("kv-high", WARN, &c, 1.0),
        finding("preemptions", INFO, &b, 2.0),
    ];
    let incidents = fold(&findings, &builtin_explains(), no_traffic);
    assert_eq!(incidents.len(), 2, "{incidents:#?}");
    let merged = &incidents[0];
    assert_eq!(
        merged.engines.len(),
        2,
        "the model's two engines come first"
    );
    assert_eq!(merged.place(), "m ×2");
    assert_eq!(merged.since, 2.0);
    assert_eq!(merged.symptoms.len(), 1);
    assert_eq!(incidents[1].place(), "e3");
}

#[test]
fn incidents_rank_by_severity_then_engines_then_traffic() {
    let (a, b, c, d) = (
        engine(1, "m"),
        engine(2, "m"),
        engine(3, "n"),
        engine(4, "p"),
    );
    let findings = [
        finding("cpu-high", WARN, &a, 1.0),
        finding("cpu-high", WARN, &b, 1.0),
        finding("kv-full", CRIT, &c, 9.0),
        finding("queue-deep", WARN, &d, 0.0),
    ];
    let traffic = |s: &Subject| match s {
        Subject::Engine { target, .. } if target.0 == 4 => Some(100.0),
        _ => Some(1.0),
    };
    let incidents = fold(&findings, &builtin_explains(), traffic);
    let order: Vec<&str> = incidents.iter().map(|i| &*i.head.rule_id).collect();
    assert_eq!(order, ["kv-full", "cpu-high", "queue-deep"]);
    assert_eq!(incidents[1].traffic, 2.0);
    // Same severity and engine count: more traffic first.
    let findings = [
        finding("cpu-high", WARN, &a, 1.0),
        finding("queue-deep", WARN, &d, 5.0),
    ];
    let incidents = fold(&findings, &builtin_explains(), traffic);
    assert_eq!(&*incidents[0].head.rule_id, "queue-deep");
}

#[test]
fn resolved_findings_make_a_resolved_incident_after_the_firing_ones() {
    let (a, b) = (engine(1, "m"), engine(2, "n"));
    let mut gone = finding("cuda-oom", CRIT, &a, 10.0);
    gone.state = FindingState::Resolved { at: 70.0 };
    let mut symptom = finding("crash-loop", CRIT, &a, 20.0);
    symptom.state = FindingState::Resolved { at: 80.0 };
    let mut pending = finding("kv-high", WARN, &b, 50.0);
    pending.state = FindingState::Pending;
    let findings = [gone, symptom, pending, finding("cpu-high", WARN, &b, 30.0)];
    let incidents = fold(&findings, &builtin_explains(), no_traffic);
    assert_eq!(incidents.len(), 2);
    assert!(incidents[0].is_firing());
    assert_eq!(&*incidents[0].head.rule_id, "cpu-high");
    assert!(incidents[0].symptoms.is_empty(), "pending is no symptom");
    let resolved = &incidents[1];
    assert_eq!(&*resolved.head.rule_id, "cuda-oom");
    assert_eq!(resolved.state, IncidentState::Resolved { at: 80.0 });
    assert_eq!(resolved.duration(1000.0), 70.0);
}

#[test]
fn a_model_finding_takes_in_the_engine_incidents_it_explains() {
    let (a, b, c) = (engine(1, "m"), engine(2, "m"), engine(3, "n"));
    let model = Arc::new(Subject::Model("m".into()));
    let findings = [
        finding("no-engine-up", CRIT, &model, 5.0),
        finding("engine-down", CRIT, &a, 1.0),
        finding("engine-down", CRIT, &b, 1.0),
        finding("engine-down", CRIT, &c, 1.0),
    ];
    let incidents = fold(&findings, &builtin_explains(), no_traffic);
    assert_eq!(incidents.len(), 2, "{incidents:#?}");
    let outage = &incidents[0];
    assert_eq!(&*outage.head.rule_id, "no-engine-up");
    assert_eq!(outage.place(), "m");
    assert_eq!(outage.engines.len(), 2);
    assert_eq!(outage.symptoms[0].count, 2);
    assert_eq!(incidents[1].place(), "e3");
}

#[test]
fn rules_that_explain_each_other_still_make_one_incident() {
    let rules = RuleSet::from_texts(&[(
        "t.toml",
        r#"
[[rule]]
id = "a"
title = "A"
severity = "warning"
when = "up == 1"
explains = ["b"]
[[rule]]
id = "b"
title = "B"
severity = "warning"
when = "up == 1"
explains = ["a"]
"#,
    )])
    .unwrap_or_else(|e| panic!("{e}"));
    let explains = Explains::of(rules.rules());
    let e = engine(1, "m");
    let findings = [finding("a", WARN, &e, 1.0), finding("b", WARN, &e, 1.0)];
    let incidents = fold(&findings, &explains, no_traffic);
    assert_eq!(incidents.len(), 1);
    assert_eq!(incidents[0].symptoms.len(), 1);
}
