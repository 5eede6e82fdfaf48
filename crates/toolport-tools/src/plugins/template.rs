//! The template language of plugin manifests: how a tool call's arguments become a command's
//! argv (`run.args`), its working directory (`run.cwd`) and its standard input (`run.stdin`).
//!
//! There is never a shell. Each element of `run.args` becomes zero or more argv elements; a
//! value is never split, globbed or parsed again, so `"a b; rm -rf /"` stays one argument.
//!
//! The language: literal text with placeholders.
//! - `{name}`: the value of argument `name` (names are `A-Z`, `a-z`, `0-9`, `_`).
//! - `{name?TEXT}`: a conditional flag, only as a whole element of `run.args`: TEXT (one argv
//!   element, written by the operator, so it may start with `-`) when the argument is `true`,
//!   nothing when it is `false` or absent.
//! - `{{` and `}}`: a literal `{` and `}`.
//!
//! In `run.args`:
//! - an element that is exactly `{name}` becomes one element per value: a string unchanged, a
//!   number or boolean as its JSON text (`5`, `true`), an array one element per item; an absent
//!   argument (missing or `null`) drops the element;
//! - a placeholder inside a longer element (`--max-count={count}`, `{rev}:{path}`) is replaced
//!   in place and the element stays one argument; if any of its placeholders is absent, the
//!   whole element is dropped, so an optional parameter maps to an optional option.
//!
//! `run.cwd` and `run.stdin` are single texts: placeholders are replaced in place, and if any is
//! absent the result is `None` (the caller uses its default).
//!
//! Why the refusals:
//! - Argument injection: a value that makes an argv element begin with `-` could be read as an
//!   option (`--output=/etc/passwd`, `--exec=…`), so it is refused, unless the element comes
//!   after a literal `"--"` element, where programs that follow the convention stop reading
//!   options. Text the operator wrote may start with `-`. Negative numbers are values starting
//!   with `-` too: an operator who wants them writes `--n={n}` or puts them after `--`.
//! - NUL: no argv element, path or text passed through the OS can carry one; refusing it here
//!   gives the model a clear message instead of a spawn failure. It is refused in every value
//!   (also in `run.stdin`, for one rule everywhere), and in the templates themselves at load.
//!
//! Templates are parsed once, when a manifest loads: malformed braces, a conditional flag where
//! it is not allowed, or a placeholder naming no parameter of the tool is a [`TemplateError`]
//! naming the template. Expansion then walks the parsed parts, without scanning text again; its
//! errors ([`ExpandError`]) are written for the model: the argument, what was wrong, what is
//! allowed.
//!
//! The scanner is hand-written rather than a regex: the grammar is three tokens (`{{`, `}}`,
//! `{…}`), and a scanner reports the exact problem (a lone `}`, an unclosed `{`) with its column.

use std::borrow::Cow;

use serde_json::{Map, Value};

/// How many characters of a refused value an error message quotes: enough to recognise it,
/// short enough that a long value does not flood the model's context.
const MAX_QUOTED_CHARS: usize = 60;

/// What a placeholder may look like, for load errors.
const SYNTAX_HELP: &str = "a placeholder is {name}, or {name?TEXT} as a whole element of the \
    argument list; names use letters, digits and '_'; write {{ and }} for literal braces";

/// A template that cannot be used, found when the manifest loads. The message names the
/// template and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid template {label} = {text:?}: {message}")]
pub(crate) struct TemplateError {
    /// Which template, as the caller labelled it (`run.args[2]`, `run.cwd`).
    label: String,
    /// The template as written.
    text: String,
    /// What is wrong and what is allowed.
    message: String,
}

/// Why a call's arguments cannot fill a template. The message is for the model: it names the
/// argument, what was wrong and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ExpandError {
    /// A value would begin an argument with `-`, where the command could read it as an option.
    #[error("{0}")]
    Refused(String),
    /// A value of a type the template cannot use, or one containing a NUL character.
    #[error("{0}")]
    Invalid(String),
}

/// One piece of a scanned template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    /// Literal text (braces already unescaped).
    Text(String),
    /// `{name}`.
    Value(String),
    /// `{name?TEXT}`.
    Flag { name: String, text: String },
}

/// One piece of a template that fills a single text.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    /// Literal text.
    Text(String),
    /// `{name}`: the argument's value.
    Value(String),
}

/// A template for one text (`run.cwd`, `run.stdin`, or one element of `run.args` with a
/// placeholder inside longer text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Template {
    parts: Vec<Part>,
}

/// Where a [`Template`] is used: it decides the dash rule and the wording of errors.
#[derive(Debug, Clone, Copy)]
enum Place {
    /// A whole text (`run.cwd`, `run.stdin`): no dash rule.
    Text,
    /// Inside a longer argv element; `options_ended`: a literal `--` comes before it.
    Argument { options_ended: bool },
}

impl Template {
    /// Parse `text`; `label` names it in errors (`run.cwd`), `params` are the parameter names
    /// the tool's input schema declares. A conditional flag is an error here.
    pub(crate) fn parse(label: &str, text: &str, params: &[&str]) -> Result<Self, TemplateError> {
        let parts = into_parts(scan(label, text, params)?).map_err(|flag| {
            load_error(
                label,
                text,
                format!(
                    "{flag} is a conditional flag, allowed only as a whole element of the \
                     argument list, not here"
                ),
            )
        })?;
        Ok(Self { parts })
    }

    /// The filled text, or `None` when an argument it uses is absent (missing or `null`).
    pub(crate) fn expand(
        &self,
        values: &Map<String, Value>,
    ) -> Result<Option<String>, ExpandError> {
        self.fill(values, Place::Text)
    }

    /// The argument names the template uses, in order (a name used twice appears twice).
    pub(crate) fn placeholders(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|part| match part {
            Part::Value(name) => Some(name.as_str()),
            Part::Text(_) => None,
        })
    }

    fn fill(
        &self,
        values: &Map<String, Value>,
        place: Place,
    ) -> Result<Option<String>, ExpandError> {
        let mut out = String::new();
        let mut absent = false;
        // Decided only once we know the element is not dropped: a dropped element injects
        // nothing.
        let mut refused = None;
        for part in &self.parts {
            let name = match part {
                Part::Text(text) => {
                    out.push_str(text);
                    continue;
                }
                Part::Value(name) => name,
            };
            let Some(value) = present(values, name) else {
                absent = true;
                continue;
            };
            let Some(text) = scalar_text(value) else {
                return Err(ExpandError::Invalid(match place {
                    Place::Text => format!(
                        "argument `{name}` is {}; here it must be a single string, number or \
                         boolean",
                        kind(value)
                    ),
                    Place::Argument { .. } => format!(
                        "argument `{name}` is {}, which cannot be placed inside a longer \
                         argument; give a single string, number or boolean",
                        kind(value)
                    ),
                }));
            };
            check_nul(name, &text)?;
            if let Place::Argument {
                options_ended: false,
            } = place
                && out.is_empty()
            {
                refused = check_dash(name, &text).err();
            }
            out.push_str(&text);
        }
        if absent {
            return Ok(None);
        }
        refused.map_or(Ok(Some(out)), Err)
    }
}

/// How an element of `run.args` uses an argument, for the manifest's load-time checks (a
/// conditional flag needs a boolean, text inside an element a scalar).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Use {
    /// `"{name}"`: one argv element per value (an array expands).
    Whole,
    /// `"{name?TEXT}"`.
    Flag,
    /// A placeholder inside longer text.
    Inside,
}

/// One element of `run.args` as the manifest checks see it.
#[derive(Debug)]
pub(crate) struct ElementView<'a> {
    /// The text, when the element has no placeholder.
    pub(crate) literal: Option<&'a str>,
    /// The arguments it uses, and how.
    pub(crate) uses: Vec<(&'a str, Use)>,
}

/// One element of `run.args`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Element {
    /// Operator text, no placeholder.
    Literal(String),
    /// Exactly `{name}`: zero or more argv elements.
    Whole(String),
    /// Exactly `{name?TEXT}`.
    Flag { name: String, text: String },
    /// Placeholders inside longer text: zero or one argv element.
    Joined(Template),
}

/// The template of a command's arguments (`run.args`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ArgvTemplate {
    elements: Vec<Element>,
    /// The index of the first literal `--` element: values after it may start with `-`.
    options_end: Option<usize>,
}

impl ArgvTemplate {
    /// Parse each element of `args`; element `i` is named `{label}[i]` in errors, `params` are
    /// the parameter names the tool's input schema declares.
    pub(crate) fn parse(
        label: &str,
        args: &[String],
        params: &[&str],
    ) -> Result<Self, TemplateError> {
        let mut elements = Vec::with_capacity(args.len());
        for (i, arg) in args.iter().enumerate() {
            let label = format!("{label}[{i}]");
            let mut pieces = scan(&label, arg, params)?;
            let element = match pieces.as_mut_slice() {
                [] => Element::Literal(String::new()),
                [Piece::Text(text)] => Element::Literal(std::mem::take(text)),
                [Piece::Value(name)] => Element::Whole(std::mem::take(name)),
                [Piece::Flag { name, text }] => Element::Flag {
                    name: std::mem::take(name),
                    text: std::mem::take(text),
                },
                _ => Element::Joined(Template {
                    parts: into_parts(pieces).map_err(|flag| {
                        load_error(
                            &label,
                            arg,
                            format!(
                                "{flag} is a conditional flag: it must be the whole element, \
                                 with no other text"
                            ),
                        )
                    })?,
                }),
            };
            elements.push(element);
        }
        let options_end = elements
            .iter()
            .position(|e| matches!(e, Element::Literal(text) if text == "--"));
        Ok(Self {
            elements,
            options_end,
        })
    }

    /// Each element, in order, as the manifest checks see it.
    pub(crate) fn elements(&self) -> impl Iterator<Item = ElementView<'_>> {
        self.elements.iter().map(|element| match element {
            Element::Literal(text) => ElementView {
                literal: Some(text),
                uses: Vec::new(),
            },
            Element::Whole(name) => ElementView {
                literal: None,
                uses: vec![(name, Use::Whole)],
            },
            Element::Flag { name, .. } => ElementView {
                literal: None,
                uses: vec![(name, Use::Flag)],
            },
            Element::Joined(template) => ElementView {
                literal: None,
                uses: template.placeholders().map(|n| (n, Use::Inside)).collect(),
            },
        })
    }

    /// The argv for a call: each element gives zero or more arguments.
    pub(crate) fn expand(&self, values: &Map<String, Value>) -> Result<Vec<String>, ExpandError> {
        let mut argv = Vec::with_capacity(self.elements.len());
        for (i, element) in self.elements.iter().enumerate() {
            let options_ended = self.options_end.is_some_and(|end| i > end);
            match element {
                Element::Literal(text) => argv.push(text.clone()),
                Element::Whole(name) => expand_whole(name, values, options_ended, &mut argv)?,
                Element::Flag { name, text } => {
                    if expand_flag(name, text, values)? {
                        argv.push(text.clone());
                    }
                }
                Element::Joined(template) => {
                    if let Some(arg) = template.fill(values, Place::Argument { options_ended })? {
                        argv.push(arg);
                    }
                }
            }
        }
        Ok(argv)
    }

    /// The argument names the elements use, in order (a name used twice appears twice).
    #[cfg(test)]
    pub(crate) fn placeholders(&self) -> impl Iterator<Item = &str> {
        self.elements.iter().flat_map(|element| {
            let (single, joined) = match element {
                Element::Literal(_) => (None, None),
                Element::Whole(name) | Element::Flag { name, .. } => (Some(name.as_str()), None),
                Element::Joined(template) => (None, Some(template.placeholders())),
            };
            single.into_iter().chain(joined.into_iter().flatten())
        })
    }
}

/// `{name}` as a whole element: one argv element per value (array item), none when absent.
fn expand_whole(
    name: &str,
    values: &Map<String, Value>,
    options_ended: bool,
    argv: &mut Vec<String>,
) -> Result<(), ExpandError> {
    let Some(value) = present(values, name) else {
        return Ok(());
    };
    let Value::Array(items) = value else {
        let text = scalar_text(value).ok_or_else(|| {
            ExpandError::Invalid(format!(
                "argument `{name}` is {}; it must be a string, number, boolean or an array of \
                 those",
                kind(value)
            ))
        })?;
        return push_value(argv, name, text, options_ended);
    };
    for (i, item) in items.iter().enumerate() {
        let subject = format!("{name}[{i}]");
        let text = scalar_text(item).ok_or_else(|| {
            ExpandError::Invalid(format!(
                "argument `{subject}` is {}; the items of `{name}` must be strings, numbers or \
                 booleans",
                kind(item)
            ))
        })?;
        push_value(argv, &subject, text, options_ended)?;
    }
    Ok(())
}

/// Push one whole-element value after the NUL and dash checks.
fn push_value(
    argv: &mut Vec<String>,
    subject: &str,
    text: Cow<'_, str>,
    options_ended: bool,
) -> Result<(), ExpandError> {
    check_nul(subject, &text)?;
    if !options_ended {
        check_dash(subject, &text)?;
    }
    argv.push(text.into_owned());
    Ok(())
}

/// `{name?TEXT}`: whether to emit TEXT (the argument is `true`).
fn expand_flag(name: &str, text: &str, values: &Map<String, Value>) -> Result<bool, ExpandError> {
    match present(values, name) {
        None => Ok(false),
        Some(Value::Bool(on)) => Ok(*on),
        Some(other) => Err(ExpandError::Invalid(format!(
            "argument `{name}` switches the option `{text}` and must be true or false, not {}",
            kind(other)
        ))),
    }
}

/// The argument's value, or `None` when it is absent (missing or `null`).
fn present<'a>(values: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    values.get(name).filter(|value| !value.is_null())
}

/// The text of a string (unchanged), number or boolean (JSON text); `None` for anything else.
fn scalar_text(value: &Value) -> Option<Cow<'_, str>> {
    match value {
        Value::String(s) => Some(Cow::Borrowed(s)),
        Value::Number(n) => Some(Cow::Owned(n.to_string())),
        Value::Bool(b) => Some(Cow::Borrowed(if *b { "true" } else { "false" })),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

/// "an array", "an object" …, for messages.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Refuse a value containing NUL: no argument, path or input passed through the OS can carry
/// one.
fn check_nul(subject: &str, text: &str) -> Result<(), ExpandError> {
    if text.contains('\0') {
        return Err(ExpandError::Invalid(format!(
            "argument `{subject}` contains a NUL character (\\u0000), which cannot be passed to \
             a command; remove it"
        )));
    }
    Ok(())
}

/// Refuse a value that would begin an argv element with `-` (the command could read it as an
/// option).
fn check_dash(subject: &str, text: &str) -> Result<(), ExpandError> {
    if text.starts_with('-') {
        return Err(ExpandError::Refused(format!(
            "argument `{subject}` is refused: its value {} starts with '-', so the command could \
             read it as an option; values here must not start with '-' (for a file whose name \
             starts with '-', write ./ before it)",
            quote(text),
        )));
    }
    Ok(())
}

/// `text` quoted for a message (control characters escaped), cut to [`MAX_QUOTED_CHARS`].
fn quote(text: &str) -> String {
    let mut out = String::from('"');
    out.extend(
        text.chars()
            .take(MAX_QUOTED_CHARS)
            .flat_map(char::escape_debug),
    );
    out.push('"');
    if text.chars().nth(MAX_QUOTED_CHARS).is_some() {
        out.push('…');
    }
    out
}

/// Split `text` into literal text, placeholders and conditional flags, checking every
/// placeholder names one of `params`.
fn scan(label: &str, text: &str, params: &[&str]) -> Result<Vec<Piece>, TemplateError> {
    let error = |message: String| load_error(label, text, message);
    if text.contains('\0') {
        return Err(error(
            "a template may not contain a NUL character".to_owned(),
        ));
    }
    let mut pieces = Vec::new();
    let mut literal = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(['{', '}']) {
        let column = text[..text.len() - rest.len() + at].chars().count() + 1;
        let (before, from_brace) = rest.split_at(at);
        literal.push_str(before);
        let open = from_brace.starts_with('{');
        let after = &from_brace[1..];
        if after.starts_with(if open { '{' } else { '}' }) {
            literal.push(if open { '{' } else { '}' });
            rest = &after[1..];
            continue;
        }
        if !open {
            return Err(error(format!(
                "'}}' at column {column} closes nothing; {SYNTAX_HELP}"
            )));
        }
        let Some(end) = after.find('}') else {
            return Err(error(format!(
                "'{{' at column {column} is not closed; {SYNTAX_HELP}"
            )));
        };
        let piece = placeholder(&after[..end], params).map_err(error)?;
        if !literal.is_empty() {
            pieces.push(Piece::Text(std::mem::take(&mut literal)));
        }
        pieces.push(piece);
        rest = &after[end + 1..];
    }
    literal.push_str(rest);
    if !literal.is_empty() {
        pieces.push(Piece::Text(literal));
    }
    Ok(pieces)
}

/// The piece for the text between `{` and `}`.
fn placeholder(inner: &str, params: &[&str]) -> Result<Piece, String> {
    let (name, flag) = match inner.split_once('?') {
        Some((name, flag)) => (name, Some(flag)),
        None => (inner, None),
    };
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err(format!("{{{inner}}} is not a placeholder; {SYNTAX_HELP}"));
    }
    if !params.contains(&name) {
        return Err(format!(
            "placeholder {{{inner}}} names no parameter of the tool; the parameters are: {}",
            known(params)
        ));
    }
    match flag {
        None => Ok(Piece::Value(name.to_owned())),
        Some("") => Err(format!(
            "conditional flag {{{inner}}} has no TEXT; write e.g. {{{name}?--{name}}}"
        )),
        Some(text) if text.contains('{') => Err(format!(
            "the TEXT of conditional flag {{{inner}}} may not contain '{{' or '}}'"
        )),
        Some(text) => Ok(Piece::Flag {
            name: name.to_owned(),
            text: text.to_owned(),
        }),
    }
}

/// The pieces of a single-text template; a conditional flag is an error carrying the flag as
/// written.
fn into_parts(pieces: Vec<Piece>) -> Result<Vec<Part>, String> {
    pieces
        .into_iter()
        .map(|piece| match piece {
            Piece::Text(text) => Ok(Part::Text(text)),
            Piece::Value(name) => Ok(Part::Value(name)),
            Piece::Flag { name, text } => Err(format!("{{{name}?{text}}}")),
        })
        .collect()
}

/// The parameter names for a message: `a, b`, or a note that there are none.
pub(crate) fn known(params: &[&str]) -> String {
    if params.is_empty() {
        "none (the tool declares no parameters)".to_owned()
    } else {
        params.join(", ")
    }
}

fn load_error(label: &str, text: &str, message: String) -> TemplateError {
    TemplateError {
        label: label.to_owned(),
        text: text.to_owned(),
        message,
    }
}

/// The fuzz target `plugin_manifest`'s door to [`ArgvTemplate`] (fuzz/; only with `--cfg
/// fuzzing`): parse `args` as `run.args` for a tool with parameters `params` and fill it with
/// `values`. `Err`: a template that does not parse; `Ok(Err)`: the [`ExpandError`] as its
/// `Debug` text (`Refused(…)`, `Invalid(…)`).
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub fn fuzz_argv(
    args: &[String],
    params: &[&str],
    values: &Map<String, Value>,
) -> Result<Result<Vec<String>, String>, String> {
    let template = ArgvTemplate::parse("run.args", args, params).map_err(|e| e.to_string())?;
    Ok(template.expand(values).map_err(|e| format!("{e:?}")))
}

/// The fuzz target `plugin_manifest`'s door to [`Template`] (fuzz/; only with `--cfg
/// fuzzing`): parse `text` as `run.stdin` and fill it; `Ok(None)` when a value is absent.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub fn fuzz_text(
    text: &str,
    params: &[&str],
    values: &Map<String, Value>,
) -> Result<Option<String>, String> {
    Template::parse("run.stdin", text, params)
        .map_err(|e| e.to_string())?
        .expand(values)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    /// The parameters every test tool declares.
    const PARAMS: &[&str] = &["path", "rev", "count", "files", "cached", "dir", "body"];

    fn values(json: Value) -> Map<String, Value> {
        match json {
            Value::Object(map) => map,
            other => panic!("test values must be an object, got {other}"),
        }
    }

    fn argv_template(args: &[&str]) -> ArgvTemplate {
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        ArgvTemplate::parse("run.args", &args, PARAMS).unwrap()
    }

    fn expand(args: &[&str], json: Value) -> Result<Vec<String>, ExpandError> {
        argv_template(args).expand(&values(json))
    }

    fn argv(args: &[&str], json: Value) -> Vec<String> {
        expand(args, json).unwrap()
    }

    fn load_error(args: &[&str]) -> String {
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        ArgvTemplate::parse("run.args", &args, PARAMS)
            .unwrap_err()
            .to_string()
    }

    fn refused(args: &[&str], json: Value) -> String {
        match expand(args, json) {
            Err(ExpandError::Refused(message)) => message,
            other => panic!("expected Refused, got {other:?}"),
        }
    }

    fn invalid(args: &[&str], json: Value) -> String {
        match expand(args, json) {
            Err(ExpandError::Invalid(message)) => message,
            other => panic!("expected Invalid, got {other:?}"),
        }
    }

    fn text(template: &str, json: Value) -> Result<Option<String>, ExpandError> {
        Template::parse("run.cwd", template, PARAMS)
            .unwrap()
            .expand(&values(json))
    }

    #[test]
    fn a_whole_element_string_is_one_argument_unchanged() {
        // No shell: spaces, quotes, `;`, `$()` and globs stay inside the one argument.
        let value = "a b; rm -rf / $(id) *.rs 'q'";
        assert_eq!(
            argv(&["show", "{path}", "end"], json!({"path": value})),
            ["show", value, "end"]
        );
    }

    #[test]
    fn a_whole_element_number_or_boolean_is_its_json_text() {
        assert_eq!(argv(&["{count}"], json!({"count": 5})), ["5"]);
        assert_eq!(argv(&["{count}"], json!({"count": 1.5})), ["1.5"]);
        assert_eq!(argv(&["{cached}"], json!({"cached": true})), ["true"]);
        assert_eq!(argv(&["{cached}"], json!({"cached": false})), ["false"]);
    }

    #[test]
    fn a_whole_element_array_gives_one_argument_per_item() {
        assert_eq!(
            argv(
                &["add", "{files}", "done"],
                json!({"files": ["a b.rs", 2, true]})
            ),
            ["add", "a b.rs", "2", "true", "done"]
        );
        assert_eq!(argv(&["add", "{files}"], json!({"files": []})), ["add"]);
    }

    #[test]
    fn an_array_item_that_is_not_a_scalar_is_invalid() {
        for item in [json!(["x"]), json!({"a": 1}), Value::Null] {
            let message = invalid(&["{files}"], json!({"files": ["ok", item]}));
            assert!(message.contains("`files[1]`"), "{message}");
            assert!(
                message.contains("strings, numbers or booleans"),
                "{message}"
            );
        }
    }

    #[test]
    fn a_whole_element_object_is_invalid() {
        let message = invalid(&["{path}"], json!({"path": {"a": 1}}));
        assert!(message.contains("`path` is an object"), "{message}");
        assert!(message.contains("an array of those"), "{message}");
    }

    #[test]
    fn an_absent_whole_element_is_dropped() {
        let args = ["log", "{rev}", "--", "{path}"];
        assert_eq!(argv(&args, json!({})), ["log", "--"]);
        assert_eq!(
            argv(&args, json!({"rev": null, "path": "a"})),
            ["log", "--", "a"]
        );
    }

    #[test]
    fn a_placeholder_inside_longer_text_keeps_one_argument() {
        assert_eq!(
            argv(
                &["--max-count={count}", "{rev}:{path}", "x={cached}"],
                json!({"count": 5, "rev": "HEAD", "path": "a b.rs", "cached": true})
            ),
            ["--max-count=5", "HEAD:a b.rs", "x=true"]
        );
    }

    #[test]
    fn an_absent_placeholder_inside_longer_text_drops_the_element() {
        let args = ["log", "--max-count={count}", "{rev}:{path}", "end"];
        assert_eq!(
            argv(&args, json!({"rev": "HEAD"})),
            ["log", "end"],
            "count missing, path missing"
        );
        assert_eq!(
            argv(&args, json!({"count": null, "rev": null, "path": "a"})),
            ["log", "end"],
            "null is absent"
        );
        // Dropping does not hide a value that cannot be used.
        let message = invalid(&args, json!({"rev": ["a"]}));
        assert!(message.contains("`rev`"), "{message}");
    }

    #[test]
    fn an_array_or_object_inside_longer_text_is_invalid() {
        for value in [json!(["a", "b"]), json!({"a": 1})] {
            let message = invalid(&["--max-count={count}"], json!({"count": value}));
            assert!(message.contains("`count`"), "{message}");
            assert!(
                message.contains("cannot be placed inside a longer argument"),
                "{message}"
            );
        }
    }

    #[test]
    fn doubled_braces_are_literal_braces() {
        assert_eq!(
            argv(
                &["{{}}", "{{path}}", "{{{path}}}", "--format={{{count}}}"],
                json!({"path": "x", "count": 5})
            ),
            ["{}", "{path}", "{x}", "--format={5}"]
        );
        // A literal `{{path}}` is no placeholder: it is kept even when `path` is absent.
        assert_eq!(argv(&["{{path}}"], json!({})), ["{path}"]);
        assert_eq!(
            text("{{{dir}}}", json!({"dir": "d"})).unwrap().as_deref(),
            Some("{d}")
        );
    }

    #[test]
    fn a_conditional_flag_follows_its_boolean() {
        let args = ["diff", "{cached?--cached}", "{path}"];
        assert_eq!(
            argv(&args, json!({"cached": true, "path": "a"})),
            ["diff", "--cached", "a"]
        );
        assert_eq!(
            argv(&args, json!({"cached": false, "path": "a"})),
            ["diff", "a"]
        );
        assert_eq!(argv(&args, json!({"path": "a"})), ["diff", "a"]);
        assert_eq!(
            argv(&args, json!({"cached": null, "path": "a"})),
            ["diff", "a"]
        );
        // TEXT is one argument, whatever it contains.
        assert_eq!(argv(&["{cached?-n 5}"], json!({"cached": true})), ["-n 5"]);
    }

    #[test]
    fn a_conditional_flag_with_a_non_boolean_is_invalid() {
        for value in [json!("true"), json!(1), json!(["x"]), json!({})] {
            let message = invalid(&["{cached?--cached}"], json!({"cached": value}));
            assert!(message.contains("`cached`"), "{message}");
            assert!(message.contains("true or false"), "{message}");
        }
    }

    #[test]
    fn a_conditional_flag_must_be_a_whole_element_of_args() {
        for arg in ["--x={cached?y}", "{cached?--cached}{path}", "a {cached?-c}"] {
            let message = load_error(&["ok", arg]);
            assert!(message.contains("run.args[1]"), "{message}");
            assert!(message.contains("must be the whole element"), "{message}");
        }
        for template in ["{cached?--cached}", "/tmp/{cached?x}"] {
            let message = Template::parse("run.cwd", template, PARAMS)
                .unwrap_err()
                .to_string();
            assert!(message.contains("run.cwd"), "{message}");
            assert!(
                message.contains("allowed only as a whole element"),
                "{message}"
            );
        }
    }

    #[test]
    fn a_conditional_flag_needs_text_without_braces() {
        assert!(load_error(&["{cached?}"]).contains("has no TEXT"));
        assert!(load_error(&["{cached?a{b}"]).contains("may not contain"));
        // `}` ends the placeholder, so a `}` meant for TEXT is left over.
        assert!(load_error(&["{cached?a}b}"]).contains("closes nothing"));
    }

    #[test]
    fn a_whole_value_starting_with_a_dash_is_refused() {
        for value in [
            json!("-rf"),
            json!("--output=/etc/passwd"),
            json!("-"),
            json!(-5),
        ] {
            let message = refused(&["rm", "{path}"], json!({"path": value}));
            assert!(message.contains("`path`"), "{message}");
            assert!(message.contains("must not start with '-'"), "{message}");
        }
    }

    #[test]
    fn an_array_item_starting_with_a_dash_is_refused() {
        let message = refused(&["add", "{files}"], json!({"files": ["a", "--force"]}));
        assert!(message.contains("`files[1]`"), "{message}");
        assert!(message.contains("\"--force\""), "{message}");
    }

    #[test]
    fn a_value_that_begins_a_longer_element_with_a_dash_is_refused() {
        let message = refused(&["{rev}:{path}"], json!({"rev": "--exec=x", "path": "a"}));
        assert!(message.contains("`rev`"), "{message}");
        // An empty first value does not let the next one begin the element.
        let message = refused(&["{rev}{path}"], json!({"rev": "", "path": "-x"}));
        assert!(message.contains("`path`"), "{message}");
        // A dash after the start of the element is harmless.
        assert_eq!(
            argv(&["{rev}:{path}"], json!({"rev": "a", "path": "-x"})),
            ["a:-x"]
        );
    }

    #[test]
    fn values_after_a_literal_double_dash_may_start_with_a_dash() {
        assert_eq!(
            argv(
                &["grep", "-e", "--", "{path}", "{files}", "{rev}:x"],
                json!({"path": "-v", "files": ["-a", "--b"], "rev": "-r"})
            ),
            ["grep", "-e", "--", "-v", "-a", "--b", "-r:x"]
        );
        // Before the `--` the rule still holds.
        let message = refused(
            &["{rev}", "--", "{path}"],
            json!({"rev": "-x", "path": "-y"}),
        );
        assert!(message.contains("`rev`"), "{message}");
    }

    #[test]
    fn only_a_literal_double_dash_ends_options() {
        // A conditional `--` is not always there, and `--{{}}` is another text.
        for args in [
            ["{cached?--}", "{path}"],
            ["--{{}}", "{path}"],
            ["-- ", "{path}"],
        ] {
            let message = refused(&args, json!({"cached": true, "path": "-x"}));
            assert!(message.contains("`path`"), "{message}");
        }
        // A value `--` is refused like any other dash, so it cannot open the gate.
        refused(&["{rev}", "{path}"], json!({"rev": "--", "path": "-x"}));
    }

    #[test]
    fn dashes_written_by_the_operator_are_fine() {
        assert_eq!(
            argv(
                &["-n", "--max-count={count}", "-{count}", "{rev}-x"],
                json!({"count": 5, "rev": ""})
            ),
            ["-n", "--max-count=5", "-5", "-x"]
        );
    }

    #[test]
    fn a_nul_character_in_a_value_is_invalid() {
        let nul = "a\0b";
        for (args, json) in [
            (&["{path}"][..], json!({"path": nul})),
            (&["{files}"][..], json!({"files": ["ok", nul]})),
            (&["--x={path}"][..], json!({"path": nul})),
            // After `--` too: the dash exemption is not a NUL exemption.
            (&["--", "{path}"][..], json!({"path": nul})),
        ] {
            let message = invalid(args, json);
            assert!(message.contains("NUL"), "{message}");
        }
        let Err(ExpandError::Invalid(message)) = text("{dir}", json!({"dir": nul})) else {
            panic!("a NUL in run.cwd must be invalid");
        };
        assert!(message.contains("`dir`"), "{message}");
        assert!(load_error(&["a\0b"]).contains("NUL"));
    }

    #[test]
    fn a_single_text_template_substitutes_in_place() {
        assert_eq!(
            text(
                "/srv/{dir}/{count}-{cached}",
                json!({"dir": "a b", "count": 3, "cached": false})
            )
            .unwrap()
            .as_deref(),
            Some("/srv/a b/3-false")
        );
        assert_eq!(text("fixed", json!({})).unwrap().as_deref(), Some("fixed"));
        // The dash rule is for argv only.
        assert_eq!(
            text("{dir}", json!({"dir": "-d"})).unwrap().as_deref(),
            Some("-d")
        );
    }

    #[test]
    fn a_single_text_template_with_an_absent_argument_is_none() {
        assert_eq!(text("/srv/{dir}", json!({})).unwrap(), None);
        assert_eq!(
            text("{body}{dir}", json!({"body": "x", "dir": null})).unwrap(),
            None
        );
    }

    #[test]
    fn a_single_text_template_refuses_arrays_and_objects() {
        for value in [json!(["a"]), json!({"a": 1})] {
            let Err(ExpandError::Invalid(message)) = text("{dir}", json!({"dir": value})) else {
                panic!("an array or object in run.cwd must be invalid");
            };
            assert!(message.contains("`dir`"), "{message}");
            assert!(
                message.contains("single string, number or boolean"),
                "{message}"
            );
        }
    }

    #[test]
    fn an_unknown_placeholder_is_a_load_error_naming_the_parameters() {
        let message = load_error(&["log", "--", "{paht}"]);
        assert!(message.contains("run.args[2]"), "{message}");
        assert!(message.contains("{paht}"), "{message}");
        assert!(
            message.contains("path, rev, count, files, cached, dir, body"),
            "{message}"
        );
        let message = Template::parse("run.stdin", "{body}", &[])
            .unwrap_err()
            .to_string();
        assert!(message.contains("run.stdin"), "{message}");
        assert!(message.contains("declares no parameters"), "{message}");
        // In a conditional flag too.
        assert!(load_error(&["{cachd?--cached}"]).contains("{cachd?--cached}"));
    }

    #[test]
    fn malformed_braces_are_load_errors() {
        for (arg, expected) in [
            ("a}b", "'}' at column 2 closes nothing"),
            ("{path}}", "'}' at column 7 closes nothing"),
            ("x{path", "'{' at column 2 is not closed"),
            ("é{", "'{' at column 2 is not closed"),
            ("{}", "{} is not a placeholder"),
            ("{?--x}", "{?--x} is not a placeholder"),
            ("{pa-th}", "{pa-th} is not a placeholder"),
            ("{ path }", "{ path } is not a placeholder"),
            ("{pa{th}}", "{pa{th} is not a placeholder"),
        ] {
            let message = load_error(&["ok", arg]);
            assert!(message.contains("run.args[1]"), "{arg}: {message}");
            assert!(message.contains(expected), "{arg}: {message}");
            assert!(
                message.contains("names use letters, digits and '_'"),
                "{arg}: {message}"
            );
        }
    }

    #[test]
    fn placeholders_lists_every_name_in_order() {
        let template = argv_template(&["x", "{path}", "{cached?-c}", "{rev}:{path}"]);
        assert_eq!(
            template.placeholders().collect::<Vec<_>>(),
            ["path", "cached", "rev", "path"]
        );
        let template = Template::parse("run.cwd", "{dir}/{{x}}/{count}", PARAMS).unwrap();
        assert_eq!(
            template.placeholders().collect::<Vec<_>>(),
            ["dir", "count"]
        );
    }

    #[test]
    fn an_empty_element_stays_an_empty_argument() {
        assert_eq!(argv(&["a", "", "b"], json!({})), ["a", "", "b"]);
    }

    #[test]
    fn a_long_refused_value_is_quoted_short() {
        let long = format!("-{}", "x".repeat(500));
        let message = refused(&["{path}"], json!({"path": long}));
        assert!(message.len() < 400, "{message}");
        assert!(message.contains('…'), "{message}");
    }
}
