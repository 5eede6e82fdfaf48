//! What the library's docs promise, from outside: build a registry from settings, print the
//! OpenAI-form definitions, call `read_file` and a tool of one's own, see a path outside the
//! roots refused. Exits nonzero on any surprise.
//!
//! It prints to stdout on purpose: this is a user's own program, not an MCP server (no
//! JSON-RPC channel to keep clean), and tests/as_a_user.rs reads what it prints.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use toolport_tools::{
    ExecuteError, JsonObject, Settings, ToolContext, ToolError, ToolFormat, ToolSpec, Toolbox,
    TypedTool, typed,
};

/// A tool of our own: the text in capitals.
struct Shout;

#[derive(Deserialize, JsonSchema)]
struct ShoutParams {
    /// What to shout.
    text: String,
}

#[derive(Serialize, JsonSchema)]
struct Shouted {
    /// The text in capitals.
    text: String,
}

#[async_trait::async_trait]
impl TypedTool for Shout {
    type Params = ShoutParams;
    type Output = Shouted;
    fn spec(&self) -> ToolSpec {
        ToolSpec::new("shout", "Return the text in capitals.")
    }
    async fn run(&self, params: ShoutParams, _ctx: &ToolContext) -> Result<Shouted, ToolError> {
        Ok(Shouted {
            text: params.text.to_uppercase(),
        })
    }
    fn render(&self, output: &Shouted) -> String {
        output.text.clone()
    }
}

fn args(value: serde_json::Value) -> JsonObject {
    value.as_object().cloned().unwrap_or_default()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = std::env::temp_dir().join(format!("toolport-scratch-{}", std::process::id()));
    std::fs::create_dir_all(&root)?;
    std::fs::write(root.join("hello.txt"), "hello from a file\n")?;

    let mut toolbox = Toolbox::new(&Settings::new([&root]))?;
    assert!(toolbox.add(typed(Shout))?, "shout was not added");

    let definitions = toolbox.registry().definitions(ToolFormat::Openai);
    let names: Vec<&str> = definitions
        .iter()
        .filter_map(|d| d["function"]["name"].as_str())
        .collect();
    println!(
        "{} OpenAI-form definitions: {}",
        names.len(),
        names.join(", ")
    );
    assert!(
        names.contains(&"read_file") && names.contains(&"shout"),
        "{names:?}"
    );

    let ctx = toolbox.context();
    let read = toolbox
        .registry()
        .execute("read_file", args(json!({"path": "hello.txt"})), &ctx)
        .await?;
    println!("read_file: {:?}", read.text);
    assert!(read.text.contains("hello from a file"), "{}", read.text);

    let shout = toolbox
        .registry()
        .execute("shout", args(json!({"text": "quiet"})), &ctx)
        .await?;
    println!("shout: {:?}", shout.text);
    assert_eq!(shout.text, "QUIET");

    let outside = toolbox
        .registry()
        .execute("read_file", args(json!({"path": "/etc/hostname"})), &ctx)
        .await;
    match outside {
        Err(ExecuteError::Tool(error)) => println!("outside the roots: {error}"),
        other => panic!("a path outside the roots was not refused: {other:?}"),
    }
    std::fs::remove_dir_all(&root)?;
    println!("ok");
    Ok(())
}
