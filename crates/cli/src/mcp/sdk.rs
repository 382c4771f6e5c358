//! The one file that knows the MCP SDK (`rmcp`): its server handler over the plain catalogue of
//! [`super::tools`], its stdio transport and the runtime it needs. A new major version of the
//! SDK changes this file alone; the tools speak `serde_json` and the studio's own types.
//!
//! Protocol versions: the SDK's negotiation, all it knows (`ProtocolVersion::KNOWN_VERSIONS`:
//! 2024-11-05, 2025-03-26, 2025-06-18 and 2025-11-25 through `initialize`, and 2026-07-28, whose
//! requests carry their version in `_meta`); docs/cli.md lists them.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};

use super::answer::{Answer, Failure};
use super::tools::{Catalogue, ToolSpec};

/// Serves `catalogue` on standard input and output until the client closes its end.
pub fn serve_stdio(catalogue: Arc<Catalogue>) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let tools = catalogue.specs().iter().map(tool_of).collect();
        let server = Server { catalogue, tools };
        let running = server.serve(rmcp::transport::stdio()).await?;
        running.waiting().await?;
        anyhow::Ok(())
    })
}

struct Server {
    catalogue: Arc<Catalogue>,
    /// The tools as the SDK lists them, made once.
    tools: Vec<Tool>,
}

fn tool_of(spec: &ToolSpec) -> Tool {
    let annotations = ToolAnnotations::with_title(spec.title)
        .read_only(spec.hints.read_only)
        .destructive(spec.hints.destructive)
        .idempotent(spec.hints.idempotent)
        .open_world(spec.hints.open_world);
    Tool::new(spec.name, spec.description, Arc::new(spec.input_schema.clone()))
        .with_title(spec.title)
        .with_annotations(annotations)
}

/// A tool's answer as the SDK carries it: the structured result and its short text.
fn result_of(answer: Result<Answer, Failure>) -> Result<CallToolResult, ErrorData> {
    match answer {
        Ok(answer) => {
            let mut result = CallToolResult::success(vec![ContentBlock::text(answer.text)]);
            result.structured_content = Some(answer.structured);
            Ok(result)
        }
        Err(Failure::Tool(error)) => {
            let mut result = CallToolResult::error(vec![ContentBlock::text(error.text())]);
            result.structured_content = Some(error.structured());
            Ok(result)
        }
        Err(Failure::NoSuchTool(message)) => Err(ErrorData::invalid_params(message, None)),
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("zibby-studio", env!("CARGO_PKG_VERSION")))
            .with_instructions(super::tools::INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let catalogue = self.catalogue.clone();
        let name = request.name.into_owned();
        let arguments = serde_json::Value::Object(request.arguments.unwrap_or_default());
        // The studio's calls block (SQLite, files, waiting for a run): off the runtime's threads.
        let answer = tokio::task::spawn_blocking(move || catalogue.call(&name, arguments))
            .await
            .map_err(|error| ErrorData::internal_error(format!("the tool failed: {error}"), None))?;
        result_of(answer).map(CallToolResponse::from)
    }
}
