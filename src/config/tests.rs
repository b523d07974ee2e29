//! The config parser's tests (contract §2).

use super::expand::expand_env;
use super::*;
use std::time::Duration;

fn entries(t: &str) -> Vec<(String, ServerEntry)> {
    parse(t).unwrap()
}

#[test]
fn server_map_lookup_and_order() {
    let e = entries(r#"{"servers":{"b":{"command":["x"]},"a":{"url":"http://h"}}}"#);
    assert_eq!(e[0].0, "a");
    assert!(
        matches!(&e[0].1, ServerEntry::Enabled(s) if matches!(s.endpoint, Endpoint::Remote{..}))
    );
    let e = entries(r#"{"agents":{},"s":{"command":"npx","args":["-y","p"]}}"#);
    assert_eq!(e.len(), 1);
    match &e[0].1 {
        ServerEntry::Enabled(s) => assert_eq!(
            s.endpoint,
            Endpoint::Local {
                command: vec!["npx".into(), "-y".into(), "p".into()],
                env: vec![],
                cwd: None
            }
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn errors() {
    assert_eq!(parse("[]").unwrap_err().kind, ErrorKind::Config);
    assert_eq!(parse("nope").unwrap_err().kind, ErrorKind::InvalidJson);
    assert_eq!(
        parse(r#"{"mcpServers":[]}"#).unwrap_err().kind,
        ErrorKind::Config
    );
    let e = entries(
        r#"{"mcpServers":{"a":1,"b":{"command":["x"],"timeout":-1},"c":{"command":[1]},"d":{},"e":{"disabled":true,"command":5}}}"#,
    );
    let msg = |i: usize| match &e[i].1 {
        ServerEntry::Invalid(m) => m.clone(),
        other => panic!("{other:?}"),
    };
    assert!(msg(0).contains("object"));
    assert!(msg(1).contains("`timeout`"));
    assert!(msg(2).contains("`command`"));
    assert!(msg(3).contains("neither"));
    assert_eq!(e[4].1, ServerEntry::Disabled);
}

#[test]
fn tools_filter() {
    let f = |t: &str| match &entries(t)[0].1 {
        ServerEntry::Enabled(s) => s.tools.clone(),
        other => panic!("{other:?}"),
    };
    let only = f(r#"{"a":{"command":["x"],"tools":{"x":true,"y":false}}}"#);
    assert!(only.allows("x") && !only.allows("y") && !only.allows("z"));
    let but = f(r#"{"a":{"command":["x"],"tools":{"y":false}}}"#);
    assert!(but.allows("x") && !but.allows("y"));
    assert_eq!(f(r#"{"a":{"command":["x"],"tools":{}}}"#), ToolFilter::All);
}

#[test]
fn restart_and_log_level() {
    let spec = |t: &str| match &entries(t)[0].1 {
        ServerEntry::Enabled(s) => Ok(s.clone()),
        ServerEntry::Invalid(m) => Err(m.clone()),
        ServerEntry::Disabled => panic!("disabled"),
    };
    let d = spec(r#"{"a":{"command":["x"]}}"#).unwrap();
    assert_eq!(d.restart, Some(RestartPolicy::default()));
    assert_eq!(d.log_level, None);
    assert_eq!(
        spec(r#"{"a":{"command":["x"],"restart":false}}"#)
            .unwrap()
            .restart,
        None
    );
    let p = spec(r#"{"a":{"command":["x"],"restart":{"maxAttempts":2,"backoffMs":50},"logLevel":"warning"}}"#)
        .unwrap();
    assert_eq!(
        p.restart.map(|r| (r.max_attempts, r.backoff)),
        Some((2, Duration::from_millis(50)))
    );
    assert_eq!(p.log_level, Some(LogLevel::Warning));
    for (bad, says) in [
        (
            r#"{"a":{"command":["x"],"restart":3}}"#,
            "`restart` must be",
        ),
        (
            r#"{"a":{"command":["x"],"restart":{"maxAttempts":0}}}"#,
            "`restart.maxAttempts`",
        ),
        (
            r#"{"a":{"command":["x"],"restart":{"backoffMs":-1}}}"#,
            "`restart.backoffMs`",
        ),
        (
            r#"{"a":{"command":["x"],"restart":{"tries":1}}}"#,
            "`restart.tries`",
        ),
        (
            r#"{"a":{"command":["x"],"logLevel":"loud"}}"#,
            "`logLevel` must be one of",
        ),
    ] {
        let e = spec(bad).unwrap_err();
        assert!(e.contains(says), "{bad}: {e}");
    }
    let p = RestartPolicy::default();
    assert_eq!(p.delay(1), Duration::from_millis(500));
    assert_eq!(p.delay(3), Duration::from_millis(2000));
    assert_eq!(p.delay(40), RESTART_BACKOFF_CAP);
    assert!(LogLevel::Warning > LogLevel::Info && LogLevel::Emergency > LogLevel::Alert);
}

#[test]
fn env_expansion() {
    std::env::set_var("TN_TEST_SECRET", "s3cret");
    assert_eq!(expand_env("Bearer ${TN_TEST_SECRET}"), "Bearer s3cret");
    assert_eq!(expand_env("${TN_TEST_UNSET_X}x${"), "x${");
}
