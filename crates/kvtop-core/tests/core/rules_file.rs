//! Rules files: merging a user file over the built-in one by id, disabling, adding, and errors
//! that name the file, the line and the rule.

use std::io::Write as _;

use kvtop_core::rules::error::RulesError;
use kvtop_core::rules::file::{BUILTIN_RULES_NAME, RuleSet};
use kvtop_core::rules::model::{Per, Severity, Suggest};

fn with_user(text: &str) -> Result<RuleSet, RulesError> {
    RuleSet::with_user_text("user-rules.toml", text)
}

fn error(text: &str) -> String {
    match with_user(text) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_user_rule_overrides_only_the_fields_it_sets() {
    let builtin = RuleSet::builtin().unwrap_or_else(|e| panic!("{e}"));
    let rules = with_user(
        r#"
[[rule]]
id = "kv-high"
when = "kv_usage > 93%"
for = "10m"
severity = "critical"
"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let before = builtin.get("kv-high").expect("built in");
    let after = rules.get("kv-high").expect("overridden");
    assert_eq!(after.when.text(), "kv_usage > 93%");
    assert_eq!(after.for_secs, 600.0);
    assert_eq!(after.severity, Severity::Critical);
    assert_eq!((&after.title, &after.cause), (&before.title, &before.cause));
    assert_eq!(after.sources, before.sources);
    // Same position, same number of rules.
    let position = |set: &RuleSet| set.rules().iter().position(|r| r.id == "kv-high");
    assert_eq!(position(&rules), position(&builtin));
    assert_eq!(rules.rules().len(), builtin.rules().len());
}

#[test]
fn a_user_file_disables_and_adds_rules() {
    let builtin = RuleSet::builtin().unwrap_or_else(|e| panic!("{e}"));
    let rules = with_user(
        r#"
[[rule]]
id = "itl-p99-slo"
enabled = false

[[rule]]
id = "kv-breaker"
clear_when = ""
suggest = "none"

[[rule]]
id = "team-queue"
title = "Team queue too deep"
severity = "info"
when = "max(waiting) > 10"
per = "model"
for = "30s"
cause = "Our own limit."
action = "Call the team."
suggest = "drain"
source = ["local-1", "local-2"]
"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(rules.get("itl-p99-slo").is_none());
    assert_eq!(rules.disabled(), ["itl-p99-slo"]);
    assert!(rules.get("kv-breaker").expect("kept").clear_when.is_none());
    assert_eq!(rules.get("kv-breaker").expect("kept").suggest, None);
    let added = rules.rules().last().expect("added last");
    assert_eq!(added.id, "team-queue");
    assert_eq!(added.per, Per::Model);
    assert_eq!(added.suggest, Some(Suggest::Drain));
    assert_eq!(added.source(), "local-1, local-2");
    assert_eq!(added.for_secs, 30.0);
    assert_eq!(rules.rules().len(), builtin.rules().len());
}

#[test]
fn a_new_rule_needs_title_severity_and_when() {
    assert_eq!(
        error("[[rule]]\nid = \"mine\"\nwhen = \"waiting > 1\"\nseverity = \"info\"\n"),
        "user-rules.toml:1: rule \"mine\": title: missing (a new rule needs title, severity and when)"
    );
    assert_eq!(
        error("[[rule]]\nid = \"mine\"\ntitle = \"t\"\nseverity = \"info\"\n"),
        "user-rules.toml:1: rule \"mine\": when: missing (a new rule needs title, severity and when)"
    );
}

#[test]
fn expression_errors_name_file_line_rule_field_and_column() {
    let text = "# mine\n[[rule]]\nid = \"T1.1-high-ttft\"\ntitle = \"t\"\nseverity = \"warning\"\nwhen = \"ttft_p95 > 500ms kv_usage > 0.9\"\n";
    let err = with_user(text).expect_err("bad expression");
    assert_eq!(
        err.to_string(),
        "user-rules.toml:6: rule \"T1.1-high-ttft\": when, column 18: expected \"and\", \"or\" or the end of the expression, found \"kv_usage\""
    );
    match err {
        RulesError::Expression { error, at } => {
            assert_eq!(
                (error.rule_id.as_str(), error.field),
                ("T1.1-high-ttft", "when")
            );
            assert_eq!(error.position, 18);
            assert_eq!(at.line, Some(6));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        error("[[rule]]\nid = \"kv-high\"\nclear_when = \"kv_usage < \"\n"),
        "user-rules.toml:3: rule \"kv-high\": clear_when, column 12: expected a signal, a number or \"(\", found the end of the expression"
    );
    // An engine-level expression overridden onto a fleet rule is checked at the fleet level.
    assert_eq!(
        error("[[rule]]\nid = \"no-engine-up\"\nwhen = \"up == 0\"\n"),
        "user-rules.toml:3: rule \"no-engine-up\": when, column 1: expected an aggregate such as max(kv_usage) or count(up == 1): a fleet rule reads groups, not single engines, found \"up\""
    );
}

#[test]
fn shape_errors_name_the_rule() {
    assert_eq!(
        error("[[rule]]\nid = \"kv-high\"\nwhn = \"x\"\n"),
        "user-rules.toml:3: rule \"kv-high\": unknown field `whn`, expected one of `id`, `enabled`, `title`, `severity`, `when`, `for`, `clear_when`, `cause`, `action`, `suggest`, `source`, `per`, `scope`, `explains`, `keep_firing_for`"
    );
    assert_eq!(
        error("[[rule]]\nid = \"kv-high\"\nseverity = \"page\"\n"),
        "user-rules.toml:3: rule \"kv-high\": unknown variant `page`, expected one of `info`, `warning`, `critical`"
    );
    assert_eq!(
        error("[[rule]]\nid = \"kv-high\"\nfor = \"5\"\n"),
        "user-rules.toml:3: rule \"kv-high\": for: \"5\" is not a duration: add a unit (ms, s, m, h or d), e.g. \"5s\""
    );
    assert_eq!(
        error("[[rule]]\nid = \"a\"\nenabled = false\n[[rule]]\nid = \"a\"\nenabled = false\n"),
        "user-rules.toml:4: rule \"a\" is defined twice in this file"
    );
    assert_eq!(
        error("[[rules]]\nid = \"a\"\n"),
        "user-rules.toml:1: unknown field `rules`, expected `rule` or `unobservable`"
    );
    let syntax = error("[[rule]\nid = 1\n");
    assert!(syntax.starts_with("user-rules.toml:1: "), "{syntax}");
}

#[test]
fn loading_reads_the_named_file_and_reports_a_missing_one() {
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    writeln!(
        file,
        "[[rule]]\nid = \"queue-deep\"\nwhen = \"waiting > 80\""
    )
    .expect("write");
    let rules = RuleSet::load(Some(file.path())).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        rules.get("queue-deep").map(|r| r.when.text()),
        Some("waiting > 80")
    );
    let defaults = RuleSet::load(None).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        defaults,
        RuleSet::builtin().unwrap_or_else(|e| panic!("{e}"))
    );
    let missing = file.path().with_extension("nope");
    let err = RuleSet::load(Some(&missing)).expect_err("missing file");
    assert!(
        err.to_string()
            .starts_with(&format!("{}: cannot read rules: ", missing.display())),
        "{err}"
    );
}

#[test]
fn errors_in_the_builtin_file_would_name_it() {
    let err = RuleSet::from_texts(&[(BUILTIN_RULES_NAME, "[[rule]]\nid = \"x\"\n")])
        .expect_err("incomplete");
    assert!(
        err.to_string()
            .starts_with("config/rules.toml (built in):1: rule \"x\": title: missing"),
        "{err}"
    );
}
