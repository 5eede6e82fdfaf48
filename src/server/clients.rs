//! Which part of a tool result each MCP client hands its model, and so where `payload =
//! "auto"` puts a result's payload (a file's text, grep's matches, a listing, a command's
//! output) for a session; and, for a client with a known result cap, the cap that
//! `result_cap = "auto"` fits default pages under.
//!
//! A result carries a text block and, for a tool with an output schema, `structuredContent`.
//! Clients disagree on which of the two reaches the model, and most pick one: Claude Code,
//! Codex and VS Code pass `structuredContent` alone; Claude Desktop, Zed, Continue and
//! LangChain's adapters pass the text alone; Pydantic AI takes `structuredContent` whenever
//! every block is text. Sending the payload in both is right for all of them and costs twice
//! the bytes (a 1 MiB read is 2.1 MB on the wire instead of 1.06), so a client whose
//! behaviour has been seen gets it once, where its model reads it, and **every other client
//! gets both** — the spec's own shape, and the only safe one for a client nobody has
//! catalogued. The Python SDK's clients (LangChain, the OpenAI Agents SDK, Pydantic AI,
//! FastMCP) all send the SDK's default name `mcp` while disagreeing on which part they read,
//! so `mcp` is deliberately absent: it gets both.
//!
//! This table is the one place that knows clients by name. Each entry says where its
//! behaviour was seen; an entry whose evidence is weak does not belong here (the client
//! gets both, which is never wrong).
//!
//! The second table, [`KNOWN_LISTS`], says how a client copes with a long tool list, and so
//! what `surface = "auto"` lists it: the whole list for a client that searches tools itself,
//! the search surface for one past its known cap or the point where it degrades, and for every
//! other client the whole list up to `[tools] search_above` tools and the search surface past
//! it.
//!
//! Clients name themselves loosely (`Visual Studio Code - Insiders`, `Zed`, `Cline`,
//! `codex-mcp-client`, a version tacked on), so names are compared in a normal form —
//! lowercase, every run of other characters one `-` — and an entry matches a name that equals
//! it or continues it after a `-` (`visual-studio-code` matches `visual-studio-code-insiders`,
//! `claude-code` does not match `claude-ai`).

use toolport_tools::host::{
    CLAUDE_CODE_RESULT_CAP, Payload, PayloadSetting, ResultCapSetting, Surface, SurfaceSetting,
    SurfaceSettings,
};

/// What a known client's model reads of a result that has both a text block and
/// `structuredContent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reads {
    /// `structuredContent` alone (the text block is dropped when it is there).
    Structured,
    /// The text block alone (`structuredContent` never reaches the model).
    Text,
}

/// A client by the normal form of its `clientInfo.name` (see the module doc), and what its
/// model reads.
struct Known {
    name: &'static str,
    reads: Reads,
    /// The most characters of one result it keeps in the conversation, when that is known
    /// for a tool that declares its largest result (as toolport's paged tools do).
    cap: Option<u64>,
}

/// The clients whose behaviour has been seen, in their own code or tracker.
const KNOWN: &[Known] = &[
    // Claude Code sends `claude-code` (with its CLI version as the version) and hands the
    // model `JSON.stringify(structuredContent)` whenever it is present, dropping the text:
    // anthropics/claude-code #79944 (checked with marker strings on 2.1.280), #55677, #9962
    // (since 2.0.21). Its cap on a result of a tool that declares
    // `anthropic/maxResultSizeChars` is the most toolport's listing declares (the library's
    // CLAUDE_CODE_RESULT_CAP says where it was read).
    Known {
        name: "claude-code",
        reads: Reads::Structured,
        cap: Some(CLAUDE_CODE_RESULT_CAP),
    },
    // Codex (`codex-mcp-client`, title "Codex"; older builds `codex`): openai/codex
    // codex-rs/protocol/src/models.rs, `From<&CallToolResult> for FunctionCallOutputPayload`
    // serialises `structured_content` when it is present and ignores `content`.
    Known {
        name: "codex",
        reads: Reads::Structured,
        cap: None,
    },
    // VS Code / GitHub Copilot Chat send the product's long name (`Visual Studio Code`,
    // `Visual Studio Code - Insiders`, `Code - OSS`): microsoft/vscode
    // src/vs/workbench/contrib/mcp/common/mcpServerRequestHandler.ts. Its
    // mcpLanguageModelToolContribution.ts passes a text block to the model only when there is
    // no structuredContent ("take that in place of any textual description when present").
    Known {
        name: "visual-studio-code",
        reads: Reads::Structured,
        cap: None,
    },
    Known {
        name: "code-oss",
        reads: Reads::Structured,
        cap: None,
    },
    // Claude Desktop and claude.ai send `claude-ai`; their model reads the content and
    // ignores structuredContent: blockscout/mcp-server #324, anthropics/claude-code #55677
    // (the same result "works on Claude.ai web").
    Known {
        name: "claude-ai",
        reads: Reads::Text,
        cap: None,
    },
    // opencode (`opencode`): packages/opencode/src/mcp/catalog.ts returns the content and
    // uses structuredContent only when there is no content (PR #34505, which reverted #32074's
    // preference for structuredContent; issue #38923).
    Known {
        name: "opencode",
        reads: Reads::Text,
        cap: None,
    },
    // Zed (`Zed`): crates/context_server/src/context_server.rs names it;
    // crates/agent/src/tools/context_server_registry.rs (`ContextServerTool::run`) passes the
    // text (and images) and never reads structured_content.
    Known {
        name: "zed",
        reads: Reads::Text,
        cap: None,
    },
    // Continue (`continue-client`; its CLI `continue-cli-client`): core/context/mcp/
    // MCPConnection.ts names it; core/tools/callTool.ts turns text items into context items
    // and never reads structuredContent (the CLI sends `JSON.stringify(result.content)`).
    Known {
        name: "continue",
        reads: Reads::Text,
        cap: None,
    },
    // Cline (`Cline`; its SDK's embedders `@cline/core`): v3's UseMcpToolHandler.ts joins the
    // text items; v4 (apps/vscode/src/services/mcp/McpHub.ts, sdk/packages/core/.../tools.ts)
    // hands the model the whole result as JSON, so the text block carries the payload there
    // too.
    Known {
        name: "cline",
        reads: Reads::Text,
        cap: None,
    },
    // Goose (`goose-cli` from its default constructors, crates/goose/src/agents/
    // mcp_client.rs): the model gets the content; structuredContent was not passed on
    // (aaif-goose/goose #10125).
    Known {
        name: "goose",
        reads: Reads::Text,
        cap: None,
    },
];

/// How a known client copes with a long tool list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lists {
    /// It defers tools behind a search of its own: it gets the whole list, with the hints
    /// that steer that search (`anthropic/alwaysLoad`, `anthropic/searchHint`).
    SearchesItself,
    /// It caps the tools of a session, or its model's choice degrades, past this many.
    UpTo(usize),
    /// A person browses and calls the tools by name (no model reads the list), and the client
    /// refuses to call a tool it was not listed: the whole list, whatever its size.
    Browses,
}

/// A client by the normal form of its `clientInfo.name`, and how it copes with a long list.
struct KnownList {
    name: &'static str,
    lists: Lists,
}

/// The clients whose handling of long tool lists has been seen.
const KNOWN_LISTS: &[KnownList] = &[
    // Claude Code (`claude-code`) defers MCP tools behind its own tool search once their
    // definitions pass 10% of the context (`ENABLE_TOOL_SEARCH=auto:N`), reading
    // `_meta["anthropic/alwaysLoad"]` and `anthropic/searchHint` per tool (its MCP
    // documentation; anthropics/claude-code #11364, #16826 and #23508 asked for it). A second
    // search in front of its own would only hide tools from it.
    KnownList {
        name: "claude-code",
        lists: Lists::SearchesItself,
    },
    // VS Code / GitHub Copilot Chat cap a request at 128 tools, counting every server's:
    // postman-mcp-server PRs #26 and #35 cut that server's list for it.
    KnownList {
        name: "visual-studio-code",
        lists: Lists::UpTo(128),
    },
    KnownList {
        name: "code-oss",
        lists: Lists::UpTo(128),
    },
    // Cursor (`cursor-vscode`) degrades past about 40 tools: the same postman-mcp-server PRs
    // (#26, #35) cut their list under it.
    KnownList {
        name: "cursor",
        lists: Lists::UpTo(40),
    },
    // The MCP Inspector (`inspector-cli`, `inspector-client`): its CLI answers "Tool '…' not
    // found on server." for a tool its tools/list did not hold, without calling it (.ci/run's
    // upstream checks, Inspector 2.12.0, with 50 tools under the search surface).
    KnownList {
        name: "inspector",
        lists: Lists::Browses,
    },
];

/// The surface a session gets: as the operator fixed it, or (`auto`) by the client's name and
/// the number of tools the session would be listed (`tools`).
pub(super) fn surface_for(
    settings: &SurfaceSettings,
    client: Option<&str>,
    tools: usize,
) -> Surface {
    match settings.surface {
        SurfaceSetting::Full => Surface::Full,
        SurfaceSetting::Search => Surface::Search,
        SurfaceSetting::Auto => {
            let lists = client.and_then(|name| named(KNOWN_LISTS, |k| k.name, name));
            let limit = match lists.map(|known| known.lists) {
                Some(Lists::SearchesItself | Lists::Browses) => return Surface::Full,
                Some(Lists::UpTo(limit)) => limit,
                None => settings.search_above,
            };
            if tools > limit {
                Surface::Search
            } else {
                Surface::Full
            }
        }
    }
}

/// Where a session's results carry their payload: as the operator fixed it, or (`auto`) by
/// the client's name.
pub(super) fn payload_for(setting: PayloadSetting, client: Option<&str>) -> Payload {
    match setting {
        PayloadSetting::Text => Payload::Text,
        PayloadSetting::Structured => Payload::Structured,
        PayloadSetting::Both => Payload::Both,
        PayloadSetting::Auto => match client.and_then(reads) {
            Some(Reads::Structured) => Payload::Structured,
            Some(Reads::Text) => Payload::Text,
            None => Payload::Both,
        },
    }
}

/// The result cap a session's default pages fit under: as the operator fixed it, or
/// (`auto`) the client's own, when it is a known client with a known cap.
pub(super) fn result_cap_for(setting: ResultCapSetting, client: Option<&str>) -> Option<u64> {
    setting.for_client(client.and_then(known).and_then(|known| known.cap))
}

/// What the client called `name` hands its model, if it is a known client.
fn reads(name: &str) -> Option<Reads> {
    known(name).map(|known| known.reads)
}

/// The known client called `name`.
fn known(name: &str) -> Option<&'static Known> {
    named(KNOWN, |k| k.name, name)
}

/// The entry of `table` whose name (`name_of`) the client called `name` has: equal to its
/// normal form, or continued by it after a `-`.
fn named<T>(
    table: &'static [T],
    name_of: fn(&T) -> &'static str,
    name: &str,
) -> Option<&'static T> {
    let name = normal_form(name);
    table.iter().find(|entry| {
        name.strip_prefix(name_of(entry))
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
    })
}

/// `name` lowercased, with every run of characters other than ASCII letters and digits made
/// one `-`, and none at either end: `Visual Studio Code - Insiders` →
/// `visual-studio-code-insiders`, `@cline/core` → `cline-core`.
fn normal_form(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    if out.ends_with('-') {
        out.pop();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auto(name: &str) -> Payload {
        payload_for(PayloadSetting::Auto, Some(name))
    }

    #[test]
    fn names_are_matched_as_clients_send_them() {
        for name in [
            "claude-code",
            "Claude-Code",
            "claude-code 2.1.293",
            "codex-mcp-client",
            "codex",
            "Visual Studio Code",
            "Visual Studio Code - Insiders",
            "Code - OSS",
        ] {
            assert_eq!(auto(name), Payload::Structured, "{name}");
        }
        for name in [
            "claude-ai",
            "opencode",
            "Zed",
            "continue-client",
            "continue-cli-client",
            "Cline",
            "@cline/core",
            "goose-cli",
        ] {
            assert_eq!(auto(name), Payload::Text, "{name}");
        }
    }

    #[test]
    fn every_other_client_gets_both() {
        // The Python SDK's default name (LangChain, OpenAI Agents SDK, Pydantic AI, FastMCP),
        // the Inspector, clients whose behaviour is unclear (Cursor, Windsurf), and names that
        // only start like a known one.
        for name in [
            "mcp",
            "inspector-cli",
            "inspector-client",
            "cursor-vscode",
            "windsurf-client",
            "claude",
            "claude-codex",
            "zedd",
            "codexx",
            "",
            "   ",
            "-",
        ] {
            assert_eq!(auto(name), Payload::Both, "{name:?}");
        }
        assert_eq!(payload_for(PayloadSetting::Auto, None), Payload::Both);
    }

    #[test]
    fn the_operator_fixes_one_form_for_everyone() {
        for (setting, form) in [
            (PayloadSetting::Text, Payload::Text),
            (PayloadSetting::Structured, Payload::Structured),
            (PayloadSetting::Both, Payload::Both),
        ] {
            for name in [Some("claude-code"), Some("Zed"), Some("mcp"), None] {
                assert_eq!(payload_for(setting, name), form, "{setting:?} {name:?}");
            }
        }
    }

    #[test]
    fn only_claude_code_has_a_known_result_cap_and_the_operator_overrides_it() {
        let auto = ResultCapSetting::default();
        assert_eq!(result_cap_for(auto, Some("claude-code")), Some(500_000));
        assert_eq!(
            result_cap_for(auto, Some("claude-code 2.1.332")),
            Some(500_000)
        );
        for other in [
            Some("claude-ai"),
            Some("Zed"),
            Some("mcp"),
            Some("codex"),
            None,
        ] {
            assert_eq!(result_cap_for(auto, other), None, "{other:?}");
        }
        let off: ResultCapSetting = "off".parse().unwrap();
        assert_eq!(result_cap_for(off, Some("claude-code")), None);
        let fixed: ResultCapSetting = "200000".parse().unwrap();
        assert_eq!(result_cap_for(fixed, Some("Zed")), Some(200_000));
        assert_eq!(result_cap_for(fixed, Some("claude-code")), Some(200_000));
    }

    #[test]
    fn auto_lists_each_client_as_it_copes_with_long_lists() {
        let auto = SurfaceSettings::default();
        let at = |client: Option<&str>, tools| surface_for(&auto, client, tools);
        // Claude Code searches tools itself: always the whole list.
        assert_eq!(at(Some("claude-code"), 500), Surface::Full);
        assert_eq!(at(Some("claude-code 2.1.293"), 5), Surface::Full);
        // VS Code: the whole list up to its cap of 128, the search surface past it.
        for vscode in [
            "Visual Studio Code",
            "Visual Studio Code - Insiders",
            "Code - OSS",
        ] {
            assert_eq!(at(Some(vscode), 128), Surface::Full, "{vscode}");
            assert_eq!(at(Some(vscode), 129), Surface::Search, "{vscode}");
        }
        // Cursor degrades past about 40.
        assert_eq!(at(Some("cursor-vscode"), 40), Surface::Full);
        assert_eq!(at(Some("cursor-vscode"), 41), Surface::Search);
        // The Inspector: a person browsing, who can call only what was listed.
        for inspector in ["inspector-cli", "inspector-client"] {
            assert_eq!(at(Some(inspector), 500), Surface::Full, "{inspector}");
        }
        // Everyone else: search_above (40 by default).
        for other in [
            Some("mcp"),
            Some("inspectors"),
            Some("claude-ai"),
            Some("cursorial"),
            None,
        ] {
            assert_eq!(at(other, 40), Surface::Full, "{other:?}");
            assert_eq!(at(other, 41), Surface::Search, "{other:?}");
        }
        let mut lower = SurfaceSettings::default();
        lower.search_above = 10;
        assert_eq!(surface_for(&lower, Some("mcp"), 11), Surface::Search);
        assert_eq!(
            surface_for(&lower, Some("cursor-vscode"), 11),
            Surface::Full
        );
    }

    #[test]
    fn a_fixed_surface_is_everyones() {
        for (setting, surface) in [
            (SurfaceSetting::Full, Surface::Full),
            (SurfaceSetting::Search, Surface::Search),
        ] {
            let mut settings = SurfaceSettings::default();
            settings.surface = setting;
            for client in [
                Some("claude-code"),
                Some("cursor-vscode"),
                Some("mcp"),
                None,
            ] {
                for tools in [1, 500] {
                    assert_eq!(surface_for(&settings, client, tools), surface);
                }
            }
        }
    }

    #[test]
    fn the_normal_form_keeps_letters_and_digits_and_one_dash_between() {
        assert_eq!(
            normal_form("Visual Studio Code - Insiders"),
            "visual-studio-code-insiders"
        );
        assert_eq!(normal_form("@cline/core"), "cline-core");
        assert_eq!(normal_form("  Zed  "), "zed");
        assert_eq!(normal_form("claude_code/2.1"), "claude-code-2-1");
        assert_eq!(normal_form("Ünï"), "n");
    }
}
