//! Scenario text to a validated [`Scenario`], and the `run` flags on top of it.
//!
//! The YAML is read by serde-saphyr into raw structs that mirror docs/scenario.md (unknown
//! keys rejected everywhere); every value that needs checking keeps its location
//! ([`Spanned`]), so each error, whether YAML syntax, shape or meaning, comes out as one
//! message `FILE:LINE:COL: what is wrong; what is allowed`, followed by the offending
//! line of the file with a caret under the column.

use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;
use std::path::Path;

use serde::Deserialize;
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde_saphyr::{Location, MessageFormatter, Spanned};

use super::{
    AlgoSpec, CheckSpec, Collective, DEFAULT_MEMORY_BUDGET, DataMode, DataSpec, Dtype, NetworkModel, NetworkSpec,
    ParamValue, ProtocolChoice, Scenario, TopologySpec, units,
};
use crate::sim::data::{Init, ReduceOp};
use crate::sim::flow::Sharing;
use crate::sim::network::ideal::Latency;
use crate::sim::network::loggp::{DEFAULT_EAGER_THRESHOLD, LogGP};

mod cluster;
mod noise;
mod topo;
use super::limits;
use topo::RawTopology;

// ---------------------------------------------------------------------------------------
// The error

/// A scenario that cannot be used: bad YAML, an unknown key, a value out of range, an
/// unknown algorithm, a bad flag. Always the user's input (exit status 2 upstream).
///
/// `Display` is the whole message: `FILE:LINE:COL: what is wrong; what is allowed`, then
/// the offending line with a caret where the file has one; `FILE: ...` where the problem
/// has no place in the file (unreadable file); `--flag: ...` for a command-line flag.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{text}")]
pub struct ScenarioError {
    text: String,
    message: String,
    origin: Option<String>,
    position: Option<(u64, u64)>,
}

impl ScenarioError {
    /// What is wrong and what is allowed, without file, position or snippet.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The file (or `--flag`) the error is about.
    pub fn origin(&self) -> Option<&str> {
        self.origin.as_deref()
    }

    /// Line and column (1-based) in the file, where there is one.
    pub fn position(&self) -> Option<(u64, u64)> {
        self.position
    }

    /// An error about the file as a whole (`FILE: message`).
    fn in_file(file: &str, message: String) -> Self {
        ScenarioError { text: format!("{file}: {message}"), message, origin: Some(file.to_string()), position: None }
    }

    /// An error about a command-line flag (`--flag: message`).
    fn flag(flag: &str, message: String) -> Self {
        ScenarioError { text: format!("{flag}: {message}"), message, origin: Some(flag.to_string()), position: None }
    }
}

/// The text being parsed and its name, for locating errors.
#[derive(Clone, Copy)]
struct Src<'a> {
    file: &'a str,
    text: &'a str,
}

/// Whether `w` is a plain whole number (an optional sign, then digits) that no 64-bit
/// integer holds, which the YAML parser hands on as a float.
fn huge_integer(w: &str) -> bool {
    let digits = w.strip_prefix(['-', '+']).unwrap_or(w);
    !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && w.parse::<i64>().is_err()
        && digits.parse::<u64>().is_err()
}

/// Line and column of a location, if it is known.
fn line_col(loc: &Location) -> Option<(u64, u64)> {
    (loc.line() >= 1).then(|| (loc.line(), loc.column().max(1)))
}

impl Src<'_> {
    /// An error at `loc` (or about the whole file, when `loc` is unknown).
    fn err(&self, loc: &Location, raw: impl Into<String>) -> ScenarioError {
        // Keys and values quoted from the file may hold line breaks; the message is one line.
        let mut message = String::new();
        for c in raw.into().chars() {
            if crate::units::is_unseen(c) {
                message.extend(c.escape_default());
            } else {
                message.push(c);
            }
        }
        let Some((line, col)) = line_col(loc) else {
            return ScenarioError::in_file(self.file, message);
        };
        // A whole number past 2^64 reaches us as a float: quote it as written, not as
        // the float's digits (`18446744073709551616`, not `1.8446744073709552e19`).
        if let Some((w, f)) =
            self.word_at(loc).filter(|w| huge_integer(w)).and_then(|w| Some((w, w.parse::<f64>().ok()?)))
        {
            message = message.replace(&format!("{f:?}"), w);
        }
        self.err_at(line, col, message)
    }

    /// The word at `loc` when it is a whole number too large for 64 bits, as written.
    fn huge_word(&self, loc: &Location) -> Option<String> {
        self.word_at(loc).filter(|w| huge_integer(w)).map(str::to_string)
    }

    /// `v` as the file wrote it where it reads as a float (`04`, `1e3`: not `4.0`,
    /// `1000.0`): the plain, untagged word at `loc` if it is a number; else as read.
    fn shown_at(&self, v: &Scalar, loc: &Location) -> String {
        if let Scalar::Float(_) = v
            && self.tag_and_key(loc).0.is_none()
            && let Some(w) = self.word_at(loc).filter(|w| w.parse::<f64>().is_ok())
        {
            return w.to_string();
        }
        v.shown()
    }

    /// [`Self::shown_at`] of a value where its own text is.
    fn shown(&self, v: &Spanned<Scalar>) -> String {
        self.shown_at(&v.value, &v.defined)
    }

    /// The plain word (a scalar up to a blank, `,`, `]`, `}` or `#`) at `loc`, as written.
    fn word_at(&self, loc: &Location) -> Option<&str> {
        let (line, col) = line_col(loc)?;
        let text = yaml_lines(self.text).nth(usize::try_from(line).ok()?.checked_sub(1)?)?;
        let start = text.char_indices().nth(usize::try_from(col).ok()?.checked_sub(1)?)?.0;
        let mut rest = &text[start..];
        loop {
            let end =
                rest.find(|c: char| c.is_whitespace() || matches!(c, ',' | ']' | '}' | '#')).unwrap_or(rest.len());
            // An anchor (`&a`) or a tag (`!!bool`) before the scalar.
            if end > 0 && rest.starts_with(['&', '!']) {
                rest = rest[end..].trim_start();
                continue;
            }
            return Some(&rest[..end]);
        }
    }

    /// An error at `line` and `col` (1-based) of a `message` with no control characters.
    fn err_at(&self, line: u64, col: u64, message: String) -> ScenarioError {
        let mut text = format!("{}:{line}:{col}: {message}", self.file);
        if let Some(snippet) = self.snippet(line, col) {
            text.push('\n');
            text.push_str(&snippet);
        }
        ScenarioError { text, message, origin: Some(self.file.to_string()), position: Some((line, col)) }
    }

    /// Line `line` of the text with a caret under column `col` (both 1-based, columns in
    /// characters), as two lines of the form ` 4 | text` / `   |   ^`. A line longer than
    /// [`SNIPPET_WIDTH`] characters is cut to that many around the column, with `...`
    /// where it was cut.
    fn snippet(&self, line: u64, col: u64) -> Option<String> {
        let src = yaml_lines(self.text).nth(usize::try_from(line).ok()?.checked_sub(1)?)?;
        let col = usize::try_from(col).ok()?.saturating_sub(1);
        let len = src.chars().count();
        // The window of characters shown: all of a short line, else SNIPPET_WIDTH
        // characters with the column a third of the way in.
        let (from, to) = if len <= SNIPPET_WIDTH {
            (0, len)
        } else {
            let from = col.saturating_sub(SNIPPET_WIDTH / 3).min(len - SNIPPET_WIDTH);
            (from, from + SNIPPET_WIDTH)
        };
        let lead = if from > 0 { "..." } else { "" };
        let tail = if to < len { "..." } else { "" };
        // Keep tabs so the caret lines up; drop other control characters.
        let shown: String = src
            .chars()
            .skip(from)
            .take(to - from)
            .map(|c| if crate::units::is_unseen(c) && c != '\t' { ' ' } else { c })
            .collect();
        let pad: String = lead
            .chars()
            .map(|_| ' ')
            .chain(shown.chars().take(col.saturating_sub(from)).map(|c| if c == '\t' { '\t' } else { ' ' }))
            .collect();
        let gutter = " ".repeat(line.to_string().len());
        let body = if tail.is_empty() { shown.trim_end().to_string() } else { shown };
        Some(format!(" {line} | {lead}{body}{tail}\n {gutter} | {pad}^"))
    }

    /// `file:line:col` of `loc`, for [`AlgoSpec::location`].
    fn place(&self, loc: &Location) -> String {
        match line_col(loc) {
            Some((l, c)) => format!("{}:{l}:{c}", self.file),
            None => self.file.to_string(),
        }
    }

    /// A YAML or shape error from serde-saphyr, in our words and at its location.
    fn yaml(&self, e: &serde_saphyr::Error) -> ScenarioError {
        use serde_saphyr::Error as Y;
        let mut inner = e.without_snippet();
        if let Y::AliasError { error, .. } = inner {
            inner = error.without_snippet();
        }
        let loc = e.location().unwrap_or(Location::UNKNOWN);
        let message = match inner {
            Y::TaggedScalarCannotDeserializeIntoString { .. } => self.tag_message(&loc, true),
            Y::UnsupportedTag { .. } => self.tag_message(&loc, false),
            Y::InvalidScalar { ty, .. } => self.invalid_tagged(&loc, ty),
            Y::SerdeUnknownField { field, expected, .. } => {
                format!("unknown key '{field}'; allowed: {}", expected.join(", "))
            }
            Y::SerdeMissingField { field, .. } => format!("missing key '{field}'"),
            Y::DuplicateMappingKey { key: Some(k), .. } => {
                format!("duplicate key '{k}'; each key may appear only once")
            }
            Y::DuplicateMappingKey { key: None, .. } => "duplicate key; each key may appear only once".to_string(),
            Y::SerdeInvalidType { unexpected, expected, .. } => format!("expected {expected}, found {unexpected}"),
            Y::Unexpected { expected, .. } => match *expected {
                "mapping start" => "expected a mapping of keys to values here".to_string(),
                "sequence start" => "expected a list here".to_string(),
                "string scalar" => "expected a single word or number here".to_string(),
                other => format!("expected {other}"),
            },
            Y::MultipleDocuments { .. } => "only one YAML document is allowed in a scenario file".to_string(),
            Y::NonFiniteFloat { value, .. } => {
                // A literal of thousands of digits was echoed whole: its first and last
                // digits and its length say which it is.
                let n = value.chars().count();
                let shown = if n > 40 {
                    let head: String = value.chars().take(20).collect();
                    let tail: String = value.chars().skip(n - 8).collect();
                    format!("{head}...{tail} ({n} characters)")
                } else {
                    value.to_string()
                };
                let key = self.tag_and_key(&loc).1.map(|k| format!("{k}: ")).unwrap_or_default();
                format!(
                    "{key}{shown} is not a finite number (past 1.8e308, the largest a scenario reads); times, \
                     sizes, bandwidths and counts must be finite, and each key's own range is smaller (a rank \
                     count at most 4294967295, a size at most 2^64 - 1 bytes)"
                )
            }
            Y::Budget { breach, .. } => budget_breach(breach),
            other => {
                let m = serde_saphyr::UserMessageFormatter.format_message(other).into_owned();
                if m.contains("found a tab") {
                    format!("{m}; YAML does not allow tabs for indentation, use spaces")
                } else {
                    m
                }
            }
        };
        self.err(&loc, message)
    }

    /// A tag the scenario does not read (`!!timestamp`, `!Ref`), with the key it is on,
    /// both read from the text before the node at `loc`. `text`: the tag is one of those
    /// read (`!!int`), on a key that takes text (`name: !!int 5`), where "not read" and
    /// a list of allowed tags holding it would contradict each other.
    fn tag_message(&self, loc: &Location, text: bool) -> String {
        let (tag, key) = self.tag_and_key(loc);
        let t = tag.as_deref().unwrap_or("this tag");
        let (what, allowed) = if text {
            (format!("the tag {t} makes the value something other than text, which this key takes"), TAGS_TEXT)
        } else {
            (format!("the tag {t} is not read"), TAGS_READ)
        };
        match key {
            Some(k) => format!("{k}: {what}; {allowed}"),
            None => format!("{what}; {allowed}"),
        }
    }

    /// A tagged value the tag's own type cannot hold (`ranks: !!int 12345678901234567890123`,
    /// `!!int 4.0`): the reader said only `invalid u64`, naming neither the key, the value
    /// nor what it takes.
    fn invalid_tagged(&self, loc: &Location, ty: &str) -> String {
        let (tag, key) = self.tag_and_key(loc);
        let (line, col) = line_col(loc).unwrap_or((0, 0));
        let value: String = usize::try_from(line)
            .ok()
            .and_then(|l| yaml_lines(self.text).nth(l.checked_sub(1)?))
            .map(|l| {
                l.chars()
                    .skip(usize::try_from(col).unwrap_or(1).saturating_sub(1))
                    .take_while(|c| !c.is_whitespace() && !matches!(c, ',' | ']' | '}' | '#'))
                    .collect()
            })
            .unwrap_or_default();
        let range = match ty {
            "u64" => "a whole number of 64 bits (0 to 18446744073709551615)".to_string(),
            "u32" => "a whole number of 32 bits (0 to 4294967295)".to_string(),
            "u16" => "a whole number of 16 bits (0 to 65535)".to_string(),
            "i64" => "a whole number of 64 bits (-9223372036854775808 to 9223372036854775807)".to_string(),
            "floating point" | "f64" | "f32" => "a number".to_string(),
            "boolean" => "true or false".to_string(),
            other => format!("a {other}"),
        };
        let tag = tag.unwrap_or_else(|| "the tagged value".to_string());
        let written = if value.is_empty() { format!("{tag} with no value") } else { format!("{tag} {value}") };
        let allows = key.as_deref().map_or_else(|| "the key".to_string(), str::to_string);
        let what = format!(
            "{written} is not {range}, what the tag reads here; write the value without the tag, and it is \
             checked against what {allows} allows"
        );
        match key {
            Some(k) => format!("{k}: {what}"),
            None => what,
        }
    }

    /// The tag written before the node at `loc` (the location is the value after it) and
    /// the key the node is the value of, both read from the text before it.
    fn tag_and_key(&self, loc: &Location) -> (Option<String>, Option<String>) {
        let (line, col) = line_col(loc).unwrap_or((0, 0));
        let before: String = (line >= 1)
            .then(|| {
                let text = yaml_lines(self.text).nth(usize::try_from(line).ok()?.checked_sub(1)?)?;
                Some(text.chars().take(usize::try_from(col).ok()?.saturating_sub(1)).collect())
            })
            .flatten()
            .unwrap_or_default();
        let mut rest = before.trim_end();
        // The tag, where the location is the value after it (also inside a flow list).
        let mut tag = None;
        let k = rest.rfind(|c: char| c.is_whitespace() || matches!(c, '[' | '{' | ',')).map_or(0, |k| k + 1);
        if rest[k..].starts_with('!') {
            tag = Some(rest[k..].to_string());
            rest = rest[..k].trim_end();
        }
        // A later item of a flow list on one line (`sizes: [4KiB, !!timestamp ...]`) is under
        // the key before the list's own bracket, which was not named.
        if let Some(items) = rest.strip_suffix(',') {
            let mut depth = 0usize;
            for (k, c) in items.char_indices().rev() {
                match c {
                    ']' | '}' => depth += 1,
                    '[' | '{' if depth > 0 => depth -= 1,
                    '[' => {
                        rest = items[..=k].trim_end();
                        break;
                    }
                    '{' => break,
                    _ => {}
                }
            }
        }
        // A flow list's first item (`sizes: [!!timestamp ...]`) is under the list's key.
        let rest = rest.strip_suffix('[').map_or(rest, str::trim_end);
        let key = rest.strip_suffix(':').map(|r| {
            let k = r.rsplit(|c: char| c.is_whitespace() || matches!(c, '{' | '[' | ',')).next().unwrap_or(r);
            k.trim_matches(['"', '\'']).to_string()
        });
        (tag, key.filter(|k| !k.is_empty()))
    }
}

// ---------------------------------------------------------------------------------------
// Raw values

/// One YAML scalar as written: whichever of number, string, boolean or null it is.
#[derive(Clone, Debug, PartialEq)]
enum Scalar {
    UInt(u64),
    Int(i64),
    Float(f64),
    Str(String),
    Bool(bool),
    Null,
}

impl Scalar {
    /// The text the unit parsers read: numbers in shortest round-trip form, in
    /// scientific notation far from 1 (`1e-320`, not 320 digits, in a message).
    fn text(&self) -> String {
        match self {
            Scalar::UInt(v) => v.to_string(),
            Scalar::Int(v) => v.to_string(),
            Scalar::Float(v) if *v != 0.0 && !(1e-5..1e16).contains(&v.abs()) => format!("{v:?}"),
            Scalar::Float(v) => v.to_string(),
            Scalar::Str(s) => s.clone(),
            Scalar::Bool(b) => b.to_string(),
            Scalar::Null => String::new(),
        }
    }

    /// The value in a message: `'4KiB'`, `-3`, `true`, `nothing (null)`.
    fn shown(&self) -> String {
        match self {
            Scalar::Str(s) => format!("'{s}'"),
            Scalar::Null => "nothing (null)".to_string(),
            Scalar::Float(v) => format!("{v:?}"),
            other => other.text(),
        }
    }
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a single number or string")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Scalar, E> {
        Ok(Scalar::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Scalar, E> {
        Ok(u64::try_from(v).map_or(Scalar::Int(v), Scalar::UInt))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Scalar, E> {
        Ok(Scalar::UInt(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Scalar, E> {
        Ok(Scalar::Float(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Scalar, E> {
        Ok(Scalar::Str(v.to_string()))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Scalar, E> {
        Ok(Scalar::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Scalar, E> {
        Ok(Scalar::Null)
    }
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }
}

/// What a [`OneOrList`] holds, for messages.
trait ListKind {
    /// What was expected, as in "expected EXPECTING, found map".
    const EXPECTING: &'static str;
}

/// `ranks:`.
struct RanksKind;
impl ListKind for RanksKind {
    const EXPECTING: &'static str = "a rank count (ranks: 8) or a list of them (ranks: [4, 8])";
}

/// `sizes:`.
struct SizesKind;
impl ListKind for SizesKind {
    const EXPECTING: &'static str = "a size (sizes: 1MiB) or a list of sizes (sizes: [4KiB, 1MiB])";
}

/// `ranks: 8` or `ranks: [4, 8]` (and the same for `sizes`); `K` names it in messages.
struct OneOrList<K> {
    items: ListItems,
    kind: PhantomData<K>,
}

enum ListItems {
    One(Scalar),
    List(Vec<Spanned<Scalar>>),
}

impl<K> OneOrList<K> {
    fn one(v: Scalar) -> Self {
        OneOrList { items: ListItems::One(v), kind: PhantomData }
    }
}

struct OneOrListVisitor<K>(PhantomData<K>);

impl<'de, K: ListKind> Visitor<'de> for OneOrListVisitor<K> {
    type Value = OneOrList<K>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(K::EXPECTING)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<OneOrList<K>, E> {
        ScalarVisitor.visit_bool(v).map(OneOrList::one)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<OneOrList<K>, E> {
        ScalarVisitor.visit_i64(v).map(OneOrList::one)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<OneOrList<K>, E> {
        ScalarVisitor.visit_u64(v).map(OneOrList::one)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<OneOrList<K>, E> {
        ScalarVisitor.visit_f64(v).map(OneOrList::one)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<OneOrList<K>, E> {
        ScalarVisitor.visit_str(v).map(OneOrList::one)
    }
    fn visit_unit<E: de::Error>(self) -> Result<OneOrList<K>, E> {
        Ok(OneOrList::one(Scalar::Null))
    }
    fn visit_none<E: de::Error>(self) -> Result<OneOrList<K>, E> {
        Ok(OneOrList::one(Scalar::Null))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<OneOrList<K>, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<Scalar>>()? {
            items.push(item);
        }
        Ok(OneOrList { items: ListItems::List(items), kind: PhantomData })
    }
}

impl<'de, K: ListKind> Deserialize<'de> for OneOrList<K> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(OneOrListVisitor(PhantomData))
    }
}

/// The items with their locations (a lone value is located where the key's value is).
fn list_items<K>(raw: Spanned<OneOrList<K>>) -> Vec<(Scalar, Location)> {
    match raw.value.items {
        ListItems::One(v) => vec![(v, raw.referenced)],
        ListItems::List(items) => items.into_iter().map(|s| (s.value, s.referenced)).collect(),
    }
}

/// One `algorithms:` entry: `ring` or `{ name: ring_segmented, segment: 256KiB }`.
enum RawAlgo {
    Id(String),
    Map(Vec<(Spanned<String>, Spanned<Scalar>)>),
}

struct RawAlgoVisitor;

impl<'de> Visitor<'de> for RawAlgoVisitor {
    type Value = RawAlgo;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an algorithm id or a mapping { name: ID, <parameter>: <value>, ... }")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<RawAlgo, E> {
        Ok(RawAlgo::Id(v.to_string()))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawAlgo, A::Error> {
        let mut items = Vec::new();
        while let Some(key) = map.next_key::<Spanned<String>>()? {
            let value = map.next_value::<Spanned<Scalar>>()?;
            items.push((key, value));
        }
        Ok(RawAlgo::Map(items))
    }
}

impl<'de> Deserialize<'de> for RawAlgo {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(RawAlgoVisitor)
    }
}

/// A required key that is present: its value is read even when it is null (`sizes:`
/// with nothing after it), so the error is at that key, not "missing key" at the top.
fn present<'de, D: de::Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// The file as written (docs/scenario.md).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: Option<Spanned<String>>,
    seed: Option<Spanned<Scalar>>,
    #[serde(default, deserialize_with = "present")]
    ranks: Option<Spanned<OneOrList<RanksKind>>>,
    #[serde(default, deserialize_with = "present")]
    topology: Option<Spanned<RawTopology>>,
    compute: Option<Spanned<RawCompute>>,
    network: Option<Spanned<RawNetwork>>,
    data: Option<Spanned<RawData>>,
    collective: Option<Spanned<String>>,
    #[serde(default, deserialize_with = "present")]
    algorithms: Option<Spanned<Vec<Spanned<RawAlgo>>>>,
    #[serde(default, deserialize_with = "present")]
    sizes: Option<Spanned<OneOrList<SizesKind>>>,
    check: Option<Spanned<RawCheck>>,
    noise: Option<Spanned<noise::RawNoise>>,
    repeat: Option<Spanned<Scalar>>,
    host: Option<Spanned<RawHost>>,
}

/// `host:` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHost {
    #[serde(default, deserialize_with = "present")]
    issue: Option<Spanned<Scalar>>,
    #[serde(default, deserialize_with = "present")]
    gpus_per_thread: Option<Spanned<Scalar>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLink {
    #[serde(default, deserialize_with = "present")]
    alpha: Option<Spanned<Scalar>>,
    #[serde(default, deserialize_with = "present")]
    bandwidth: Option<Spanned<Scalar>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCompute {
    cost_per_byte: Option<Spanned<Scalar>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNetwork {
    model: Option<Spanned<String>>,
    sharing: Option<Spanned<String>>,
    envelope: Option<Spanned<Scalar>>,
    o: Option<Spanned<Scalar>>,
    g: Option<Spanned<Scalar>>,
    #[serde(rename = "L")]
    latency: Option<Spanned<Scalar>>,
    #[serde(rename = "G")]
    per_byte: Option<Spanned<Scalar>>,
    eager_threshold: Option<Spanned<Scalar>>,
    /// `latency` (the ideal model's port holding), not LogGP's `L`.
    #[serde(rename = "latency")]
    holding: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawData {
    dtype: Option<Spanned<String>>,
    op: Option<Spanned<String>>,
    init: Option<Spanned<String>>,
    mode: Option<Spanned<String>>,
    memory_budget: Option<Spanned<Scalar>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCheck {
    closed_form: Option<Spanned<Scalar>>,
    bitwise: Option<Spanned<Scalar>>,
}

// ---------------------------------------------------------------------------------------
// Validation

/// Collectives that are not built yet.
const PLANNED_COLLECTIVES: &[&str] = &["alltoall", "gather", "scatter"];

/// Every collective by name, for [`choice`].
fn collectives() -> Vec<(&'static str, Collective)> {
    Collective::ALL.iter().map(|&c| (c.name(), c)).collect()
}

/// The lines of a YAML text as YAML counts them, and as the reader numbers them in its
/// messages: a line ends at `\n`, `\r\n` or a lone `\r`. `str::lines` knows the first two
/// only, so a file of old Mac line ends was one line to it: one that opened with a comment
/// was "empty", and a message's snippet showed another line than the one it named.
fn yaml_lines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = (!text.is_empty()).then_some(text);
    std::iter::from_fn(move || {
        let r = rest?;
        match r.find(['\n', '\r']) {
            Some(i) => {
                let skip = if r[i..].starts_with("\r\n") { 2 } else { 1 };
                rest = Some(&r[i + skip..]).filter(|s| !s.is_empty());
                Some(&r[..i])
            }
            None => {
                rest = None;
                Some(r)
            }
        }
    })
}

/// Parse scenario `text`; `file` names it in messages and gives the default name.
///
/// Every value is checked and resolved to base units; every algorithm entry is built
/// once (unknown ids and parameters are errors here, not at run time).
pub fn parse_str(text: &str, file: &str) -> Result<Scenario, ScenarioError> {
    let src = Src { file, text };
    let blank = yaml_lines(text).map(str::trim).all(|l| l.is_empty() || l.starts_with('#') || l == "---" || l == "...");
    if blank {
        return Err(ScenarioError::in_file(
            file,
            "the file is empty; a scenario is a mapping with at least topology, ranks, \
             algorithms and sizes"
                .to_string(),
        ));
    }
    // serde-saphyr stops at a document's end marker and never reads what follows, so a
    // second document that does not parse, or any text, after `...` was dropped unread.
    let mut lines = yaml_lines(text).enumerate();
    if lines.any(|(_, l)| l.split('#').next().is_some_and(|t| t.trim_end() == "..."))
        && let Some((n, l)) = lines.find(|(_, l)| !(l.trim().is_empty() || l.trim_start().starts_with('#')))
    {
        let end =
            yaml_lines(text).position(|l| l.split('#').next().is_some_and(|t| t.trim_end() == "...")).unwrap_or(0);
        let col = l.chars().take_while(|c| c.is_whitespace()).count() + 1;
        return Err(src.err_at(
            n as u64 + 1,
            col as u64,
            format!(
                "text after the end of the document ('...' at line {}); a scenario file holds one YAML document: \
                 remove the '...' or what follows it",
                end + 1
            ),
        ));
    }
    if text.contains('!') {
        unread_tags(&src)?;
    }
    let raw: Spanned<RawScenario> = serde_saphyr::from_str(text).map_err(|e| src.yaml(&e))?;
    validate(&src, raw)
}

/// Refuses the first tag the scenario does not read, wherever it stands. The YAML reader
/// refuses some tags on its own (`!!timestamp`), but drops others and reads the value as if
/// untagged (`ranks: !!set 4`, `!Ref ring`): the file would run as something it does not
/// say. Read are the core schema's scalar tags (`!!str`, `!!int`, `!!float`, `!!bool`,
/// `!!null`) on values, `!!seq` on lists and `!!map` on mappings. A text the parser cannot
/// read is left to the reader that follows, which says where and why.
fn unread_tags(src: &Src<'_>) -> Result<(), ScenarioError> {
    use granit_parser::{Event, Parser};
    const CORE: &str = "tag:yaml.org,2002:";
    let mut open: Vec<Open> = Vec::new();
    for item in Parser::new_from_str(src.text) {
        let Ok((event, span)) = item else { return Ok(()) };
        let (tag, read): (_, &[&str]) = match &event {
            Event::Scalar(_, _, _, t) => (t, &["str", "int", "float", "bool", "null"]),
            Event::SequenceStart(_, _, t) => (t, &["seq"]),
            Event::MappingStart(_, _, t) => (t, &["map"]),
            Event::Alias(_) => (&None, &[]),
            Event::SequenceEnd | Event::MappingEnd => {
                open.pop();
                node_done(&mut open, None);
                continue;
            }
            _ => continue,
        };
        if let Some(tag) = tag {
            // `!!int` and its verbatim spelling `!<tag:yaml.org,2002:int>` are one tag.
            let full = format!("{}{}", tag.handle(), tag.suffix());
            if !full.strip_prefix(CORE).is_some_and(|s| read.contains(&s)) {
                // The tag as the parser resolved it, not as the text spells it: a `%TAG`
                // directive may give `!!int` another meaning, and `%E2%80%8B` in a tag is a
                // zero-width space, which the message shows escaped.
                let shown = match tag.handle() {
                    CORE => format!("!!{}", tag.suffix()),
                    "!" => format!("!{}", tag.suffix()),
                    h => format!("!<{h}{}>", tag.suffix()),
                };
                // A decoded `%0A` would break the message's line; the other characters
                // that cannot be seen are escaped where every message is printed.
                let unseen = crate::units::escape_controls(&shown) != shown;
                let shown = shown.replace('\n', "\\n").replace('\t', "\\t");
                // `!%21` decodes to the local tag `!!`, which reads as the other handle: the
                // spelling is quoted too, so the user finds what they wrote. A tag that
                // decodes to a character no message shows (`!%00`) is quoted as written first.
                let (shown, written) = match written_tag(src.text, &span) {
                    Some(w) if unseen => {
                        let read = format!(
                            " (a %-escape is the character it encodes, here one that cannot be printed: it reads as {shown})"
                        );
                        (w, read)
                    }
                    Some(w) if w != shown => (shown, format!(" (written {w}: a %-escape is the character it encodes)")),
                    _ => (shown, String::new()),
                };
                // The key the node is the value of, from the parser's own structure rather
                // than the text before it (a block list's item, an anchor between key and tag).
                let key = open.iter().rev().find_map(|o| match o {
                    Open::Map { at_key: false, key } => Some(key.clone()),
                    _ => None,
                });
                // What a list or a mapping may carry is its own tag, not the scalars' list
                // (`sizes: !!str [4KiB]` was told `!!str` is not read, `!!str` allowed).
                let what = match event {
                    Event::SequenceStart(..) => {
                        format!(
                            "the tag {shown} is not read on a list{written}; write the list without a tag, or with !!seq"
                        )
                    }
                    Event::MappingStart(..) => format!(
                        "the tag {shown} is not read on a mapping{written}; write the mapping without a tag, or with !!map"
                    ),
                    _ => format!("the tag {shown} is not read{written}; {TAGS_READ}"),
                };
                let message = match key.flatten().filter(|k| !k.is_empty()) {
                    Some(k) => format!("{k}: {what}"),
                    None => what,
                };
                let (line, col) = (span.start.line() as u64, span.start.col() as u64 + 1);
                return Err(src.err_at(line, col, message));
            }
        }
        match event {
            Event::SequenceStart(..) => open.push(Open::Seq),
            Event::MappingStart(..) => open.push(Open::Map { at_key: true, key: None }),
            Event::Scalar(value, ..) => node_done(&mut open, Some(value.into_owned())),
            _ => node_done(&mut open, None),
        }
    }
    Ok(())
}

/// The tag as written before the node that starts at `span` on the same line (the
/// shorthand's characters exclude blanks and flow indicators), when one is there.
fn written_tag(text: &str, span: &granit_parser::Span) -> Option<String> {
    let line = yaml_lines(text).nth(span.start.line().checked_sub(1)?)?;
    let before: String = line.chars().take(span.start.col()).collect();
    let before = before.trim_end();
    let k = before.rfind(|c: char| c.is_whitespace() || matches!(c, '[' | '{' | ',')).map_or(0, |k| k + 1);
    let token = &before[k..];
    (token.starts_with('!') && token.contains('%')).then(|| token.to_string())
}

/// What a refused tag's message says is allowed.
const TAGS_READ: &str = "write the value without a tag (allowed tags: !!str, !!int, !!float, !!bool, !!null)";

/// What a read tag on a key that takes text (`name: !!int 5`) is told instead.
const TAGS_TEXT: &str = "write the value without a tag, or with !!str";

/// A collection [`unread_tags`] is inside: a mapping remembers the key whose value is
/// being read, to name it.
enum Open {
    Seq,
    Map { at_key: bool, key: Option<String> },
}

/// A node of the innermost open collection has been read: in a mapping, a key (`name`,
/// when a scalar) makes the next node its value, and a value makes the next node a key.
fn node_done(open: &mut [Open], name: Option<String>) {
    if let Some(Open::Map { at_key, key }) = open.last_mut() {
        if *at_key {
            *key = name;
        }
        *at_key = !*at_key;
    }
}

/// The largest scenario file read, bytes (16 MiB): a scenario is a few lines of YAML.
pub const MAX_SCENARIO_BYTES: u64 = 16 << 20;

/// Characters of a source line shown under an error at most.
pub const SNIPPET_WIDTH: usize = 120;

/// Read and parse the scenario file at `path` (see [`parse_str`]); the path names it in
/// messages. A file that cannot be read is an error naming the path and the reason, and
/// so is one larger than [`MAX_SCENARIO_BYTES`] (refused by its length, or after reading
/// one byte more than the limit if it grows meanwhile, never whole) and anything but a
/// regular file (a FIFO, `/dev/zero`), refused before it is opened.
pub fn load_file(path: &Path) -> Result<Scenario, ScenarioError> {
    use std::io::Read;
    let file = path.display().to_string();
    let cannot = |e: std::io::Error| {
        if file == "-" && e.kind() == std::io::ErrorKind::NotFound {
            ScenarioError::in_file(&file, format!("cannot read the scenario file: {}", crate::files::DASH_IS_NO_INPUT))
        } else {
            ScenarioError::in_file(&file, format!("cannot read the scenario file: {e}"))
        }
    };
    let too_big = |what: String| {
        ScenarioError::in_file(
            &file,
            format!(
                "the scenario file is {what}, more than the {} MiB allowed; a scenario is a few lines of YAML",
                MAX_SCENARIO_BYTES >> 20
            ),
        )
    };
    // Look before opening: opening a FIFO blocks until something writes to it.
    let meta = std::fs::metadata(path).map_err(cannot)?;
    if meta.is_dir() {
        return Err(ScenarioError::in_file(&file, "cannot read the scenario file: it is a directory".to_string()));
    }
    if !meta.is_file() {
        return Err(ScenarioError::in_file(
            &file,
            format!(
                "cannot read the scenario file: it is {}, not a regular file; save the scenario in a file",
                crate::files::kind(&meta)
            ),
        ));
    }
    let f = std::fs::File::open(path).map_err(cannot)?;
    if meta.len() > MAX_SCENARIO_BYTES {
        return Err(too_big(format!("{} bytes", meta.len())));
    }
    let mut bytes = Vec::new();
    f.take(MAX_SCENARIO_BYTES + 1).read_to_end(&mut bytes).map_err(cannot)?;
    if bytes.len() as u64 > MAX_SCENARIO_BYTES {
        return Err(too_big(format!("longer than {MAX_SCENARIO_BYTES} bytes (read so far)")));
    }
    let text = crate::files::utf8_text(bytes).map_err(|e| {
        let message = e.message();
        ScenarioError {
            text: format!("{file}:{e}"),
            message,
            origin: Some(file.clone()),
            position: Some((e.line, e.column)),
        }
    })?;
    parse_str(&text, &file)
}

/// The default scenario name: the file's stem, or `scenario` when there is no file.
fn default_name(file: &str) -> String {
    if file.is_empty() || file.starts_with('<') || file == "-" {
        return "scenario".to_string();
    }
    Path::new(file)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "scenario".to_string())
}

/// The value of `key` among `allowed` (the first is the default when the key is absent);
/// `planned` values are named in docs/scenario.md but not built yet.
fn choice<T: Copy>(
    src: &Src,
    raw: Option<&Spanned<String>>,
    key: &str,
    allowed: &[(&str, T)],
    planned: &[&str],
) -> Result<T, ScenarioError> {
    let Some(raw) = raw else {
        return Ok(allowed[0].1);
    };
    if let Some(&(_, v)) = allowed.iter().find(|(name, _)| *name == raw.value) {
        return Ok(v);
    }
    let names: Vec<_> = allowed.iter().map(|(n, _)| *n).collect();
    let why = if planned.contains(&raw.value.as_str()) { "is not implemented yet" } else { "is not known" };
    Err(src.err(&raw.referenced, format!("{key}: '{}' {why}; allowed: {}", raw.value, names.join(", "))))
}

/// A time value (`alpha`, `cost_per_byte`) in seconds.
fn time(src: &Src, v: &Spanned<Scalar>, key: &str) -> Result<f64, ScenarioError> {
    match &v.value {
        Scalar::Bool(_) | Scalar::Null => Err(src.err(
            &v.referenced,
            format!("{key}: expected a time such as 1us or a number of seconds, found {}", src.shown(v)),
        )),
        s => units::parse_time(&s.text()).map_err(|e| src.err(&v.referenced, format!("{key}: {e}"))),
    }
}

/// `host: { issue: TIME, gpus_per_thread: N }`: issue at least 0 (default 0), at least
/// one GPU per thread (default 1).
fn host(src: &Src, raw: Spanned<RawHost>) -> Result<crate::scenario::HostSpec, ScenarioError> {
    let issue_s = match &raw.value.issue {
        None => 0.0,
        Some(v) => {
            let t = time(src, v, "host.issue")?;
            if !(t >= 0.0 && t.is_finite()) {
                return Err(src.err(&v.referenced, format!("host.issue: expected a time of at least 0, got {t:e} s")));
            }
            t
        }
    };
    let gpus_per_thread = match &raw.value.gpus_per_thread {
        None => 1,
        Some(v) => whole(&v.value, 1, u32::MAX as u64).ok_or_else(|| {
            src.err(
                &v.referenced,
                format!(
                    "host.gpus_per_thread: must be a whole number from 1 to {} (the GPUs one host thread \
                     drives), not {}",
                    u32::MAX,
                    src.shown(v)
                ),
            )
        })? as usize,
    };
    Ok(crate::scenario::HostSpec { issue_s, gpus_per_thread })
}

/// A bandwidth value in bytes per second.
fn bandwidth(src: &Src, v: &Spanned<Scalar>, key: &str) -> Result<f64, ScenarioError> {
    match &v.value {
        Scalar::Bool(_) | Scalar::Null => Err(src.err(
            &v.referenced,
            format!(
                "{key}: expected a bandwidth such as 100Gbps or 12.5GB/s, or a number of \
                 bytes per second, found {}",
                src.shown(v)
            ),
        )),
        s => units::parse_bandwidth(&s.text()).map_err(|e| {
            // A float is quoted as written: `1e-400` reads as 0, and "bandwidth '0'" is
            // not what the file says.
            let e = match s {
                Scalar::Float(_) => e.replacen(&format!("'{}'", s.text()), &format!("'{}'", src.shown(v)), 1),
                _ => e,
            };
            src.err(&v.referenced, format!("{key}: {e}"))
        }),
    }
}

/// A whole number in `min..=max` (a YAML integer, or a string of digits).
fn whole(v: &Scalar, min: u64, max: u64) -> Option<u64> {
    let n = match v {
        Scalar::UInt(n) => *n,
        Scalar::Str(s) => s.trim().parse().ok()?,
        _ => return None,
    };
    (min..=max).contains(&n).then_some(n)
}

/// Bytes per rank: a size, and a whole number of `dtype` elements.
fn size_bytes(v: &Scalar, dtype: Dtype) -> Result<u64, String> {
    let bytes = match v {
        Scalar::Bool(_) | Scalar::Null => {
            return Err(format!("expected a size such as 4KiB or a number of bytes, found {}", v.shown()));
        }
        s => units::parse_size(&s.text())?,
    };
    check_whole_elements(bytes, dtype)?;
    Ok(bytes)
}

/// `bytes` must hold a whole number of `dtype` elements.
fn check_whole_elements(bytes: u64, dtype: Dtype) -> Result<(), String> {
    let e = dtype.bytes() as u64;
    let name = dtype.name();
    if !bytes.is_multiple_of(e) {
        return Err(format!(
            "{} is not a whole number of {e}-byte {name} elements; \
             use a multiple of {e} bytes",
            units::count_bytes(bytes)
        ));
    }
    if usize::try_from(bytes / e).is_err() {
        return Err(format!("{bytes} bytes is more {name} elements than this machine can address"));
    }
    Ok(())
}

/// A rank count of at least 1, at most 2^32 - 1: ranks are numbered in 32 bits
/// ([`crate::sim::Rank`]), and P^2 message counts then fit 64.
fn rank_count(v: &Scalar, shown: impl FnOnce() -> String) -> Result<usize, String> {
    whole(v, 1, u64::from(u32::MAX)).map(|n| n as usize).ok_or_else(|| {
        format!(
            "a rank count must be a whole number from 1 to {} (ranks are numbered in 32 bits), not {}",
            u32::MAX,
            shown()
        )
    })
}

/// Where an earlier equal item was, for "listed twice" messages.
fn first_at(loc: &Location) -> String {
    match line_col(loc) {
        Some((l, c)) => format!(" (first at line {l}, column {c})"),
        None => String::new(),
    }
}

/// One parameter of an algorithm entry as a [`ParamValue`].
fn param_value(src: &Src, name: &str, key: &Spanned<String>, v: &Spanned<Scalar>) -> Result<ParamValue, ScenarioError> {
    Ok(match &v.value {
        Scalar::UInt(n) => ParamValue::Int(*n),
        // A whole number past 2^64 is quoted as written, not as the float it reads as.
        Scalar::Float(f) => src.huge_word(&v.defined).map_or(ParamValue::Float(*f), ParamValue::Str),
        Scalar::Str(s) => ParamValue::Str(s.clone()),
        // Negative numbers reach the builder as written, and booleans as the word the
        // file has (`yes`, not the `true` YAML 1.1 reads it as); the builder rejects them.
        Scalar::Int(_) => ParamValue::Str(v.value.text()),
        Scalar::Bool(_) => ParamValue::Str(src.word_at(&v.defined).map_or_else(|| v.value.text(), str::to_string)),
        Scalar::Null => {
            return Err(src.err(
                &v.referenced,
                format!("algorithms: parameter '{}' of '{name}' has no value; write {}: VALUE", key.value, key.value),
            ));
        }
    })
}

/// Params in a canonical order, to tell duplicates apart from variants.
fn canonical(params: &[(String, ParamValue)]) -> Vec<(String, String)> {
    let mut v: Vec<_> = params.iter().map(|(k, p)| (k.clone(), p.to_string())).collect();
    v.sort();
    v
}

/// Check one `algorithms:` entry and build it once.
/// `collective` is the scenario's, which an entry's own `collective:` replaces.
/// With the spec, the label of what it runs where it is an algorithm (`None` for a selector): its
/// rows' label, less an entry's `protocol: simple`, the default it is.
fn algo_entry(
    src: &Src,
    entry: Spanned<RawAlgo>,
    collective: Collective,
) -> Result<(AlgoSpec, Option<String>), ScenarioError> {
    let at = entry.referenced;
    let mut collective = collective;
    // (id, where the id is, parameters, and for each parameter where its key and value are)
    let mut protocol = None;
    let (name, name_loc, params, keys) = match entry.value {
        RawAlgo::Id(id) => (id, at, Vec::new(), Vec::new()),
        RawAlgo::Map(items) => {
            let Some(pos) = items.iter().position(|(k, _)| k.value == "name") else {
                return Err(src.err(
                    &at,
                    "algorithms: this entry has no 'name'; write an id (ring) or \
                     { name: ID, <parameter>: <value>, ... }",
                ));
            };
            let name_v = &items[pos].1;
            let name = match &name_v.value {
                Scalar::Str(s) => s.clone(),
                other => {
                    return Err(src.err(
                        &name_v.referenced,
                        format!("algorithms: 'name' must be an algorithm id, not {}", other.shown()),
                    ));
                }
            };
            let mut params = Vec::new();
            let mut keys = Vec::new();
            for (i, (k, v)) in items.iter().enumerate() {
                if i != pos && k.value == "collective" {
                    let text = match &v.value {
                        Scalar::Str(s) => s.clone(),
                        other => other.text(),
                    };
                    let raw = Spanned { value: text, referenced: v.referenced, defined: v.defined };
                    collective =
                        choice(src, Some(&raw), "algorithms: collective", &collectives(), PLANNED_COLLECTIVES)?;
                } else if i != pos && k.value == "protocol" {
                    let text = match &v.value {
                        Scalar::Str(s) => s.clone(),
                        other => other.text(),
                    };
                    let Some(p) = ProtocolChoice::from_name(&text) else {
                        return Err(src.err(
                            &v.referenced,
                            format!(
                                "algorithms: protocol: {} is not a protocol; allowed: simple, ll, ll128, auto",
                                src.shown(v)
                            ),
                        ));
                    };
                    protocol = Some((p, v.referenced));
                } else if i != pos {
                    params.push((k.value.clone(), param_value(src, &name, k, v)?));
                    keys.push((k.value.clone(), k.referenced, v.referenced));
                }
            }
            (name, name_v.referenced, params, keys)
        }
    };
    if let Some((ProtocolChoice::Auto, at)) = protocol
        && ProtocolChoice::nccl_algo(collective, &name).is_none()
    {
        return Err(src.err(
            &at,
            format!(
                "algorithms: protocol: auto takes the protocol NCCL's model picks for the algorithm, and NCCL has \
                 no counterpart of '{name}' for {}; name a protocol (simple, ll, ll128)",
                collective.name()
            ),
        ));
    }
    // A selector runs what it picks, each with the protocol of the pick: an entry's own
    // protocol was dropped without a word (`{ name: nccl_model, protocol: ll128 }` ran LL).
    if let Some((_, at)) = protocol
        && crate::selectors::is_selector(&name)
    {
        return Err(src.err(
            &at,
            format!(
                "algorithms: protocol: '{name}' is a selector: it runs the algorithm it picks with that \
                 algorithm's own protocol, and takes none; give protocol: on an algorithm's entry \
                 ({{ name: nccl_ring, protocol: ll }})"
            ),
        ));
    }
    let protocol = protocol.map(|(p, _)| p);
    let label = crate::selectors::check(collective, &name, &params);
    if let Err(e) = &label {
        // An unknown parameter is shown at its key, a bad value at the value.
        let at_key = e.message.starts_with("unknown parameter");
        let loc = e
            .key
            .as_ref()
            .and_then(|k| keys.iter().find(|(kk, _, _)| kk == k))
            .map_or(name_loc, |(_, kl, vl)| if at_key { *kl } else { *vl });
        let msg = if e.key.is_some() && !e.message.contains(&format!("'{name}'")) {
            format!("algorithms: {name}: {}", e.message)
        } else {
            format!("algorithms: {}", e.message)
        };
        return Err(src.err(&loc, msg));
    }
    // What the entry runs: `protocol: simple` is the protocol an entry without one runs
    // with (`nccl_ring` and `{ name: nccl_ring, protocol: simple }` are one run), though
    // its rows' label names it.
    let simple = Some(ProtocolChoice::Fixed(crate::topology::Proto::Simple));
    let label = label.ok().flatten().map(|l| ProtocolChoice::label(l, protocol.filter(|_| protocol != simple)));
    Ok((AlgoSpec { name, collective, params, location: src.place(&at), protocol }, label))
}

/// What an `algorithms:` entry runs, however written: two entries that run alike are one.
enum Runs {
    /// An algorithm, by the label of its rows.
    Algorithm(String),
    /// A selector, by its parameters as read (releases of one model alike).
    Selector(crate::selectors::NcclParams),
}

fn validate(src: &Src, raw: Spanned<RawScenario>) -> Result<Scenario, ScenarioError> {
    let root = raw.referenced;
    let r = raw.value;

    let name = r.name.map_or_else(|| default_name(src.file), |n| n.value);

    let seed = match r.seed {
        None => 0,
        Some(s) => whole(&s.value, 0, u64::MAX).ok_or_else(|| {
            src.err(
                &s.referenced,
                format!("seed: must be a whole number from 0 to {}, not {}", u64::MAX, src.shown(&s)),
            )
        })?,
    };

    let collective = choice(src, r.collective.as_ref(), "collective", &collectives(), PLANNED_COLLECTIVES)?;

    // topology
    let Some(topo) = r.topology else {
        return Err(src.err(
            &root,
            "missing key 'topology'; a scenario needs at least \
             topology: { link: { alpha: TIME, bandwidth: BANDWIDTH } }",
        ));
    };
    let topology_at = topo.referenced;
    let topology = topo::topology(src, topo)?;

    // ranks: required unless the topology implies them or has hosts to fill; if both are
    // given they must agree, and there must be a host for every rank.
    let implied = topology.implied_ranks();
    let ranks = match r.ranks {
        None => match topology.default_ranks() {
            // A rank on every host of a tree past 2^32 - 1 hosts: more ranks than 32 bits
            // number (the implied counts of levels and dims are refused where written).
            Some(n) if n > u32::MAX as usize => {
                return Err(src.err(
                    &topology_at,
                    format!(
                        "topology: {}, and without 'ranks' a rank runs on every host: more than {} ranks (ranks \
                         are numbered in 32 bits); write ranks from 1 to {}",
                        topology.max_ranks_why().unwrap_or_else(|| format!("it has {n} hosts")),
                        u32::MAX,
                        u32::MAX
                    ),
                ));
            }
            Some(n) => vec![n],
            None => {
                return Err(src.err(
                    &root,
                    format!(
                        "missing key 'ranks'; topology kind {} needs it: a rank count (ranks: 8) or a \
                         list (ranks: [4, 8, 16])",
                        topology_kind(&topology)
                    ),
                ));
            }
        },
        Some(ranks_raw) => {
            let ranks_at = ranks_raw.referenced;
            let mut ranks: Vec<usize> = Vec::new();
            let mut rank_locs: Vec<Location> = Vec::new();
            // Where each count was listed: a look-up, not a scan (a list of 250,000 took 44 s).
            let mut seen: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
            for (v, loc) in list_items(ranks_raw) {
                let n = rank_count(&v, || src.shown_at(&v, &loc)).map_err(|e| src.err(&loc, format!("ranks: {e}")))?;
                if let Some(&i) = seen.get(&n) {
                    return Err(src.err(&loc, format!("ranks: {n} is listed twice{}", first_at(&rank_locs[i]))));
                }
                if let (Some(want), Some(why)) = (implied, topology.implied_ranks_why())
                    && n != want
                {
                    return Err(src.err(
                        &loc,
                        format!(
                            "ranks: {n} does not match the topology: {why}; write ranks: {want} or leave ranks out"
                        ),
                    ));
                }
                if let (Some(max), Some(why)) = (topology.max_ranks(), topology.max_ranks_why())
                    && n > max
                {
                    return Err(src.err(
                        &loc,
                        format!(
                            "ranks: {n} is more ranks than the topology has hosts ({why}); a host runs at most \
                             one rank: write ranks from 1 to {max}, or leave ranks out for one on every host"
                        ),
                    ));
                }
                if let Some(why) = topology.refuses_ranks(n) {
                    return Err(src.err(&loc, format!("ranks: {n} does not fit the topology: {why}")));
                }
                seen.insert(n, ranks.len());
                ranks.push(n);
                rank_locs.push(loc);
            }
            if ranks.is_empty() {
                return Err(src.err(&ranks_at, "ranks: the list is empty; give at least one rank count"));
            }
            ranks
        }
    };
    let host_at = r.host.as_ref().map(|h| h.referenced);
    let host = r.host.map(|h| host(src, h)).transpose()?;
    // compute
    let cost_per_byte = match r.compute.and_then(|c| c.value.cost_per_byte) {
        None => 0.0,
        Some(c) => time(src, &c, "compute.cost_per_byte")?,
    };

    // network
    let network = network(src, r.network.map(|n| n.value), &topology)?;
    let noise_at = r.noise.as_ref().map(|n| n.referenced);
    let noise = r.noise.map(|n| noise::noise(src, n, &network)).transpose()?;
    let repeat_at = r.repeat.as_ref().map(|v| v.referenced);
    let repeat = r.repeat.map(|v| noise::repeat(src, &v)).transpose()?;

    // data
    let data_at = r.data.as_ref().map(|d| d.referenced);
    let (dtype, op, init, mode, budget) = match r.data {
        None => (None, None, None, None, None),
        Some(d) => (d.value.dtype, d.value.op, d.value.init, d.value.mode, d.value.memory_budget),
    };
    // The point a budget cannot hold is refused after parsing: it names the key's place.
    let budget_location = match (&budget, &data_at) {
        (Some(b), _) => src.place(&b.referenced),
        (None, Some(at)) => src.place(at),
        (None, None) => String::new(),
    };
    let dtypes: Vec<(&str, Dtype)> = Dtype::ALL.iter().map(|&d| (d.name(), d)).collect();
    let ops = [
        ("sum", ReduceOp::Sum),
        ("prod", ReduceOp::Prod),
        ("max", ReduceOp::Max),
        ("min", ReduceOp::Min),
        ("avg", ReduceOp::Avg),
    ];
    let inits = [
        ("random", Init::Random),
        ("normal", Init::Normal),
        ("ones", Init::Ones),
        ("rank", Init::Rank),
        ("ill_conditioned", Init::IllConditioned),
        ("gradients", Init::Gradients),
    ];
    let modes =
        [("auto", DataMode::Auto), ("full", DataMode::Full), ("sample", DataMode::Sample), ("off", DataMode::Off)];
    let memory_budget = match budget {
        None => DEFAULT_MEMORY_BUDGET,
        Some(b) => match &b.value {
            Scalar::Bool(_) | Scalar::Null => {
                return Err(src.err(
                    &b.referenced,
                    format!("data.memory_budget: expected a size such as 2GiB, found {}", src.shown(&b)),
                ));
            }
            v => {
                units::parse_size(&v.text()).map_err(|e| src.err(&b.referenced, format!("data.memory_budget: {e}")))?
            }
        },
    };
    let data = DataSpec {
        dtype: choice(src, dtype.as_ref(), "data.dtype", &dtypes, &[])?,
        op: choice(src, op.as_ref(), "data.op", &ops, &[])?,
        init: choice(src, init.as_ref(), "data.init", &inits, &[])?,
        mode: choice(src, mode.as_ref(), "data.mode", &modes, &[])?,
        memory_budget,
        budget_location,
    };

    // algorithms
    let Some(algos_raw) = r.algorithms else {
        return Err(src.err(
            &root,
            "missing key 'algorithms'; give a list of algorithm ids, e.g. \
             algorithms: [ring, butterfly] (see `allreduce-sim list`)",
        ));
    };
    if algos_raw.value.is_empty() {
        return Err(src.err(
            &algos_raw.referenced,
            "algorithms: the list is empty; give at least one algorithm id \
             (see `allreduce-sim list`)",
        ));
    }
    let mut algorithms: Vec<AlgoSpec> = Vec::new();
    let mut algo_locs: Vec<Location> = Vec::new();
    let mut ran: Vec<Option<Runs>> = Vec::new();
    // The entries seen, by what they are written as and by what they run, for the
    // duplicate checks: a search of every earlier entry made 8,000 entries take 11 s.
    let mut written: HashMap<String, usize> = HashMap::new();
    let mut running: HashMap<String, usize> = HashMap::new();
    for entry in algos_raw.value {
        let at = entry.referenced;
        let (spec, label) = algo_entry(src, entry, collective)?;
        let key = format!("{}\0{:?}\0{:?}\0{:?}", spec.name, spec.collective, canonical(&spec.params), spec.protocol);
        if let Some(&i) = written.get(&key) {
            return Err(src.err(
                &at,
                format!(
                    "algorithms: '{}' is listed twice with the same parameters{}",
                    spec.name,
                    first_at(&algo_locs[i])
                ),
            ));
        }
        // The same algorithm written two ways (`segment: 1KiB` and `segment: 1024`, or a
        // default given and left out), or a selector given the same parameters two ways
        // (`version: "2.8.4"` and `"2.8.4-1"`, two releases of one model), ran twice as two
        // rows of one name and one result, both marked best.
        let runs = match label {
            Some(l) => Some(Runs::Algorithm(l)),
            None if crate::selectors::is_selector(&spec.name) => {
                crate::selectors::selector_params(&spec.name, &spec.params).ok().map(Runs::Selector)
            }
            None => None,
        };
        let runs_key = match &runs {
            Some(Runs::Algorithm(l)) => Some(format!("{:?}\0{l}", spec.collective)),
            _ => None,
        };
        let same = match (&runs, &runs_key) {
            (_, Some(k)) => running.get(k).copied(),
            // A selector takes no `protocol:` (refused in `algo_entry`).
            (Some(Runs::Selector(x)), None) => algorithms.iter().zip(&ran).position(|(a, theirs)| {
                a.collective == spec.collective
                    && a.name == spec.name
                    && matches!(theirs, Some(Runs::Selector(y)) if x.same_run(y))
            }),
            _ => None,
        };
        if let (Some(mine), Some(i)) = (&runs, same) {
            let message = match mine {
                Runs::Algorithm(l) => format!(
                    "algorithms: this entry runs {}, as an entry above does{}: the same parameters written \
                     another way or left at their defaults; give it once",
                    crate::units::escape_controls(l),
                    first_at(&algo_locs[i])
                ),
                Runs::Selector(p) => format!(
                    "algorithms: this entry runs {} as an entry above does{}: the same parameters written another \
                     way, left at their defaults, or releases of one model ({}); give it once",
                    spec.name,
                    first_at(&algo_locs[i]),
                    p.model_release()
                ),
            };
            return Err(src.err(&at, message));
        }
        written.insert(key, algorithms.len());
        if let Some(k) = runs_key {
            running.insert(k, algorithms.len());
        }
        algorithms.push(spec);
        algo_locs.push(at);
        ran.push(runs);
    }

    // sizes
    // A barrier moves no data: a scenario of barriers alone needs no sizes.
    let sizes_raw = match r.sizes {
        Some(raw) => Some(raw),
        None if algorithms.iter().all(|a| !a.collective.has_data()) => None,
        None => {
            return Err(src.err(
                &root,
                "missing key 'sizes'; give the bytes per rank, e.g. sizes: 1MiB or \
                 sizes: [4KiB, 1MiB, 64MiB] (only a scenario of barriers alone may leave it out)",
            ));
        }
    };
    let sizes_at = sizes_raw.as_ref().map_or(root, |r| r.referenced);
    let mut sizes: Vec<u64> = Vec::new();
    let mut size_locs: Vec<Location> = Vec::new();
    let items = match sizes_raw {
        Some(raw) => list_items(raw),
        None => vec![(Scalar::UInt(0), root)],
    };
    // Where each size was listed: a look-up, not a scan (a list of 250,000 took 44 s).
    let mut seen: std::collections::HashMap<u64, usize> = std::collections::HashMap::new();
    for (v, loc) in items {
        let b = size_bytes(&v, data.dtype).map_err(|e| src.err(&loc, format!("sizes: {e}")))?;
        if let Some(&i) = seen.get(&b) {
            return Err(
                src.err(&loc, format!("sizes: {} is listed twice{}", units::count_bytes(b), first_at(&size_locs[i])))
            );
        }
        seen.insert(b, sizes.len());
        sizes.push(b);
        size_locs.push(loc);
    }
    if sizes.is_empty() {
        return Err(src.err(&sizes_at, "sizes: the list is empty; give at least one size, e.g. [4KiB, 1MiB]"));
    }

    // check
    // YAML 1.1 also reads `yes`, `off`, `TRUE` as booleans, and the parser hands them on
    // as such: only the words the message allows are taken, read off the source.
    let flag = |v: Option<Spanned<Scalar>>, key: &str, default: bool| match v {
        None => Ok(default),
        Some(c) => match &c.value {
            Scalar::Bool(b) => match src.word_at(&c.defined) {
                Some(w)
                    if w != "true"
                        && w != "false"
                        && ["y", "yes", "n", "no", "on", "off", "true", "false"]
                            .contains(&w.to_ascii_lowercase().as_str()) =>
                {
                    Err(src.err(
                        &c.referenced,
                        format!(
                            "check.{key}: must be true or false, not '{w}' (YAML 1.1's yes, no, on, off and \
                             capitalised forms are not taken)"
                        ),
                    ))
                }
                _ => Ok(*b),
            },
            Scalar::Str(s) if s == "true" || s == "false" => Ok(s == "true"),
            other => Err(src.err(&c.referenced, format!("check.{key}: must be true or false, not {}", other.shown()))),
        },
    };
    let (closed_form, bitwise) = match r.check {
        None => (true, false),
        Some(c) => (flag(c.value.closed_form, "closed_form", true)?, flag(c.value.bitwise, "bitwise", false)?),
    };

    let largest = size_locs.iter().zip(&sizes).max_by_key(|(_, b)| **b).map_or(sizes_at, |(l, _)| *l);
    let s = Scenario {
        name,
        seed,
        ranks,
        topology,
        cost_per_byte,
        network,
        data,
        collective,
        algorithms,
        sizes,
        check: CheckSpec { closed_form, bitwise },
        noise,
        repeat,
        host,
        topology_location: src.place(&topology_at),
    };
    limits::check_bytes(&s).map_err(|e| src.err(&largest, format!("sizes: {e}")))?;
    if let Some(at) = host_at {
        limits::check_host(&s).map_err(|e| src.err(&at, format!("host: {e}")))?;
    }
    limits::check_times(&s).map_err(|e| src.err(&topology_at, format!("topology: {e}")))?;
    // The engine refuses a channel's rate under the other models; say so where the file
    // gives it, before anything runs, not as a failed check at every point.
    if let crate::topology::spec::TopologySpec::Cluster(c) = &s.topology
        && !matches!(s.network.model, crate::sim::network::Model::Ideal | crate::sim::network::Model::Pipelined)
    {
        let rated =
            |r: &crate::topology::PerProto| crate::topology::Proto::ALL.into_iter().any(|p| r.of(p).is_finite());
        for (key, rates) in
            [("channel_bandwidth", &c.channel_bandwidth), ("inter.channel_bandwidth", &c.inter.channel_bandwidth)]
        {
            if rated(rates) {
                return Err(src.err(
                    &topology_at,
                    format!(
                        "topology.{key}: modelled under network model ideal only, not {}; leave \
                         {key} out or use model: ideal",
                        s.network.name()
                    ),
                ));
            }
        }
        // The NIC's share of each protocol is the ideal engine's too: under flow it was
        // accepted and changed no time.
        if c.inter.efficiency.is_some() {
            return Err(src.err(
                &topology_at,
                format!(
                    "topology.inter.efficiency: modelled under network model ideal only, not {}; leave \
                     inter.efficiency out or use model: ideal",
                    s.network.name()
                ),
            ));
        }
    }
    match (noise_at, repeat_at) {
        (Some(at), _) => limits::check_noise(&s).map_err(|e| src.err(&at, format!("noise: {e}")))?,
        (None, Some(at)) => limits::check_noise(&s).map_err(|e| src.err(&at, format!("repeat: {e}")))?,
        (None, None) => {}
    }
    Ok(s)
}

/// `network:`. Under the flow model a hierarchy's outer levels cross its inner levels'
/// links, so its levels must get no faster outward.
fn network(src: &Src, raw: Option<RawNetwork>, topology: &TopologySpec) -> Result<NetworkSpec, ScenarioError> {
    let Some(raw) = raw else { return Ok(NetworkSpec::default()) };
    #[derive(Clone, Copy, PartialEq)]
    enum Name {
        Ideal,
        Flow,
        LogGP,
    }
    let models = [("ideal", Name::Ideal), ("flow", Name::Flow), ("loggp", Name::LogGP)];
    let name = choice(src, raw.model.as_ref(), "network.model", &models, &[])?;
    let sharings = [("weighted", Sharing::Weighted), ("maxmin", Sharing::MaxMin)];
    let sharing = choice(src, raw.sharing.as_ref(), "network.sharing", &sharings, &[])?;
    if let (Some(at), false) = (&raw.sharing, name == Name::Flow) {
        return Err(src.err(
            &at.referenced,
            "network.sharing: applies only under model: flow (the ideal and LogGP models never share a link); \
             write model: flow or leave sharing out",
        ));
    }
    let loggp_keys = [("o", &raw.o), ("g", &raw.g), ("L", &raw.latency), ("G", &raw.per_byte)];
    if name != Name::LogGP {
        let stray = loggp_keys.iter().map(|(k, v)| (*k, v.as_ref().map(|v| v.referenced)));
        let stray = stray.chain([("eager_threshold", raw.eager_threshold.as_ref().map(|v| v.referenced))]);
        if let Some((key, Some(at))) = stray.into_iter().find(|(_, at)| at.is_some()) {
            return Err(src.err(
                &at,
                format!("network.{key}: applies only under model: loggp; write model: loggp or leave {key} out"),
            ));
        }
    }
    let latencies = [("holds_ports", Latency::HoldsPorts), ("pipelined", Latency::Pipelined)];
    let latency = choice(src, raw.holding.as_ref(), "network.latency", &latencies, &[])?;
    if let (Some(at), false) = (&raw.holding, name == Name::Ideal) {
        return Err(src.err(
            &at.referenced,
            "network.latency: applies only under model: ideal (the flow model shares links by rate and LogGP \
             has its own L and g); write model: ideal or leave latency out",
        ));
    }
    let envelope = match &raw.envelope {
        None => 0,
        Some(v) => {
            let bytes = size(src, v, "network.envelope")?;
            if bytes > 1 << 30 {
                return Err(src.err(
                    &v.referenced,
                    format!("network.envelope: {bytes} bytes per message is more than 1 GiB; an MPI envelope is tens of bytes (SMPI adds 16)"),
                ));
            }
            bytes
        }
    };
    if name == Name::Flow
        && let TopologySpec::Hierarchical { levels, .. } = topology
    {
        let built: Vec<crate::topology::Level> =
            levels.iter().map(|l| crate::topology::Level { size: l.size, link: l.link, nics: l.nics }).collect();
        let names: Vec<String> = levels.iter().map(|l| l.name.clone()).collect();
        if let Ok(h) = crate::topology::Hierarchical::new(built, 1)
            && let Err(why) = h.with_names(&names).check_nested()
        {
            let at = raw.model.as_ref().map_or(Location::UNKNOWN, |m| m.referenced);
            return Err(src.err(&at, format!("network.model: flow: {why}")));
        }
    }
    let model = match name {
        Name::Ideal if latency == Latency::Pipelined => NetworkModel::Pipelined,
        Name::Ideal => NetworkModel::Ideal,
        Name::Flow => NetworkModel::Flow(sharing),
        Name::LogGP => NetworkModel::LogGP(loggp(src, &raw)?),
    };
    Ok(NetworkSpec { model, envelope })
}

/// LogGP's keys of `network:` (docs/loggp.md): `L` and `G` are required, `o` and `g`
/// default to 0, `eager_threshold` to LogGOPSim's 65535 bytes.
fn loggp(src: &Src, raw: &RawNetwork) -> Result<LogGP, ScenarioError> {
    let at = raw.model.as_ref().map_or(Location::UNKNOWN, |m| m.referenced);
    let get = |v: &Option<Spanned<Scalar>>, key: &str, what: &str| -> Result<Option<f64>, ScenarioError> {
        let Some(v) = v else { return Ok(None) };
        let t = time(src, v, &format!("network.{key}"))?;
        if !t.is_finite() || t > 1.0 {
            return Err(src.err(
                &v.referenced,
                format!("network.{key}: {t:e} s is not a {what}; allowed: 0 to 1 s (write 2us, 0.1ns, ...)"),
            ));
        }
        Ok(Some(t))
    };
    let need = |key: &str, what: &str| {
        src.err(
            &at,
            format!(
                "network.model: loggp needs {key} ({what}); the LogGP keys are o, g, L, G (times: 1.5us, 0.08ns) \
                 and eager_threshold (a size, default 65535B)"
            ),
        )
    };
    let o = get(&raw.o, "o", "CPU overhead per message")?.unwrap_or(0.0);
    let g = get(&raw.g, "g", "gap per message")?.unwrap_or(0.0);
    let latency = get(&raw.latency, "L", "latency")?.ok_or_else(|| need("L", "the latency, seconds"))?;
    let per_byte =
        get(&raw.per_byte, "G", "gap per byte")?.ok_or_else(|| need("G", "the gap per byte, seconds per byte"))?;
    let eager_threshold = match &raw.eager_threshold {
        None => DEFAULT_EAGER_THRESHOLD,
        Some(v) => size(src, v, "network.eager_threshold")?,
    };
    Ok(LogGP { o, g, latency, per_byte, eager_threshold })
}

/// A size in bytes (`envelope`, `eager_threshold`).
fn size(src: &Src, v: &Spanned<Scalar>, key: &str) -> Result<u64, ScenarioError> {
    let bytes = match &v.value {
        Scalar::Bool(_) | Scalar::Null => Err(format!("expected a size such as 16 or 64B, found {}", src.shown(v))),
        other => units::parse_size(&other.text()),
    };
    bytes.map_err(|e| src.err(&v.referenced, format!("{key}: {e}")))
}

/// The topology's kind as written in the file (`torus2d`).
fn topology_kind(t: &TopologySpec) -> String {
    match serde_json::to_value(t) {
        Ok(serde_json::Value::Object(m)) => m.get("kind").and_then(|k| k.as_str()).unwrap_or("?").to_string(),
        _ => "?".to_string(),
    }
}

// ---------------------------------------------------------------------------------------
// Flags

/// The `run` flags that override the file: `--collective`, `--algorithms`, `--ranks`,
/// `--sizes`, `--seed`.
///
/// Comma-separated values may come already split or not (`["ring,butterfly"]` and
/// `["ring", "butterfly"]` are the same).
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    /// `--collective NAME`: the collective every entry runs instead of the file's.
    pub collective: Option<String>,
    /// `--algorithms a,b`: ids to run instead of the file's list.
    pub algorithms: Option<Vec<String>>,
    /// `--ranks N,...`: rank counts instead of the file's.
    pub ranks: Option<Vec<usize>>,
    /// `--sizes 4KiB,...`: bytes per rank instead of the file's.
    pub sizes: Option<Vec<String>>,
    /// `--seed N`.
    pub seed: Option<u64>,
}

/// Split flag values on commas, trimmed.
fn split_flag(values: &[String]) -> Vec<&str> {
    values.iter().flat_map(|v| v.split(',')).map(str::trim).collect()
}

impl Overrides {
    /// Apply the flags to `s`, checking them as the file is checked.
    ///
    /// `--algorithms`: each id that the file lists is taken with the file's parameters
    /// (every entry of that id, in file order); any other id is built with no parameters.
    ///
    /// `--collective`: every entry runs that collective (entries that become equal are
    /// kept once); an entry whose id the collective does not have is an error unless
    /// `--algorithms` replaces it.
    pub fn apply(&self, s: &mut Scenario) -> Result<(), ScenarioError> {
        if let Some(name) = &self.collective {
            const FLAG: &str = "--collective";
            let c = Collective::from_name(name.trim()).ok_or_else(|| {
                let why =
                    if PLANNED_COLLECTIVES.contains(&name.trim()) { "is not implemented yet" } else { "is not known" };
                ScenarioError::flag(FLAG, format!("'{name}' {why}; allowed: {}", Collective::names()))
            })?;
            s.collective = c;
            let mut kept: Vec<AlgoSpec> = Vec::new();
            for mut a in std::mem::take(&mut s.algorithms) {
                a.collective = c;
                let key = canonical(&a.params);
                if !kept.iter().any(|k| k.name == a.name && canonical(&k.params) == key) {
                    kept.push(a);
                }
            }
            s.algorithms = kept;
        }
        if let Some(values) = &self.algorithms {
            const FLAG: &str = "--algorithms";
            let mut out: Vec<AlgoSpec> = Vec::new();
            let mut seen: Vec<&str> = Vec::new();
            for id in split_flag(values) {
                if id.is_empty() {
                    return Err(ScenarioError::flag(
                        FLAG,
                        "empty algorithm id; give ids separated by commas, e.g. ring,butterfly".to_string(),
                    ));
                }
                if seen.contains(&id) {
                    return Err(ScenarioError::flag(FLAG, format!("'{id}' is given twice")));
                }
                seen.push(id);
                let from_file: Vec<AlgoSpec> = s.algorithms.iter().filter(|a| a.name == id).cloned().collect();
                if from_file.is_empty() {
                    crate::selectors::check(s.collective, id, &[]).map_err(|e| ScenarioError::flag(FLAG, e.message))?;
                    let (name, collective) = (id.to_string(), s.collective);
                    out.push(AlgoSpec {
                        name,
                        collective,
                        params: Vec::new(),
                        location: String::new(),
                        protocol: None,
                    });
                } else {
                    out.extend(from_file);
                }
            }
            if out.is_empty() {
                return Err(ScenarioError::flag(FLAG, "no algorithms given".to_string()));
            }
            s.algorithms = out;
        }
        if self.collective.is_some() {
            for a in &s.algorithms {
                if let Err(e) = crate::selectors::check(a.collective, &a.name, &a.params) {
                    let at = if a.location.is_empty() { String::new() } else { format!(" ({})", a.location) };
                    return Err(ScenarioError::flag(
                        "--collective",
                        format!("the scenario's entry '{}'{at}: {}; pick others with --algorithms", a.name, e.message),
                    ));
                }
            }
        }
        if let Some(values) = &self.ranks {
            const FLAG: &str = "--ranks";
            let mut out: Vec<usize> = Vec::new();
            let mut seen = std::collections::HashSet::new();
            for &n in values {
                if n == 0 {
                    return Err(ScenarioError::flag(FLAG, "a rank count must be at least 1, not 0".to_string()));
                }
                if !seen.insert(n) {
                    return Err(ScenarioError::flag(FLAG, format!("{n} is given twice")));
                }
                if let (Some(want), Some(why)) = (s.topology.implied_ranks(), s.topology.implied_ranks_why())
                    && n != want
                {
                    return Err(ScenarioError::flag(
                        FLAG,
                        format!("{n} does not match the scenario's topology: {why}; give {want} or leave --ranks out"),
                    ));
                }
                if let (Some(max), Some(why)) = (s.topology.max_ranks(), s.topology.max_ranks_why())
                    && n > max
                {
                    return Err(ScenarioError::flag(
                        FLAG,
                        format!(
                            "{n} is more ranks than the scenario's topology has hosts ({why}); a host runs at \
                             most one rank: give 1 to {max}"
                        ),
                    ));
                }
                out.push(n);
            }
            if out.is_empty() {
                return Err(ScenarioError::flag(FLAG, "no rank counts given".to_string()));
            }
            s.ranks = out;
        }
        if let Some(values) = &self.sizes {
            const FLAG: &str = "--sizes";
            let mut out: Vec<u64> = Vec::new();
            let mut seen = std::collections::HashSet::new();
            for text in split_flag(values) {
                let b = units::parse_size(text).map_err(|e| ScenarioError::flag(FLAG, e))?;
                check_whole_elements(b, s.data.dtype).map_err(|e| ScenarioError::flag(FLAG, e))?;
                if !seen.insert(b) {
                    return Err(ScenarioError::flag(FLAG, format!("{} is given twice", units::count_bytes(b))));
                }
                out.push(b);
            }
            if out.is_empty() {
                return Err(ScenarioError::flag(FLAG, "no sizes given".to_string()));
            }
            s.sizes = out;
        }
        if let Some(seed) = self.seed {
            s.seed = seed;
        }
        if self.ranks.is_some() || self.sizes.is_some() {
            let flag = if self.sizes.is_some() { "--sizes" } else { "--ranks" };
            limits::check_bytes(s).map_err(|e| ScenarioError::flag(flag, e))?;
            limits::check_host(s).map_err(|e| ScenarioError::flag(flag, e))?;
            limits::check_times(s).map_err(|e| ScenarioError::flag(flag, e))?;
            limits::check_noise(s).map_err(|e| ScenarioError::flag(flag, e))?;
        }
        Ok(())
    }
}

/// A YAML reader's limit a file passed, in words with the limit (the reader's own text
/// was its Debug form: `limits breached: Nodes { nodes: 250001 }`).
fn budget_breach(breach: &serde_saphyr::budget::BudgetBreach) -> String {
    use serde_saphyr::budget::BudgetBreach as B;
    let limits = serde_saphyr::budget::Budget::default();
    let what = match breach {
        B::Nodes { .. } => format!("more than {} nodes (lists, mappings and values)", limits.max_nodes),
        B::Depth { .. } => format!("lists and mappings nested more than {} deep", limits.max_depth),
        B::Aliases { .. } => format!("more than {} aliases (*name)", limits.max_aliases),
        B::Anchors { .. } => format!("more than {} anchors (&name)", limits.max_anchors),
        B::Documents { .. } => format!("more than {} documents", limits.max_documents),
        B::MergeKeys { .. } => format!("more than {} merge keys (<<)", limits.max_merge_keys),
        B::ScalarBytes { .. } => format!("more than {} bytes of values", limits.max_total_scalar_bytes),
        B::Events { .. } => format!("more than {} YAML events", limits.max_events),
        B::AliasAnchorRatio { .. } => "far more aliases than anchors (an alias expansion bomb)".to_string(),
        other => format!("past a YAML reader limit ({other:?})"),
    };
    format!("the YAML document is too large or too complex: {what}; a scenario must stay within that")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_names() {
        assert_eq!(default_name("scenarios/torus 64.yaml"), "torus 64");
        assert_eq!(default_name("a.yml"), "a");
        assert_eq!(default_name(""), "scenario");
        assert_eq!(default_name("<stdin>"), "scenario");
    }

    #[test]
    fn snippet_has_caret_under_column() {
        let src = Src { file: "f.yaml", text: "a: 1\n  b: xyz\n" };
        assert_eq!(src.snippet(2, 6).as_deref(), Some(" 2 |   b: xyz\n   |      ^"));
        assert_eq!(src.snippet(9, 1), None);
    }

    #[test]
    fn snippet_of_a_long_line_is_cut_around_the_column() {
        let long = format!("a: {}", "x".repeat(200_000));
        let src = Src { file: "f.yaml", text: &long };
        let s = src.snippet(1, 100_000).unwrap();
        let (text, caret) = s.split_once('\n').unwrap();
        assert!(text.chars().count() < SNIPPET_WIDTH + 20, "{text}");
        assert!(text.starts_with(" 1 | ...") && text.ends_with("..."), "{text}");
        // The caret is under column 100,000's character: 40 characters into the window.
        assert_eq!(caret.find('^'), Some(" 1 | ...".len() + SNIPPET_WIDTH / 3));
        let s = src.snippet(1, 2).unwrap();
        assert!(s.starts_with(" 1 | a: xxx") && s.lines().next().unwrap().ends_with("..."), "{s}");
    }
}
