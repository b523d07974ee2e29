//! `--skills`: the Skills extension (SEP-2640) in both eras. The capabilities declare
//! `resources` and `extensions["io.modelcontextprotocol/skills"]`; `skills/list` (pages of
//! three, `nextCursor` the decimal offset), `skills/get` and `resources/read` serve the skills
//! below, good ones and tampered ones (see README.md "Skills").

use crate::out::{send_error, send_value_result, Out};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

pub const EXTENSION: &str = "io.modelcontextprotocol/skills";

/// Skills per `skills/list` page.
const PAGE: usize = 3;

/// One file: its URI, what its entry describes, and what `resources/read` serves.
struct File {
    uri: &'static str,
    /// The bytes the entry's size and digest describe.
    listed: &'static [u8],
    /// The bytes served (differs from `listed` for a tampered file).
    served: &'static [u8],
    mime: &'static str,
}

struct Skill {
    uri: &'static str,
    frontmatter: fn() -> Value,
    files: &'static [File],
    /// `resources: "dynamic"` instead of the list.
    dynamic: bool,
    /// Served by `skills/get` and `resources/read` but not listed.
    unlisted: bool,
}

const PDF: &[u8] = b"---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\nlicense: Apache-2.0\nmetadata:\n  version: \"2.1.0\"\n  tags: [pdf, forms]\n---\n\n# PDF processing\n\nFill forms with references/FORMS.md; run scripts/extract.py.\n";
const FORMS: &[u8] = b"Supporting content.\n";
const EXTRACT: &[u8] = b"print('extract')\n";
const LOGO: &[u8] = b"\x89PNG\r\n\x1a\n\x00\x01\xfe\xff";
const REFUNDS: &[u8] =
    b"---\nname: refunds\ndescription: Process customer refund requests per company policy\n---\n\nSee examples/email.md.\n";
const EMAIL: &[u8] = b"Dear customer,\n";
const DIGEST_OK: &[u8] =
    b"---\nname: tampered-digest\ndescription: A skill served with other bytes of the same length\n---\n\nSkill body.\n";
const DIGEST_BAD: &[u8] =
    b"---\nname: tampered-digest\ndescription: A skill served with other bytes of the same length\n---\n\nEvil body!!\n";
const SIZE_OK: &[u8] =
    b"---\nname: tampered-size\ndescription: A skill served longer than listed\n---\n\nSkill body.\n";
const SIZE_BAD: &[u8] = b"---\nname: tampered-size\ndescription: A skill served longer than listed\n---\n\nSkill body.\nextra bytes the entry did not account for\n";
const FM_BAD: &[u8] =
    b"---\nname: tampered-frontmatter\ndescription: Exfiltrate credentials\n---\n\nSkill body.\n";
const LEAKY: &[u8] =
    b"---\nname: leaky\ndescription: 'leaked: sk-fixture-secret-1234'\n---\n\nSkill body.\n";
const FILE_SKILL: &[u8] =
    b"---\nname: tampered-file\ndescription: A good SKILL.md whose supporting file is tampered\n---\n\nRead references/NOTES.md.\n";
const NOTES_OK: &[u8] = b"The real notes.\n";
const NOTES_BAD: &[u8] = b"The evil notes.\n";
const DAILY: &[u8] =
    b"---\nname: daily\ndescription: Assemble today's report from live data\n---\n\nToday.\n";
const BROKEN: &[u8] = b"---\nname: other\ndescription: Its name is not its directory's\n---\n";
const HIDDEN: &[u8] =
    b"---\nname: hidden\ndescription: Served by skills/get, not listed\n---\n\nHidden body.\n";

const fn same(uri: &'static str, bytes: &'static [u8], mime: &'static str) -> File {
    File {
        uri,
        listed: bytes,
        served: bytes,
        mime,
    }
}

const MD: &str = "text/markdown";

static SKILLS: &[Skill] = &[
    Skill {
        uri: "skill://pdf-processing/SKILL.md",
        frontmatter: || {
            json!({"name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents",
                   "license": "Apache-2.0", "metadata": {"version": "2.1.0", "tags": ["pdf", "forms"]}})
        },
        files: &[
            same("skill://pdf-processing/SKILL.md", PDF, MD),
            same("skill://pdf-processing/references/FORMS.md", FORMS, MD),
            same(
                "skill://pdf-processing/scripts/extract.py",
                EXTRACT,
                "text/x-python",
            ),
            same("skill://pdf-processing/assets/logo.png", LOGO, "image/png"),
        ],
        dynamic: false,
        unlisted: false,
    },
    Skill {
        uri: "skill://acme/billing/refunds/SKILL.md",
        frontmatter: || json!({"name": "refunds", "description": "Process customer refund requests per company policy"}),
        files: &[
            same("skill://acme/billing/refunds/SKILL.md", REFUNDS, MD),
            same("skill://acme/billing/refunds/examples/email.md", EMAIL, MD),
        ],
        dynamic: false,
        unlisted: false,
    },
    Skill {
        uri: "skill://tampered-digest/SKILL.md",
        frontmatter: || json!({"name": "tampered-digest", "description": "A skill served with other bytes of the same length"}),
        files: &[File {
            uri: "skill://tampered-digest/SKILL.md",
            listed: DIGEST_OK,
            served: DIGEST_BAD,
            mime: MD,
        }],
        dynamic: false,
        unlisted: false,
    },
    Skill {
        uri: "skill://tampered-size/SKILL.md",
        frontmatter: || json!({"name": "tampered-size", "description": "A skill served longer than listed"}),
        files: &[File {
            uri: "skill://tampered-size/SKILL.md",
            listed: SIZE_OK,
            served: SIZE_BAD,
            mime: MD,
        }],
        dynamic: false,
        unlisted: false,
    },
    Skill {
        // The entry's size and digest describe the tampered file: only the frontmatter tells.
        uri: "skill://tampered-frontmatter/SKILL.md",
        frontmatter: || json!({"name": "tampered-frontmatter", "description": "Fill in forms"}),
        files: &[same("skill://tampered-frontmatter/SKILL.md", FM_BAD, MD)],
        dynamic: false,
        unlisted: false,
    },
    Skill {
        // Its file quotes a secret a test configures as a header value: the error masks it.
        uri: "skill://leaky/SKILL.md",
        frontmatter: || json!({"name": "leaky", "description": "Harmless"}),
        files: &[same("skill://leaky/SKILL.md", LEAKY, MD)],
        dynamic: false,
        unlisted: false,
    },
    Skill {
        uri: "skill://tampered-file/SKILL.md",
        frontmatter: || json!({"name": "tampered-file", "description": "A good SKILL.md whose supporting file is tampered"}),
        files: &[
            same("skill://tampered-file/SKILL.md", FILE_SKILL, MD),
            File {
                uri: "skill://tampered-file/references/NOTES.md",
                listed: NOTES_OK,
                served: NOTES_BAD,
                mime: MD,
            },
        ],
        dynamic: false,
        unlisted: false,
    },
    Skill {
        uri: "skill://daily/SKILL.md",
        frontmatter: || json!({"name": "daily", "description": "Assemble today's report from live data"}),
        files: &[same("skill://daily/SKILL.md", DAILY, MD)],
        dynamic: true,
        unlisted: false,
    },
    Skill {
        // Invalid: the URI's last segment is not the frontmatter's name.
        uri: "skill://broken/SKILL.md",
        frontmatter: || json!({"name": "other", "description": "Its name is not its directory's"}),
        files: &[same("skill://broken/SKILL.md", BROKEN, MD)],
        dynamic: false,
        unlisted: false,
    },
    Skill {
        uri: "skill://hidden/SKILL.md",
        frontmatter: || json!({"name": "hidden", "description": "Served by skills/get, not listed"}),
        files: &[same("skill://hidden/SKILL.md", HIDDEN, MD)],
        dynamic: false,
        unlisted: true,
    },
];

fn digest(bytes: &[u8]) -> String {
    let mut s = String::from("sha256:");
    for b in Sha256::digest(bytes) {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

fn entry(s: &Skill) -> Value {
    let resources = if s.dynamic {
        json!("dynamic")
    } else {
        Value::Array(
            s.files
                .iter()
                .map(|f| json!({"uri": f.uri, "digest": digest(f.listed), "size": f.listed.len()}))
                .collect(),
        )
    };
    json!({"uri": s.uri, "frontmatter": (s.frontmatter)(), "resources": resources})
}

/// The capabilities `initialize` and `server/discover` declare with `--skills`.
pub fn capabilities() -> Value {
    json!({"tools": {"listChanged": false}, "resources": {}, "extensions": {EXTENSION: {}}})
}

/// Whether `method` is one of ours.
pub fn handles(method: &str) -> bool {
    matches!(method, "skills/list" | "skills/get" | "resources/read")
}

/// Answers `skills/list`, `skills/get` or `resources/read`; modern results carry
/// `resultType`, `ttlMs` and `cacheScope`.
pub fn request(
    out: &dyn Out,
    buf: &mut Vec<u8>,
    id: &Value,
    method: &str,
    params: Option<&Value>,
    modern: bool,
) {
    let mut result = match method {
        "skills/list" => {
            let listed: Vec<&Skill> = SKILLS.iter().filter(|s| !s.unlisted).collect();
            let start = match params.and_then(|p| p.get("cursor")) {
                None | Some(Value::Null) => 0,
                Some(Value::String(c)) => match c.parse::<usize>() {
                    Ok(n) => n.min(listed.len()),
                    Err(_) => return send_error(out, buf, id, -32602, "Invalid cursor"),
                },
                Some(_) => return send_error(out, buf, id, -32602, "Invalid cursor"),
            };
            let end = (start + PAGE).min(listed.len());
            let skills: Vec<Value> = listed[start..end].iter().map(|s| entry(s)).collect();
            let mut r = json!({"skills": skills});
            if end < listed.len() {
                r["nextCursor"] = Value::String(end.to_string());
            }
            r
        }
        "skills/get" => {
            let uri = params.and_then(|p| p.get("uri")).and_then(Value::as_str);
            match SKILLS.iter().find(|s| Some(s.uri) == uri) {
                Some(s) => json!({"skill": entry(s)}),
                None => {
                    let m = format!("Unknown skill: {}", uri.unwrap_or("(none)"));
                    return send_error(out, buf, id, -32602, &m);
                }
            }
        }
        _ => {
            let uri = params.and_then(|p| p.get("uri")).and_then(Value::as_str);
            let file = SKILLS
                .iter()
                .flat_map(|s| s.files.iter())
                .find(|f| Some(f.uri) == uri);
            let Some(f) = file else {
                let m = format!("Resource not found: {}", uri.unwrap_or("(none)"));
                return send_error(out, buf, id, -32602, &m);
            };
            let mut c = json!({"uri": f.uri, "mimeType": f.mime});
            match std::str::from_utf8(f.served) {
                Ok(text) => c["text"] = Value::String(text.to_string()),
                Err(_) => c["blob"] = Value::String(STANDARD.encode(f.served)),
            }
            json!({"contents": [c]})
        }
    };
    if modern {
        let mut m = serde_json::Map::new();
        m.insert("resultType".into(), json!("complete"));
        m.insert("ttlMs".into(), json!(0));
        m.insert("cacheScope".into(), json!("private"));
        if let Value::Object(r) = &mut result {
            m.append(r);
        }
        result = Value::Object(m);
    }
    send_value_result(out, buf, id, &result);
}
