//! A tool of your own beside the built-ins: `count_words`, a [`TypedTool`] whose params and
//! output are plain serde + schemars types (the types are the schemas). The example registers
//! it with [`Toolbox::add`], prints its OpenAI-form definition (what a model is shown), then
//! calls it and the built-in `read_file` through the registry, as an agent loop would.
//!
//! ```text
//! cargo run -p toolport-tools --example custom_tool -- README.md
//! ```
//!
//! The file (default `Cargo.toml`) is read inside the root: the current directory, or
//! `TOOLPORT_ROOT`.

// Showing the results is this program's output.
#![allow(clippy::print_stdout)]

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use toolport_tools::{
    Annotations, JsonObject, Settings, ToolContext, ToolError, ToolFormat, ToolSpec, Toolbox,
    TypedTool, typed,
};

/// The most text `count_words` takes: a model should not paste a whole book into a call.
const MAX_TEXT_BYTES: usize = 1 << 20;

/// Counts words, lines and characters.
struct CountWords;

/// The arguments of `count_words`. Its doc comments become the schema's descriptions.
#[derive(Deserialize, JsonSchema)]
struct CountParams {
    /// The text to count in.
    text: String,
}

/// What `count_words` returns (its output schema).
#[derive(Serialize, JsonSchema)]
struct Counts {
    /// Whitespace-separated words.
    words: usize,
    /// Lines (a last line without a newline counts).
    lines: usize,
    /// Unicode characters.
    characters: usize,
}

#[async_trait::async_trait]
impl TypedTool for CountWords {
    type Params = CountParams;
    type Output = Counts;

    fn spec(&self) -> ToolSpec {
        let mut spec = ToolSpec::new(
            "count_words",
            format!(
                "Count the words (separated by whitespace), lines and characters of a text of at most {MAX_TEXT_BYTES} bytes."
            ),
        );
        spec.category = "text";
        spec.example = json!({"text": "one two\nthree"});
        spec.annotations = Annotations {
            read_only: true,
            destructive: false,
            idempotent: true,
            open_world: false,
        };
        spec
    }

    async fn run(&self, p: CountParams, _ctx: &ToolContext) -> Result<Counts, ToolError> {
        if p.text.len() > MAX_TEXT_BYTES {
            return Err(ToolError::InvalidArguments(format!(
                "the text is {} bytes; at most {MAX_TEXT_BYTES} are counted",
                p.text.len()
            )));
        }
        Ok(Counts {
            words: p.text.split_whitespace().count(),
            lines: p.text.lines().count(),
            characters: p.text.chars().count(),
        })
    }

    fn render(&self, c: &Counts) -> String {
        format!(
            "{} words, {} lines, {} characters",
            c.words, c.lines, c.characters
        )
    }
}

/// Arguments as the registry takes them (a model's JSON object).
fn object(value: serde_json::Value) -> JsonObject {
    match value {
        serde_json::Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = match std::env::var_os("TOOLPORT_ROOT") {
        Some(root) => root.into(),
        None => std::env::current_dir()?,
    };
    let file = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "Cargo.toml".into());

    let mut toolbox = Toolbox::new(&Settings::new([root]).read_only())?;
    if !toolbox.add(typed(CountWords))? {
        return Err("a tool named count_words is registered already".into());
    }

    // What a model is shown.
    let definition = toolbox
        .registry()
        .definition_in("count_words", ToolFormat::Openai)
        .ok_or("count_words is not registered")?;
    println!("{}", serde_json::to_string_pretty(&definition)?);

    // Calls, as a model would make them: by name, with JSON arguments.
    let registry = toolbox.registry();
    let counted = registry
        .execute(
            "count_words",
            object(json!({"text": "the quick brown fox\njumps"})),
            &toolbox.context(),
        )
        .await?;
    println!("count_words: {}", counted.text);

    let read = registry
        .execute(
            "read_file",
            object(json!({"path": file})),
            &toolbox.context(),
        )
        .await?;
    println!("read_file {file}:\n{}", read.text);

    // Bad arguments are refused before the tool runs, with a message a model can act on.
    let refused = registry
        .execute(
            "count_words",
            object(json!({"txt": "typo"})),
            &toolbox.context(),
        )
        .await;
    if let Err(error) = refused {
        println!("count_words with a typo: {error}");
    }
    Ok(())
}
