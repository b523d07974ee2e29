//! `toolnexus`: tries an MCP config the way a host would (the library's [`toolnexus::Client`]),
//! and runs the library's pure functions as JSON lines for other ports' parity tests.
//!
//! ```text
//! toolnexus [--config FILE] tools [--json | --for openai|anthropic|gemini]
//! toolnexus [--config FILE] call TOOL ['{"arg":…}'] [--json]
//! toolnexus [--config FILE] status [--json]
//! toolnexus [--config FILE] skills [--json]
//! toolnexus [--config FILE] skills get SERVER SKILL_URI [--json]
//! toolnexus [--config FILE] skills read SERVER SKILL_URI FILE [--json]
//! toolnexus [--config FILE] watch [--json]
//! toolnexus [--config FILE] resources [--templates] [--json]
//! toolnexus [--config FILE] read SERVER URI [-o FILE] [--json]
//! toolnexus [--config FILE] prompts [--json]
//! toolnexus [--config FILE] prompt NAME [key=value…] [--json]
//! toolnexus [--config FILE] complete SERVER prompt|resource REF ARG PREFIX [key=value…]
//! toolnexus bridge < lines.jsonl
//! ```
//!
//! Exit codes: 0 success (and `watch` stopped by Ctrl-C); 1 a tool result with `isError`
//! (call), a failed server (status) or a server whose skills could not be listed (skills); 2 a
//! usage, config or library error, a skill refused included, an unknown resource or prompt, or a
//! binary content bound for a terminal (the message is on stderr).

mod bridge;
mod form;
mod resources;
mod watch;

use clap::{Parser, Subcommand};
use serde_json::Value;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use toolnexus::{Client, Error};

/// `println!` for the command's output: a reader that went away (`toolnexus tools | head -1`)
/// ends the command quietly, as a pipe's writer does, instead of a panic.
macro_rules! out {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        if let Err(e) = writeln!(std::io::stdout(), $($t)*) {
            $crate::stdout_failed(e)
        }
    }};
}

/// Stdout could not be written: a closed pipe exits 0 at once; anything else is exit 2.
fn stdout_failed(e: std::io::Error) -> ! {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    eprintln!("toolnexus: cannot write to stdout: {e}");
    std::process::exit(2);
}

#[derive(Parser)]
#[command(
    name = "toolnexus",
    version,
    about = "Try an MCP config: list its tools, call one, see each server's status",
    after_help = "A server's question during `call` is asked as a form on the terminal; without a \
                  terminal on stdin it is declined.\nExit codes: 0 ok; 1 an isError result (call) \
                  or a failed server (status); 2 a usage, config or library error."
)]
struct Cli {
    /// The MCP config (the Claude-desktop / opencode JSON format).
    #[arg(
        long,
        short = 'c',
        value_name = "FILE",
        default_value = "mcp.json",
        global = true
    )]
    config: PathBuf,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List the tools of every connected server, sorted by name.
    Tools {
        /// Print the tools as the library lists them (a JSON array).
        #[arg(long, conflicts_with = "style")]
        json: bool,
        /// Print them in a model provider's function-calling shape.
        #[arg(long = "for", value_name = "STYLE", value_parser = ["openai", "anthropic", "gemini"])]
        style: Option<String>,
    },
    /// Call a tool and print its output; exits 1 when the result is an error.
    Call {
        /// The tool's listed name (see `toolnexus tools`).
        tool: String,
        /// The arguments, a JSON object (default `{}`).
        args: Option<String>,
        /// Print the whole ToolResult as JSON instead of its output text.
        #[arg(long)]
        json: bool,
    },
    /// Continue a call from its resume token: a suspended question (with the answers, a JSON
    /// object keyed by Request id) or a task a `call` left running.
    Resume {
        /// The token (`metadata.pending.resume`, or what `call` printed on Ctrl-C).
        token: String,
        /// The answers, a JSON object (default `{}`).
        answers: Option<String>,
        /// Print the whole ToolResult as JSON instead of its output text.
        #[arg(long)]
        json: bool,
    },
    /// Each server's status: connected (with its tool count), disabled, or failed and why.
    Status {
        /// Print the statuses as the library reports them (JSON).
        #[arg(long)]
        json: bool,
    },
    /// List the skills of every server that offers them (SEP-2640); no skill file is read.
    /// `skills get` loads one (its SKILL.md verified), `skills read` one of its files.
    Skills {
        /// Print the listing as the library gives it (JSON).
        #[arg(long)]
        json: bool,
        #[command(subcommand)]
        action: Option<SkillsAction>,
    },
    /// Print each server's status, then every event as it comes (status changes, tool-list
    /// changes, log messages) until Ctrl-C.
    Watch {
        /// Print the statuses (the library's JSON) first, then each event's JSON, one a line.
        #[arg(long)]
        json: bool,
    },
    /// List the resources of every connected server (server, uri, MIME type, title), or with
    /// --templates their resource templates.
    Resources {
        /// List the resource templates instead.
        #[arg(long)]
        templates: bool,
        /// Print the listing as the library gives it (a JSON array).
        #[arg(long)]
        json: bool,
    },
    /// Read a resource: its text contents to stdout; a binary content to FILE (-o), or raw to
    /// stdout when stdout is not a terminal (refused on a terminal).
    Read {
        /// The server's name in the config.
        server: String,
        /// The resource's uri (see `toolnexus resources`).
        uri: String,
        /// Write the binary content here.
        #[arg(long, short = 'o', value_name = "FILE")]
        output: Option<PathBuf>,
        /// Print the whole result as JSON instead.
        #[arg(long, conflicts_with = "output")]
        json: bool,
    },
    /// List the prompts of every connected server, by host name, with their arguments
    /// (`name=` required, `[name=]` optional).
    Prompts {
        /// Print the listing as the library gives it (a JSON array).
        #[arg(long)]
        json: bool,
    },
    /// Get a prompt with its arguments and print its messages: a `[role]` line, then a text
    /// block as text, any other block as a line of JSON.
    Prompt {
        /// The prompt's host name (see `toolnexus prompts`).
        name: String,
        /// The arguments, key=value each.
        args: Vec<String>,
        /// Print the whole result as JSON instead.
        #[arg(long)]
        json: bool,
    },
    /// Print, one a line, the values a server completes for a prompt's or a resource
    /// template's argument starting with PREFIX (the arguments already chosen as key=value).
    Complete {
        /// The server's name in the config.
        server: String,
        /// What is completed: `prompt` or `resource`.
        #[arg(value_parser = ["prompt", "resource"])]
        kind: String,
        /// The prompt (its name or host name) or the resource template (its uriTemplate).
        reference: String,
        /// The argument completed.
        argument: String,
        /// What is typed so far (may be empty).
        prefix: String,
        /// The other arguments already chosen, key=value each.
        context: Vec<String>,
    },
    /// JSON lines on stdin, {"fn": NAME, "input": JSON, ...}, one result line each on stdout.
    Bridge,
}

#[derive(Subcommand)]
enum SkillsAction {
    /// Load a skill and print its SKILL.md, verified by size, SHA-256 and frontmatter against
    /// its entry; a skill that fails is refused (exit 2, saying what did not match).
    Get {
        /// The server's name in the config.
        server: String,
        /// The URI of the skill's SKILL.md (see `toolnexus skills`).
        uri: String,
        /// Print the whole result as JSON instead of the text.
        #[arg(long)]
        json: bool,
    },
    /// Load a skill, then print one of its listed files (by URI or path in the skill), verified.
    Read {
        server: String,
        /// The URI of the skill's SKILL.md.
        skill: String,
        /// The file: its URI, or its path in the skill (`references/FORMS.md`).
        file: String,
        #[arg(long)]
        json: bool,
    },
}

/// A failure of the command itself: printed as `toolnexus: …`, exit code 2.
pub(crate) struct Fail(pub(crate) String);

impl From<Error> for Fail {
    fn from(e: Error) -> Self {
        Fail(format!("{} ({})", e.message, e.kind.status_name()))
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let run = match cli.command {
        Command::Bridge => bridge::run(std::io::stdin().lock(), std::io::stdout().lock())
            .map(|()| ExitCode::SUCCESS)
            .map_err(|e| Fail(format!("bridge: {e}"))),
        Command::Tools { json, style } => with_client(&cli.config, |c| tools(c, json, style)),
        Command::Call { tool, args, json } => {
            with_client(&cli.config, |c| call(c, &tool, args.as_deref(), json))
        }
        Command::Resume {
            token,
            answers,
            json,
        } => with_client(&cli.config, |c| resume(c, &token, answers.as_deref(), json)),
        Command::Status { json } => with_client(&cli.config, |c| status(c, json)),
        Command::Skills { json, action } => with_client(&cli.config, |c| skills(c, json, action)),
        Command::Watch { json } => watch::run(&cli.config, json),
        Command::Resources { templates, json } => {
            with_client(&cli.config, |c| resources::resources(c, templates, json))
        }
        Command::Read {
            server,
            uri,
            output,
            json,
        } => with_client(&cli.config, |c| {
            resources::read(c, &server, &uri, output.as_deref(), json)
        }),
        Command::Prompts { json } => with_client(&cli.config, |c| resources::prompts(c, json)),
        Command::Prompt { name, args, json } => {
            with_client(&cli.config, |c| resources::prompt(c, &name, &args, json))
        }
        Command::Complete {
            server,
            kind,
            reference,
            argument,
            prefix,
            context,
        } => with_client(&cli.config, |c| {
            resources::complete(c, &server, &kind, &reference, &argument, &prefix, &context)
        }),
    };
    match run {
        Ok(code) => code,
        Err(Fail(msg)) => {
            eprintln!("toolnexus: {msg}");
            ExitCode::from(2)
        }
    }
}

/// The config file's text, or why it cannot be read.
pub(crate) fn read_config(config: &PathBuf) -> Result<String, Fail> {
    std::fs::read_to_string(config).map_err(|e| {
        Fail(format!(
            "cannot read the config {}: {e} (pass another with --config FILE)",
            config.display()
        ))
    })
}

/// Connects the servers of `config` (with the terminal form as the resolver), runs `f`, and
/// disconnects.
fn with_client(
    config: &PathBuf,
    f: impl FnOnce(&Client) -> Result<ExitCode, Fail>,
) -> Result<ExitCode, Fail> {
    let text = read_config(config)?;
    let client = Client::connect(&text, Some(Arc::new(form::TerminalResolver::new())))
        .map_err(|e| Fail(format!("{}: {}", config.display(), Fail::from(e).0)))?;
    let out = f(&client);
    client.close_begin();
    client.close_finish();
    out
}

/// The servers that failed, as `server `x`: why` lines (for stderr).
pub(crate) fn failed_servers(client: &Client) -> Vec<String> {
    let statuses: Value = serde_json::from_str(&client.statuses_json()).unwrap_or(Value::Null);
    let Some(servers) = statuses.get("servers").and_then(Value::as_object) else {
        return Vec::new();
    };
    servers
        .iter()
        .filter(|(_, s)| s.get("status").and_then(Value::as_str) == Some("failed"))
        .map(|(name, s)| {
            let why = s
                .get("error")
                .and_then(Value::as_str)
                .unwrap_or("no reason given");
            if why.contains(name.as_str()) {
                why.to_string()
            } else {
                format!("server `{name}` failed: {why}")
            }
        })
        .collect()
}

fn tools(client: &Client, json: bool, style: Option<String>) -> Result<ExitCode, Fail> {
    for line in failed_servers(client) {
        eprintln!("toolnexus: {line}");
    }
    if let Some(style) = style {
        out!(
            "{}",
            toolnexus::pure::tools_to_provider(&client.tools_json(), &style)?
        );
        return Ok(ExitCode::SUCCESS);
    }
    if json {
        out!("{}", client.tools_json());
        return Ok(ExitCode::SUCCESS);
    }
    let tools: Vec<Value> = serde_json::from_str(&client.tools_json())
        .map_err(|e| Fail(format!("the library listed tools that are not JSON: {e}")))?;
    if tools.is_empty() {
        out!("(no tools)");
    }
    let width = tools
        .iter()
        .filter_map(|t| t.get("name").and_then(Value::as_str))
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(0);
    for t in &tools {
        let name = t.get("name").and_then(Value::as_str).unwrap_or("?");
        let desc = t.get("description").and_then(Value::as_str).unwrap_or("");
        let desc = desc.lines().next().unwrap_or("");
        out!("{name:width$}  {desc}");
    }
    Ok(ExitCode::SUCCESS)
}

fn call(client: &Client, tool: &str, args: Option<&str>, json: bool) -> Result<ExitCode, Fail> {
    if let Some(a) = args {
        match serde_json::from_str::<Value>(a) {
            Ok(Value::Object(_)) => {}
            Ok(_) => return Err(Fail("the arguments must be a JSON object".into())),
            Err(e) => return Err(Fail(format!("the arguments are not JSON: {e}"))),
        }
    }
    // Through an asynchronous call so that the server's progress can be shown: on a terminal
    // one line on stderr, redrawn in place and cleared before the result (§7); a task's status
    // the same way, its resume token kept for Ctrl-C.
    let show = std::io::stderr().is_terminal();
    let (tx, rx) = std::sync::mpsc::channel::<Option<String>>();
    let drawn = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let resume = std::sync::Arc::new(std::sync::Mutex::new(None::<String>));
    let d = drawn.clone();
    let r = resume.clone();
    let progress: toolnexus::Progress = Box::new(move |p: &str| {
        let Ok(Value::Object(p)) = serde_json::from_str::<Value>(p) else {
            return;
        };
        if let Some(token) = p.get("resume").and_then(Value::as_str) {
            *r.lock().unwrap_or_else(|e| e.into_inner()) = Some(token.to_string());
        }
        if !show {
            return;
        }
        let msg = p.get("message").and_then(Value::as_str).unwrap_or("");
        match p.get("task") {
            Some(t) => {
                let status = t.get("status").and_then(Value::as_str).unwrap_or("");
                let what = t.get("statusMessage").and_then(Value::as_str).unwrap_or("");
                eprint!("\r\x1b[2K[task {status}] {what}");
            }
            None => {
                let n = p.get("progress").map(|v| v.to_string()).unwrap_or_default();
                let of = p.get("total").map(|t| format!("/{t}")).unwrap_or_default();
                eprint!("\r\x1b[2K[{n}{of}] {msg}");
            }
        }
        d.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    let interrupt = tx.clone();
    // Ctrl-C: a call that became a task keeps running on the server; its resume token is
    // printed (`toolnexus resume TOKEN` collects it) and the command exits 130.
    let _ = ctrlc::set_handler(move || {
        let _ = interrupt.send(None);
    });
    let started = client.call_tool_async(
        tool,
        args,
        None,
        Box::new(move |r| {
            let _ = tx.send(Some(r));
        }),
        Some(progress),
        |_| {},
    );
    if let Err(e) = started {
        if e.kind == toolnexus::ErrorKind::NotFound {
            for line in failed_servers(client) {
                eprintln!("toolnexus: {line}");
            }
        }
        return Err(e.into());
    }
    let result = rx
        .recv()
        .map_err(|_| Fail("the call ended without a result".into()))?;
    if drawn.load(std::sync::atomic::Ordering::Relaxed) {
        eprint!("\r\x1b[2K");
    }
    let Some(result) = result else {
        match resume.lock().unwrap_or_else(|e| e.into_inner()).take() {
            Some(token) => {
                eprintln!("toolnexus: interrupted; the task goes on on the server. Collect its result with:");
                eprintln!("toolnexus resume {token}");
            }
            None => eprintln!("toolnexus: interrupted"),
        }
        return Ok(ExitCode::from(130));
    };
    print_result(&result, json)
}

/// Continues a call from its resume token (a suspended question, or a task).
fn resume(
    client: &Client,
    token: &str,
    answers: Option<&str>,
    json: bool,
) -> Result<ExitCode, Fail> {
    let result = client.resume(token, answers.unwrap_or("{}"))?;
    print_result(&result, json)
}

/// Prints a ToolResult (its output, or the JSON); exit 1 when it is an error.
fn print_result(result: &str, json: bool) -> Result<ExitCode, Fail> {
    let v: Value = serde_json::from_str(result).map_err(|e| {
        Fail(format!(
            "the library returned a result that is not JSON: {e}"
        ))
    })?;
    let is_error = v.get("isError").and_then(Value::as_bool) == Some(true);
    if json {
        out!("{result}");
    } else {
        let output = v.get("output").and_then(Value::as_str).unwrap_or("");
        if output.ends_with('\n') || output.is_empty() {
            print!("{output}");
        } else {
            out!("{output}");
        }
    }
    Ok(if is_error {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn status(client: &Client, json: bool) -> Result<ExitCode, Fail> {
    let text = client.statuses_json();
    let failed = !failed_servers(client).is_empty();
    if json {
        out!("{text}");
    } else {
        let v: Value = serde_json::from_str(&text).map_err(|e| {
            Fail(format!(
                "the library returned statuses that are not JSON: {e}"
            ))
        })?;
        let servers = v.get("servers").and_then(Value::as_object);
        if servers.is_none_or(|s| s.is_empty()) {
            out!("(no servers in the config)");
        }
        for (name, s) in servers.into_iter().flatten() {
            out!("{}", status_line(name, s));
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `name: connected (3 tools, protocol 2025-11-25)`, `name: failed: why`, plus warnings.
pub(crate) fn status_line(name: &str, s: &Value) -> String {
    let status = s.get("status").and_then(Value::as_str).unwrap_or("?");
    let mut line = format!("{name}: {status}");
    match status {
        "connected" => {
            let mut parts = Vec::new();
            if let Some(n) = s.get("tools").and_then(Value::as_u64) {
                parts.push(format!("{n} tool{}", if n == 1 { "" } else { "s" }));
            }
            if let Some(p) = s.get("protocolVersion").and_then(Value::as_str) {
                parts.push(format!("protocol {p}"));
            }
            if !parts.is_empty() {
                line.push_str(&format!(" ({})", parts.join(", ")));
            }
        }
        "failed" => {
            if let Some(e) = s.get("error").and_then(Value::as_str) {
                line.push_str(&format!(": {e}"));
            }
        }
        _ => {}
    }
    for w in s
        .get("warnings")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let w = w.as_str().map_or_else(|| w.to_string(), str::to_string);
        line.push_str(&format!("\n  warning: {w}"));
    }
    if let Some(e) = s.get("lastElicitationError").and_then(Value::as_str) {
        line.push_str(&format!("\n  last elicitation error: {e}"));
    }
    line
}

fn skills(client: &Client, json: bool, action: Option<SkillsAction>) -> Result<ExitCode, Fail> {
    let print = |text: &str, json: bool| -> Result<(), Fail> {
        let v: Value = serde_json::from_str(text)
            .map_err(|e| Fail(format!("the library returned text that is not JSON: {e}")))?;
        if json {
            out!("{text}");
        } else if let Some(t) = v.get("text").and_then(Value::as_str) {
            print!("{t}");
        } else if let Some(b) = v.get("blob").and_then(Value::as_str) {
            use base64::Engine;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b)
                .map_err(|e| Fail(format!("the file's blob is not base64: {e}")))?;
            std::io::Write::write_all(&mut std::io::stdout(), &bytes)
                .map_err(|e| Fail(format!("cannot write the file: {e}")))?;
        }
        Ok(())
    };
    match action {
        Some(SkillsAction::Get { server, uri, json }) => {
            print(&client.get_skill(&server, &uri)?, json)?;
            return Ok(ExitCode::SUCCESS);
        }
        Some(SkillsAction::Read {
            server,
            skill,
            file,
            json,
        }) => {
            client.get_skill(&server, &skill)?;
            print(&client.read_skill_file(&server, &skill, &file)?, json)?;
            return Ok(ExitCode::SUCCESS);
        }
        None => {}
    }
    for line in failed_servers(client) {
        eprintln!("toolnexus: {line}");
    }
    let text = client.list_skills()?;
    let v: Value = serde_json::from_str(&text)
        .map_err(|e| Fail(format!("the library listed skills that are not JSON: {e}")))?;
    let servers = v.get("servers").and_then(Value::as_object);
    let mut listing_failed = false;
    for (name, s) in servers.into_iter().flatten() {
        if let Some(e) = s.get("error").and_then(Value::as_str) {
            eprintln!("toolnexus: {e}");
            listing_failed = true;
        }
        for w in s
            .get("warnings")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            eprintln!("toolnexus: server `{name}`: {}", w.as_str().unwrap_or(""));
        }
    }
    if json {
        out!("{text}");
    } else {
        let rows: Vec<(&str, &str, &str)> = servers
            .into_iter()
            .flatten()
            .flat_map(|(name, s)| {
                s.get("skills")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(move |e| {
                        let uri = e.get("uri").and_then(Value::as_str).unwrap_or("?");
                        let desc = e
                            .pointer("/frontmatter/description")
                            .and_then(Value::as_str)
                            .unwrap_or("");
                        (name.as_str(), uri, desc.lines().next().unwrap_or(""))
                    })
            })
            .collect();
        if rows.is_empty() {
            out!("(no skills)");
        }
        let (w1, w2) = rows.iter().fold((0, 0), |(a, b), r| {
            (a.max(r.0.chars().count()), b.max(r.1.chars().count()))
        });
        for (server, uri, desc) in rows {
            out!("{server:w1$}  {uri:w2$}  {desc}");
        }
    }
    Ok(if listing_failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
