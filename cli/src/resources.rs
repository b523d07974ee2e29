//! `toolnexus resources`, `read`, `prompts`, `prompt` and `complete`: a config's
//! resources, resource templates and prompts as tables (or the library's JSON), one resource read
//! (text to stdout; a blob to a file, or as raw bytes to a stdout that is not a terminal), one
//! prompt's messages, and the values a server completes for a prompt's or a template's argument.

use crate::Fail;
use base64::Engine;
use serde_json::{Map, Value};
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;
use toolnexus::Client;

/// `println!` that fails (a closed pipe: `toolnexus prompts | head -1`) instead of panicking.
macro_rules! say {
    ($($t:tt)*) => {
        writeln!(std::io::stdout(), $($t)*).map_err(stdout_failed)
    };
}

fn stdout_failed(e: std::io::Error) -> Fail {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        // The reader went away (`toolnexus prompts | head -1`): done, quietly, as a pipe's
        // writer is.
        std::process::exit(0);
    }
    Fail(format!("cannot write to stdout: {e}"))
}

fn parse(text: &str, what: &str) -> Result<Value, Fail> {
    serde_json::from_str(text)
        .map_err(|e| Fail(format!("the library returned {what} that is not JSON: {e}")))
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Rows as columns padded to their widest cell (the last column unpadded).
fn table(rows: &[Vec<String>]) -> Result<(), Fail> {
    let cols = rows.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..cols)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    for r in rows {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            if c + 1 == cols {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:w$}  ", w = widths[c]));
            }
        }
        say!("{}", line.trim_end())?;
    }
    Ok(())
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").to_string()
}

/// `toolnexus resources [--templates] [--json]`.
pub(crate) fn resources(client: &Client, templates: bool, json: bool) -> Result<ExitCode, Fail> {
    for line in crate::failed_servers(client) {
        eprintln!("toolnexus: {line}");
    }
    let text = if templates {
        client.list_resource_templates()?
    } else {
        client.list_resources()?
    };
    if json {
        say!("{text}")?;
        return Ok(ExitCode::SUCCESS);
    }
    let items = parse(&text, "a listing")?;
    let items = items.as_array().map(Vec::as_slice).unwrap_or(&[]);
    if items.is_empty() {
        say!(
            "{}",
            if templates {
                "(no resource templates)"
            } else {
                "(no resources)"
            }
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    let key = if templates { "uriTemplate" } else { "uri" };
    let rows: Vec<Vec<String>> = items
        .iter()
        .map(|r| {
            let title = r
                .get("title")
                .or_else(|| r.get("name"))
                .and_then(Value::as_str)
                .unwrap_or("");
            let about = match str_of(r, "description") {
                "" => title.to_string(),
                d => format!("{title}: {}", first_line(d)),
            };
            vec![
                str_of(r, "server").to_string(),
                str_of(r, key).to_string(),
                str_of(r, "mimeType").to_string(),
                about,
            ]
        })
        .collect();
    table(&rows)?;
    Ok(ExitCode::SUCCESS)
}

/// `toolnexus read SERVER URI [-o FILE] [--json]`: each text content to stdout; each blob to
/// FILE (one blob at most), else raw to stdout when it is not a terminal. A blob bound for a
/// terminal is refused before anything is written.
pub(crate) fn read(
    client: &Client,
    server: &str,
    uri: &str,
    out: Option<&Path>,
    json: bool,
) -> Result<ExitCode, Fail> {
    let text = client.read_resource(server, uri)?;
    if json {
        say!("{text}")?;
        return Ok(ExitCode::SUCCESS);
    }
    let v = parse(&text, "a read")?;
    let contents = v
        .get("contents")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let blobs: Vec<&Value> = contents
        .iter()
        .filter(|c| c.get("blob").is_some())
        .collect();
    match out {
        Some(path) if blobs.len() > 1 => {
            return Err(Fail(format!(
                "{uri} has {} binary contents; -o {} takes one (see them with --json)",
                blobs.len(),
                path.display()
            )))
        }
        None if !blobs.is_empty() && std::io::stdout().is_terminal() => {
            let b = blobs[0];
            let mime = match str_of(b, "mimeType") {
                "" => String::new(),
                m => format!("{m}, "),
            };
            let size = base64::engine::general_purpose::STANDARD
                .decode(str_of(b, "blob"))
                .map_or(0, |d| d.len());
            return Err(Fail(format!(
                "{} is binary ({mime}{size} bytes): not written to a terminal; \
                 write it to a file with -o FILE, or redirect stdout",
                str_of(b, "uri"),
            )));
        }
        _ => {}
    }
    let mut stdout = std::io::stdout().lock();
    let write_err = |e: std::io::Error| {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0); // the reader went away: done, quietly
        }
        Fail(format!("cannot write the contents: {e}"))
    };
    for c in &contents {
        if let Some(b) = c.get("blob").and_then(Value::as_str) {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b)
                .map_err(|e| {
                    Fail(format!(
                        "the blob of {} is not base64: {e}",
                        str_of(c, "uri")
                    ))
                })?;
            match out {
                Some(path) => {
                    std::fs::write(path, &bytes)
                        .map_err(|e| Fail(format!("cannot write {}: {e}", path.display())))?;
                    eprintln!(
                        "toolnexus: {} ({} bytes) written to {}",
                        str_of(c, "uri"),
                        bytes.len(),
                        path.display()
                    );
                }
                None => stdout.write_all(&bytes).map_err(write_err)?,
            }
        } else if let Some(t) = c.get("text").and_then(Value::as_str) {
            stdout.write_all(t.as_bytes()).map_err(write_err)?;
            if !t.ends_with('\n') && !t.is_empty() {
                stdout.write_all(b"\n").map_err(write_err)?;
            }
        }
    }
    stdout.flush().map_err(write_err)?;
    Ok(ExitCode::SUCCESS)
}

/// `toolnexus prompts [--json]`.
pub(crate) fn prompts(client: &Client, json: bool) -> Result<ExitCode, Fail> {
    for line in crate::failed_servers(client) {
        eprintln!("toolnexus: {line}");
    }
    let text = client.list_prompts()?;
    if json {
        say!("{text}")?;
        return Ok(ExitCode::SUCCESS);
    }
    let v = parse(&text, "prompts")?;
    let items = v.as_array().map(Vec::as_slice).unwrap_or(&[]);
    if items.is_empty() {
        say!("(no prompts)")?;
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<Vec<String>> = items
        .iter()
        .map(|p| {
            // Arguments as `name=` (required) and `[lang=]`, the way `prompt` takes them.
            let args: Vec<String> = p
                .get("arguments")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|a| {
                    let n = str_of(a, "name");
                    if a.get("required").and_then(Value::as_bool) == Some(true) {
                        format!("{n}=")
                    } else {
                        format!("[{n}=]")
                    }
                })
                .collect();
            vec![
                str_of(p, "name").to_string(),
                args.join(" "),
                first_line(str_of(p, "description")),
            ]
        })
        .collect();
    table(&rows)?;
    Ok(ExitCode::SUCCESS)
}

/// `key=value` words as a JSON object of strings (a value may hold `=`; a key given twice, or
/// a word without `=`, is a usage error).
pub(crate) fn key_values(words: &[String]) -> Result<Map<String, Value>, Fail> {
    let mut m = Map::new();
    for w in words {
        let Some((k, v)) = w.split_once('=') else {
            return Err(Fail(format!("`{w}`: arguments are key=value")));
        };
        if k.is_empty() {
            return Err(Fail(format!("`{w}`: an argument needs a name before `=`")));
        }
        if m.insert(k.to_string(), Value::String(v.to_string()))
            .is_some()
        {
            return Err(Fail(format!("argument `{k}` given twice")));
        }
    }
    Ok(m)
}

/// `toolnexus prompt NAME key=value… [--json]`: each message as a `[role]` line, then its
/// content: a text block as its text, any other block as one line of JSON.
pub(crate) fn prompt(
    client: &Client,
    name: &str,
    args: &[String],
    json: bool,
) -> Result<ExitCode, Fail> {
    let args = Value::Object(key_values(args)?).to_string();
    let text = client.get_prompt(name, Some(&args))?;
    if json {
        say!("{text}")?;
        return Ok(ExitCode::SUCCESS);
    }
    let v = parse(&text, "a prompt")?;
    for m in v
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        say!("[{}]", str_of(m, "role"))?;
        let content = m.get("content").unwrap_or(&Value::Null);
        match (
            str_of(content, "type"),
            content.get("text").and_then(Value::as_str),
        ) {
            ("text", Some(t)) if t.ends_with('\n') => {
                write!(std::io::stdout(), "{t}").map_err(stdout_failed)?
            }
            ("text", Some(t)) => say!("{t}")?,
            _ => say!("{content}")?,
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `toolnexus complete SERVER prompt|resource REF ARG PREFIX [key=value…]`: the values, one a
/// line. A prompt's REF is its name on the server or its host name (`toolnexus prompts`); a
/// resource's is a template (`toolnexus resources --templates`) or a uri.
pub(crate) fn complete(
    client: &Client,
    server: &str,
    kind: &str,
    reference: &str,
    argument: &str,
    prefix: &str,
    context: &[String],
) -> Result<ExitCode, Fail> {
    let context = key_values(context)?;
    let r = match kind {
        "prompt" => {
            // A host name (fx_greet) of this server's prompt is taken for its own name (greet).
            let listed = parse(&client.list_prompts()?, "prompts")?;
            let own = listed
                .as_array()
                .into_iter()
                .flatten()
                .find(|p| str_of(p, "server") == server && str_of(p, "name") == reference)
                .map_or(reference, |p| str_of(p, "prompt"));
            serde_json::json!({"type": "ref/prompt", "name": own})
        }
        "resource" => serde_json::json!({"type": "ref/resource", "uri": reference}),
        other => {
            return Err(Fail(format!(
                "`{other}`: complete takes `prompt` or `resource`"
            )))
        }
    };
    let mut request = serde_json::json!({
        "server": server,
        "ref": r,
        "argument": {"name": argument, "value": prefix},
    });
    if !context.is_empty() {
        request["context"] = serde_json::json!({ "arguments": context });
    }
    let v = parse(&client.complete(&request.to_string())?, "a completion")?;
    for value in v
        .get("values")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match value.as_str() {
            Some(s) => say!("{s}")?,
            None => say!("{value}")?,
        }
    }
    Ok(ExitCode::SUCCESS)
}
