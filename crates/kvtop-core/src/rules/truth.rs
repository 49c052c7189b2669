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

/// Text-match memory of one engine, kept across cycles: per source, the lines last seen (as
/// they came, and lower-cased) and, for each text a rule looked for, the last of them holding
/// it. Recent lines are a window that slides: old lines leave at the front and new ones arrive
/// at the back. So a cycle compares the lines with the copy (the overlap found from the first line),
/// forgets the lines that left, and searches only the lines that arrived, once each for every
/// text; a text is still there if its last line is. Anything else (a window that did not
/// slide) is searched afresh. Before, every change searched the whole window again for every
/// text: `check --replay` of an hour of 8 engines with logs ran 2.87 G instructions then and
/// 2.74 G since (callgrind, same findings).
#[derive(Debug, Default)]
pub(crate) struct EngineText {
    sources: [RefCell<SourceText>; 3],
}

#[derive(Debug, Default)]
struct SourceText {
    /// Whether `lines` were brought up to this cycle's lines yet.
    checked: bool,
    /// The lines as they came (compared exactly: cheaper than ignoring case).
    raw: Vec<String>,
    /// The same lines, lower-cased (searched).
    lines: Vec<String>,
    /// Each text looked for (lower case) and the index in `lines` of the last line holding it.
    hits: Vec<(Arc<str>, Option<usize>)>,
}

/// At most this many places where the first line recurs are tried as the start of the overlap.
const OVERLAP_TRIES: usize = 4;
/// Texts remembered per source: rules come with a few dozen; past this (rules reloaded many
/// times) the memory starts again.
const MAX_TEXTS: usize = 256;

impl SourceText {
    /// Bring the copy to `lines`, keeping what is known of the lines still there.
    fn sync(&mut self, lines: &[String]) {
        match self.overlap(lines) {
            Some((left, kept)) => {
                self.raw.drain(..left);
                self.lines.drain(..left);
                for (_, hit) in &mut self.hits {
                    *hit = hit.and_then(|at| at.checked_sub(left));
                }
                for (index, line) in lines.iter().enumerate().skip(kept) {
                    let lower = line.to_ascii_lowercase();
                    for (needle, hit) in &mut self.hits {
                        if lower.contains(&**needle) {
                            *hit = Some(index);
                        }
                    }
                    self.lines.push(lower);
                    self.raw.push(line.clone());
                }
            }
            None => {
                self.raw.clear();
                self.raw.extend_from_slice(lines);
                self.lines.clear();
                self.lines
                    .extend(lines.iter().map(|line| line.to_ascii_lowercase()));
                if self.hits.len() > MAX_TEXTS {
                    self.hits.clear();
                }
                for (needle, hit) in &mut self.hits {
                    *hit = last_holding(&self.lines, needle);
                }
            }
        }
    }

    /// How many lines of the copy left and how many of it are still there (the first of
    /// `lines` on), when `lines` is the copy slid forward; `None` when it is not.
    fn overlap(&self, lines: &[String]) -> Option<(usize, usize)> {
        let first = lines.first()?;
        self.raw
            .iter()
            .enumerate()
            .filter(|(_, old)| *old == first)
            .take(OVERLAP_TRIES)
            .map(|(left, _)| (left, self.raw.len() - left))
            .find(|&(left, kept)| self.raw.get(left..) == lines.get(..kept))
    }

    /// Whether a line holds `needle` (lower case).
    fn holds(&mut self, needle: &Arc<str>) -> bool {
        if let Some((_, hit)) = self.hits.iter().find(|(n, _)| **n == **needle) {
            return hit.is_some();
        }
        let hit = last_holding(&self.lines, needle);
        self.hits.push((needle.clone(), hit));
        hit.is_some()
    }
}

/// The index of the last of `lines` (lower case) holding `needle`.
fn last_holding(lines: &[String], needle: &str) -> Option<usize> {
    lines.iter().rposition(|line| line.contains(needle))
}

impl Clone for EngineText {
    /// A copy starts with no memory (it is only a cache).
    fn clone(&self) -> Self {
        EngineText::default()
    }
}

/// What an engine-level evaluation may reuse for text matches.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TextMemo<'s> {
    pub engine: &'s EngineText,
}

impl EngineText {
    /// Start a cycle for this engine: its lines must be compared again.
    pub(crate) fn begin_cycle(&self) {
        for source in &self.sources {
            if let Ok(mut text) = source.try_borrow_mut() {
                text.checked = false;
            }
        }
    }
}

impl TextMemo<'_> {
    /// Whether a line of `lines` (the lines of `source`) contains `needle` (ASCII lower case).
    fn contains(&self, source: TextSource, lines: &[String], needle: &Arc<str>) -> bool {
        let slot = self.engine.sources.get(source as usize);
        let Some(mut text) = slot.and_then(|s| s.try_borrow_mut().ok()) else {
            return lines.iter().any(|l| contains_ignore_case(l, needle));
        };
        if !text.checked {
            text.sync(lines);
            text.checked = true;
        }
        text.holds(needle)
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

    /// What the memory answers for `needles` over each window of `windows` in turn, and what
    /// searching each window afresh answers.
    fn memo_and_fresh(windows: &[Vec<String>], needles: &[&str]) -> (Vec<bool>, Vec<bool>) {
        let engine = EngineText::default();
        let memo = TextMemo { engine: &engine };
        let needles: Vec<Arc<str>> = needles.iter().map(|n| Arc::from(*n)).collect();
        let (mut remembered, mut fresh) = (Vec::new(), Vec::new());
        for window in windows {
            engine.begin_cycle();
            for needle in &needles {
                remembered.push(memo.contains(TextSource::Log, window, needle));
                fresh.push(window.iter().any(|l| contains_ignore_case(l, needle)));
            }
        }
        (remembered, fresh)
    }

    #[test]
    fn a_sliding_window_keeps_a_text_while_its_last_line_stays() {
        let lines = |texts: &[&str]| texts.iter().map(|t| t.to_string()).collect::<Vec<_>>();
        let windows = [
            lines(&["INFO start", "CUDA out of memory", "INFO tick"]),
            // Slid by one: the OOM line is still there.
            lines(&["CUDA out of memory", "INFO tick", "INFO tick"]),
            // Slid past it: gone, unless a new one came.
            lines(&["INFO tick", "INFO tick", "warn: cuda OUT OF MEMORY again"]),
            lines(&["INFO tick", "warn: cuda OUT OF MEMORY again"]),
            lines(&["warn: cuda OUT OF MEMORY again"]),
            lines(&[]),
            // Not a slide at all (another pod's log).
            lines(&["Traceback", "INFO tick"]),
        ];
        let (remembered, fresh) = memo_and_fresh(&windows, &["cuda out of memory", "tick"]);
        assert_eq!(remembered, fresh);
        assert_eq!(
            fresh,
            [
                true, true, true, true, true, true, true, true, true, false, false, false, false,
                true
            ]
        );
    }

    proptest::proptest! {
        /// Whatever the windows (slides with repeated lines, or not slides at all), the memory
        /// answers what a fresh search does.
        #[test]
        fn the_memory_answers_what_a_fresh_search_does(
            start in proptest::collection::vec(0u8..5, 0..8),
            steps in proptest::collection::vec(
                (0usize..4, proptest::collection::vec(0u8..5, 0..4), proptest::bool::ANY),
                1..12,
            ),
        ) {
            let text = |code: u8| ["oom here", "OOM", "tick", "Tick tock", "nothing"][code as usize % 5].to_string();
            let mut window: Vec<String> = start.into_iter().map(text).collect();
            let mut windows = vec![window.clone()];
            for (dropped, added, replace) in steps {
                if replace {
                    window = added.into_iter().map(text).collect();
                } else {
                    window.drain(..dropped.min(window.len()));
                    window.extend(added.into_iter().map(text));
                }
                windows.push(window.clone());
            }
            let (remembered, fresh) = memo_and_fresh(&windows, &["oom", "tick", "tock", "absent"]);
            proptest::prop_assert_eq!(remembered, fresh);
        }
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
