//! The command policy's argv analysis (crates/toolport-tools/src/tools/exec/policy.rs,
//! `Policy::decide`, through its door `fuzz_decide`).
//!
//! Input: one byte of flags (bit 0: `allow_shells`; bit 1: judge with a working directory and
//! root, for the rules about paths outside the roots), then lines: `@wrap 3 0 7` (wrappers to
//! put around the command, indices into `WRAPPERS`), `@rule TEXT` (an operator rule, used as
//! allow, deny and confirm rule at once), else the program (first such line) and its
//! arguments (one per line).
//! Property: no panic, and the decision never weakens:
//! - commands of the built-in confirmation set stay "confirm" whatever arguments follow
//!   (`rm -rf …`, `dd …`, `shred …`, `truncate …`, `mkfs.* …`, `git reset --hard …`,
//!   `find … -delete`, `sh -c …`);
//! - a command the policy does not simply allow is not allowed once wrapped in any number of
//!   wrappers (`env`, `nice`, `timeout 5`, `xargs` …): every layer is judged;
//! - an operator `deny` rule for the program denies it however deeply it is wrapped.
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use toolport_tools::host::fuzz_decide;

#[derive(Debug, Default)]
struct Case {
    program: String,
    args: Vec<String>,
    allow_shells: bool,
    with_place: bool,
    wrappers: Vec<u8>,
    rules: Vec<String>,
}

/// Wrappers and the arguments they take before the program.
const WRAPPERS: &[&[&str]] = &[
    &["env"],
    &["env", "-i", "A=1"],
    &["nice"],
    &["nice", "-n", "5"],
    &["nohup"],
    &["time"],
    &["timeout", "5"],
    &["timeout", "-s", "KILL", "5"],
    &["stdbuf", "-o", "L"],
    &["ionice", "-c", "3"],
    &["setsid"],
    &["chrt", "1"],
    &["taskset", "1"],
    &["command"],
    &["exec"],
    &["builtin"],
    &["xargs"],
    &["xargs", "-n", "1"],
    &["unbuffer"],
    &["env", "--"],
];

fn place() -> (&'static Path, &'static [PathBuf]) {
    static ROOT: OnceLock<(PathBuf, Vec<PathBuf>)> = OnceLock::new();
    let (cwd, roots) = ROOT.get_or_init(|| {
        let dir = std::env::temp_dir().join("toolport-fuzz-policy");
        std::fs::create_dir_all(dir.join("src")).expect("a scratch root");
        let real = std::fs::canonicalize(&dir).expect("its real path");
        (real.clone(), vec![real])
    });
    (cwd, roots)
}

/// The kind of a decision (`fuzz_decide` gives the decision's `Debug` text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Allow,
    Deny,
    Confirm,
}

type Place = Option<(&'static Path, &'static [PathBuf])>;

/// The decision of a policy with rule lists `[allow, deny, confirm_rules]`, as its kind and its
/// text; `None`: a rule does not parse.
fn judge(
    rules: [&[String]; 3],
    allow_shells: bool,
    program: &str,
    args: &[String],
    place: Place,
) -> Option<(Kind, String)> {
    let text = fuzz_decide(rules, allow_shells, program, args, place).ok()?;
    let kind = if text == "Allow" {
        Kind::Allow
    } else if text.starts_with("Deny") {
        Kind::Deny
    } else if text.starts_with("Confirm") {
        Kind::Confirm
    } else {
        panic!("a decision of no known kind: {text}")
    };
    Some((kind, text))
}

fn strings(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| (*w).to_owned()).collect()
}

fn wrap(wrappers: &[u8], program: &str, args: &[String]) -> (String, Vec<String>) {
    let mut program = program.to_owned();
    let mut args = args.to_vec();
    for &w in wrappers.iter().rev() {
        let wrapper = WRAPPERS[usize::from(w) % WRAPPERS.len()];
        let mut inner = strings(&wrapper[1..]);
        inner.push(program);
        inner.append(&mut args);
        args = inner;
        program = wrapper[0].to_owned();
    }
    (program, args)
}

fn case(data: &[u8]) -> Option<Case> {
    let (&flags, rest) = data.split_first()?;
    let text = std::str::from_utf8(rest).ok()?;
    let mut case = Case {
        allow_shells: flags & 1 != 0,
        with_place: flags & 2 != 0,
        ..Case::default()
    };
    let mut program = None;
    for line in text.split('\n') {
        if let Some(list) = line.strip_prefix("@wrap ") {
            case.wrappers
                .extend(list.split(' ').filter_map(|n| n.parse::<u8>().ok()));
        } else if let Some(rule) = line.strip_prefix("@rule ") {
            case.rules.push(rule.to_owned());
        } else if program.is_none() {
            program = Some(line.to_owned());
        } else {
            case.args.push(line.to_owned());
        }
    }
    case.program = program?;
    Some(case)
}

fuzz_target!(|data: &[u8]| {
    let Some(case) = case(data) else {
        return;
    };
    let place = case.with_place.then(place);
    let decide = |program: &str, args: &[String]| {
        judge([&[], &[], &[]], case.allow_shells, program, args, place)
            .expect("the default policy builds")
    };

    // No panic on anything, with operator rules too.
    let rules: Vec<String> = case.rules.iter().take(4).cloned().collect();
    let custom = [rules.as_slice(); 3];
    let _ = judge(custom, case.allow_shells, &case.program, &case.args, place);
    let verdict = decide(&case.program, &case.args);

    // The built-in confirmation set, whatever follows.
    let tail = &case.args;
    let dangerous: [(&str, Vec<String>); 8] = [
        ("rm", [strings(&["-rf"]), tail.clone()].concat()),
        ("dd", tail.clone()),
        ("shred", tail.clone()),
        ("truncate", tail.clone()),
        ("mkfs.ext4", tail.clone()),
        (
            "git",
            [strings(&["reset", "--hard"]), tail.clone()].concat(),
        ),
        ("find", [tail.clone(), strings(&["-delete"])].concat()),
        ("/bin/rm", [strings(&["-r", "--"]), tail.clone()].concat()),
    ];
    for (program, args) in &dangerous {
        let v = decide(program, args);
        assert!(
            v.0 == Kind::Confirm,
            "`{program} {args:?}` is {v:?}, not confirm"
        );
    }
    if !case.allow_shells {
        let args = [strings(&["-c"]), tail.clone()].concat();
        let v = decide("sh", &args);
        assert!(v.0 == Kind::Confirm, "`sh -c {tail:?}` is {v:?}");
    }

    // Wrapping never weakens a decision. The program must read as one to every wrapper: not
    // an option, not an `env` assignment.
    let plain = !case.program.starts_with('-') && !case.program.contains('=');
    let wrappers: Vec<u8> = case.wrappers.iter().take(24).copied().collect();
    if plain && !wrappers.is_empty() && verdict.0 != Kind::Allow {
        let (program, args) = wrap(&wrappers, &case.program, &case.args);
        let wrapped = decide(&program, &args);
        assert!(
            wrapped.0 != Kind::Allow,
            "`{program} {args:?}` is allowed, but the command it wraps is {verdict:?}"
        );
    }
    // A deny rule for the program's name denies it however it is wrapped.
    let name = case.program.rsplit('/').next().unwrap_or_default();
    if plain
        && !name.is_empty()
        && !name.contains(|c: char| c.is_whitespace() || "*?[]{}\\!".contains(c))
    {
        let deny = [name.to_owned()];
        let (program, args) = wrap(&wrappers, &case.program, &case.args);
        let v = judge([&[], &deny, &[]], case.allow_shells, &program, &args, place)
            .expect("a plain name is a valid rule");
        assert!(
            v.0 == Kind::Deny,
            "`{program} {args:?}` is {v:?} with exec.deny = [{name:?}]"
        );
    }
});
