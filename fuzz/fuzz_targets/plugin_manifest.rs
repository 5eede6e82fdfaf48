//! Plugin manifests and argv templates (crates/toolport-tools/src/plugins/manifest.rs and
//! template.rs, through their doors `fuzz_load`, `fuzz_argv` and `fuzz_text`).
//!
//! Input, by its first byte:
//! - even: the rest is a manifest's TOML text. Property: loading it never panics, and each
//!   tool that loads expands its `run.args` for sample values (hostile ones included) without
//!   panicking and with no NUL in any element.
//! - odd: the rest builds (with `arbitrary`) a `run.args` template from literal text,
//!   `{name}`, `{name?TEXT}` and placeholders inside longer text, and the call's values. The
//!   template must parse, and its argv must be exactly what a reference model of the rules
//!   says: a value only ever becomes one whole argv element (or its text inside one element
//!   of the operator's), never split or re-parsed; an array gives one element per item; an
//!   absent value drops its element; NUL and non-scalar values are refused (`Invalid`); a value
//!   that would begin an element with `-` before a literal `--` is refused (`Refused`). The
//!   same model checks `run.cwd`/`run.stdin` text templates.
#![no_main]

use libfuzzer_sys::arbitrary::{self, Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Number, Value, json};
use toolport_tools::host::{fuzz_argv, fuzz_load, fuzz_text};

const PARAMS: [&str; 4] = ["a", "b", "c", "d"];

#[derive(Debug, Arbitrary)]
enum Piece {
    Lit(String),
    Val(u8),
}

#[derive(Debug, Arbitrary)]
enum Elem {
    Lit(String),
    Whole(u8),
    Flag(u8, String),
    Joined(Vec<Piece>),
}

#[derive(Debug, Arbitrary)]
enum Scalar {
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
}

#[derive(Debug, Arbitrary)]
enum Arg {
    Absent,
    Null,
    Scalar(Scalar),
    Array(Vec<Option<Scalar>>),
    Object,
}

#[derive(Debug, Arbitrary)]
struct Case {
    elements: Vec<Elem>,
    text: Vec<Piece>,
    values: [Arg; 4],
}

/// Why an argv template gave no argv: the model's answer, and the template's (`fuzz_argv`
/// gives its `ExpandError` as `Debug` text, read by [`refusal`]).
#[derive(Debug, Clone, PartialEq, Eq)]
enum ArgvError {
    /// A value of the wrong kind or with a NUL.
    Invalid(String),
    /// A value that would start an element with `-` before a literal `--`.
    Refused(String),
}

/// The template's refusal, from its `Debug` text (`Refused("…")`, `Invalid("…")`).
fn refusal(debug: String) -> ArgvError {
    if debug.starts_with("Refused(") {
        ArgvError::Refused(debug)
    } else if debug.starts_with("Invalid(") {
        ArgvError::Invalid(debug)
    } else {
        panic!("a refusal of no known kind: {debug}")
    }
}

fn param(i: u8) -> &'static str {
    PARAMS[usize::from(i) % PARAMS.len()]
}

fn scalar(s: &Scalar) -> Value {
    match s {
        Scalar::Bool(b) => Value::Bool(*b),
        Scalar::Int(i) => json!(i),
        Scalar::Float(f) => Number::from_f64(*f).map_or(Value::Null, Value::Number),
        Scalar::Str(s) => Value::String(s.clone()),
    }
}

fn escape(text: &str) -> String {
    text.replace('\0', "").replace('{', "{{").replace('}', "}}")
}

/// A literal or a placeholder, after adjacent literals are merged and empty ones dropped (as
/// the template parser reads the text).
#[derive(Debug, Clone, PartialEq)]
enum Part {
    Lit(String),
    Val(&'static str),
}

fn normalize(pieces: &[Piece]) -> (String, Vec<Part>) {
    let mut text = String::new();
    let mut parts: Vec<Part> = Vec::new();
    for piece in pieces {
        match piece {
            Piece::Lit(lit) => {
                let lit = lit.replace('\0', "");
                text.push_str(&escape(&lit));
                if lit.is_empty() {
                    continue;
                }
                if let Some(Part::Lit(last)) = parts.last_mut() {
                    last.push_str(&lit);
                } else {
                    parts.push(Part::Lit(lit));
                }
            }
            Piece::Val(i) => {
                text.push('{');
                text.push_str(param(*i));
                text.push('}');
                parts.push(Part::Val(param(*i)));
            }
        }
    }
    (text, parts)
}

/// What an element means once parsed.
#[derive(Debug)]
enum Meaning {
    Lit(String),
    Whole(&'static str),
    Flag(&'static str, String),
    Joined(Vec<Part>),
}

fn present<'a>(values: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    values.get(name).filter(|v| !v.is_null())
}

fn text_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// The reference model of a text filled in place (`None`: a value is absent).
fn fill(
    parts: &[Part],
    values: &Map<String, Value>,
    dash_rule: bool,
) -> Result<Option<String>, ArgvError> {
    let mut out = String::new();
    let mut absent = false;
    // Whether the element's first character comes from a value.
    let mut starts_with_value = None;
    for part in parts {
        match part {
            Part::Lit(lit) => {
                starts_with_value.get_or_insert(false);
                out.push_str(lit);
            }
            Part::Val(name) => match present(values, name) {
                None => absent = true,
                Some(v) => {
                    let text = text_of(v).ok_or_else(|| ArgvError::Invalid(String::new()))?;
                    if text.contains('\0') {
                        return Err(ArgvError::Invalid(String::new()));
                    }
                    if !text.is_empty() {
                        starts_with_value.get_or_insert(true);
                    }
                    out.push_str(&text);
                }
            },
        }
    }
    if absent {
        return Ok(None);
    }
    if dash_rule && starts_with_value == Some(true) && out.starts_with('-') {
        return Err(ArgvError::Refused(String::new()));
    }
    Ok(Some(out))
}

fn push_whole(argv: &mut Vec<String>, v: &Value, options_ended: bool) -> Result<(), ArgvError> {
    let text = text_of(v).ok_or_else(|| ArgvError::Invalid(String::new()))?;
    if text.contains('\0') {
        return Err(ArgvError::Invalid(String::new()));
    }
    if !options_ended && text.starts_with('-') {
        return Err(ArgvError::Refused(String::new()));
    }
    argv.push(text);
    Ok(())
}

fn model(elements: &[Meaning], values: &Map<String, Value>) -> Result<Vec<String>, ArgvError> {
    let end = elements
        .iter()
        .position(|e| matches!(e, Meaning::Lit(t) if t == "--"));
    let mut argv = Vec::new();
    for (i, element) in elements.iter().enumerate() {
        let options_ended = end.is_some_and(|end| i > end);
        match element {
            Meaning::Lit(text) => argv.push(text.clone()),
            Meaning::Whole(name) => match present(values, name) {
                None => {}
                Some(Value::Array(items)) => {
                    for item in items {
                        push_whole(&mut argv, item, options_ended)?;
                    }
                }
                Some(v) => push_whole(&mut argv, v, options_ended)?,
            },
            Meaning::Flag(name, text) => match present(values, name) {
                None | Some(Value::Bool(false)) => {}
                Some(Value::Bool(true)) => argv.push(text.clone()),
                Some(_) => return Err(ArgvError::Invalid(String::new())),
            },
            Meaning::Joined(parts) => {
                if let Some(arg) = fill(parts, values, !options_ended)? {
                    argv.push(arg);
                }
            }
        }
    }
    Ok(argv)
}

fn same(a: &Result<Vec<String>, ArgvError>, b: &Result<Vec<String>, ArgvError>) -> bool {
    match (a, b) {
        (Ok(a), Ok(b)) => a == b,
        (Err(ArgvError::Invalid(_)), Err(ArgvError::Invalid(_))) => true,
        (Err(ArgvError::Refused(_)), Err(ArgvError::Refused(_))) => true,
        _ => false,
    }
}

fn templates(case: &Case) {
    let mut texts = Vec::new();
    let mut meanings = Vec::new();
    for element in case.elements.iter().take(12) {
        match element {
            Elem::Lit(text) => {
                let text = text.replace('\0', "");
                texts.push(escape(&text));
                meanings.push(Meaning::Lit(text));
            }
            Elem::Whole(i) => {
                texts.push(format!("{{{}}}", param(*i)));
                meanings.push(Meaning::Whole(param(*i)));
            }
            Elem::Flag(i, text) => {
                let text: String = text
                    .chars()
                    .filter(|c| !matches!(c, '{' | '}' | '\0'))
                    .collect();
                if text.is_empty() {
                    continue;
                }
                texts.push(format!("{{{}?{text}}}", param(*i)));
                meanings.push(Meaning::Flag(param(*i), text));
            }
            Elem::Joined(pieces) => {
                let (text, parts) = normalize(pieces);
                texts.push(text);
                meanings.push(match parts.as_slice() {
                    [] => Meaning::Lit(String::new()),
                    [Part::Lit(lit)] => Meaning::Lit(lit.clone()),
                    [Part::Val(name)] => Meaning::Whole(name),
                    _ => Meaning::Joined(parts),
                });
            }
        }
    }
    let mut values = Map::new();
    for (name, arg) in PARAMS.iter().zip(&case.values) {
        let value = match arg {
            Arg::Absent => continue,
            Arg::Null => Value::Null,
            Arg::Scalar(s) => scalar(s),
            Arg::Array(items) => Value::Array(
                items
                    .iter()
                    .take(8)
                    .map(|i| i.as_ref().map_or(json!([1]), scalar))
                    .collect(),
            ),
            Arg::Object => json!({"k": "v"}),
        };
        values.insert((*name).to_owned(), value);
    }

    let got = match fuzz_argv(&texts, &PARAMS, &values) {
        Ok(got) => got.map_err(refusal),
        Err(error) => panic!("a well-formed template is refused: {error}\n{texts:?}"),
    };
    let want = model(&meanings, &values);
    assert!(
        same(&got, &want),
        "template {texts:?} with {values:?}:\n got  {got:?}\n want {want:?}"
    );

    let (text, parts) = normalize(&case.text);
    let got = fuzz_text(&text, &PARAMS, &values);
    let want = fill(&parts, &values, false);
    match (&got, &want) {
        (Ok(a), Ok(b)) if a == b => {}
        (Err(_), Err(ArgvError::Invalid(_))) => {}
        _ => panic!("text template {text:?} with {values:?}:\n got  {got:?}\n want {want:?}"),
    }
}

fn manifest(text: &str) {
    let samples = [
        json!({}),
        json!({"path": "a b; rm -rf / #", "pattern": "$(id)", "count": 3, "verbose": true,
               "message": "`id` && echo pwned", "files": ["x y", "--z", "-"], "rev": "HEAD~1"}),
        json!({"path": "-rf", "pattern": "--output=/etc/passwd", "files": [], "count": -1}),
    ];
    let calls: Vec<Map<String, Value>> = samples
        .into_iter()
        .filter_map(|sample| match sample {
            Value::Object(values) => Some(values),
            _ => None,
        })
        .collect();
    let Ok(tools) = fuzz_load(text, &calls) else {
        return;
    };
    for (name, command, argvs) in &tools {
        assert!(!name.is_empty());
        assert!(!command.contains('\0'));
        for argv in argvs.iter().flatten() {
            assert!(argv.iter().all(|a| !a.contains('\0')), "{argv:?}");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode % 2 == 0 {
        if let Ok(text) = std::str::from_utf8(rest) {
            manifest(text);
        }
    } else if let Ok(case) = Case::arbitrary_take_rest(Unstructured::new(rest)) {
        templates(&case);
    }
});
