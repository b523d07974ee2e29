//! A SKILL.md's YAML frontmatter read as JSON (SEP-2640), within limits checked on the
//! parser's events before any value is built: a server's file cannot exhaust the host's memory
//! (aliases) or stack (nesting).

use serde_json::{Map, Value};

/// A SKILL.md's YAML frontmatter as JSON: an optional BOM, a `---` line, the YAML, a `---` line
/// (as the Agent Skills format and the conformance suite read it), a mapping at the top.
pub(crate) fn frontmatter(text: &str) -> Result<Map<String, Value>, String> {
    let t = text.strip_prefix('\u{feff}').unwrap_or(text);
    let body = t
        .strip_prefix("---\n")
        .or_else(|| t.strip_prefix("---\r\n"))
        .ok_or("it does not begin with YAML frontmatter (a `---` line)")?;
    let mut end = None;
    let mut at = 0;
    for line in body.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        if bare.trim_end_matches([' ', '\t']) == "---" {
            end = Some(at);
            break;
        }
        at += line.len();
    }
    let yaml = &body[..end.ok_or("its YAML frontmatter has no closing `---` line")?];
    shape_ok(yaml)?;
    let docs = yaml_rust2::YamlLoader::load_from_str(yaml)
        .map_err(|e| format!("its YAML frontmatter does not parse: {e}"))?;
    match docs.into_iter().next() {
        None | Some(yaml_rust2::Yaml::Null) => Ok(Map::new()),
        Some(y) => match json_of(y)? {
            Value::Object(m) => Ok(m),
            _ => Err("its YAML frontmatter is not a mapping".into()),
        },
    }
}

/// Limits on a frontmatter, checked on the parser's events before any tree is built: the
/// loader copies an alias's node wherever it is used (a kilobyte of nested aliases is 10^8
/// nodes), and the tree is walked and dropped recursively (deep nesting would overflow the
/// stack of the host's thread). A skill's frontmatter is a few fields; these are generous.
const MAX_FRONTMATTER_BYTES: usize = 64 * 1024;
const MAX_YAML_DEPTH: usize = 64;
const MAX_YAML_NODES: usize = 10_000;

/// Refuses a frontmatter past the limits, or with an alias, before it is loaded: its events
/// are pulled one by one (the parser's own `load` recurses per level, so it is not used), and
/// the first limit passed ends the read.
fn shape_ok(yaml: &str) -> Result<(), String> {
    use yaml_rust2::parser::{Event, Parser};
    if yaml.len() > MAX_FRONTMATTER_BYTES {
        return Err(format!(
            "its YAML frontmatter is {} bytes, more than the {MAX_FRONTMATTER_BYTES} read",
            yaml.len()
        ));
    }
    let mut parser = Parser::new_from_str(yaml);
    let (mut depth, mut nodes) = (0usize, 0usize);
    loop {
        let (ev, _) = parser
            .next_token()
            .map_err(|e| format!("its YAML frontmatter does not parse: {e}"))?;
        match ev {
            Event::StreamEnd => return Ok(()),
            Event::Alias(_) => {
                return Err("its YAML frontmatter uses an alias (`*name`), which is not read: aliases can expand without bound".into())
            }
            Event::Scalar(..) => nodes += 1,
            Event::SequenceStart(..) | Event::MappingStart(..) => {
                nodes += 1;
                depth += 1;
                if depth > MAX_YAML_DEPTH {
                    return Err(format!(
                        "its YAML frontmatter nests deeper than {MAX_YAML_DEPTH} levels"
                    ));
                }
            }
            Event::SequenceEnd | Event::MappingEnd => depth = depth.saturating_sub(1),
            _ => {}
        }
        if nodes > MAX_YAML_NODES {
            return Err(format!(
                "its YAML frontmatter has more than {MAX_YAML_NODES} values"
            ));
        }
    }
}

/// A YAML value as JSON (YAML 1.2 core schema); what JSON cannot hold is an error.
fn json_of(y: yaml_rust2::Yaml) -> Result<Value, String> {
    use yaml_rust2::Yaml;
    Ok(match y {
        Yaml::Null => Value::Null,
        Yaml::Boolean(b) => Value::Bool(b),
        Yaml::Integer(i) => Value::from(i),
        Yaml::String(s) => Value::String(s),
        Yaml::Real(r) => {
            let f = Yaml::Real(r.clone())
                .as_f64()
                .filter(|f| f.is_finite())
                .ok_or_else(|| {
                    format!(
                        "its YAML frontmatter holds `{}`, which JSON cannot",
                        crate::util::quoted(&r)
                    )
                })?;
            serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
        }
        Yaml::Array(items) => {
            Value::Array(items.into_iter().map(json_of).collect::<Result<_, _>>()?)
        }
        Yaml::Hash(h) => {
            let mut m = Map::new();
            for (k, v) in h {
                let key = match k {
                    Yaml::String(s) | Yaml::Real(s) => s,
                    Yaml::Integer(i) => i.to_string(),
                    Yaml::Boolean(b) => b.to_string(),
                    Yaml::Null => "null".to_string(),
                    _ => return Err("its YAML frontmatter has a key that is not a scalar".into()),
                };
                m.insert(key, json_of(v)?);
            }
            Value::Object(m)
        }
        Yaml::Alias(_) | Yaml::BadValue => {
            return Err("its YAML frontmatter has a value that cannot be read".into())
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server's SKILL.md cannot exhaust memory or the stack through its frontmatter: the
    /// loader would expand these aliases to 9^9 nodes, and walk and drop the nesting
    /// recursively (each was an abort of the host before the limits).
    #[test]
    #[cfg_attr(miri, ignore = "inputs of 64 KiB and deep nesting: minutes under Miri")]
    fn frontmatter_bombs_are_refused_before_loading() {
        let mut laughs =
            String::from("---\nname: x\na0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
        for i in 1..9 {
            let p = i - 1;
            laughs.push_str(&format!(
                "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
            ));
        }
        laughs.push_str("---\n");
        let why = frontmatter(&laughs).unwrap_err();
        assert!(why.contains("uses an alias"), "{why}");
        let deep = format!("---\nz:\n{}x\n---\n", "- ".repeat(100_000));
        let why = frontmatter(&deep).unwrap_err();
        assert!(why.contains("more than the 65536 read"), "{why}");
        let nested = format!("---\nz: {}x{}\n---\n", "[".repeat(65), "]".repeat(65));
        let why = frontmatter(&nested).unwrap_err();
        assert!(why.contains("deeper than 64"), "{why}");
        let block = format!("---\nz:\n{}x\n---\n", "- ".repeat(20_000));
        let why = frontmatter(&block).unwrap_err();
        assert!(why.contains("deeper than 64"), "{why}");
        let wide = format!("---\nz: [{}]\n---\n", "1,".repeat(10_001));
        let why = frontmatter(&wide).unwrap_err();
        assert!(why.contains("more than 10000 values"), "{why}");
        // An anchor that is never used is harmless, and read.
        assert_eq!(frontmatter("---\nname: &n x\n---\n").unwrap()["name"], "x");
    }
}
