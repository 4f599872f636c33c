//! A client of etcd's v3 API through its HTTP gateway (JSON on the client port, part of every
//! etcd 3.4+ server): the same TLS client as everything else in the tree (kube's, verifying the
//! server against the etcd CA and presenting a client certificate), no gRPC stack of its own.

use base64::Engine;
use futures::{AsyncBufReadExt, Stream, StreamExt};
use kube::config::{AuthInfo, Cluster, Context, Kubeconfig, NamedAuthInfo, NamedCluster, NamedContext};

#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    #[error("building the etcd client for {endpoint}: {reason}")]
    Client { endpoint: String, reason: String },
    #[error("{what} at etcd {endpoint}")]
    Request {
        what: &'static str,
        endpoint: String,
        #[source]
        source: kube::Error,
    },
    #[error("{what} at etcd {endpoint}: {reason}")]
    Answer { what: &'static str, endpoint: String, reason: String },
}

/// The TLS material of an etcd client (PEM).
pub struct EtcdClientTls {
    pub ca: String,
    pub cert: String,
    pub key: String,
}

impl std::fmt::Debug for EtcdClientTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdClientTls").finish_non_exhaustive()
    }
}

/// A client of one etcd endpoint.
#[derive(Clone)]
pub struct Etcd {
    client: kube::Client,
    endpoint: String,
}

impl std::fmt::Debug for Etcd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Etcd").field("endpoint", &self.endpoint).finish_non_exhaustive()
    }
}

/// An int64 of a gateway answer (they come as strings in JSON).
pub fn int(v: Option<&serde_json::Value>) -> Option<i64> {
    match v? {
        serde_json::Value::String(s) => s.parse().ok(),
        other => other.as_i64(),
    }
}

/// The database's size (`Maintenance/Status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DbSize {
    /// The file on disk.
    pub file: i64,
    /// The part of it that holds data; the rest is free pages a defragmentation gives back.
    pub in_use: i64,
}

/// `header.revision` of a gateway answer.
pub fn header_revision(v: &serde_json::Value) -> Option<i64> {
    int(v.get("header").and_then(|h| h.get("revision")))
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// What a watch reports.
#[derive(Debug, Clone, PartialEq)]
pub enum WatchMessage {
    /// Events (each `(revision, event)`), and the header's revision.
    Events { events: Vec<serde_json::Value>, revision: Option<i64> },
    /// The start revision is compacted away: the watch ended.
    Compacted { compact_revision: i64 },
    /// The watch was canceled for another reason.
    Canceled(String),
}

/// Parses one line of the gateway's watch stream.
pub fn parse_watch_line(line: &str) -> Result<WatchMessage, String> {
    let v: serde_json::Value = serde_json::from_str(line).map_err(|e| format!("not JSON: {e}"))?;
    if let Some(error) = v.get("error") {
        return Ok(WatchMessage::Canceled(
            error.get("message").and_then(|m| m.as_str()).unwrap_or("unknown error").to_string(),
        ));
    }
    let result = v.get("result").ok_or("neither result nor error")?;
    if let Some(compact_revision) = int(result.get("compact_revision")).filter(|r| *r > 0) {
        return Ok(WatchMessage::Compacted { compact_revision });
    }
    if result.get("canceled").and_then(|c| c.as_bool()) == Some(true) {
        let reason = result.get("cancel_reason").and_then(|r| r.as_str()).unwrap_or("no reason given");
        return Ok(WatchMessage::Canceled(reason.to_string()));
    }
    let events = result.get("events").and_then(|e| e.as_array()).cloned().unwrap_or_default();
    Ok(WatchMessage::Events { events, revision: header_revision(result) })
}

impl Etcd {
    /// A client for `endpoint` (`https://address:port`), verifying the server certificate for
    /// `server_name`; `None` TLS for a plain `http://` endpoint on loopback (the restore's
    /// temporary etcd).
    pub async fn new(endpoint: &str, server_name: &str, tls: Option<&EtcdClientTls>) -> Result<Self, GatewayError> {
        let fail = |reason: String| GatewayError::Client { endpoint: endpoint.to_string(), reason };
        if tls.is_none() && !endpoint.starts_with("http://127.0.0.1:") {
            return Err(fail("without TLS only a loopback http:// endpoint is allowed".into()));
        }
        let b64s = |s: &str| b64(s.as_bytes());
        let kubeconfig = Kubeconfig {
            clusters: vec![NamedCluster {
                name: "etcd".into(),
                cluster: Some(Cluster {
                    server: Some(endpoint.to_string()),
                    certificate_authority_data: tls.map(|t| b64s(&t.ca)),
                    tls_server_name: tls.map(|_| server_name.to_string()),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            auth_infos: vec![NamedAuthInfo {
                name: "etcd-client".into(),
                auth_info: Some(AuthInfo {
                    client_certificate_data: tls.map(|t| b64s(&t.cert)),
                    client_key_data: tls.map(|t| b64s(&t.key).into()),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            contexts: vec![NamedContext {
                name: "etcd".into(),
                context: Some(Context {
                    cluster: "etcd".into(),
                    user: Some("etcd-client".into()),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            current_context: Some("etcd".into()),
            ..Default::default()
        };
        let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .map_err(|e| fail(e.to_string()))?;
        // Snapshots and watches are long streams; every caller bounds its own waits.
        config.read_timeout = None;
        config.connect_timeout = Some(std::time::Duration::from_secs(5));
        if tls.is_none() {
            // Plain HTTP on loopback never uses TLS, but without a CA of its own the client would
            // still load the system's CA certificates, which the image does not have: an empty
            // trust store (nothing could be verified against it, and nothing needs to be).
            config.root_cert = Some(Vec::new());
        }
        let client = kube::Client::try_from(config).map_err(|e| fail(e.to_string()))?;
        Ok(Self { client, endpoint: endpoint.to_string() })
    }

    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    fn request(path: &str, body: &serde_json::Value) -> http::Request<Vec<u8>> {
        let mut request = http::Request::new(serde_json::to_vec(body).unwrap_or_default());
        *request.method_mut() = http::Method::POST;
        *request.uri_mut() = http::Uri::try_from(path).unwrap_or_default();
        request.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
        request
    }

    pub(crate) async fn call(
        &self,
        what: &'static str,
        path: &str,
        body: serde_json::Value,
    ) -> Result<serde_json::Value, GatewayError> {
        self.client.request(Self::request(path, &body)).await.map_err(|source| GatewayError::Request {
            what,
            endpoint: self.endpoint.clone(),
            source,
        })
    }

    pub(crate) fn answer(&self, what: &'static str, reason: impl Into<String>) -> GatewayError {
        GatewayError::Answer { what, endpoint: self.endpoint.clone(), reason: reason.into() }
    }

    async fn status(&self) -> Result<serde_json::Value, GatewayError> {
        self.call("reading the status", "/v3/maintenance/status", serde_json::json!({})).await
    }

    /// The current revision (`Maintenance/Status`).
    pub async fn revision(&self) -> Result<i64, GatewayError> {
        let status = self.status().await?;
        header_revision(&status).ok_or_else(|| self.answer("reading the status", "no header.revision"))
    }

    /// The database file's size and the part of it in use, in bytes (`Maintenance/Status`).
    pub async fn db_size(&self) -> Result<DbSize, GatewayError> {
        let status = self.status().await?;
        let file = int(status.get("dbSize").or_else(|| status.get("db_size")))
            .ok_or_else(|| self.answer("reading the status", "no dbSize"))?;
        let in_use = int(status.get("dbSizeInUse").or_else(|| status.get("db_size_in_use"))).unwrap_or(file);
        Ok(DbSize { file, in_use })
    }

    /// Defragments the member (`Maintenance/Defragment`): etcd rewrites its database file
    /// without the pages that compactions freed. The member answers no request meanwhile.
    pub async fn defragment(&self) -> Result<(), GatewayError> {
        self.call("defragmenting", "/v3/maintenance/defragment", serde_json::json!({})).await.map(drop)
    }

    /// How many keys exist (`KV/Range`, count only).
    pub async fn count(&self) -> Result<i64, GatewayError> {
        let all = b64(&[0]);
        let answer = self
            .call(
                "counting the keys",
                "/v3/kv/range",
                serde_json::json!({"key": all, "range_end": all, "count_only": true}),
            )
            .await?;
        Ok(int(answer.get("count")).unwrap_or(0))
    }

    /// Every key with its value and the revision that last changed it (`KV/Range`), in key
    /// order: for comparing a restored etcd with its origin.
    pub async fn dump(&self) -> Result<Vec<(Vec<u8>, Vec<u8>, i64)>, GatewayError> {
        use base64::Engine;
        let all = b64(&[0]);
        let answer =
            self.call("reading every key", "/v3/kv/range", serde_json::json!({"key": all, "range_end": all})).await?;
        let decode = |v: Option<&serde_json::Value>| {
            base64::engine::general_purpose::STANDARD
                .decode(v.and_then(|v| v.as_str()).unwrap_or_default())
                .unwrap_or_default()
        };
        Ok(answer
            .get("kvs")
            .and_then(|k| k.as_array())
            .map(|kvs| {
                kvs.iter()
                    .map(|kv| {
                        (decode(kv.get("key")), decode(kv.get("value")), int(kv.get("mod_revision")).unwrap_or(0))
                    })
                    .collect()
            })
            .unwrap_or_default())
    }

    /// Applies one revision's events as one transaction and returns the revision it produced.
    pub async fn apply(&self, events: &[crate::delta::Event]) -> Result<i64, GatewayError> {
        use crate::delta::Event;
        let ops: Vec<serde_json::Value> = events
            .iter()
            .map(|e| match e {
                Event::Put { key, value } => serde_json::json!({"request_put": {"key": b64(key), "value": b64(value)}}),
                Event::Delete { key } => serde_json::json!({"request_delete_range": {"key": b64(key)}}),
            })
            .collect();
        let answer = self.call("applying a revision", "/v3/kv/txn", serde_json::json!({"success": ops})).await?;
        header_revision(&answer).ok_or_else(|| self.answer("applying a revision", "no header.revision"))
    }

    /// The snapshot stream (`Maintenance/Snapshot`): lines of JSON chunks.
    pub async fn snapshot_lines(
        &self,
    ) -> Result<impl Stream<Item = Result<String, std::io::Error>> + use<>, GatewayError> {
        let reader = self
            .client
            .request_stream(Self::request("/v3/maintenance/snapshot", &serde_json::json!({})))
            .await
            .map_err(|source| GatewayError::Request {
                what: "requesting a snapshot",
                endpoint: self.endpoint.clone(),
                source,
            })?;
        Ok(reader.lines())
    }

    /// Watches every key from `start_revision` on (`Watch`), with progress notifications (so
    /// that quiet periods still advance the revision): parsed lines.
    pub async fn watch(
        &self,
        start_revision: i64,
    ) -> Result<impl Stream<Item = Result<WatchMessage, String>> + use<>, GatewayError> {
        let all = b64(&[0]);
        let body = serde_json::json!({"create_request": {
            "key": all, "range_end": all, "start_revision": start_revision.to_string(), "progress_notify": true,
        }});
        let reader = self.client.request_stream(Self::request("/v3/watch", &body)).await.map_err(|source| {
            GatewayError::Request { what: "starting a watch", endpoint: self.endpoint.clone(), source }
        })?;
        Ok(reader.lines().filter_map(|line| async move {
            match line {
                Err(e) => Some(Err(e.to_string())),
                Ok(l) if l.trim().is_empty() => None,
                Ok(l) => Some(parse_watch_line(&l)),
            }
        }))
    }
}

/// One event of the gateway's watch answer (`{"type":"DELETE"?,"kv":{"key","value","mod_revision"}}`;
/// a PUT has no type, an empty value no value, and int64 values come as strings).
pub fn event(event: &serde_json::Value) -> Result<(i64, crate::delta::Event), String> {
    let kv = event.get("kv").ok_or("an event without kv")?;
    let bytes = |field: &str| -> Result<Vec<u8>, String> {
        match kv.get(field).and_then(|v| v.as_str()) {
            None => Ok(Vec::new()),
            Some(s) => base64::engine::general_purpose::STANDARD.decode(s).map_err(|e| format!("kv.{field}: {e}")),
        }
    };
    let revision = int(kv.get("mod_revision")).ok_or("an event without kv.mod_revision")?;
    let key = bytes("key")?;
    if key.is_empty() {
        return Err("an event without kv.key".into());
    }
    match event.get("type").and_then(|t| t.as_str()) {
        None | Some("PUT") => Ok((revision, crate::delta::Event::Put { key, value: bytes("value")? })),
        Some("DELETE") => Ok((revision, crate::delta::Event::Delete { key })),
        Some(other) => Err(format!("an event of unknown type {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delta::Event;

    #[test]
    fn gateway_events_parse_as_etcd_sends_them() {
        let put = serde_json::json!({"kv": {"key": "L2E=", "create_revision": "3", "mod_revision": "9", "version": "2", "value": "eA=="}});
        assert_eq!(event(&put).unwrap(), (9, Event::Put { key: b"/a".to_vec(), value: b"x".to_vec() }));
        let empty = serde_json::json!({"kv": {"key": "L2E=", "mod_revision": 10}});
        assert_eq!(event(&empty).unwrap(), (10, Event::Put { key: b"/a".to_vec(), value: Vec::new() }));
        let delete = serde_json::json!({"type": "DELETE", "kv": {"key": "L2E=", "mod_revision": "11"}});
        assert_eq!(event(&delete).unwrap(), (11, Event::Delete { key: b"/a".to_vec() }));
        assert!(event(&serde_json::json!({"kv": {"mod_revision": "1"}})).is_err());
        assert!(event(&serde_json::json!({"type": "X", "kv": {"key": "L2E=", "mod_revision": "1"}})).is_err());
    }

    #[test]
    fn watch_lines_parse_as_the_gateway_sends_them() {
        let created = r#"{"result":{"header":{"cluster_id":"1","revision":"7"},"created":true}}"#;
        assert_eq!(parse_watch_line(created).unwrap(), WatchMessage::Events { events: vec![], revision: Some(7) });
        let events = r#"{"result":{"header":{"revision":"9"},"events":[{"kv":{"key":"YQ==","mod_revision":"9"}}]}}"#;
        match parse_watch_line(events).unwrap() {
            WatchMessage::Events { events, revision } => assert_eq!((events.len(), revision), (1, Some(9))),
            other => panic!("{other:?}"),
        }
        let compacted = r#"{"result":{"header":{"revision":"90"},"compact_revision":"50","canceled":true}}"#;
        assert_eq!(parse_watch_line(compacted).unwrap(), WatchMessage::Compacted { compact_revision: 50 });
        let canceled = r#"{"result":{"canceled":true,"cancel_reason":"gone"}}"#;
        assert_eq!(parse_watch_line(canceled).unwrap(), WatchMessage::Canceled("gone".into()));
        assert!(matches!(parse_watch_line(r#"{"error":{"message":"no leader"}}"#).unwrap(), WatchMessage::Canceled(_)));
        assert!(parse_watch_line("{").is_err());
    }
}
