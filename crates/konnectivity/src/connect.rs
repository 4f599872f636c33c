//! The kube-apiserver's side of a tunnelled connection in `HTTPConnect` mode: it opens one
//! connection per dial and writes `CONNECT <host>:<port> HTTP/1.1` with `Host: 127.0.0.1`
//! (always that literal, so the request target is what names the destination). It wants a `200`
//! with nothing after the response head; then the connection carries the raw bytes.

/// The largest request head accepted (the API server's is well under 200 bytes).
pub const MAX_HEAD: usize = 8 * 1024;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConnectError {
    #[error("malformed request head: {0}")]
    Malformed(String),
    #[error("method {0} is not CONNECT")]
    Method(String),
    #[error("request target {0:?} is not host:port")]
    Target(String),
    #[error("request head longer than {MAX_HEAD} bytes")]
    TooLong,
}

/// A complete CONNECT request head at the start of `buffer`: the target and the head's length
/// (bytes after it already belong to the connection). `None` while the head is incomplete.
pub fn parse(buffer: &[u8]) -> Result<Option<(String, usize)>, ConnectError> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut request = httparse::Request::new(&mut headers);
    match request.parse(buffer) {
        Ok(httparse::Status::Partial) if buffer.len() >= MAX_HEAD => Err(ConnectError::TooLong),
        Ok(httparse::Status::Partial) => Ok(None),
        Ok(httparse::Status::Complete(length)) => {
            let method = request.method.unwrap_or_default();
            if !method.eq_ignore_ascii_case("CONNECT") {
                return Err(ConnectError::Method(method.into()));
            }
            let target = request.path.unwrap_or_default();
            if !is_host_port(target) {
                return Err(ConnectError::Target(target.into()));
            }
            Ok(Some((target.to_string(), length)))
        }
        Err(e) => Err(ConnectError::Malformed(e.to_string())),
    }
}

/// `host:port` or `[v6]:port`, with a numeric port and a non-empty host.
fn is_host_port(target: &str) -> bool {
    let Some((host, port)) = target.rsplit_once(':') else { return false };
    let host_ok = match host.strip_prefix('[') {
        Some(v6) => v6.strip_suffix(']').is_some_and(|a| a.parse::<std::net::Ipv6Addr>().is_ok()),
        None => !host.is_empty() && !host.contains(['/', ' ', '[', ']']),
    };
    host_ok && port.parse::<u16>().is_ok()
}

/// The response head that opens the tunnel.
pub const ESTABLISHED: &[u8] = b"HTTP/1.1 200 Connection established\r\n\r\n";

/// A failure response: the API server reports its status code ("proxy error ... code N") and
/// the connection is closed after it.
pub fn failure(code: u16, reason: &str, message: &str) -> Vec<u8> {
    let body = format!("{message}\n");
    format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_api_servers_request_gives_its_target_and_length() {
        let head = b"CONNECT 10.250.0.5:10250 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
        assert_eq!(parse(head), Ok(Some(("10.250.0.5:10250".into(), head.len()))));
        let mut more = head.to_vec();
        more.extend_from_slice(b"\x16\x03\x01");
        assert_eq!(parse(&more), Ok(Some(("10.250.0.5:10250".into(), head.len()))));
    }

    #[test]
    fn names_and_ipv6_targets_are_accepted() {
        for target in ["web.default.svc:443", "[fd00::5]:10250", "node-a:10250"] {
            let head = format!("CONNECT {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
            assert_eq!(parse(head.as_bytes()), Ok(Some((target.into(), head.len()))), "{target}");
        }
    }

    #[test]
    fn an_incomplete_head_waits_and_an_endless_one_is_refused() {
        assert_eq!(parse(b"CONNECT 10.0.0.1:80 HTTP/1.1\r\nHost: 1"), Ok(None));
        let mut endless = b"CONNECT 10.0.0.1:80 HTTP/1.1\r\nX: ".to_vec();
        endless.resize(MAX_HEAD, b'a');
        assert_eq!(parse(&endless), Err(ConnectError::TooLong));
    }

    #[test]
    fn other_methods_and_targets_are_refused() {
        assert_eq!(parse(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"), Err(ConnectError::Method("GET".into())));
        for target in ["10.0.0.1", "10.0.0.1:http", ":80", "[fd00::5:80", "/a:80", "http://x:80/"] {
            let head = format!("CONNECT {target} HTTP/1.1\r\n\r\n");
            assert!(matches!(parse(head.as_bytes()), Err(ConnectError::Target(_))), "{target}");
        }
        assert!(matches!(parse(b"\x00\x01 nonsense\r\n\r\n"), Err(ConnectError::Malformed(_))));
    }

    #[test]
    fn failures_are_complete_responses() {
        let text = String::from_utf8(failure(503, "Service Unavailable", "no agent")).unwrap_or_default();
        assert!(text.starts_with("HTTP/1.1 503 Service Unavailable\r\n"), "{text}");
        assert!(text.ends_with("\r\n\r\nno agent\n"), "{text}");
    }
}
