//! Rule expressions: a recursive-descent parser from text to a typed, pre-resolved tree.
//!
//! Grammar (lowest precedence first):
//! ```text
//! or      := and ("or" and)*
//! and     := not ("and" not)*
//! not     := "not" not | compare
//! compare := sum (("<" | "<=" | ">" | ">=" | "==" | "!=") sum)?
//! sum     := product (("+" | "-") product)*
//! product := unary (("*" | "/") unary)*
//! unary   := "-" unary | primary
//! primary := NUMBER UNIT? | SIGNAL | TEXTSOURCE "~" "TEXT" | FUNC "(" or ")" | "(" or ")"
//! ```
//! Units: `ms`, `s`, `m`, `h` (seconds are the base unit) and `%` (`90%` = 0.9). Functions
//! (fleet rules only): `max`, `min`, `avg`, `sum` of a per-engine number and `count` of a
//! per-engine condition, over the engines of the group. Text sources: `log`, `event`,
//! `pod_status`; `~` is a case-insensitive substring match.

use std::fmt;
use std::sync::Arc;

use super::input::EngineInput;
use super::lexer::{LexError, Op, Token, TokenKind, column, quote, tokenize};
use super::signals::{Origin, Resolved, TextSource, closest, resolve};
use super::truth::read;
use super::units::{Dimension, Unit};

/// Deepest nesting of parentheses, `not` and unary minus accepted (keeps recursion bounded).
pub(crate) const MAX_DEPTH: usize = 64;

/// Longest expression accepted, in characters. Rule files come from anyone with write access
/// to a config directory; a bound keeps parsing, evaluation and evidence text small.
pub(crate) const MAX_CHARS: usize = 4096;

/// Most binary operators (`and`, `or`, comparisons, `+ - * /`) in one expression. Chains of
/// them parse in loops but build a tree as deep as the chain is long, which evaluation, cloning
/// and dropping walk recursively: without this bound a long chain overflows the stack.
pub(crate) const MAX_OPERATORS: usize = 256;

/// Where an expression is evaluated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Level {
    /// Once per engine, over that engine's signals.
    Engine,
    /// Once per group of engines: signals only inside aggregates (`max(kv_usage)`).
    Group,
}

/// A parse error: the 1-based column in the expression, what was expected there and what was
/// found (quoted text, or a description such as "the end of the expression").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExprError {
    pub column: usize,
    pub expected: String,
    pub found: String,
}

impl fmt::Display for ExprError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "column {}: expected {}, found {}",
            self.column, self.expected, self.found
        )
    }
}

impl std::error::Error for ExprError {}

/// A comparison operator, or `~` (text match).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Gt,
    Ge,
    Lt,
    Le,
    Eq,
    Ne,
    /// `~`: a line of the text source contains the text (case-insensitive).
    Matches,
}

impl CmpOp {
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
            CmpOp::Matches => "~",
        }
    }

    /// The operator with its operands swapped (`a < b` ⇔ `b > a`).
    fn mirrored(self) -> CmpOp {
        match self {
            CmpOp::Gt => CmpOp::Lt,
            CmpOp::Ge => CmpOp::Le,
            CmpOp::Lt => CmpOp::Gt,
            CmpOp::Le => CmpOp::Ge,
            other => other,
        }
    }

    pub(crate) fn holds(self, a: f64, b: f64) -> bool {
        match self {
            CmpOp::Gt => a > b,
            CmpOp::Ge => a >= b,
            CmpOp::Lt => a < b,
            CmpOp::Le => a <= b,
            CmpOp::Eq => a == b,
            CmpOp::Ne => a != b,
            CmpOp::Matches => false,
        }
    }
}

impl fmt::Display for CmpOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.symbol())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ArOp {
    Add,
    Sub,
    Mul,
    Div,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AggFn {
    Max,
    Min,
    Avg,
    Sum,
    /// The model's quantile over its engines' merged histograms (not an aggregate of the
    /// engines' own quantiles, which do not average).
    Merged,
}

/// A condition (three-valued when evaluated).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Cond {
    Cmp(Box<Cmp>),
    Text {
        source: TextSource,
        /// Lower-cased (ASCII) text to find.
        needle: Arc<str>,
        /// For evidence: the source's name and the quoted text as written.
        name: Arc<str>,
        quoted: Arc<str>,
    },
    And(Box<Cond>, Box<Cond>),
    Or(Box<Cond>, Box<Cond>),
    Not(Box<Cond>),
}

/// A comparison of two numbers, with the operands' text as written (shared by every piece of
/// evidence). A literal written on the left is moved to the right (`500ms < ttft_p95` becomes
/// `ttft_p95 > 500ms`) so evidence always reads "signal op threshold".
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Cmp {
    pub op: CmpOp,
    pub lhs: Num,
    pub rhs: Num,
    pub lhs_text: Arc<str>,
    pub rhs_text: Arc<str>,
    /// Unit for showing both sides.
    pub unit: Unit,
}

/// A number.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Num {
    Lit(f64),
    Signal(Resolved),
    Neg(Box<Num>),
    Bin(ArOp, Box<Num>, Box<Num>),
    Agg(AggFn, Box<Num>),
    Count(Box<Cond>),
}

/// Whether `num` is exactly one of the catalog's latency quantile signals.
fn is_latency_quantile(num: &Num) -> bool {
    let Num::Signal(Resolved::Named(def)) = num else {
        return false;
    };
    crate::signals::SIGNALS.iter().any(|d| {
        d.name == def.name && matches!(d.derivation, crate::signals::Derivation::Quantile(..))
    })
}

/// A name an expression reads: a signal or a text source.
#[derive(Debug, Clone, PartialEq)]
pub struct SignalRef(pub(crate) Leaf);

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Leaf {
    Signal(Resolved),
    Text(TextSource),
}

impl SignalRef {
    /// The name as written in expressions.
    pub fn name(&self) -> &str {
        match &self.0 {
            Leaf::Signal(Resolved::Named(def)) => def.name,
            Leaf::Signal(Resolved::CacheField(field)) => field,
            Leaf::Signal(Resolved::Fact(name)) => name,
            Leaf::Text(source) => source.name(),
        }
    }

    /// Where the value comes from.
    pub fn origin(&self) -> Origin {
        match &self.0 {
            Leaf::Signal(Resolved::Named(def)) => def.origin,
            Leaf::Signal(Resolved::CacheField(_)) => Origin::CacheConfig,
            Leaf::Signal(Resolved::Fact(_)) => Origin::Pod,
            Leaf::Text(_) => Origin::Text,
        }
    }

    /// The unit of a named signal; `None` for open-namespace fields and text sources.
    pub fn unit(&self) -> Option<Unit> {
        match &self.0 {
            Leaf::Signal(Resolved::Named(def)) => Some(def.unit),
            _ => None,
        }
    }

    /// Whether one engine currently provides a value (or, for text, a stream of lines).
    pub fn available(&self, input: &EngineInput<'_>) -> bool {
        match &self.0 {
            Leaf::Signal(resolved) => read(resolved, input).is_some(),
            Leaf::Text(source) => source.lines(input).is_some(),
        }
    }
}

/// A parsed expression, ready to evaluate.
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    text: String,
    level: Level,
    pub(crate) root: Cond,
    reads: Vec<SignalRef>,
    /// Whether it reads a model's merged quantiles (`merged(…)`), which the rules' inputs
    /// carry only when some rule needs them.
    merged: bool,
}

impl Expr {
    /// Parse `text` as a condition evaluated at `level`.
    pub fn parse(text: &str, level: Level) -> Result<Expr, ExprError> {
        let chars = text.chars().count();
        if chars > MAX_CHARS {
            return Err(ExprError {
                column: MAX_CHARS + 1,
                expected: format!("an expression of at most {MAX_CHARS} characters"),
                found: format!("{chars} characters"),
            });
        }
        let tokens = tokenize(text).map_err(|e| lex_error(text, e))?;
        let mut parser = Parser {
            text,
            tokens: &tokens,
            pos: 0,
            depth: 0,
            operators: 0,
            level,
            reads: Vec::new(),
            merged: false,
        };
        let node = parser.or()?;
        let root = parser.want_cond(node)?;
        let end = parser.peek();
        if end.kind != TokenKind::End {
            return Err(parser.error_here("\"and\", \"or\" or the end of the expression"));
        }
        Ok(Expr {
            text: text.to_owned(),
            level,
            root,
            reads: parser.reads,
            merged: parser.merged,
        })
    }

    /// The expression as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn level(&self) -> Level {
        self.level
    }

    /// Every signal and text source the expression reads, once each, in order of appearance.
    pub fn reads(&self) -> &[SignalRef] {
        &self.reads
    }

    /// Whether it reads anything from the engine's own scrape (metrics or cache config).
    pub fn reads_scraped(&self) -> bool {
        self.reads.iter().any(|r| r.origin().is_scraped())
    }

    /// Whether it takes a model's quantile over merged histograms (`merged(…)`).
    pub fn reads_merged(&self) -> bool {
        self.merged
    }
}

fn lex_error(text: &str, e: LexError) -> ExprError {
    ExprError {
        column: column(text, e.start),
        expected: e.expected,
        found: e.found,
    }
}

/// A number operand: the number, its dimension, unit and byte span.
type NumParts = (Num, Dimension, Option<Unit>, (usize, usize));

/// A parsed operand before its type is required: a condition or a number.
enum Node {
    Cond(Cond, usize),
    /// A number with its dimension (for unit checks), unit (for display) and byte span.
    Num(Num, Dimension, Option<Unit>, (usize, usize)),
}

impl Node {
    fn start(&self) -> usize {
        match self {
            Node::Cond(_, start) => *start,
            Node::Num(_, _, _, (start, _)) => *start,
        }
    }
}

struct Parser<'t, 'a> {
    text: &'a str,
    tokens: &'t [Token<'a>],
    pos: usize,
    depth: usize,
    /// Binary operators read so far (see [`MAX_OPERATORS`]).
    operators: usize,
    level: Level,
    reads: Vec<SignalRef>,
    merged: bool,
}

const END_TOKEN: Token<'static> = Token {
    kind: TokenKind::End,
    start: 0,
    end: 0,
};

impl<'t, 'a> Parser<'t, 'a> {
    fn peek(&self) -> &'t Token<'a> {
        self.tokens
            .get(self.pos)
            .or(self.tokens.last())
            .unwrap_or(&END_TOKEN)
    }

    fn peek_at(&self, ahead: usize) -> &'t Token<'a> {
        self.tokens
            .get(self.pos + ahead)
            .or(self.tokens.last())
            .unwrap_or(&END_TOKEN)
    }

    fn bump(&mut self) -> &'t Token<'a> {
        let token = self.peek();
        if self.pos < self.tokens.len() {
            self.pos += 1;
        }
        token
    }

    fn is_keyword(&self, word: &str) -> bool {
        self.peek().kind == TokenKind::Ident(word)
    }

    fn found(&self, token: &Token<'_>) -> String {
        match token.kind {
            TokenKind::End => "the end of the expression".into(),
            _ => quote(self.text.get(token.start..token.end).unwrap_or_default()),
        }
    }

    fn error_at(&self, offset: usize, expected: impl Into<String>, found: String) -> ExprError {
        ExprError {
            column: column(self.text, offset),
            expected: expected.into(),
            found,
        }
    }

    fn error_here(&self, expected: impl Into<String>) -> ExprError {
        let token = self.peek();
        self.error_at(token.start, expected, self.found(token))
    }

    fn enter(&mut self) -> Result<(), ExprError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error_here(format!("at most {MAX_DEPTH} levels of nesting")));
        }
        Ok(())
    }

    /// Count the binary operator at the current token, refusing one too many.
    fn operator(&mut self) -> Result<(), ExprError> {
        self.operators += 1;
        if self.operators > MAX_OPERATORS {
            return Err(self.error_here(format!(
                "at most {MAX_OPERATORS} operators (and, or, comparisons, + - * /)"
            )));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// The node as a condition; a number here means a comparison was missing after it.
    fn want_cond(&self, node: Node) -> Result<Cond, ExprError> {
        match node {
            Node::Cond(cond, _) => Ok(cond),
            Node::Num(..) => Err(self.error_here("a comparison operator (>, >=, <, <=, ==, !=)")),
        }
    }

    /// The node as a number.
    fn want_num(&self, node: Node) -> Result<NumParts, ExprError> {
        match node {
            Node::Num(num, dim, unit, span) => Ok((num, dim, unit, span)),
            Node::Cond(_, start) => Err(self.error_at(
                start,
                "a number",
                "a condition (comparisons give true or false, not a number)".into(),
            )),
        }
    }

    fn or(&mut self) -> Result<Node, ExprError> {
        self.enter()?;
        let mut left = self.and()?;
        while self.is_keyword("or") {
            self.operator()?;
            let start = left.start();
            let lhs = self.want_cond(left)?;
            self.bump();
            let right = self.and()?;
            let rhs = self.want_cond(right)?;
            left = Node::Cond(Cond::Or(Box::new(lhs), Box::new(rhs)), start);
        }
        self.leave();
        Ok(left)
    }

    fn and(&mut self) -> Result<Node, ExprError> {
        let mut left = self.not()?;
        while self.is_keyword("and") {
            self.operator()?;
            let start = left.start();
            let lhs = self.want_cond(left)?;
            self.bump();
            let right = self.not()?;
            let rhs = self.want_cond(right)?;
            left = Node::Cond(Cond::And(Box::new(lhs), Box::new(rhs)), start);
        }
        Ok(left)
    }

    fn not(&mut self) -> Result<Node, ExprError> {
        if !self.is_keyword("not") {
            return self.compare();
        }
        let start = self.bump().start;
        self.enter()?;
        let operand = self.not()?;
        let cond = self.want_cond(operand)?;
        self.leave();
        Ok(Node::Cond(Cond::Not(Box::new(cond)), start))
    }

    fn compare(&mut self) -> Result<Node, ExprError> {
        let left = self.sum()?;
        let op = match self.peek().kind {
            TokenKind::Op(Op::Gt) => CmpOp::Gt,
            TokenKind::Op(Op::Ge) => CmpOp::Ge,
            TokenKind::Op(Op::Lt) => CmpOp::Lt,
            TokenKind::Op(Op::Le) => CmpOp::Le,
            TokenKind::Op(Op::Eq) => CmpOp::Eq,
            TokenKind::Op(Op::Ne) => CmpOp::Ne,
            TokenKind::Op(Op::Match) => {
                return Err(self.error_at(
                    left.start(),
                    "log, event or pod_status before \"~\"",
                    quote(
                        self.text
                            .get(left.start()..self.peek().start)
                            .unwrap_or_default()
                            .trim_end(),
                    ),
                ));
            }
            _ => return Ok(left),
        };
        self.operator()?;
        let (lhs, lhs_dim, lhs_unit, lhs_span) = self.want_num(left)?;
        self.bump();
        let right = self.sum()?;
        let (rhs, rhs_dim, rhs_unit, rhs_span) = self.want_num(right)?;
        if lhs_dim.join(rhs_dim).is_none() {
            return Err(self.error_at(
                rhs_span.0,
                format!(
                    "{} to compare with {}",
                    lhs_dim.example(),
                    quote(self.text.get(lhs_span.0..lhs_span.1).unwrap_or_default())
                ),
                format!(
                    "{} {}",
                    rhs_dim.noun(),
                    quote(self.text.get(rhs_span.0..rhs_span.1).unwrap_or_default())
                ),
            ));
        }
        let unit = lhs_unit.or(rhs_unit).unwrap_or(Unit::Number);
        let text = |(start, end): (usize, usize)| -> Arc<str> {
            self.text.get(start..end).unwrap_or_default().into()
        };
        let cmp = if matches!(lhs, Num::Lit(_)) && !matches!(rhs, Num::Lit(_)) {
            Cmp {
                op: op.mirrored(),
                lhs: rhs,
                rhs: lhs,
                lhs_text: text(rhs_span),
                rhs_text: text(lhs_span),
                unit,
            }
        } else {
            Cmp {
                op,
                lhs,
                rhs,
                lhs_text: text(lhs_span),
                rhs_text: text(rhs_span),
                unit,
            }
        };
        Ok(Node::Cond(
            Cond::Cmp(Box::new(cmp)),
            lhs_span.0.min(rhs_span.0),
        ))
    }

    fn sum(&mut self) -> Result<Node, ExprError> {
        let mut left = self.product()?;
        loop {
            let op = match self.peek().kind {
                TokenKind::Op(Op::Plus) => ArOp::Add,
                TokenKind::Op(Op::Minus) => ArOp::Sub,
                _ => return Ok(left),
            };
            left = self.arithmetic(left, op, Self::product)?;
        }
    }

    fn product(&mut self) -> Result<Node, ExprError> {
        let mut left = self.unary()?;
        loop {
            let op = match self.peek().kind {
                TokenKind::Op(Op::Star) => ArOp::Mul,
                TokenKind::Op(Op::Slash) => ArOp::Div,
                _ => return Ok(left),
            };
            left = self.arithmetic(left, op, Self::unary)?;
        }
    }

    /// `left op <next operand>` with unit checks: `+`/`-` need the same dimension; `*`/`/` keep
    /// the dimension when one side is a plain number, and give a plain value otherwise.
    fn arithmetic(
        &mut self,
        left: Node,
        op: ArOp,
        operand: fn(&mut Self) -> Result<Node, ExprError>,
    ) -> Result<Node, ExprError> {
        self.operator()?;
        let (lhs, lhs_dim, lhs_unit, lhs_span) = self.want_num(left)?;
        self.bump();
        let right = operand(self)?;
        let (rhs, rhs_dim, rhs_unit, rhs_span) = self.want_num(right)?;
        let dim = match op {
            ArOp::Add | ArOp::Sub => lhs_dim.join(rhs_dim).ok_or_else(|| {
                self.error_at(
                    rhs_span.0,
                    lhs_dim.example(),
                    format!(
                        "{} {}",
                        rhs_dim.noun(),
                        quote(self.text.get(rhs_span.0..rhs_span.1).unwrap_or_default())
                    ),
                )
            })?,
            ArOp::Mul | ArOp::Div => match (lhs_dim, rhs_dim) {
                (Dimension::Any, d) | (d, Dimension::Any) => d,
                _ => Dimension::Any,
            },
        };
        let unit = match (op, lhs_unit, rhs_unit) {
            (_, Some(a), Some(b)) if a == b && matches!(op, ArOp::Add | ArOp::Sub) => Some(a),
            (_, Some(a), None) | (_, None, Some(a)) => Some(a),
            _ => None,
        };
        Ok(Node::Num(
            Num::Bin(op, Box::new(lhs), Box::new(rhs)),
            dim,
            unit,
            (lhs_span.0, rhs_span.1),
        ))
    }

    fn unary(&mut self) -> Result<Node, ExprError> {
        if self.peek().kind != TokenKind::Op(Op::Minus) {
            return self.primary();
        }
        let start = self.bump().start;
        self.enter()?;
        let operand = self.unary()?;
        let (num, dim, unit, (_, end)) = self.want_num(operand)?;
        self.leave();
        let num = match num {
            Num::Lit(v) => Num::Lit(-v),
            other => Num::Neg(Box::new(other)),
        };
        Ok(Node::Num(num, dim, unit, (start, end)))
    }

    fn primary(&mut self) -> Result<Node, ExprError> {
        let token = self.peek();
        match &token.kind {
            TokenKind::Number(value, unit) => {
                self.bump();
                Ok(Node::Num(
                    Num::Lit(*value),
                    unit.dimension(),
                    None,
                    (token.start, token.end),
                ))
            }
            TokenKind::LParen => {
                self.bump();
                let inner = self.or()?;
                if self.peek().kind != TokenKind::RParen {
                    return Err(match inner {
                        Node::Num(..) => self.error_here("an operator or \")\""),
                        Node::Cond(..) => self.error_here("\"and\", \"or\" or \")\""),
                    });
                }
                let close = self.bump();
                Ok(match inner {
                    Node::Cond(cond, _) => Node::Cond(cond, token.start),
                    Node::Num(num, dim, unit, _) => {
                        Node::Num(num, dim, unit, (token.start, close.end))
                    }
                })
            }
            TokenKind::Ident(name) => self.name(token, name),
            _ => Err(self.error_here("a signal, a number or \"(\"")),
        }
    }

    fn name(&mut self, token: &'t Token<'a>, name: &'a str) -> Result<Node, ExprError> {
        if matches!(name, "and" | "or" | "not") {
            return Err(self.error_here("a signal, a number or \"(\""));
        }
        let span = (token.start, token.end);
        if let Some(source) = TextSource::parse(name) {
            return self.text_match(source, span);
        }
        if self.peek_at(1).kind == TokenKind::LParen {
            return self.call(token, name);
        }
        let Some(resolved) = resolve(name) else {
            let expected = match closest(name) {
                Some(hint) => format!("a known signal (did you mean \"{hint}\"?)"),
                None => "a known signal (see `kvtop rules list --explain`)".to_owned(),
            };
            return Err(self.error_here(expected));
        };
        if self.level == Level::Group {
            return Err(self.error_here(
                "an aggregate such as max(kv_usage) or count(up == 1): a fleet rule reads groups, not single engines",
            ));
        }
        self.bump();
        let unit = match &resolved {
            Resolved::Named(def) => Some(def.unit),
            _ => None,
        };
        let dim = unit.map_or(Dimension::Plain, Unit::dimension);
        self.note_read(SignalRef(Leaf::Signal(resolved.clone())));
        Ok(Node::Num(Num::Signal(resolved), dim, unit, span))
    }

    fn note_read(&mut self, read: SignalRef) {
        if !self.reads.contains(&read) {
            self.reads.push(read);
        }
    }

    fn text_match(&mut self, source: TextSource, span: (usize, usize)) -> Result<Node, ExprError> {
        if self.level == Level::Group {
            return Err(self.error_here(
                "an aggregate such as count(log ~ \"…\"): a fleet rule reads groups, not single engines",
            ));
        }
        self.bump();
        if self.peek().kind != TokenKind::Op(Op::Match) {
            return Err(self.error_here(format!("\"~\" and a quoted text after {}", source.name())));
        }
        self.bump();
        let text = self.peek();
        let TokenKind::Text(needle) = &text.kind else {
            return Err(self.error_here("a quoted text such as \"CUDA out of memory\""));
        };
        if needle.trim().is_empty() {
            return Err(self.error_at(text.start, "a non-empty text", self.found(text)));
        }
        if needle.contains(['\n', '\r']) {
            return Err(self.error_at(
                text.start,
                "a text without line breaks (it matches within one line)",
                self.found(text),
            ));
        }
        self.bump();
        self.note_read(SignalRef(Leaf::Text(source)));
        Ok(Node::Cond(
            Cond::Text {
                source,
                needle: needle.to_ascii_lowercase().into(),
                name: source.name().into(),
                quoted: self
                    .text
                    .get(text.start..text.end)
                    .unwrap_or_default()
                    .into(),
            },
            span.0,
        ))
    }

    fn call(&mut self, token: &'t Token<'a>, name: &'a str) -> Result<Node, ExprError> {
        let agg = match name {
            "max" => Some(AggFn::Max),
            "min" => Some(AggFn::Min),
            "avg" => Some(AggFn::Avg),
            "sum" => Some(AggFn::Sum),
            "merged" => Some(AggFn::Merged),
            "count" => None,
            _ => return Err(self.error_here("a function: max, min, avg, sum, merged or count")),
        };
        if self.level == Level::Engine {
            return Err(self.error_here(
                "a per-engine signal (aggregates such as max() need per = \"model\" or \"fleet\")",
            ));
        }
        self.bump();
        self.bump();
        self.level = Level::Engine;
        let argument = self.or();
        self.level = Level::Group;
        let argument = argument?;
        if self.peek().kind != TokenKind::RParen {
            return Err(match argument {
                Node::Num(..) if agg.is_none() => self.error_here(
                    "a comparison operator (>, >=, <, <=, ==, !=): count() counts engines where a condition holds",
                ),
                _ => self.error_here("\")\" (functions take one argument)"),
            });
        }
        let close = self.bump();
        let span = (token.start, close.end);
        Ok(match agg {
            Some(agg) => {
                let start = argument.start();
                let (num, dim, unit, _) = self.want_num(argument)?;
                if agg == AggFn::Merged && !is_latency_quantile(&num) {
                    return Err(self.error_at(
                        start,
                        "one latency quantile signal such as ttft_p99 (merged() takes the quantile of the model's merged histograms)",
                        "something else".into(),
                    ));
                }
                self.merged |= agg == AggFn::Merged;
                Node::Num(Num::Agg(agg, Box::new(num)), dim, unit, span)
            }
            None => {
                let Node::Cond(cond, _) = argument else {
                    return Err(self.error_at(
                        argument.start(),
                        "a condition such as up == 1 (count() counts engines where it holds)",
                        "a number".into(),
                    ));
                };
                Node::Num(
                    Num::Count(Box::new(cond)),
                    Dimension::Plain,
                    Some(Unit::Count),
                    span,
                )
            }
        })
    }
}
