//! Model-based property tests of the rule expression language: well-typed expressions are
//! generated as trees, written out as text, parsed by `Expr::parse`, and their truth compared
//! with a reference evaluation of the tree written here from the language's definition
//! (three-valued logic, unknown operands, division by zero unknown, units as decimal shifts,
//! aggregates over the known values of a group).

use kvtop_core::engine::EngineId;
use kvtop_core::fleet::{EngineStatus, Signals, TargetId};
use kvtop_core::rules::expr::{Expr, Level};
use kvtop_core::rules::input::EngineInput;
use kvtop_core::rules::truth::{Group, Truth};
use proptest::prelude::*;

/// Comparison operators as written, with their meaning.
const CMP_OPS: [&str; 6] = [">", ">=", "<", "<=", "==", "!="];

/// The operator that means the same with its operands swapped.
fn mirror(op: &'static str) -> &'static str {
    match op {
        ">" => "<",
        ">=" => "<=",
        "<" => ">",
        "<=" => ">=",
        other => other,
    }
}

fn holds(op: &str, a: f64, b: f64) -> bool {
    match op {
        ">" => a > b,
        ">=" => a >= b,
        "<" => a < b,
        "<=" => a <= b,
        "==" => a == b,
        _ => a != b,
    }
}

/// Log lines an engine may have, and the texts expressions look for in them.
const LINES: [&str; 4] = [
    "INFO engine ready",
    "torch.OutOfMemoryError: CUDA out of memory",
    "WARN Preempted 3 requests",
    "ÉTAT: ok",
];
/// No spaces or parentheses in them: the whitespace test rewrites the text around them.
const NEEDLES: [&str; 5] = ["outofmemoryERROR", "Preempted", "READY", "État", "absent"];

/// What one engine reports.
#[derive(Debug, Clone)]
struct Engine {
    kv_usage: Option<f64>,
    ttft_p95: Option<f64>,
    waiting: Option<f64>,
    running: Option<f64>,
    logs: Option<Vec<String>>,
}

impl Engine {
    fn signals(&self) -> Signals {
        Signals {
            kv_usage: self.kv_usage,
            ttft_p95: self.ttft_p95,
            waiting: self.waiting,
            running: self.running,
            ..Signals::default()
        }
    }
}

/// A number without a unit: plain signals, decimal literals and arithmetic.
#[derive(Debug, Clone)]
enum Num {
    /// Hundredths: 250 is written `2.50`.
    Lit(u32),
    Waiting,
    Running,
    Neg(Box<Num>),
    Bin(char, Box<Num>, Box<Num>),
}

/// An engine-level condition.
#[derive(Debug, Clone)]
enum Cond {
    Cmp(Num, &'static str, Num),
    /// `ttft_p95 op N ms`, written in ms or in seconds, the literal on either side.
    Ttft(&'static str, u32, bool, bool),
    /// `kv_usage op N %`, the literal on either side.
    Kv(&'static str, u32, bool),
    Log(usize),
    And(Box<Cond>, Box<Cond>),
    Or(Box<Cond>, Box<Cond>),
    Not(Box<Cond>),
}

/// A group-level condition.
#[derive(Debug, Clone)]
enum GroupCond {
    Agg(&'static str, Num, &'static str, u32),
    Count(Cond, &'static str, u32),
    And(Box<GroupCond>, Box<GroupCond>),
    Or(Box<GroupCond>, Box<GroupCond>),
    Not(Box<GroupCond>),
}

fn lit_text(hundredths: u32) -> String {
    format!("{}.{:02}", hundredths / 100, hundredths % 100)
}

fn cmp_op() -> impl Strategy<Value = &'static str> {
    proptest::sample::select(&CMP_OPS[..])
}

fn num() -> impl Strategy<Value = Num> {
    let leaf = prop_oneof![
        (0u32..1000).prop_map(Num::Lit),
        Just(Num::Lit(0)),
        Just(Num::Waiting),
        Just(Num::Running),
    ];
    leaf.prop_recursive(3, 12, 2, |inner| {
        prop_oneof![
            inner.clone().prop_map(|n| Num::Neg(Box::new(n))),
            (
                proptest::sample::select(&['+', '-', '*', '/'][..]),
                inner.clone(),
                inner
            )
                .prop_map(|(op, a, b)| Num::Bin(op, Box::new(a), Box::new(b))),
        ]
    })
}

fn cond() -> impl Strategy<Value = Cond> {
    let leaf = prop_oneof![
        (num(), cmp_op(), num()).prop_map(|(a, op, b)| Cond::Cmp(a, op, b)),
        (cmp_op(), 0u32..3000, any::<bool>(), any::<bool>())
            .prop_map(|(op, ms, secs, flip)| Cond::Ttft(op, ms, secs, flip)),
        (cmp_op(), 0u32..=100, any::<bool>()).prop_map(|(op, pct, flip)| Cond::Kv(op, pct, flip)),
        (0..NEEDLES.len()).prop_map(Cond::Log),
    ];
    leaf.prop_recursive(4, 16, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Cond::And(Box::new(a), Box::new(b))),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Cond::Or(Box::new(a), Box::new(b))),
            inner.prop_map(|a| Cond::Not(Box::new(a))),
        ]
    })
}

fn group_cond() -> impl Strategy<Value = GroupCond> {
    let leaf = prop_oneof![
        (
            proptest::sample::select(&["max", "min", "avg", "sum"][..]),
            num(),
            cmp_op(),
            0u32..1000
        )
            .prop_map(|(f, n, op, lit)| GroupCond::Agg(f, n, op, lit)),
        (cond(), cmp_op(), 0u32..4).prop_map(|(c, op, n)| GroupCond::Count(c, op, n)),
    ];
    leaf.prop_recursive(3, 8, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone())
                .prop_map(|(a, b)| GroupCond::And(Box::new(a), Box::new(b))),
            (inner.clone(), inner.clone())
                .prop_map(|(a, b)| GroupCond::Or(Box::new(a), Box::new(b))),
            inner.prop_map(|a| GroupCond::Not(Box::new(a))),
        ]
    })
}

fn engine() -> impl Strategy<Value = Engine> {
    let hundredths = prop_oneof![
        Just(None),
        (0u32..1000).prop_map(|h| Some(f64::from(h) / 100.0))
    ];
    (
        prop_oneof![
            Just(None),
            (0u32..=100).prop_map(|p| Some(f64::from(p) / 100.0))
        ],
        prop_oneof![
            Just(None),
            (0u32..3000).prop_map(|ms| Some(f64::from(ms) / 1000.0))
        ],
        hundredths.clone(),
        hundredths,
        proptest::option::of(proptest::collection::vec(
            proptest::sample::select(&LINES[..]).prop_map(str::to_owned),
            0..4,
        )),
    )
        .prop_map(|(kv_usage, ttft_p95, waiting, running, logs)| Engine {
            kv_usage,
            ttft_p95,
            waiting,
            running,
            logs,
        })
}

// Writing the trees out. Every compound operand is parenthesized, so the text has exactly the
// tree's structure whatever the precedence rules.

fn write_num(n: &Num) -> String {
    match n {
        Num::Lit(h) => lit_text(*h),
        Num::Waiting => "waiting".into(),
        Num::Running => "running".into(),
        Num::Neg(a) => format!("-({})", write_num(a)),
        Num::Bin(op, a, b) => format!("({} {op} {})", write_num(a), write_num(b)),
    }
}

fn write_cond(c: &Cond) -> String {
    match c {
        Cond::Cmp(a, op, b) => format!("{} {op} {}", write_num(a), write_num(b)),
        Cond::Ttft(op, ms, secs, flip) => {
            let lit = if *secs {
                format!("{}.{:03}s", ms / 1000, ms % 1000)
            } else {
                format!("{ms}ms")
            };
            written_either_way("ttft_p95", op, &lit, *flip)
        }
        Cond::Kv(op, pct, flip) => written_either_way("kv_usage", op, &format!("{pct}%"), *flip),
        Cond::Log(i) => format!("log ~ \"{}\"", NEEDLES.get(*i).copied().unwrap_or("x")),
        Cond::And(a, b) => format!("({}) and ({})", write_cond(a), write_cond(b)),
        Cond::Or(a, b) => format!("({}) or ({})", write_cond(a), write_cond(b)),
        Cond::Not(a) => format!("not ({})", write_cond(a)),
    }
}

/// `signal op literal`, or the same comparison with the literal first (`literal op' signal`).
fn written_either_way(signal: &str, op: &'static str, lit: &str, flip: bool) -> String {
    if flip {
        format!("{lit} {} {signal}", mirror(op))
    } else {
        format!("{signal} {op} {lit}")
    }
}

/// `signal op literal` as written: with the literal first when `flip`.
fn compare_written(op: &'static str, signal: f64, lit: f64, flip: bool) -> bool {
    if flip {
        holds(mirror(op), lit, signal)
    } else {
        holds(op, signal, lit)
    }
}

fn write_group(c: &GroupCond) -> String {
    match c {
        GroupCond::Agg(f, n, op, lit) => format!("{f}({}) {op} {}", write_num(n), lit_text(*lit)),
        GroupCond::Count(c, op, n) => format!("count({}) {op} {n}", write_cond(c)),
        GroupCond::And(a, b) => format!("({}) and ({})", write_group(a), write_group(b)),
        GroupCond::Or(a, b) => format!("({}) or ({})", write_group(a), write_group(b)),
        GroupCond::Not(a) => format!("not ({})", write_group(a)),
    }
}

// The reference semantics. Unknown is `None`.

fn num_value(n: &Num, e: &Engine) -> Option<f64> {
    let value = match n {
        Num::Lit(h) => lit_text(*h).parse::<f64>().ok(),
        Num::Waiting => e.waiting,
        Num::Running => e.running,
        Num::Neg(a) => num_value(a, e).map(|v| -v),
        Num::Bin(op, a, b) => {
            let (a, b) = (num_value(a, e)?, num_value(b, e)?);
            match op {
                '+' => Some(a + b),
                '-' => Some(a - b),
                '*' => Some(a * b),
                _ if b == 0.0 => None,
                _ => Some(a / b),
            }
        }
    };
    value.filter(|v| v.is_finite())
}

fn and3(a: Option<bool>, b: Option<bool>) -> Option<bool> {
    match (a, b) {
        (Some(false), _) | (_, Some(false)) => Some(false),
        (Some(true), Some(true)) => Some(true),
        _ => None,
    }
}

fn or3(a: Option<bool>, b: Option<bool>) -> Option<bool> {
    match (a, b) {
        (Some(true), _) | (_, Some(true)) => Some(true),
        (Some(false), Some(false)) => Some(false),
        _ => None,
    }
}

fn cond_value(c: &Cond, e: &Engine) -> Option<bool> {
    match c {
        Cond::Cmp(a, op, b) => Some(holds(op, num_value(a, e)?, num_value(b, e)?)),
        Cond::Ttft(op, ms, _, flip) => Some(compare_written(
            op,
            e.ttft_p95?,
            f64::from(*ms) / 1000.0,
            *flip,
        )),
        Cond::Kv(op, pct, flip) => Some(compare_written(
            op,
            e.kv_usage?,
            f64::from(*pct) / 100.0,
            *flip,
        )),
        Cond::Log(i) => {
            let needle = NEEDLES.get(*i)?.to_ascii_lowercase();
            let lines = e.logs.as_ref()?;
            Some(
                lines
                    .iter()
                    .any(|l| l.to_ascii_lowercase().contains(&needle)),
            )
        }
        Cond::And(a, b) => and3(cond_value(a, e), cond_value(b, e)),
        Cond::Or(a, b) => or3(cond_value(a, e), cond_value(b, e)),
        Cond::Not(a) => cond_value(a, e).map(|v| !v),
    }
}

fn aggregate(f: &str, n: &Num, engines: &[Engine]) -> Option<f64> {
    let known: Vec<f64> = engines.iter().filter_map(|e| num_value(n, e)).collect();
    let (first, rest) = known.split_first()?;
    let folded = rest.iter().fold(*first, |acc, &v| match f {
        "max" => acc.max(v),
        "min" => acc.min(v),
        _ => acc + v,
    });
    let value = if f == "avg" {
        folded / known.len() as f64
    } else {
        folded
    };
    Some(value).filter(|v| v.is_finite())
}

fn group_value(c: &GroupCond, engines: &[Engine]) -> Option<bool> {
    match c {
        GroupCond::Agg(f, n, op, lit) => Some(holds(
            op,
            aggregate(f, n, engines)?,
            lit_text(*lit).parse::<f64>().ok()?,
        )),
        GroupCond::Count(c, op, n) => {
            let count = engines
                .iter()
                .filter(|e| cond_value(c, e) == Some(true))
                .count();
            Some(holds(op, count as f64, f64::from(*n)))
        }
        GroupCond::And(a, b) => and3(group_value(a, engines), group_value(b, engines)),
        GroupCond::Or(a, b) => or3(group_value(a, engines), group_value(b, engines)),
        GroupCond::Not(a) => group_value(a, engines).map(|v| !v),
    }
}

fn truth(value: Option<bool>) -> Truth {
    match value {
        Some(true) => Truth::True,
        Some(false) => Truth::False,
        None => Truth::Unknown,
    }
}

/// Comparisons and text matches at the top level of a condition (each gives one evidence).
fn leaves(c: &Cond) -> usize {
    match c {
        Cond::And(a, b) | Cond::Or(a, b) => leaves(a) + leaves(b),
        Cond::Not(a) => leaves(a),
        _ => 1,
    }
}

/// Evaluate `text` for each engine through the crate's `EngineInput`.
fn with_inputs<R>(engines: &[Engine], f: impl FnOnce(&[EngineInput<'_>]) -> R) -> R {
    let ids: Vec<EngineId> = (0..engines.len())
        .map(|i| EngineId {
            model: "m".into(),
            engine: i.to_string(),
        })
        .collect();
    let signals: Vec<Signals> = engines.iter().map(Engine::signals).collect();
    let inputs: Vec<EngineInput<'_>> = engines
        .iter()
        .zip(ids.iter().zip(&signals))
        .map(|(e, (id, signals))| EngineInput {
            target: TargetId(0),
            id,
            name: "e",
            status: EngineStatus::Up,
            signals,
            sample: None,
            restarted_at: None,
            gpu: None,
            facts: &[],
            labels: &[],
            logs: e.logs.as_deref(),
            events: None,
            pod_status: None,
            gen_stall_s: None,
            stalled: false,
            model: None,
        })
        .collect();
    f(&inputs)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn engine_expressions_evaluate_as_defined(c in cond(), e in engine()) {
        let text = write_cond(&c);
        let expr = Expr::parse(&text, Level::Engine)
            .map_err(|err| TestCaseError::fail(format!("{text}: {err}")))?;
        with_inputs(std::slice::from_ref(&e), |inputs| -> Result<(), TestCaseError> {
            let input = inputs.first().ok_or_else(|| TestCaseError::fail("no input"))?;
            prop_assert_eq!(expr.eval_engine(input), truth(cond_value(&c, &e)), "{}", text);
            prop_assert_eq!(expr.evidence_engine(input).len(), leaves(&c), "{}", text);
            Ok(())
        })?;
    }

    #[test]
    fn group_expressions_evaluate_as_defined(
        c in group_cond(),
        engines in proptest::collection::vec(engine(), 0..4),
    ) {
        let text = write_group(&c);
        let expr = Expr::parse(&text, Level::Group)
            .map_err(|err| TestCaseError::fail(format!("{text}: {err}")))?;
        let members: Vec<u32> = (0..engines.len() as u32).collect();
        with_inputs(&engines, |inputs| -> Result<(), TestCaseError> {
            let group = Group { inputs, members: &members };
            prop_assert_eq!(expr.eval_group(group), truth(group_value(&c, &engines)), "{}", text);
            Ok(())
        })?;
    }

    #[test]
    fn whitespace_does_not_change_the_meaning(c in cond(), e in engine()) {
        let text = write_cond(&c);
        let spaced = text.replace(' ', " \t ").replace('(', "( ").replace(')', " )");
        let compact = text.replace(" + ", "+").replace(" * ", "*").replace(" ~ ", "~");
        with_inputs(std::slice::from_ref(&e), |inputs| -> Result<(), TestCaseError> {
            let input = inputs.first().ok_or_else(|| TestCaseError::fail("no input"))?;
            let want = Expr::parse(&text, Level::Engine)
                .map_err(|err| TestCaseError::fail(format!("{text}: {err}")))?
                .eval_engine(input);
            for variant in [&spaced, &compact] {
                let expr = Expr::parse(variant, Level::Engine)
                    .map_err(|err| TestCaseError::fail(format!("{variant}: {err}")))?;
                prop_assert_eq!(expr.eval_engine(input), want, "{}", variant);
            }
            Ok(())
        })?;
    }
}
