//! The rule expression language: precedence, units, parentheses, three-valued logic, fleet
//! aggregates, and every parse error with its exact message and column.

use kvtop_core::engine::{CacheConfig, EngineId, EngineSample};
use kvtop_core::fleet::{EngineStatus, Signals, TargetId};
use kvtop_core::rules::expr::{Expr, Level};
use kvtop_core::rules::input::EngineInput;
use kvtop_core::rules::truth::{Group, Truth};
use proptest::prelude::*;

fn id() -> EngineId {
    EngineId {
        model: "m".into(),
        engine: "0".into(),
    }
}

fn input<'a>(id: &'a EngineId, signals: &'a Signals) -> EngineInput<'a> {
    EngineInput {
        target: TargetId(0),
        id,
        name: "e0",
        status: EngineStatus::Up,
        signals,
        sample: None,
        restarted_at: None,
        gpu: None,
        facts: &[],
        labels: &[],
        logs: None,
        events: None,
        pod_status: None,
        gen_stall_s: None,
        stalled: false,
        model: None,
    }
}

fn eval(text: &str, signals: &Signals) -> Truth {
    let expr = Expr::parse(text, Level::Engine).unwrap_or_else(|e| panic!("{text}: {e}"));
    let id = id();
    expr.eval_engine(&input(&id, signals))
}

fn error(text: &str, level: Level) -> String {
    match Expr::parse(text, level) {
        Ok(_) => panic!("{text} parsed"),
        Err(e) => e.to_string(),
    }
}

fn sig(kv: f64, waiting: f64, ttft_p95: f64) -> Signals {
    Signals {
        kv_usage: Some(kv),
        waiting: Some(waiting),
        ttft_p95: Some(ttft_p95),
        ..Signals::default()
    }
}

#[test]
fn units_scale_to_base_units() {
    let s = sig(0.91, 51.0, 0.6);
    assert_eq!(eval("ttft_p95 > 500ms", &s), Truth::True);
    assert_eq!(eval("ttft_p95 > 0.5s", &s), Truth::True);
    assert_eq!(eval("ttft_p95 < 1s", &s), Truth::True);
    assert_eq!(eval("ttft_p95 > 1m", &s), Truth::False);
    assert_eq!(eval("kv_usage > 90%", &s), Truth::True);
    assert_eq!(eval("kv_usage > 0.9", &s), Truth::True);
    assert_eq!(eval("kv_usage > 91%", &s), Truth::False);
    assert_eq!(eval("waiting > 50", &s), Truth::True);
    // 0.6 s = 600 ms exactly: > is strict, >= is not.
    assert_eq!(eval("ttft_p95 > 600ms", &s), Truth::False);
    assert_eq!(eval("ttft_p95 >= 600ms", &s), Truth::True);
}

#[test]
fn literal_on_the_left_compares_the_same() {
    let s = sig(0.5, 0.0, 0.6);
    assert_eq!(eval("500ms < ttft_p95", &s), Truth::True);
    assert_eq!(eval("90% <= kv_usage", &s), Truth::False);
}

#[test]
fn and_binds_tighter_than_or_and_not_tighter_than_and() {
    // kv true, waiting false, ttft true.
    let s = sig(0.95, 10.0, 0.6);
    // a or (b and c) = true or false = true; (a or b) and c with c false would differ.
    assert_eq!(
        eval("kv_usage > 90% or waiting > 50 and ttft_p95 > 1s", &s),
        Truth::True
    );
    assert_eq!(
        eval("(kv_usage > 90% or waiting > 50) and ttft_p95 > 1s", &s),
        Truth::False
    );
    // (not a) and c = false and true = false; not (a and c) would be false too, so use b:
    // (not b) and a = true.
    assert_eq!(eval("not waiting > 50 and kv_usage > 90%", &s), Truth::True);
    assert_eq!(
        eval("not (waiting < 50 and kv_usage > 90%)", &s),
        Truth::False
    );
    assert_eq!(eval("not not kv_usage > 90%", &s), Truth::True);
}

#[test]
fn arithmetic_precedence_and_unary_minus() {
    let s = Signals {
        running: Some(10.0),
        waiting: Some(4.0),
        ..Signals::default()
    };
    // running + waiting * 2 = 18, (running + waiting) * 2 = 28.
    assert_eq!(eval("running + waiting * 2 == 18", &s), Truth::True);
    assert_eq!(eval("(running + waiting) * 2 == 28", &s), Truth::True);
    assert_eq!(eval("running - waiting - 2 == 4", &s), Truth::True);
    assert_eq!(eval("running / waiting / 5 == 0.5", &s), Truth::True);
    assert_eq!(eval("-running < -waiting", &s), Truth::True);
    assert_eq!(eval("running / (waiting - 4) > 0", &s), Truth::Unknown);
}

#[test]
fn unknown_operands_follow_three_valued_logic() {
    let s = Signals {
        kv_usage: Some(0.95),
        ..Signals::default()
    };
    // ttft_p95 unknown.
    assert_eq!(eval("ttft_p95 > 500ms", &s), Truth::Unknown);
    assert_eq!(eval("not ttft_p95 > 500ms", &s), Truth::Unknown);
    assert_eq!(
        eval("ttft_p95 > 500ms and kv_usage > 90%", &s),
        Truth::Unknown
    );
    assert_eq!(
        eval("ttft_p95 > 500ms and kv_usage < 90%", &s),
        Truth::False
    );
    assert_eq!(eval("ttft_p95 > 500ms or kv_usage > 90%", &s), Truth::True);
    assert_eq!(
        eval("ttft_p95 > 500ms or kv_usage < 90%", &s),
        Truth::Unknown
    );
    // GPU signals are valid names that are unknown until GPU data is supplied.
    assert_eq!(eval("gpu_util < 80% and kv_usage < 0.4", &s), Truth::False);
    assert_eq!(eval("gpu_util < 80%", &s), Truth::Unknown);
}

#[test]
fn text_matches_ignore_case_and_need_a_stream() {
    let expr = Expr::parse("log ~ \"cuda OUT of memory\"", Level::Engine).expect("parses");
    let id = id();
    let s = Signals::default();
    let lines = vec![
        "INFO started".to_owned(),
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB".to_owned(),
    ];
    let quiet = vec!["INFO started".to_owned()];
    assert_eq!(expr.eval_engine(&input(&id, &s)), Truth::Unknown);
    assert_eq!(
        expr.eval_engine(&input(&id, &s).with_logs(&lines)),
        Truth::True
    );
    assert_eq!(
        expr.eval_engine(&input(&id, &s).with_logs(&quiet)),
        Truth::False
    );
    let evidence = expr.evidence_engine(&input(&id, &s).with_logs(&lines));
    assert_eq!(evidence.len(), 1);
    assert_eq!(evidence[0].line.as_deref(), Some(lines[1].as_str()));
}

#[test]
fn config_signals_read_cache_config_and_facts() {
    let id = id();
    let s = Signals::default();
    let sample = EngineSample {
        cache_config: Some(CacheConfig {
            gpu_memory_utilization: Some(0.95),
            enable_prefix_caching: Some(false),
            fields: [("swap_space", "4")].into_iter().collect(),
            ..CacheConfig::default()
        }),
        ..EngineSample::default()
    };
    let facts = vec![
        ("env.OMP_NUM_THREADS".to_owned(), "32".to_owned()),
        (
            "config.enable_chunked_prefill".to_owned(),
            "true".to_owned(),
        ),
    ];
    let mut engine = input(&id, &s).with_facts(&facts);
    engine.sample = Some(&sample);
    let check = |text: &str, engine: &EngineInput<'_>| {
        Expr::parse(text, Level::Engine)
            .unwrap_or_else(|e| panic!("{text}: {e}"))
            .eval_engine(engine)
    };
    assert_eq!(
        check("cache.gpu_memory_utilization > 0.92", &engine),
        Truth::True
    );
    assert_eq!(
        check("cache.enable_prefix_caching == 0", &engine),
        Truth::True
    );
    assert_eq!(check("cache.swap_space == 4", &engine), Truth::True);
    assert_eq!(check("cache.block_size > 0", &engine), Truth::Unknown);
    assert_eq!(check("env.OMP_NUM_THREADS > 8", &engine), Truth::True);
    assert_eq!(
        check("config.enable_chunked_prefill == 1", &engine),
        Truth::True
    );
    assert_eq!(
        check("config.max_num_batched_tokens > 8192", &engine),
        Truth::Unknown
    );
    // Scraped values of an engine that is not up are unknown; pod facts stay known.
    engine.status = EngineStatus::Stale;
    assert_eq!(
        check("cache.gpu_memory_utilization > 0.92", &engine),
        Truth::Unknown
    );
    assert_eq!(check("cache.swap_space == 4", &engine), Truth::Unknown);
    assert_eq!(check("env.OMP_NUM_THREADS > 8", &engine), Truth::True);
}

#[test]
fn group_aggregates_skip_unknown_values() {
    let ids: Vec<EngineId> = (0..3)
        .map(|i| EngineId {
            model: "m".into(),
            engine: i.to_string(),
        })
        .collect();
    let signals = [
        Signals {
            kv_usage: Some(0.9),
            running: Some(30.0),
            ..Signals::default()
        },
        Signals {
            kv_usage: Some(0.2),
            running: Some(10.0),
            ..Signals::default()
        },
        Signals {
            kv_usage: None,
            running: Some(20.0),
            ..Signals::default()
        },
    ];
    let mut inputs: Vec<EngineInput<'_>> = ids
        .iter()
        .zip(&signals)
        .map(|(id, s)| input(id, s))
        .collect();
    inputs[2].status = EngineStatus::Stale;
    let members = [0u32, 1, 2];
    let group = Group {
        inputs: &inputs,
        members: &members,
    };
    let check = |text: &str| {
        Expr::parse(text, Level::Group)
            .unwrap_or_else(|e| panic!("{text}: {e}"))
            .eval_group(group)
    };
    // The stale engine's running count is not current, so it is left out: avg = (30+10)/2.
    assert_eq!(check("max(kv_usage) - min(kv_usage) > 0.69"), Truth::True);
    assert_eq!(check("max(kv_usage) - min(kv_usage) > 0.71"), Truth::False);
    assert_eq!(check("avg(running) == 20"), Truth::True);
    assert_eq!(check("sum(running) == 40"), Truth::True);
    assert_eq!(check("count(up == 1) == 2"), Truth::True);
    assert_eq!(check("count(kv_usage > 50%) == 1"), Truth::True);
    assert_eq!(check("max(running) > 0.5 * sum(running)"), Truth::True);
    assert_eq!(check("max(gpu_util) > 0"), Truth::Unknown);
    let empty = Group {
        inputs: &inputs,
        members: &[],
    };
    let expr =
        Expr::parse("count(up == 1) == 0 and max(kv_usage) > 0", Level::Group).expect("parses");
    assert_eq!(expr.eval_group(empty), Truth::Unknown);
}

#[test]
fn merged_reads_the_models_quantile_over_its_merged_histograms() {
    let ids: Vec<EngineId> = ["m", "m", "other"]
        .iter()
        .enumerate()
        .map(|(i, model)| EngineId {
            model: (*model).into(),
            engine: i.to_string(),
        })
        .collect();
    // The engines' own p99s (1 s and 3 s) average 2 s; their merged histogram says 2.8 s.
    let own = [
        Signals {
            ttft_p99: Some(1.0),
            ..Signals::default()
        },
        Signals {
            ttft_p99: Some(3.0),
            ..Signals::default()
        },
        Signals::default(),
    ];
    let model = Signals {
        ttft_p99: Some(2.8),
        ..Signals::default()
    };
    let other = Signals {
        ttft_p99: Some(0.1),
        ..Signals::default()
    };
    let inputs: Vec<EngineInput<'_>> = ids
        .iter()
        .zip(&own)
        .enumerate()
        .map(|(i, (id, s))| input(id, s).with_model(Some(if i < 2 { &model } else { &other })))
        .collect();
    let check = |text: &str, members: &[u32]| {
        Expr::parse(text, Level::Group)
            .unwrap_or_else(|e| panic!("{text}: {e}"))
            .eval_group(Group {
                inputs: &inputs,
                members,
            })
    };
    assert_eq!(check("avg(ttft_p99) == 2s", &[0, 1]), Truth::True);
    assert_eq!(check("merged(ttft_p99) > 2.5s", &[0, 1]), Truth::True);
    assert_eq!(check("merged(ttft_p99) > 2.9s", &[0, 1]), Truth::False);
    // Over several models there is no one merged value.
    assert_eq!(check("merged(ttft_p99) > 0", &[0, 1, 2]), Truth::Unknown);
    // Unknown until the supplier computed the model's quantiles.
    let bare: Vec<EngineInput<'_>> = ids.iter().zip(&own).map(|(id, s)| input(id, s)).collect();
    let expr = Expr::parse("merged(ttft_p99) > 0", Level::Group).expect("parses");
    assert_eq!(
        expr.eval_group(Group {
            inputs: &bare,
            members: &[0, 1],
        }),
        Truth::Unknown
    );
    assert_eq!(
        error("merged(kv_usage) > 0.5", Level::Group),
        "column 8: expected one latency quantile signal such as ttft_p99 (merged() takes the quantile of the model's merged histograms), found something else"
    );
    assert_eq!(
        error("merged(2 * ttft_p99) > 1", Level::Group),
        "column 8: expected one latency quantile signal such as ttft_p99 (merged() takes the quantile of the model's merged histograms), found something else"
    );
}

#[test]
fn evidence_names_each_comparison_with_values() {
    let s = sig(0.95, 3.0, 0.612);
    let id = id();
    let expr = Expr::parse("ttft_p95 > 500ms and kv_usage > 90%", Level::Engine).expect("parses");
    let evidence = expr.evidence_engine(&input(&id, &s));
    let lines: Vec<String> = evidence.iter().map(|e| e.describe()).collect();
    assert_eq!(lines, ["ttft_p95 = 612ms > 500ms", "kv_usage = 95% > 90%"]);
    assert_eq!(evidence[0].threshold_value, Some(0.5));
    assert_eq!(evidence[1].holds, Truth::True);

    let expr = Expr::parse("90% < kv_usage and swapped > 0", Level::Engine).expect("parses");
    let lines: Vec<String> = expr
        .evidence_engine(&input(&id, &s))
        .iter()
        .map(|e| e.describe())
        .collect();
    assert_eq!(lines, ["kv_usage = 95% > 90%", "swapped = – > 0"]);
}

#[test]
fn reads_lists_each_name_once() {
    let expr = Expr::parse(
        "kv_usage > 0.9 and (kv_usage < 1 or log ~ \"x\") and env.OMP_NUM_THREADS > 8",
        Level::Engine,
    )
    .expect("parses");
    let names: Vec<&str> = expr.reads().iter().map(|r| r.name()).collect();
    assert_eq!(names, ["kv_usage", "log", "env.OMP_NUM_THREADS"]);
    assert!(expr.reads_scraped());
    let expr = Expr::parse("log ~ \"x\" or up == 0", Level::Engine).expect("parses");
    assert!(!expr.reads_scraped());
}

#[test]
fn error_missing_comparison() {
    assert_eq!(
        error("ttft_p95 kv_usage > 0.9", Level::Engine),
        "column 10: expected a comparison operator (>, >=, <, <=, ==, !=), found \"kv_usage\""
    );
    assert_eq!(
        error("kv_usage > 0.9 and waiting", Level::Engine),
        "column 27: expected a comparison operator (>, >=, <, <=, ==, !=), found the end of the expression"
    );
}

#[test]
fn error_unknown_signal_with_hint() {
    assert_eq!(
        error("kv_usge > 0.9", Level::Engine),
        "column 1: expected a known signal (did you mean \"kv_usage\"?), found \"kv_usge\""
    );
    assert_eq!(
        error("waiting > 5 and frobnicate > 1", Level::Engine),
        "column 17: expected a known signal (see `kvtop rules list --explain`), found \"frobnicate\""
    );
}

#[test]
fn error_units() {
    assert_eq!(
        error("kv_usage > 500ms", Level::Engine),
        "column 12: expected a ratio such as 90% or 0.9 to compare with \"kv_usage\", found a time \"500ms\""
    );
    assert_eq!(
        error("ttft_p95 > 90%", Level::Engine),
        "column 12: expected a time such as 500ms or 2s to compare with \"ttft_p95\", found a percentage \"90%\""
    );
    assert_eq!(
        error("waiting > 5mb", Level::Engine),
        "column 12: expected a unit (ms, s, m, h or %) or nothing after the number, found \"mb\""
    );
    assert_eq!(
        error("ttft_p95 + kv_usage > 1", Level::Engine),
        "column 12: expected a time such as 500ms or 2s, found a percentage \"kv_usage\""
    );
}

#[test]
fn error_parentheses_and_operators() {
    assert_eq!(
        error("(kv_usage > 0.9", Level::Engine),
        "column 16: expected \"and\", \"or\" or \")\", found the end of the expression"
    );
    assert_eq!(
        error("kv_usage > 0.9)", Level::Engine),
        "column 15: expected \"and\", \"or\" or the end of the expression, found \")\""
    );
    assert_eq!(
        error("kv_usage > ", Level::Engine),
        "column 12: expected a signal, a number or \"(\", found the end of the expression"
    );
    assert_eq!(
        error("kv_usage = 0.9", Level::Engine),
        "column 10: expected \"==\" (comparison), found \"=\""
    );
    assert_eq!(
        error("kv_usage > 0.9 and and waiting > 1", Level::Engine),
        "column 20: expected a signal, a number or \"(\", found \"and\""
    );
    assert_eq!(
        error("(kv_usage > 0.9) + 1 > 2", Level::Engine),
        "column 1: expected a number, found a condition (comparisons give true or false, not a number)"
    );
    assert_eq!(
        error("kv_usage > 0.9 $", Level::Engine),
        "column 16: expected a signal, a number, an operator or a parenthesis, found \"$\""
    );
}

#[test]
fn error_text_matches() {
    assert_eq!(
        error("log \"CUDA\"", Level::Engine),
        "column 5: expected \"~\" and a quoted text after log, found \"\\\"CUDA\\\"\""
    );
    assert_eq!(
        error("log ~ CUDA", Level::Engine),
        "column 7: expected a quoted text such as \"CUDA out of memory\", found \"CUDA\""
    );
    assert_eq!(
        error("log ~ \"CUDA", Level::Engine),
        "column 12: expected a closing \" for the text started at column 7, found the end of the expression"
    );
    assert_eq!(
        error("log ~ \"  \"", Level::Engine),
        "column 7: expected a non-empty text, found \"\\\"  \\\"\""
    );
    assert_eq!(
        error("log ~ \"a\nb\"", Level::Engine),
        "column 7: expected a text without line breaks (it matches within one line), found \"\\\"a\\nb\\\"\""
    );
    assert_eq!(
        error("waiting ~ \"x\"", Level::Engine),
        "column 1: expected log, event or pod_status before \"~\", found \"waiting\""
    );
}

#[test]
fn error_levels_and_functions() {
    assert_eq!(
        error("max(kv_usage) > 0.9", Level::Engine),
        "column 1: expected a per-engine signal (aggregates such as max() need per = \"model\" or \"fleet\"), found \"max\""
    );
    assert_eq!(
        error("kv_usage > 0.9", Level::Group),
        "column 1: expected an aggregate such as max(kv_usage) or count(up == 1): a fleet rule reads groups, not single engines, found \"kv_usage\""
    );
    assert_eq!(
        error("median(kv_usage) > 0.9", Level::Group),
        "column 1: expected a function: max, min, avg, sum, merged or count, found \"median\""
    );
    assert_eq!(
        error("count(up) > 1", Level::Group),
        "column 7: expected a condition such as up == 1 (count() counts engines where it holds), found a number"
    );
    assert_eq!(
        error("count(up 1) > 1", Level::Group),
        "column 10: expected a comparison operator (>, >=, <, <=, ==, !=): count() counts engines where a condition holds, found \"1\""
    );
    assert_eq!(
        error("max(kv_usage > 0.5) > 1", Level::Group),
        "column 5: expected a number, found a condition (comparisons give true or false, not a number)"
    );
    assert_eq!(
        error("max(max(kv_usage)) > 1", Level::Group),
        "column 5: expected a per-engine signal (aggregates such as max() need per = \"model\" or \"fleet\"), found \"max\""
    );
    assert_eq!(
        error("max(kv_usage, waiting) > 1", Level::Group),
        "column 13: expected \")\" (functions take one argument), found \",\""
    );
}

#[test]
fn error_nesting_is_bounded() {
    // The whole expression is one level, so the 64th parenthesis is one too many; the error
    // points at the 65th.
    let deep = format!("{}kv_usage > 0.9{}", "(".repeat(100), ")".repeat(100));
    let message = error(&deep, Level::Engine);
    assert!(
        message.starts_with("column 65: expected at most 64 levels of nesting"),
        "{message}"
    );
    let nots = format!("{}kv_usage > 0.9", "not ".repeat(100));
    assert!(error(&nots, Level::Engine).contains("at most 64 levels of nesting"));
}

#[test]
fn long_operator_chains_are_refused_not_overflowing_the_stack() {
    // 40,000 terms: too long to read at all.
    let huge = vec!["kv_usage > 0.1"; 40_000].join(" and ");
    assert_eq!(
        error(&huge, Level::Engine),
        format!(
            "column 4097: expected an expression of at most 4096 characters, found {} characters",
            huge.len()
        )
    );
    // Short enough, but one operator too many, for every kind of operator; the error points at
    // the 257th.
    for op in ["and", "or"] {
        let chain = vec!["up == 1"; 129].join(&format!(" {op} "));
        let message = error(&chain, Level::Engine);
        assert!(
            message.contains("expected at most 256 operators"),
            "{op}: {message}"
        );
    }
    for op in ["+", "-", "*", "/"] {
        let chain = format!("{} > 1", vec!["up"; 258].join(&format!(" {op} ")));
        let message = error(&chain, Level::Engine);
        // The 257th operator follows the 257th "up".
        let column = 1 + 256 * format!("up {op} ").len() + "up ".len();
        assert!(
            message.starts_with(&format!("column {column}: expected at most 256 operators")),
            "{op}: {message}"
        );
    }
    // The bound leaves room for any sensible rule.
    let fine = vec!["up == 1"; 128].join(" and ");
    assert!(Expr::parse(&fine, Level::Engine).is_ok());
}

#[test]
fn columns_count_characters_not_bytes() {
    assert_eq!(
        error("\"é\" == kv_usage", Level::Engine),
        "column 1: expected a signal, a number or \"(\", found \"\\\"é\\\"\""
    );
}

proptest! {
    #[test]
    fn arbitrary_text_never_panics(text in ".{0,80}") {
        let _ = Expr::parse(&text, Level::Engine);
        let _ = Expr::parse(&text, Level::Group);
    }

    #[test]
    fn expression_like_text_never_panics(
        parts in proptest::collection::vec(
            prop_oneof![
                Just("kv_usage"), Just("max("), Just("count("), Just(")"), Just("("),
                Just(">"), Just("<="), Just("=="), Just("and"), Just("or"), Just("not"),
                Just("500ms"), Just("90%"), Just("0.4"), Just("-"), Just("+"), Just("*"),
                Just("/"), Just("log ~"), Just("\"x\""), Just("up"), Just(","), Just("1.2.3"),
            ],
            0..24,
        )
    ) {
        let text = parts.join(" ");
        for level in [Level::Engine, Level::Group] {
            if let Ok(expr) = Expr::parse(&text, level) {
                let id = id();
                let s = sig(0.5, 1.0, 0.1);
                let engine = input(&id, &s);
                let _ = expr.eval_engine(&engine);
                let inputs = [engine];
                let _ = expr.eval_group(Group { inputs: &inputs, members: &[0, 7] });
                let _ = expr.evidence_engine(&engine);
            }
        }
    }
}

#[test]
fn an_expression_says_whether_it_reads_a_model_s_merged_quantiles() {
    let reads = |text: &str, level: Level| Expr::parse(text, level).expect("parses").reads_merged();
    assert!(reads("merged(ttft_p99) > 2s", Level::Group));
    assert!(reads(
        "max(kv_usage) > 90% or merged(e2e_p95) > 10s",
        Level::Group
    ));
    assert!(!reads(
        "avg(ttft_p99) > 2s and count(kv_usage > 0.9) > 1",
        Level::Group
    ));
    assert!(!reads("ttft_p95 > 500ms and kv_usage > 90%", Level::Engine));
}
