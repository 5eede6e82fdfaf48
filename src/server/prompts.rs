//! Prompts and instructions, all from the registry: the `instructions` sent at `initialize`
//! (what is served and where paths may go), the prompt `tool_instructions` (every tool's
//! usage, for a system prompt) and one prompt per tool.

use rmcp::ErrorData as McpError;
use rmcp::model::{GetPromptResult, ListPromptsResult, Prompt, PromptMessage, Role};

use super::ToolportServer;

/// The name of the prompt that holds every tool's instructions.
const ALL_INSTRUCTIONS_PROMPT: &str = "tool_instructions";

impl ToolportServer {
    /// The `instructions` sent at initialize: what is served and where paths may go.
    pub(super) fn summary(&self) -> String {
        let registry = self.shared.registry.load();
        let tools: Vec<String> = registry
            .all()
            .iter()
            .map(|t| match t.title() {
                Some(title) => format!("{} ({title})", t.name()),
                None => t.name().to_owned(),
            })
            .collect();
        let ws = &self.shared.workspace;
        format!(
            "toolport serves {} tools: {}. File paths must lie inside the workspace roots ({}); relative paths resolve against the first root. Secret files (.env, private keys, .ssh …) are never read. Every tool states its limits in its description; the prompt `{ALL_INSTRUCTIONS_PROMPT}` has detailed usage for all of them.",
            tools.len(),
            tools.join(", "),
            ws.describe_roots()
        )
    }

    fn prompt_text(&self, name: &str) -> Option<String> {
        let registry = self.shared.registry.load();
        if name == ALL_INSTRUCTIONS_PROMPT {
            return Some(registry.instructions());
        }
        registry.get(name).map(|t| t.instructions())
    }

    /// `prompts/list`: the prompt with every tool's instructions, then one per tool.
    pub(super) fn prompts(&self) -> ListPromptsResult {
        let mut prompts = vec![Prompt::new(
            ALL_INSTRUCTIONS_PROMPT,
            Some("Instructions for using every tool this server offers (for a system prompt)"),
            None,
        )];
        for tool in self.shared.registry.load().all() {
            if tool.name() != ALL_INSTRUCTIONS_PROMPT {
                prompts.push(Prompt::new(
                    tool.name(),
                    Some(format!("Instructions for using the {} tool", tool.name())),
                    None,
                ));
            }
        }
        ListPromptsResult::with_all_items(prompts)
    }

    /// `prompts/get`: the instructions `name` names; an unknown prompt is -32602 naming those
    /// there are.
    pub(super) fn prompt(&self, name: &str) -> Result<GetPromptResult, McpError> {
        let text = self.prompt_text(name).ok_or_else(|| {
            McpError::invalid_params(
                format!(
                    "unknown prompt {:?}; available prompts: {ALL_INSTRUCTIONS_PROMPT}, {}",
                    name,
                    self.shared.registry.load().names().join(", ")
                ),
                None,
            )
        })?;
        Ok(
            GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
                .with_description(format!("Instructions: {name}")),
        )
    }
}
