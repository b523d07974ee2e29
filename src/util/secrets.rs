//! Secrets on the wire (contract §9): configured header values (and, later, tokens) are masked
//! in any server text we quote in an error or status, since a server may echo a request back.

/// What replaces a secret in quoted text.
pub const MASK: &str = "***";

/// The secret strings of one server, longest first (so a value that contains another is masked
/// whole).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Secrets {
    values: Vec<String>,
}

impl Secrets {
    /// The values of `headers`; for a value with an auth scheme (`Bearer abc`) the credential
    /// after the scheme as well, since a server may echo only that part.
    pub fn of_headers(headers: &[(String, String)]) -> Secrets {
        let mut values = Vec::new();
        for (_, v) in headers {
            let v = v.trim();
            if v.is_empty() {
                continue;
            }
            values.push(v.to_string());
            if let Some((_, cred)) = v.split_once(' ') {
                let cred = cred.trim();
                if !cred.is_empty() {
                    values.push(cred.to_string());
                }
            }
        }
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        values.dedup();
        Secrets { values }
    }

    /// Adds `value` (a token, code or secret obtained at run time), kept longest first. A value
    /// under 4 bytes is not added: masking it would mangle ordinary text, and none is that short.
    pub fn add(&mut self, value: &str) {
        if value.len() < 4 || self.values.iter().any(|v| v == value) {
            return;
        }
        self.values.push(value.to_string());
        self.values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    }

    /// `text` with every secret replaced by [`MASK`].
    pub fn mask(&self, text: &str) -> String {
        let mut out = text.to_string();
        for v in &self.values {
            if out.contains(v.as_str()) {
                out = out.replace(v.as_str(), MASK);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_values_and_bearer_credentials_are_masked() {
        let s = Secrets::of_headers(&[
            ("X-Api-Key".into(), "k-123456".into()),
            ("Authorization".into(), "Bearer tok-abcdef".into()),
            ("X-Empty".into(), "".into()),
        ]);
        assert_eq!(
            s.mask(r#"{"x-api-key":"k-123456","authorization":"Bearer tok-abcdef"} tok-abcdef"#),
            r#"{"x-api-key":"***","authorization":"***"} ***"#
        );
        assert_eq!(s.mask("nothing here"), "nothing here");
    }

    #[test]
    fn values_added_at_run_time_are_masked_longest_first() {
        let mut s = Secrets::default();
        s.add("tok-123");
        s.add("tok-123-refresh");
        s.add("abc"); // too short to mask without mangling text
        s.add("tok-123");
        assert_eq!(
            s.mask("a tok-123-refresh and tok-123, abc"),
            "a *** and ***, abc"
        );
    }
}
