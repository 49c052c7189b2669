//! Evaluating expressions: three-valued logic over possibly unknown signals, and the evidence
//! (each comparison's operands, their values and whether it held) behind a result.

use std::cell::RefCell;
use std::sync::Arc;

use super::expr::{AggFn, ArOp, Cmp, CmpOp, Cond, Expr, Level, Num};
use super::input::EngineInput;
use super::signals::{Resolved, TextSource};
use super::units::Unit;

/// The value of a condition: a comparison with an unknown operand is `Unknown`; `and`, `or` and
/// `not` follow SQL's three-valued logic (`False and Unknown` is `False`, `True or Unknown` is
/// `True`, `not Unknown` is `Unknown`). A rule fires only on `True`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Truth {
    False,
    Unknown,
    True,
}

impl Truth {
    pub fn and(self, other: Truth) -> Truth {
        self.min(other)
    }
    pub fn or(self, other: Truth) -> Truth {
        self.max(other)
    }
    #[allow(clippy::should_implement_trait)]
    pub fn not(self) -> Truth {
        match self {
            Truth::False => Truth::True,
            Truth::Unknown => Truth::Unknown,
            Truth::True => Truth::False,
        }
    }
    fn from_bool(b: bool) -> Truth {
        if b { Truth::True } else { Truth::False }
    }
}

/// The engines a group-level expression aggregates over: indices into `inputs`.
#[derive(Debug, Clone, Copy)]
pub struct Group<'s, 'a> {
    pub inputs: &'s [EngineInput<'a>],
    pub members: &'s [u32],
}

impl Group<'_, '_> {
    fn each(&self) -> impl Iterator<Item = &EngineInput<'_>> {
        self.members
            .iter()
            .filter_map(|&i| self.inputs.get(i as usize))
    }
}

/// What an expression is evaluated over.
#[derive(Debug, Clone, Copy)]
enum Ctx<'s, 'a> {
    /// One engine, with its text-match memory when the caller keeps one.
    Engine(&'s EngineInput<'a>, Option<TextMemo<'s>>),
    Group(Group<'s, 'a>),
}

/// Text-match memory of one engine, kept across cycles: per source, an exact copy of the lines
/// last seen and the answers given for them. Recent-log windows mostly repeat from one cycle to
/// the next, so a cycle usually costs one comparison of the lines with the copy per source;
/// only when they changed is the text lower-cased (into a shared buffer) and searched again,
/// once per distinct text the rules look for.
#[derive(Debug, Default)]
pub(crate) struct EngineText {
    sources: [RefCell<SourceText>; 3],
}

#[derive(Debug, Default)]
struct SourceText {
    /// Whether `raw` was compared with this cycle's lines yet.
    checked: bool,
    /// The lines, each followed by a newline.
    raw: String,
    /// Whether `TextScratch` holds `raw` lower-cased.
    lowered: bool,
    answers: Vec<(Arc<str>, bool)>,
}

impl Clone for EngineText {
    /// A copy starts with no memory (it is only a cache).
    fn clone(&self) -> Self {
        EngineText::default()
    }
}

/// The buffer lower-cased text is searched in, shared by all engines of a cycle.
#[derive(Debug, Default)]
pub(crate) struct TextScratch {
    lowered: RefCell<String>,
}

impl Clone for TextScratch {
    fn clone(&self) -> Self {
        TextScratch::default()
    }
}

/// What an engine-level evaluation may reuse for text matches.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TextMemo<'s> {
    pub engine: &'s EngineText,
    pub scratch: &'s TextScratch,
}

impl EngineText {
    /// Start a cycle for this engine: its lines must be compared again; the scratch buffer
    /// holds some other engine's text.
    pub(crate) fn begin_cycle(&self) {
        for source in &self.sources {
            if let Ok(mut text) = source.try_borrow_mut() {
                text.checked = false;
                text.lowered = false;
            }
        }
    }
}

impl TextMemo<'_> {
    /// Whether a line of `lines` (the lines of `source`) contains `needle` (ASCII lower case).
    fn contains(&self, source: TextSource, lines: &[String], needle: &Arc<str>) -> bool {
        let slow = || lines.iter().any(|l| contains_ignore_case(l, needle));
        let slot = self.engine.sources.get(source as usize);
        let Some(mut text) = slot.and_then(|s| s.try_borrow_mut().ok()) else {
            return slow();
        };
        if !text.checked {
            if !same_lines(&text.raw, lines) {
                text.raw.clear();
                for line in lines {
                    text.raw.push_str(line);
                    text.raw.push('\n');
                }
                text.answers.clear();
            }
            text.checked = true;
        }
        if let Some((_, answer)) = text.answers.iter().find(|(n, _)| **n == **needle) {
            return *answer;
        }
        let Ok(mut lowered) = self.scratch.lowered.try_borrow_mut() else {
            return slow();
        };
        if !text.lowered {
            // The buffer now holds this source: the engine's other sources lose it.
            for (index, other) in self.engine.sources.iter().enumerate() {
                if index != source as usize {
                    if let Ok(mut other) = other.try_borrow_mut() {
                        other.lowered = false;
                    }
                }
            }
            lowered.clear();
            lowered.push_str(&text.raw);
            lowered.make_ascii_lowercase();
            text.lowered = true;
        }
        let answer = lowered.contains(&**needle);
        text.answers.push((needle.clone(), answer));
        answer
    }
}

impl Expr {
    /// Evaluate an engine-level expression for one engine (a group-level one is `Unknown`).
    pub fn eval_engine(&self, input: &EngineInput<'_>) -> Truth {
        match self.level() {
            Level::Engine => cond(&self.root, Ctx::Engine(input, None)),
            Level::Group => Truth::Unknown,
        }
    }

    /// [`eval_engine`](Self::eval_engine) with the engine's text-match memory.
    pub(crate) fn eval_engine_with(&self, input: &EngineInput<'_>, text: TextMemo<'_>) -> Truth {
        match self.level() {
            Level::Engine => cond(&self.root, Ctx::Engine(input, Some(text))),
            Level::Group => Truth::Unknown,
        }
    }

    /// Evaluate a group-level expression over a group (an engine-level one is `Unknown`).
    pub fn eval_group(&self, group: Group<'_, '_>) -> Truth {
        match self.level() {
            Level::Group => cond(&self.root, Ctx::Group(group)),
            Level::Engine => Truth::Unknown,
        }
    }

    /// The evidence for one engine: every comparison and text match, with current values.
    pub fn evidence_engine(&self, input: &EngineInput<'_>) -> Vec<Evidence> {
        let mut out = Vec::new();
        if self.level() == Level::Engine {
            self.collect(&self.root, Ctx::Engine(input, None), &mut out);
        }
        out
    }

    /// The evidence for one group.
    pub(crate) fn evidence_group(&self, group: Group<'_, '_>) -> Vec<Evidence> {
        let mut out = Vec::new();
        if self.level() == Level::Group {
            self.collect(&self.root, Ctx::Group(group), &mut out);
        }
        out
    }

    fn collect(&self, c: &Cond, ctx: Ctx<'_, '_>, out: &mut Vec<Evidence>) {
        match c {
            Cond::Cmp(cmp) => {
                let value = num(&cmp.lhs, ctx);
                let threshold_value = num(&cmp.rhs, ctx);
                out.push(Evidence {
                    signal: cmp.lhs_text.clone(),
                    value,
                    op: cmp.op,
                    threshold: cmp.rhs_text.clone(),
                    threshold_value,
                    threshold_is_literal: matches!(cmp.rhs, Num::Lit(_)),
                    unit: cmp.unit,
                    holds: compare(cmp, ctx),
                    line: None,
                });
            }
            Cond::Text {
                source,
                needle,
                name,
                quoted,
            } => {
                let (holds, line) = match ctx {
                    Ctx::Engine(input, _) => match source.lines(input) {
                        None => (Truth::Unknown, None),
                        Some(lines) => {
                            let hit = lines.iter().find(|l| contains_ignore_case(l, needle));
                            (Truth::from_bool(hit.is_some()), hit.map(|l| clip(l)))
                        }
                    },
                    Ctx::Group(_) => (Truth::Unknown, None),
                };
                out.push(Evidence {
                    signal: name.clone(),
                    value: None,
                    op: CmpOp::Matches,
                    threshold: quoted.clone(),
                    threshold_value: None,
                    threshold_is_literal: true,
                    unit: Unit::Number,
                    holds,
                    line,
                });
            }
            Cond::And(a, b) | Cond::Or(a, b) => {
                self.collect(a, ctx, out);
                self.collect(b, ctx, out);
            }
            Cond::Not(a) => self.collect(a, ctx, out),
        }
    }
}

/// Longest matched line kept as evidence, in characters.
const EVIDENCE_LINE_CHARS: usize = 200;

fn clip(line: &str) -> String {
    match line.char_indices().nth(EVIDENCE_LINE_CHARS) {
        Some((at, _)) => format!("{}…", line.get(..at).unwrap_or_default()),
        None => line.to_owned(),
    }
}

/// One comparison (or text match) of a rule's condition, as it stood.
#[derive(Debug, Clone, PartialEq)]
pub struct Evidence {
    /// The left operand as written: `ttft_p95`, `max(kv_usage) - min(kv_usage)`, `log`.
    pub signal: Arc<str>,
    /// Its current value; `None` when unknown (and for text matches).
    pub value: Option<f64>,
    pub op: CmpOp,
    /// The right operand as written: `500ms`, `config.max_num_seqs`, `"CUDA out of memory"`.
    pub threshold: Arc<str>,
    /// Its value in base units (`500ms` → 0.5); `None` for text or an unknown signal.
    pub threshold_value: Option<f64>,
    /// Whether the right operand is a number as written (shown as is) rather than a signal or
    /// a computation (shown with its value).
    pub threshold_is_literal: bool,
    /// Unit of both sides, for display.
    pub unit: Unit,
    /// Whether this comparison held.
    pub holds: Truth,
    /// For a text match that held: the first matching line (clipped).
    pub line: Option<String>,
}

impl Evidence {
    /// One line for people: `ttft_p95 = 612ms > 500ms`, `kv_usage = – > 90%` (unknown),
    /// `log ~ "CUDA out of memory": <line>`.
    pub fn describe(&self) -> String {
        if self.op == CmpOp::Matches {
            return match (&self.line, self.holds) {
                (Some(line), _) => format!("{} ~ {}: {line}", self.signal, self.threshold),
                (None, Truth::Unknown) => {
                    format!(
                        "{} ~ {}: no {} available",
                        self.signal, self.threshold, self.signal
                    )
                }
                (None, _) => format!("{} ~ {}: no match", self.signal, self.threshold),
            };
        }
        let value = self
            .value
            .map_or_else(|| "–".to_owned(), |v| self.unit.format(v));
        let threshold = match self.threshold_value {
            _ if self.threshold_is_literal => self.threshold.to_string(),
            Some(v) => format!("{} ({})", self.threshold, self.unit.format(v)),
            None => format!("{} (–)", self.threshold),
        };
        format!("{} = {value} {} {threshold}", self.signal, self.op)
    }
}

fn cond(c: &Cond, ctx: Ctx<'_, '_>) -> Truth {
    match c {
        Cond::Cmp(cmp) => compare(cmp, ctx),
        Cond::Text { source, needle, .. } => text(*source, needle, ctx),
        Cond::And(a, b) => {
            let left = cond(a, ctx);
            if left == Truth::False {
                return Truth::False;
            }
            left.and(cond(b, ctx))
        }
        Cond::Or(a, b) => {
            let left = cond(a, ctx);
            if left == Truth::True {
                return Truth::True;
            }
            left.or(cond(b, ctx))
        }
        Cond::Not(a) => cond(a, ctx).not(),
    }
}

fn compare(cmp: &Cmp, ctx: Ctx<'_, '_>) -> Truth {
    match (num(&cmp.lhs, ctx), num(&cmp.rhs, ctx)) {
        (Some(a), Some(b)) => Truth::from_bool(cmp.op.holds(a, b)),
        _ => Truth::Unknown,
    }
}

fn text(source: TextSource, needle: &Arc<str>, ctx: Ctx<'_, '_>) -> Truth {
    let Ctx::Engine(input, cache) = ctx else {
        return Truth::Unknown;
    };
    let Some(lines) = source.lines(input) else {
        return Truth::Unknown;
    };
    Truth::from_bool(match cache {
        Some(memo) => memo.contains(source, lines, needle),
        None => lines.iter().any(|l| contains_ignore_case(l, needle)),
    })
}

/// Whether `raw` is exactly `lines`, each followed by a newline.
fn same_lines(raw: &str, lines: &[String]) -> bool {
    let mut rest = raw.as_bytes();
    for line in lines {
        let line = line.as_bytes();
        match (rest.get(..line.len()), rest.get(line.len())) {
            (Some(head), Some(b'\n')) if head == line => {
                rest = rest.get(line.len() + 1..).unwrap_or_default();
            }
            _ => return false,
        }
    }
    rest.is_empty()
}

/// Whether `haystack` contains `needle_lower` (already ASCII-lower-cased), ignoring ASCII case.
fn contains_ignore_case(haystack: &str, needle_lower: &str) -> bool {
    let hay = haystack.as_bytes();
    let needle = needle_lower.as_bytes();
    if needle.is_empty() {
        return true;
    }
    hay.windows(needle.len()).any(|w| {
        w.iter()
            .zip(needle)
            .all(|(h, n)| h.to_ascii_lowercase() == *n)
    })
}

fn num(n: &Num, ctx: Ctx<'_, '_>) -> Option<f64> {
    let value = match n {
        Num::Lit(v) => Some(*v),
        Num::Signal(resolved) => match ctx {
            Ctx::Engine(input, _) => read(resolved, input),
            Ctx::Group(_) => None,
        },
        Num::Neg(a) => num(a, ctx).map(|v| -v),
        Num::Bin(op, a, b) => {
            let (a, b) = (num(a, ctx)?, num(b, ctx)?);
            match op {
                ArOp::Add => Some(a + b),
                ArOp::Sub => Some(a - b),
                ArOp::Mul => Some(a * b),
                ArOp::Div if b == 0.0 => None,
                ArOp::Div => Some(a / b),
            }
        }
        Num::Agg(f, arg) => match ctx {
            Ctx::Group(group) => aggregate(*f, arg, group),
            Ctx::Engine(..) => None,
        },
        Num::Count(c) => match ctx {
            Ctx::Group(group) => {
                let n = group
                    .each()
                    .filter(|input| cond(c, Ctx::Engine(input, None)) == Truth::True)
                    .count();
                Some(n as f64)
            }
            Ctx::Engine(..) => None,
        },
    };
    value.filter(|v| v.is_finite())
}

/// An aggregate over the known values of the group's engines; unknown when none is known.
fn aggregate(f: AggFn, arg: &Num, group: Group<'_, '_>) -> Option<f64> {
    if f == AggFn::Merged {
        return merged(arg, group);
    }
    let mut known = 0u32;
    let mut acc = 0.0_f64;
    for input in group.each() {
        let Some(v) = num(arg, Ctx::Engine(input, None)) else {
            continue;
        };
        acc = if known == 0 {
            v
        } else {
            match f {
                AggFn::Max => acc.max(v),
                AggFn::Min => acc.min(v),
                AggFn::Avg | AggFn::Sum => acc + v,
                AggFn::Merged => acc,
            }
        };
        known += 1;
    }
    match (known, f) {
        (0, _) => None,
        (n, AggFn::Avg) => Some(acc / f64::from(n)),
        _ => Some(acc),
    }
}

/// A latency quantile of the group's model over its engines' merged histograms, as the inputs
/// carry it. Unknown unless every engine of the group that carries one agrees on the model (a
/// fleet rule over several models has no single merged value).
fn merged(arg: &Num, group: Group<'_, '_>) -> Option<f64> {
    let Num::Signal(Resolved::Named(def)) = arg else {
        return None;
    };
    let mut model: Option<(&str, &crate::fleet::Signals)> = None;
    for input in group.each() {
        let Some(signals) = input.model else {
            continue;
        };
        match model {
            None => model = Some((input.id.model.as_str(), signals)),
            Some((name, _)) if name != input.id.model => return None,
            Some(_) => {}
        }
    }
    model.and_then(|(_, signals)| def.read_signals(signals))
}

/// The value of a resolved signal for one engine.
pub(crate) fn read(resolved: &Resolved, input: &EngineInput<'_>) -> Option<f64> {
    match resolved {
        Resolved::Named(def) => def.read(input),
        Resolved::CacheField(name) => {
            if input.status != crate::fleet::EngineStatus::Up {
                return None;
            }
            input.cache_field(name.strip_prefix("cache.").unwrap_or(name))
        }
        Resolved::Fact(key) => input.fact(key),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_valued_tables() {
        use Truth::*;
        let all = [False, Unknown, True];
        let and = [
            [False, False, False],
            [False, Unknown, Unknown],
            [False, Unknown, True],
        ];
        let or = [
            [False, Unknown, True],
            [Unknown, Unknown, True],
            [True, True, True],
        ];
        for (i, a) in all.iter().enumerate() {
            for (j, b) in all.iter().enumerate() {
                assert_eq!(a.and(*b), and[i][j], "{a:?} and {b:?}");
                assert_eq!(a.or(*b), or[i][j], "{a:?} or {b:?}");
            }
        }
        assert_eq!(False.not(), True);
        assert_eq!(Unknown.not(), Unknown);
        assert_eq!(True.not(), False);
    }

    #[test]
    fn substring_ignores_ascii_case() {
        assert!(contains_ignore_case(
            "torch.cuda.OutOfMemoryError: CUDA out of memory.",
            "cuda out of memory"
        ));
        assert!(!contains_ignore_case(
            "CUDA out of mem",
            "cuda out of memory"
        ));
        assert!(contains_ignore_case("É CUDA", "cuda"));
    }

    #[test]
    fn long_lines_are_clipped() {
        let line = "x".repeat(300);
        let clipped = clip(&line);
        assert_eq!(clipped.chars().count(), EVIDENCE_LINE_CHARS + 1);
        assert!(clipped.ends_with('…'));
        assert_eq!(clip("short"), "short");
    }
}
