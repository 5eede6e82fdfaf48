//! Argument validation against every built-in tool's input schema (src/registry.rs
//! `ToolRegistry::validate`, the error prose of src/instructions.rs).
//!
//! Input: one byte choosing the tool, then JSON text (objects are the arguments; anything
//! else is ignored). The registry is the built-in tools of a default configuration,
//! registered as `toolport::build` registers them.
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
use toolport::fuzzing::ToolSchemas;

thread_local! {
    static SCHEMAS: (ToolSchemas, Vec<String>) = {
        let schemas = ToolSchemas::new(&std::env::temp_dir());
        let names = schemas.names();
        assert!(names.len() >= 15, "the built-in tools: {names:?}");
        (schemas, names)
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
    SCHEMAS.with(|(schemas, names)| {
        let name = &names[usize::from(pick) % names.len()];
        match schemas.validate(name, &args) {
            Ok(()) => {
                let parsed = schemas
                    .parse_params(name, &args)
                    .expect("every built-in tool has a params check");
                if let Err(error) = parsed
                    && !out_of_range(&error, &Value::Object(args.clone()))
                {
                    panic!(
                        "{name}: the schema accepts arguments its params type refuses ({error}): {}",
                        Value::Object(args.clone())
                    );
                }
            }
            Err(message) => {
                assert!(
                    message.contains(&format!("the arguments for {name} do not match its schema:")),
                    "{message}"
                );
                assert!(message.contains("\n- "), "no violation listed: {message}");
            }
        }
    });
});
