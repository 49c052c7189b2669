use super::*;
use crate::rules::model::Severity;
use crate::rules::{FindingState, Health};

fn engine(n: u32) -> (TargetId, EngineId) {
    (
        TargetId(n),
        EngineId {
            model: "m".into(),
            engine: "0".into(),
        },
    )
}

fn subject(n: u32) -> Arc<Subject> {
    let (target, id) = engine(n);
    Arc::new(Subject::Engine {
        target,
        id,
        name: format!("e{n}"),
    })
}

fn finding(rule: &str, n: u32, since: Ts, state: FindingState, kv: f64) -> Finding {
    Finding {
        rule_id: rule.into(),
        title: rule.into(),
        severity: Severity::Critical,
        subject: subject(n),
        since,
        fired_at: match state {
            FindingState::Pending => None,
            _ => Some(since + 10.0),
        },
        state,
        evidence: vec![crate::rules::Evidence {
            signal: "kv_usage".into(),
            value: Some(kv),
            op: crate::rules::CmpOp::Ge,
            threshold: "0.9".into(),
            threshold_value: Some(0.9),
            threshold_is_literal: true,
            unit: crate::rules::Unit::Ratio,
            holds: crate::rules::Truth::True,
            line: None,
        }],
        cause: "".into(),
        action: "".into(),
        suggest: None,
        source: "".into(),
        frozen: false,
    }
}

fn health(health: Health) -> EngineHealth {
    EngineHealth {
        health,
        ..EngineHealth::default()
    }
}

fn states(timeline: &Timeline, t: Ts) -> Vec<(String, FindingState)> {
    let mut out: Vec<_> = timeline
        .findings_at(t)
        .into_iter()
        .map(|f| (format!("{}@{}", f.rule_id, f.subject.label()), f.state))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// One cycle per second from 100 to 200: `kv-full` on e1 pending from 110, firing from 120,
/// resolved at 150 and unlisted from 155; e2 goes from healthy to down at 130.
fn timeline() -> Timeline {
    let mut timeline = Timeline::new(3600.0);
    let (e1, e2) = (engine(1), engine(2));
    for second in 100..=200 {
        let now = f64::from(second);
        let mut findings = Vec::new();
        let state = match second {
            110..120 => Some(FindingState::Pending),
            120..150 => Some(FindingState::Firing),
            150..155 => Some(FindingState::Resolved { at: 150.0 }),
            _ => None,
        };
        if let Some(state) = state {
            findings.push(finding("kv-full", 1, 110.0, state, now / 1000.0));
        }
        let e2_health = if second < 130 {
            Health::Healthy
        } else {
            Health::Down
        };
        let health_now = [
            ((e1.0, &e1.1), health(Health::Degraded)),
            ((e2.0, &e2.1), health(e2_health)),
        ];
        timeline.observe(&findings, health_now, now);
    }
    timeline
}

#[test]
fn a_past_instant_shows_the_findings_as_they_stood_then() {
    let timeline = timeline();
    assert_eq!(states(&timeline, 105.0), vec![]);
    assert_eq!(
        states(&timeline, 115.5),
        vec![("kv-full@e1".to_owned(), FindingState::Pending)]
    );
    assert_eq!(
        states(&timeline, 120.0),
        vec![("kv-full@e1".to_owned(), FindingState::Firing)]
    );
    assert_eq!(
        states(&timeline, 152.0),
        vec![(
            "kv-full@e1".to_owned(),
            FindingState::Resolved { at: 150.0 }
        )]
    );
    assert_eq!(states(&timeline, 155.0), vec![]);
    assert_eq!(states(&timeline, 200.0), vec![]);
}

#[test]
fn only_changes_are_kept_and_evidence_is_as_of_the_last_change() {
    let timeline = timeline();
    // Findings: pending, firing, resolved, unlisted. Health: e1 once, e2 twice.
    assert_eq!(timeline.len(), 4 + 1 + 2);
    let at_140 = timeline.findings_at(140.0);
    let evidence = at_140.first().and_then(|f| f.evidence.first());
    assert_eq!(
        evidence.and_then(|e| e.value),
        Some(0.12),
        "as when it fired"
    );
}

#[test]
fn health_at_a_past_instant_and_engines_that_left() {
    let mut timeline = timeline();
    let at = |t: &Timeline, when: Ts| -> Vec<(u32, Health)> {
        t.health_at(when)
            .into_iter()
            .map(|((target, _), h)| (target.0, h.health))
            .collect()
    };
    assert_eq!(
        at(&timeline, 129.0),
        vec![(1, Health::Degraded), (2, Health::Healthy)]
    );
    assert_eq!(
        at(&timeline, 130.0),
        vec![(1, Health::Degraded), (2, Health::Down)]
    );
    assert_eq!(at(&timeline, 99.0), vec![]);
    // e2 leaves the fleet at 201.
    let e1 = engine(1);
    timeline.observe(&[], [((e1.0, &e1.1), health(Health::Degraded))], 201.0);
    assert_eq!(at(&timeline, 201.0), vec![(1, Health::Degraded)]);
    assert_eq!(
        at(&timeline, 200.0),
        vec![(1, Health::Degraded), (2, Health::Down)]
    );
}

#[test]
fn changes_beyond_the_retention_are_dropped_but_the_one_in_effect_stays() {
    let mut timeline = Timeline::new(60.0);
    let e1 = engine(1);
    let firing = finding("kv-full", 1, 0.0, FindingState::Firing, 0.95);
    for second in 0..1000 {
        let now = f64::from(second);
        let listed = if second < 500 {
            vec![firing.clone()]
        } else {
            Vec::new()
        };
        timeline.observe(&listed, [((e1.0, &e1.1), health(Health::Healthy))], now);
    }
    // Firing since 0 and unlisted at 500: both beyond the horizon (939), so only the last
    // health change is left, and the start of what can be told is the horizon.
    assert_eq!(timeline.len(), 1);
    assert_eq!(timeline.start(999.0), Some(939.0));
    assert_eq!(states(&timeline, 950.0), vec![]);
    // A firing finding older than the horizon is still known to fire at the horizon.
    let mut long = Timeline::new(60.0);
    for second in 0..1000 {
        long.observe(std::slice::from_ref(&firing), [], f64::from(second));
    }
    assert_eq!(long.len(), 1);
    assert_eq!(
        states(&long, 950.0),
        vec![("kv-full@e1".to_owned(), FindingState::Firing)]
    );
}

#[test]
fn cycles_out_of_order_or_at_nonsensical_times_are_ignored() {
    let mut timeline = timeline();
    let before = timeline.len();
    let pending = finding("other", 1, 0.0, FindingState::Pending, 0.5);
    timeline.observe(std::slice::from_ref(&pending), [], 150.0);
    timeline.observe(std::slice::from_ref(&pending), [], f64::NAN);
    assert_eq!(timeline.len(), before);
    assert_eq!(Timeline::new(f64::NAN).start(5.0), None);
}
