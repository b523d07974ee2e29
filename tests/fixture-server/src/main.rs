//! `tn-fixture-server`: a small, fast MCP server used by the toolnexus tests
//! and benchmarks, over stdio (default) or streamable HTTP (`--http ADDR`; HTTPS with
//! `--tls-cert FILE --tls-key FILE`).
//!
//! stdio: newline-delimited JSON-RPC 2.0 on stdin/stdout. Every stdout line
//! is written with one `write_all` + `flush` under a single mutex, so lines
//! from different threads never interleave. stderr is diagnostics only.
//!
//! See README.md for the options and the tool list.

mod completion;
mod http;
mod listing;
mod live;
mod modern;
mod mrtr;
mod net;
mod notify;
mod out;
mod pages;
mod post;
mod prompts;
mod proto;
mod resources;
mod session;
mod skills;
mod stdio;
mod tasks;
mod tools;
mod util;
mod wire;

use std::process;
use std::sync::OnceLock;
use std::thread;

// ---------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------

#[derive(Debug)]
pub struct Opts {
    pub protocol: Option<String>,
    pub name: String,
    pub extra_tools: usize,
    pub page_size: Option<usize>,
    pub repeat_cursor: bool,
    pub exit_on_init: Option<i32>,
    pub exit_after_init: Option<i32>,
    pub init_delay_ms: u64,
    pub stderr_flood_mb: u64,
    pub no_tools_list: bool,
    pub silent_tool_list: bool,
    pub ignore_stdin_eof: bool,
    pub ignore_sigterm: bool,
    pub close_stdin_after_init: bool,
    pub stop_reading_after_init: bool,
    pub stdout_close_after_init: bool,
    pub print_pid_file: Option<String>,
    pub hardening_tools: bool,
    /// On stdin EOF, leave a `sleep` of this many ms holding stdout open (its own group).
    pub stdout_outlives_exit_ms: Option<u64>,
    /// HTTP mode: listen on this address instead of speaking stdio.
    pub http: Option<String>,
    /// HTTP mode: serve HTTPS with this PEM certificate chain and PEM private key.
    pub tls: Option<(String, String)>,
    /// Append one JSON line per request received (stdio: per message) to this file.
    pub log: Option<String>,
    /// HTTP mode: answer the standalone GET with this status and no stream.
    pub get_status: Option<u16>,
    /// HTTP mode: end each standalone GET stream this long after it opened.
    pub get_close_after_ms: Option<u64>,
    /// HTTP mode: `retry:` field of the GET streams' priming event.
    pub get_retry: Option<u64>,
    /// HTTP mode: answer every request with an SSE stream.
    pub sse_all: bool,
    /// Speak MCP 2026-07-28 only (no `initialize`; the `_meta` envelope on every request).
    pub modern: bool,
    /// Serve both eras: a request carrying the envelope is modern, any other legacy.
    pub dual: bool,
    /// With `--modern` over stdio: after refusing `initialize` (-32022), read nothing more,
    /// and exit 1 this many ms later (an rmcp server's `main` does so, a little after).
    pub exit_after_refusal_ms: Option<u64>,
    /// Exit (code 3) on a `server/discover` that arrives before `initialize`.
    pub exit_on_discover: bool,
    /// Never answer `server/discover`.
    pub silent_on_discover: bool,
    /// Serve the Skills extension (SEP-2640): `skills/list`, `skills/get`, `resources/read`.
    pub skills: bool,
    /// A tool list that changes (`toggle_tool`), log messages (`log`), and the notifications
    /// of both eras for them (live.rs).
    pub live: bool,
    /// The modern era's `tools/list` `ttlMs` (default 0).
    pub ttl_ms: u64,
    /// Exit 3 at once, before reading anything, while this file exists.
    pub crash_at_start_if: Option<String>,
    /// Tool calls as tasks: MCP 2025-11-25 tasks, and SEP-2663 in 2026-07-28.
    pub tasks: bool,
    /// Resources, resource templates, subscriptions, prompts and completions (resources.rs).
    pub resources: bool,
    /// `--resources`: how many `fx://doc/<i>` are listed (default 5).
    pub resource_count: usize,
    /// `--resources`: page size of `resources/list`, `resources/templates/list`, `prompts/list`.
    pub resource_page_size: Option<usize>,
    /// `--resources`: the modern era's `ttlMs` on those listings and on `resources/read`.
    pub resource_ttl_ms: u64,
    /// `--resources`: also list the prompts `p0000`….
    pub prompt_count: usize,
    /// `--resources`: `--cursor-loop`, `--empty-cursor`, `--empty-cursor-loop` (pages.rs).
    pub cursor_mode: pages::CursorMode,
    /// `--resources` without `completion/complete` (-32601) and without its capability.
    pub no_completions: bool,
    /// `--resources`, but declaring neither `resources`, `prompts` nor `completions`.
    pub no_resource_caps: bool,
    /// `--resources`: declare `resources.listChanged` and `prompts.listChanged` false.
    pub no_list_changed: bool,
}

const USAGE: &str = "usage: tn-fixture-server [--protocol V] [--name N] [--extra-tools N] \
[--page-size N] [--repeat-cursor] [--exit-on-init CODE] [--exit-after-init CODE] \
[--init-delay-ms N] [--stderr-flood-mb N] [--no-tools-list] [--silent-tool-list] \
[--ignore-stdin-eof] [--ignore-sigterm] [--close-stdin-after-init] \
[--stdout-close-after-init] [--print-pid-file PATH] [--hardening-tools] [--stdout-outlives-exit-ms N] \
[--http ADDR [--tls-cert FILE --tls-key FILE]] [--log FILE] [--get-status CODE] [--get-close-after-ms N] [--get-retry MS] \
[--sse-all] [--modern] [--dual] [--exit-after-refusal-ms N] [--exit-on-discover] [--silent-on-discover] [--skills] [--live] [--ttl-ms N] \
[--crash-at-start-if PATH] [--tasks] [--resources [--resource-count N] [--resource-page-size K] \
[--resource-ttl-ms N] [--prompt-count N] [--cursor-loop | --empty-cursor | --empty-cursor-loop] \
[--no-completions] [--no-resource-caps] [--no-list-changed]] | --sleep SECONDS";

fn usage_error(msg: &str) -> ! {
    eprintln!("fixture: {msg}\n{USAGE}");
    process::exit(2);
}

/// Parse a numeric option value or exit with a usage error.
fn num<T: std::str::FromStr>(flag: &str, s: String) -> T {
    s.trim()
        .parse()
        .unwrap_or_else(|_| usage_error(&format!("bad value for {flag}: {s:?}")))
}

fn parse_opts() -> Opts {
    let mut o = Opts {
        protocol: None,
        name: "tn-fixture".to_owned(),
        extra_tools: 0,
        page_size: None,
        repeat_cursor: false,
        exit_on_init: None,
        exit_after_init: None,
        init_delay_ms: 0,
        stderr_flood_mb: 0,
        no_tools_list: false,
        silent_tool_list: false,
        ignore_stdin_eof: false,
        ignore_sigterm: false,
        close_stdin_after_init: false,
        stop_reading_after_init: false,
        stdout_close_after_init: false,
        print_pid_file: None,
        hardening_tools: false,
        stdout_outlives_exit_ms: None,
        http: None,
        tls: None,
        log: None,
        get_status: None,
        get_close_after_ms: None,
        get_retry: None,
        sse_all: false,
        modern: false,
        dual: false,
        exit_after_refusal_ms: None,
        exit_on_discover: false,
        silent_on_discover: false,
        skills: false,
        live: false,
        ttl_ms: 0,
        crash_at_start_if: None,
        tasks: false,
        resources: false,
        resource_count: 5,
        resource_page_size: None,
        resource_ttl_ms: 0,
        prompt_count: 0,
        cursor_mode: pages::CursorMode::Offset,
        no_completions: false,
        no_resource_caps: false,
        no_list_changed: false,
    };
    let mut cursor_modes = 0;
    let (mut tls_cert, mut tls_key) = (None, None);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |what: &str| -> String {
            args.next()
                .unwrap_or_else(|| usage_error(&format!("{what} needs a value")))
        };
        match a.as_str() {
            // Only sleeps: the grandchild `spawn_child` starts where there is no `sleep` (Windows).
            "--sleep" => {
                thread::sleep(std::time::Duration::from_secs(num(&a, value(&a))));
                process::exit(0);
            }
            "--protocol" => o.protocol = Some(value("--protocol")),
            "--name" => o.name = value("--name"),
            "--extra-tools" => o.extra_tools = num(&a, value(&a)),
            "--page-size" => {
                let n: usize = num(&a, value(&a));
                // 0 would never make progress: treat it as "no pagination".
                o.page_size = (n > 0).then_some(n);
            }
            "--repeat-cursor" => o.repeat_cursor = true,
            "--exit-on-init" => o.exit_on_init = Some(num(&a, value(&a))),
            "--exit-after-init" => o.exit_after_init = Some(num(&a, value(&a))),
            "--init-delay-ms" => o.init_delay_ms = num(&a, value(&a)),
            "--stderr-flood-mb" => o.stderr_flood_mb = num(&a, value(&a)),
            "--no-tools-list" => o.no_tools_list = true,
            "--silent-tool-list" => o.silent_tool_list = true,
            "--ignore-stdin-eof" => o.ignore_stdin_eof = true,
            "--ignore-sigterm" => o.ignore_sigterm = true,
            "--close-stdin-after-init" => o.close_stdin_after_init = true,
            "--stop-reading-after-init" => o.stop_reading_after_init = true,
            "--stdout-close-after-init" => o.stdout_close_after_init = true,
            "--print-pid-file" => o.print_pid_file = Some(value("--print-pid-file")),
            "--hardening-tools" => o.hardening_tools = true,
            "--stdout-outlives-exit-ms" => {
                o.stdout_outlives_exit_ms = Some(num(&a, value(&a)));
            }
            "--http" => o.http = Some(value("--http")),
            "--tls-cert" => tls_cert = Some(value("--tls-cert")),
            "--tls-key" => tls_key = Some(value("--tls-key")),
            "--log" => o.log = Some(value("--log")),
            "--get-status" => o.get_status = Some(num(&a, value(&a))),
            "--get-close-after-ms" => o.get_close_after_ms = Some(num(&a, value(&a))),
            "--get-retry" => o.get_retry = Some(num(&a, value(&a))),
            "--sse-all" => o.sse_all = true,
            "--modern" => o.modern = true,
            "--dual" => o.dual = true,
            "--exit-after-refusal-ms" => o.exit_after_refusal_ms = Some(num(&a, value(&a))),
            "--exit-on-discover" => o.exit_on_discover = true,
            "--silent-on-discover" => o.silent_on_discover = true,
            "--skills" => o.skills = true,
            "--live" => o.live = true,
            "--ttl-ms" => o.ttl_ms = num(&a, value(&a)),
            "--crash-at-start-if" => o.crash_at_start_if = Some(value("--crash-at-start-if")),
            "--tasks" => o.tasks = true,
            "--resources" => o.resources = true,
            "--resource-count" => o.resource_count = num(&a, value(&a)),
            "--resource-page-size" => {
                let n: usize = num(&a, value(&a));
                o.resource_page_size = (n > 0).then_some(n);
            }
            "--resource-ttl-ms" => o.resource_ttl_ms = num(&a, value(&a)),
            "--prompt-count" => o.prompt_count = num(&a, value(&a)),
            "--cursor-loop" | "--empty-cursor" | "--empty-cursor-loop" => {
                cursor_modes += 1;
                o.cursor_mode = match a.as_str() {
                    "--cursor-loop" => pages::CursorMode::Loop,
                    "--empty-cursor" => pages::CursorMode::Empty,
                    _ => pages::CursorMode::EmptyLoop,
                };
            }
            "--no-completions" => o.no_completions = true,
            "--no-resource-caps" => o.no_resource_caps = true,
            "--no-list-changed" => o.no_list_changed = true,
            "-h" | "--help" => {
                eprintln!("{USAGE}");
                process::exit(0);
            }
            other => usage_error(&format!("unknown option {other:?}")),
        }
    }
    if o.modern && o.dual {
        usage_error("--modern and --dual exclude each other");
    }
    if cursor_modes > 1 {
        usage_error("--cursor-loop, --empty-cursor and --empty-cursor-loop exclude each other");
    }
    o.tls = match (tls_cert, tls_key) {
        (None, None) => None,
        (Some(cert), Some(key)) if o.http.is_some() => Some((cert, key)),
        (Some(_), Some(_)) => usage_error("--tls-cert and --tls-key need --http"),
        _ => usage_error("--tls-cert and --tls-key go together"),
    };
    o
}

static OPTS: OnceLock<Opts> = OnceLock::new();

pub fn opts() -> &'static Opts {
    OPTS.get().expect("options initialised in main")
}

/// Write our pid (no newline) to `path`, atomically via a rename.
fn write_pid_file(path: &str) {
    let tmp = format!("{path}.tmp{}", process::id());
    let written =
        std::fs::write(&tmp, process::id().to_string()).and_then(|()| std::fs::rename(&tmp, path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        eprintln!("fixture: cannot write pid file {path:?}: {e}");
        process::exit(2);
    }
}

fn main() {
    let o = OPTS.get_or_init(parse_opts);
    if let Some(path) = &o.crash_at_start_if {
        if std::path::Path::new(path).exists() {
            eprintln!("fixture: crashing at start ({path} exists)");
            process::exit(3);
        }
    }
    if o.ignore_sigterm {
        // SAFETY: installing SIG_IGN runs no handler code.
        unsafe { libc::signal(libc::SIGTERM, libc::SIG_IGN) };
    }
    // After the signal setup: once the file exists, SIGTERM is already ignored.
    if let Some(path) = &o.print_pid_file {
        write_pid_file(path);
    }
    if o.stderr_flood_mb > 0 {
        let bytes = o.stderr_flood_mb.saturating_mul(1 << 20);
        thread::spawn(move || tools::write_noise(bytes));
    }
    match &o.http {
        Some(addr) => http::run(addr),
        None => stdio::run(),
    }
}
