//! The MCP SDK's own client (`rmcp`) as the serve, remote and cloud test binaries drive
//! `zstudio mcp` with it: a call, its structured answer or refusal, and an output read a page at
//! a time.

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::RoleClient;
use serde_json::{json, Value};

pub type Client = RunningService<RoleClient, ()>;

/// A call answered (as a result, an error result included).
pub async fn call(client: &Client, tool: &str, arguments: Value) -> CallToolResult {
    let Value::Object(arguments) = arguments else {
        panic!("arguments are an object")
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"))
}

/// The structured result of a call that succeeded.
pub async fn answer(client: &Client, tool: &str, arguments: Value) -> Value {
    let result = call(client, tool, arguments).await;
    assert_eq!(result.is_error, Some(false), "{tool}: {:?}", result.content);
    result.structured_content.expect("a structured result")
}

/// The error code and message of a call that failed as a tool error.
pub async fn refusal(client: &Client, tool: &str, arguments: Value) -> (String, String) {
    let result = call(client, tool, arguments).await;
    assert_eq!(
        result.is_error,
        Some(true),
        "{tool} was not refused: {:?}",
        result.structured_content
    );
    let error = &result.structured_content.expect("a structured error")["error"];
    (
        error["code"].as_str().unwrap().to_owned(),
        error["message"].as_str().unwrap().to_owned(),
    )
}

/// Every page `read_output` gives for `arguments` (each checked to hold at most 16 KiB of
/// text), joined, with how many pages there were and the last page's `total_bytes`.
pub async fn read_all_pages(client: &Client, arguments: Value) -> (String, usize, Value) {
    let (mut joined, mut pages, mut cursor) = (String::new(), 0, Value::Null);
    loop {
        let mut asked = arguments.clone();
        if !cursor.is_null() {
            asked["cursor"] = cursor.clone();
        }
        let page = answer(client, "read_output", asked).await;
        let text = page["text"].as_str().unwrap();
        assert!(text.len() <= 16 * 1024, "a page of {} bytes", text.len());
        joined.push_str(text);
        pages += 1;
        cursor = page["next_cursor"].clone();
        if cursor.is_null() {
            return (joined, pages, page.get("total_bytes").cloned().unwrap_or(json!(null)));
        }
        assert!(pages < 10_000, "the pages never end");
    }
}
