//! Tool naming (§0.1): `sanitize(server) + "_" + sanitize(tool)`.

/// Replaces every Unicode code point outside `[a-zA-Z0-9_-]` with one `_` (§0.1: an emoji is
/// one `_`, not two, so the walk is over `char`s, not bytes or UTF-16 units).
pub fn sanitize(name: &str) -> String {
    // Most names need no change: copied whole rather than rebuilt a char at a time.
    if name.bytes().all(allowed) {
        return name.to_string();
    }
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn allowed(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// The host-visible name of `tool` on `server` (§0.1).
pub fn tool_name(server: &str, tool: &str) -> String {
    if server.bytes().all(allowed) && tool.bytes().all(allowed) {
        let mut out = String::with_capacity(server.len() + 1 + tool.len());
        out.push_str(server);
        out.push('_');
        out.push_str(tool);
        return out;
    }
    let mut out = sanitize(server);
    out.push('_');
    out.push_str(&sanitize(tool));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_underscore_per_code_point() {
        assert_eq!(sanitize("emoji😀"), "emoji_");
        assert_eq!(sanitize("a.b c"), "a_b_c");
        assert_eq!(sanitize("ok-_9"), "ok-_9");
        assert_eq!(tool_name("my server", "do.it"), "my_server_do_it");
    }
}
