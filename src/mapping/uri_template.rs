//! RFC 6570 URI templates (levels 1-4) for a host's resource picker: no schema lists a
//! resource template's variables, so a host reads them here, and expands the template with
//! the values its user gave, each encoded as RFC 3986 and the operator require (a `/` in a
//! `{var}` value is `%2F`, not a second path segment). The parser and expander are
//! `iri-string`'s; this file only maps JSON in and out. Pure.

use iri_string::spec::UriSpec;
use iri_string::template::simple_context::{SimpleContext, Value as TValue};
use iri_string::template::UriTemplateStr;
use serde_json::{Map, Value};

/// The longest template read (a host's picker has no use for more; bounds the work).
const MAX_TEMPLATE: usize = 64 * 1024;

/// `{"template":"…","values"?:{…}}` → `{"variables":[…],"uri"?:"…"}`: the template's variable
/// names, each once, in order of first use; with `values`, its expansion. A value is a string,
/// a number or boolean (its JSON text), a list of those, or an object of them (an associative
/// array); null or absent is undefined.
pub(crate) fn template(request: &Value) -> Result<Value, String> {
    let Some(t) = request.get("template").and_then(Value::as_str) else {
        return Err("`template` must be a string".into());
    };
    if t.len() > MAX_TEMPLATE {
        return Err(format!(
            "`template` is {} bytes, over the {MAX_TEMPLATE} read",
            t.len()
        ));
    }
    let tpl = UriTemplateStr::new(t)
        .map_err(|e| format!("`template` is not an RFC 6570 URI template: {e}"))?;
    let mut names: Vec<Value> = Vec::new();
    for v in tpl.variables() {
        let name = Value::String(v.as_str().to_string());
        if !names.contains(&name) {
            names.push(name);
        }
    }
    let mut out = Map::new();
    out.insert("variables".into(), Value::Array(names));
    match request.get("values") {
        None | Some(Value::Null) => {}
        Some(Value::Object(values)) => {
            let mut ctx = SimpleContext::new();
            for (k, v) in values {
                ctx.insert(k.as_str(), value(k, v)?);
            }
            let uri = tpl
                .expand::<UriSpec, _>(&ctx)
                .map_err(|e| format!("the template could not be expanded: {e}"))?
                .to_string();
            out.insert("uri".into(), Value::String(uri));
        }
        Some(_) => return Err("`values` must be an object".into()),
    }
    Ok(Value::Object(out))
}

fn scalar(k: &str, v: &Value) -> Result<String, String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        _ => Err(format!(
            "`values.{k}`: a list or object member must be a string, number or boolean"
        )),
    }
}

fn value(k: &str, v: &Value) -> Result<TValue, String> {
    Ok(match v {
        Value::Null => TValue::Undefined,
        Value::Array(a) => TValue::List(a.iter().map(|x| scalar(k, x)).collect::<Result<_, _>>()?),
        Value::Object(o) => TValue::Assoc(
            o.iter()
                .map(|(ik, x)| scalar(k, x).map(|s| (ik.clone(), s)))
                .collect::<Result<_, _>>()?,
        ),
        other => TValue::String(scalar(k, other)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(v: Value) -> Value {
        template(&v).unwrap()
    }

    #[test]
    fn the_variables_in_order_each_once() {
        assert_eq!(
            run(json!({"template":"demo://x/{resourceId}{?q,lang}{&q}"})),
            json!({"variables":["resourceId","q","lang"]})
        );
    }

    #[test]
    fn rfc_6570_examples_at_every_level() {
        let values = json!({"var":"value","hello":"Hello World!","path":"/foo/bar",
            "list":["red","green","blue"],"keys":{"semi":";","dot":".","comma":","},"x":1024,"y":768});
        for (t, want) in [
            ("{var}", "value"),
            ("{hello}", "Hello%20World%21"),
            ("{+path}/here", "/foo/bar/here"),
            ("{#path,x}/here", "#/foo/bar,1024/here"),
            ("{.list}", ".red,green,blue"),
            ("{/list*}", "/red/green/blue"),
            ("{;x,y}", ";x=1024;y=768"),
            ("{?x,y,undef}", "?x=1024&y=768"),
            ("{?keys*}", "?semi=%3B&dot=.&comma=%2C"),
            ("{var:3}", "val"),
        ] {
            let got = run(json!({"template": t, "values": values}));
            assert_eq!(got["uri"], json!(want), "{t}");
        }
    }

    #[test]
    fn a_slash_in_a_simple_value_stays_one_segment() {
        let got = run(json!({"template":"demo://res/{id}","values":{"id":"a/b c"}}));
        assert_eq!(got["uri"], json!("demo://res/a%2Fb%20c"));
    }

    #[test]
    fn bad_input_names_what_is_wrong() {
        assert!(template(&json!({})).unwrap_err().contains("`template`"));
        assert!(template(&json!({"template":"{unclosed"}))
            .unwrap_err()
            .contains("RFC 6570"));
        assert!(template(&json!({"template":"{a}","values":[]}))
            .unwrap_err()
            .contains("`values`"));
        assert!(
            template(&json!({"template":"{a}","values":{"a":[{"x":1}]}}))
                .unwrap_err()
                .contains("values.a")
        );
    }
}
