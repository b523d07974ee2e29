//! The browser step (contract §8): the authorize URL goes to the host's resolver as a
//! `kind:"authorization"` Request with `data: {server, source:"oauth"}`; the code comes back on
//! the library's loopback listener (default), or in the Answer's `data.redirect` when the host
//! catches the redirect itself (`auth.redirectUri`). The login waits at most
//! `elicitationTimeout`; a deferred answer works as for elicitation.

use crate::responder::{self, Finish};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// What the login waits for.
enum Event {
    /// The query of a request to the loopback `/callback`.
    Callback(String),
    /// The resolver's responder ended.
    Answer(Finish),
}

/// A loopback redirect listener on 127.0.0.1 (§8), bound before registration.
pub(super) struct Loopback {
    listener: Option<TcpListener>,
    pub port: u16,
    stop: Arc<AtomicBool>,
}

impl Loopback {
    /// Binds `port` (0: any free one).
    pub fn bind(port: u16) -> std::io::Result<Loopback> {
        let listener = TcpListener::bind(("127.0.0.1", port))?;
        let port = listener.local_addr()?.port();
        Ok(Loopback {
            listener: Some(listener),
            port,
            stop: Arc::new(AtomicBool::new(false)),
        })
    }

    pub fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}/callback", self.port)
    }

    /// Serves `/callback` on a thread of its own until [`Loopback`] is dropped, handing each
    /// callback query to `tx`.
    fn serve(&mut self, tx: mpsc::UnboundedSender<Event>) {
        let Some(listener) = self.listener.take() else {
            return;
        };
        let stop = self.stop.clone();
        let _ = crate::util::spawn("tn-auth-loopback", move || {
            for stream in listener.incoming() {
                if stop.load(Ordering::Acquire) {
                    break;
                }
                if let Ok(s) = stream {
                    if let Some(query) = answer_callback(s) {
                        let _ = tx.send(Event::Callback(query));
                    }
                }
            }
        });
    }
}

impl Drop for Loopback {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // Wakes the accept loop so that it sees the flag.
        let _ = TcpStream::connect_timeout(
            &std::net::SocketAddr::from(([127, 0, 0, 1], self.port)),
            Duration::from_millis(200),
        );
    }
}

/// Reads one HTTP request; for `GET /callback?…` answers a page and returns the query.
fn answer_callback(mut s: TcpStream) -> Option<String> {
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let mut buf = Vec::new();
    let mut chunk = [0u8; 2048];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 16 * 1024 {
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let head = String::from_utf8_lossy(&buf);
    let line = head.lines().next().unwrap_or("");
    let mut parts = line.split(' ');
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    if method != "GET" || path != "/callback" {
        let _ = s
            .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        return None;
    }
    let body = "<!doctype html><title>Signed in</title><p>The login is complete; you can close this window.</p>";
    let _ = s.write_all(
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    );
    Some(query.to_string())
}

/// How the browser step ended.
pub(super) enum Outcome {
    /// The redirect's query string.
    Redirect(String),
    Failed(String),
}

/// The §10 Request for a login.
pub(super) fn request_json(id: &str, server: &str, url: &str) -> String {
    serde_json::json!({
        "id": id,
        "kind": "authorization",
        "prompt": format!("Sign in to `{server}` in the browser."),
        "url": url,
        "data": {"server": server, "source": "oauth"},
    })
    .to_string()
}

/// Asks the host to open `url`, then waits for the redirect (loopback or the answer's
/// `data.redirect`), at most `elicitationTimeout`.
pub(super) async fn browser_step(
    host: &dyn super::LoginHost,
    server: &str,
    url: &str,
    loopback: Option<&mut Loopback>,
) -> Outcome {
    let (tx, mut rx) = mpsc::unbounded_channel::<Event>();
    let with_loopback = loopback.is_some();
    if let Some(l) = loopback {
        l.serve(tx.clone());
    }
    let id = crate::mapping::elicitation::next_request_id();
    let json = request_json(&id, server, url);
    let answer_tx = tx.clone();
    let (Some(patience), Some(token)) = (
        host.patience(),
        host.ask(
            id,
            json,
            Box::new(move |f| {
                let _ = answer_tx.send(Event::Answer(f));
            }),
        ),
    ) else {
        return Outcome::Failed("cannot ask the host to log in (no resolver is registered)".into());
    };
    let deadline = tokio::time::Instant::now() + patience;
    let mut answered = false;
    loop {
        let ev = match tokio::time::timeout_at(deadline, rx.recv()).await {
            Err(_) => {
                responder::cancel(token, "no answer within elicitationTimeout");
                return Outcome::Failed(format!(
                    "the login was not completed within elicitationTimeout ({} ms)",
                    patience.as_millis()
                ));
            }
            Ok(None) => return Outcome::Failed("the login was cancelled".into()),
            Ok(Some(ev)) => ev,
        };
        match ev {
            Event::Callback(q) => {
                responder::cancel(token, "the login completed through the loopback redirect");
                return Outcome::Redirect(q);
            }
            Event::Answer(Finish::Answer(a)) if a.ok => {
                let redirect = a
                    .data
                    .as_ref()
                    .and_then(|d| d.get("redirect"))
                    .and_then(|r| r.as_str());
                if let Some(r) = redirect {
                    return match url::Url::parse(r) {
                        Ok(u) => Outcome::Redirect(u.query().unwrap_or("").to_string()),
                        Err(_) => {
                            Outcome::Failed("the resolver's `data.redirect` is not a URL".into())
                        }
                    };
                }
                if !with_loopback {
                    return Outcome::Failed(
                        "with `auth.redirectUri` the resolver must answer {ok:true, data:{redirect:\"<the full redirect URL>\"}}".into(),
                    );
                }
                answered = true; // the URL is open: wait for the redirect
            }
            Event::Answer(Finish::Answer(a)) => {
                let declined = a.reason.as_deref() == Some("declined");
                return Outcome::Failed(if declined {
                    "the login was declined".into()
                } else {
                    "the login was cancelled".into()
                });
            }
            Event::Answer(Finish::Cancel(_)) if !answered => {
                return Outcome::Failed("the login was cancelled".into());
            }
            Event::Answer(Finish::Cancel(_)) => {}
        }
    }
}
