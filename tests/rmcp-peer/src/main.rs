//! A dual-era MCP server on rmcp 3.11 in its default configuration (both eras; stateful legacy
//! HTTP sessions), a real peer for the era-policy tests (tests/python/test_dual_era.py).
//!
//! usage: tn-rmcp-peer stdio | stdio-modern | http [--port N] | http-stateless [--port N] | http-modern [--port N]
//! `*-modern`: `supported_protocol_versions` is 2026-07-28 alone (a modern-only server; over stdio
//! rmcp then refuses `initialize` with -32022 and this `main` exits 1, as any rmcp server's does).
//! tools: echo {text}
//!        ask_push {}   push-style: `create_elicitation` while the call is open (the handshake era)
//!        ask_mrtr {}   MRTR-style: an InputRequiredResult, completed on the retry (2026-07-28)
//! Both asking tools answer `{"action": …, "content": …}` as JSON text.
use rmcp::handler::server::tool::{InputResponses, RequestState};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::*;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{
    tool, tool_handler, tool_router, ErrorData, Peer, RoleServer, ServerHandler, ServiceExt,
};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Debug, Deserialize, JsonSchema)]
struct EchoArgs {
    text: String,
}

fn person() -> ElicitationSchema {
    serde_json::from_value(serde_json::json!({
        "type": "object",
        "properties": {"name": {"type": "string", "description": "Your name"}},
        "required": ["name"]
    }))
    .expect("a valid schema")
}

fn text(t: String) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(t)])
}

#[derive(Clone)]
struct Peer1 {
    modern_only: bool,
}

#[tool_router]
impl Peer1 {
    fn new(modern_only: bool) -> Self {
        Self { modern_only }
    }

    #[tool(description = "Return the text unchanged.")]
    async fn echo(&self, Parameters(a): Parameters<EchoArgs>) -> String {
        a.text
    }

    #[tool(description = "Asks who you are: a server-initiated elicitation/create.")]
    async fn ask_push(&self, peer: Peer<RoleServer>) -> Result<CallToolResult, ErrorData> {
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: "Who are you?".into(),
            requested_schema: person(),
        };
        match peer.create_elicitation(params).await {
            Ok(r) => Ok(text(
                serde_json::json!({"action": r.action, "content": r.content}).to_string(),
            )),
            Err(e) => Err(ErrorData::internal_error(
                format!("elicitation failed: {e}"),
                None,
            )),
        }
    }

    #[tool(description = "Asks who you are through MRTR: input_required, then the retry.")]
    async fn ask_mrtr(
        &self,
        RequestState(_state): RequestState,
        InputResponses(responses): InputResponses,
    ) -> Result<CallToolResponse, ErrorData> {
        if let Some(r) = responses.as_ref().and_then(|m| m.get("who")) {
            let r = serde_json::to_value(r).unwrap_or_default();
            let out = serde_json::json!({"action": r.get("action"), "content": r.get("content")});
            return Ok(text(out.to_string()).into());
        }
        let mut reqs = InputRequests::new();
        reqs.insert(
            "who".into(),
            InputRequest::Elicitation(ElicitRequest::new(
                ElicitRequestParams::FormElicitationParams {
                    meta: None,
                    message: "Who are you?".into(),
                    requested_schema: person(),
                },
            )),
        );
        Ok(InputRequiredResult::new(Some(reqs), Some("ask-1".into())).into())
    }
}

#[tool_handler]
impl ServerHandler for Peer1 {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("tn-rmcp-peer", "0.0.0"))
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        if self.modern_only {
            std::borrow::Cow::Borrowed(&[ProtocolVersion::V_2026_07_28])
        } else {
            std::borrow::Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS)
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map(String::as_str).unwrap_or("stdio");
    let port: u16 = match args.iter().position(|a| a == "--port") {
        Some(i) => args.get(i + 1).ok_or("--port needs a number")?.parse()?,
        None => 38700,
    };
    let modern_only = mode.ends_with("-modern");
    match mode {
        "stdio" | "stdio-modern" => {
            let service = Peer1::new(modern_only)
                .serve(rmcp::transport::stdio())
                .await?;
            service.waiting().await?;
        }
        "http" | "http-stateless" | "http-modern" => {
            // rmcp's default keeps stateful legacy sessions; http-stateless turns them off.
            let config =
                StreamableHttpServerConfig::default().with_legacy_session_mode(mode == "http");
            let service: StreamableHttpService<Peer1, LocalSessionManager> =
                StreamableHttpService::new(
                    move || Ok(Peer1::new(modern_only)),
                    Default::default(),
                    config,
                );
            let router = axum::Router::new().nest_service("/mcp", service);
            let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
            eprintln!("listening on http://127.0.0.1:{port}/mcp ({mode})");
            axum::serve(listener, router).await?;
        }
        m => return Err(format!("unknown mode {m}").into()),
    }
    Ok(())
}
