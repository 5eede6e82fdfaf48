//! Argument validation against every built-in tool's input schema (crates/toolport-tools:
//! `ToolRegistry::validate` in registry.rs, the error prose of instructions.rs, the params
//! parse of typed.rs through its door `AiTool::parse_arguments`).
//!
//! Input: one byte choosing the tool, then JSON text (objects are the arguments; anything
//! else is ignored). The registry is the library's `Toolbox` of default settings: every
//! built-in tool, registered as the server registers them.
//! Property: no panic; validation accepts or returns a message that names the tool, says the
//! arguments do not match and lists the allowed parameters; and arguments the schema accepts
//! parse into the tool's params type (the schema and the Rust type agree), so a validated call
//! never fails on its arguments. Known and left alone: an integer outside the Rust type's range
//! (`1e20` or `2^64` for a `u64`, `-1` where the schema has no `minimum`) passes the schema's
//! `integer` and is refused when parsed, with a message naming the argument, the value and the
//! range.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use toolport_tools::{Settings, Toolbox};

thread_local! {
    static TOOLS: (Toolbox, Vec<String>) = {
        let toolbox = Toolbox::new(&Settings::new([std::env::temp_dir()]))
            .expect("the built-in tools build");
        let names: Vec<String> = toolbox.registry().names().into_iter().map(str::to_owned).collect();
        assert!(names.len() >= 15, "the built-in tools: {names:?}");
        (toolbox, names)
    };
}

/// A parse error about a number outside the params type's range (see above).
fn out_of_range(error: &str, args: &Value) -> bool {
    fn big_float(v: &Value) -> bool {
        match v {
            Value::Number(n) => n.is_f64() && n.as_f64().is_some_and(|f| f.abs() >= 9.2e18),
            Value::Array(items) => items.iter().any(big_float),
            Value::Object(map) => map.values().any(big_float),
            _ => false,
        }
    }
    error.contains("invalid value: integer `")
        || (error.contains("floating point `") && big_float(args))
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, json)) = data.split_first() else {
        return;
    };
    let Ok(Value::Object(args)) = serde_json::from_slice::<Value>(json) else {
        return;
    };
    TOOLS.with(|(toolbox, names)| {
        let registry = toolbox.registry();
        let name = &names[usize::from(pick) % names.len()];
        match registry.validate(name, &args) {
            Ok(()) => {
                let tool = registry.get(name).expect("a listed tool");
                let parsed = tool
                    .parse_arguments(&args)
                    .expect("every built-in tool has a params type")
                    .map_err(|e| e.to_string());
                if let Err(error) = parsed
                    && !out_of_range(&error, &Value::Object(args.clone()))
                {
                    panic!(
                        "{name}: the schema accepts arguments its params type refuses ({error}): {}",
                        Value::Object(args.clone())
                    );
                }
            }
            Err(error) => {
                let message = error.to_string();
                assert!(
                    message.contains(&format!("the arguments for {name} do not match its schema:")),
                    "{message}"
                );
                assert!(message.contains("\n- "), "no violation listed: {message}");
            }
        }
    });
});
