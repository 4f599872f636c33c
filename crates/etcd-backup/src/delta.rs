//! Delta snapshots: the events etcd reported for a range of revisions, grouped by revision (one
//! etcd transaction each), in a file of JSON lines. The last line carries the SHA-256 of the lines
//! before it, so a truncated or altered delta is refused rather than half applied.

use serde::{Deserialize, Serialize};

/// A change of one key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Event {
    #[serde(rename = "PUT")]
    Put {
        #[serde(with = "b64")]
        key: Vec<u8>,
        #[serde(with = "b64")]
        value: Vec<u8>,
    },
    #[serde(rename = "DELETE")]
    Delete {
        #[serde(with = "b64")]
        key: Vec<u8>,
    },
}

/// Every event of one revision, in etcd's order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Revision {
    pub revision: i64,
    pub events: Vec<Event>,
}

mod b64 {
    use base64::Engine;
    pub fn serialize<S: serde::Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
    }
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let s: String = serde::Deserialize::deserialize(d)?;
        base64::engine::general_purpose::STANDARD.decode(s).map_err(serde::de::Error::custom)
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct Trailer {
    sha256: String,
}

/// Adds `(revision, event)` pairs to revisions in order (events of one revision arrive together
/// and in order; a revision seen again is appended to).
pub fn push(revisions: &mut Vec<Revision>, revision: i64, event: Event) {
    match revisions.last_mut() {
        Some(last) if last.revision == revision => last.events.push(event),
        _ => revisions.push(Revision { revision, events: vec![event] }),
    }
}

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The file's bytes.
pub fn encode(revisions: &[Revision]) -> Vec<u8> {
    let mut out = Vec::new();
    for r in revisions {
        // Serializing these plain structs cannot fail.
        out.extend(serde_json::to_vec(r).unwrap_or_default());
        out.push(b'\n');
    }
    let trailer = Trailer { sha256: hex(ring::digest::digest(&ring::digest::SHA256, &out).as_ref()) };
    out.extend(serde_json::to_vec(&trailer).unwrap_or_default());
    out.push(b'\n');
    out
}

/// The revisions of a file, checked against its trailer.
pub fn decode(bytes: &[u8]) -> Result<Vec<Revision>, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8: {e}"))?;
    let body_len = text.trim_end_matches('\n').rfind('\n').map_or(0, |i| i + 1);
    let (body, last) = text.split_at(body_len);
    let trailer: Trailer =
        serde_json::from_str(last.trim_end()).map_err(|e| format!("no SHA-256 trailer (truncated?): {e}"))?;
    let actual = hex(ring::digest::digest(&ring::digest::SHA256, body.as_bytes()).as_ref());
    if actual != trailer.sha256 {
        return Err(format!("the SHA-256 trailer does not match (recorded {}, computed {actual})", trailer.sha256));
    }
    body.lines()
        .enumerate()
        .map(|(i, line)| serde_json::from_str(line).map_err(|e| format!("line {}: {e}", i + 1)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<Revision> {
        let mut revisions = Vec::new();
        push(&mut revisions, 5, Event::Put { key: b"/registry/a".to_vec(), value: b"1".to_vec() });
        push(&mut revisions, 6, Event::Put { key: b"/registry/b".to_vec(), value: vec![0, 255] });
        push(&mut revisions, 6, Event::Delete { key: b"/registry/a".to_vec() });
        push(&mut revisions, 7, Event::Put { key: b"/registry/c".to_vec(), value: Vec::new() });
        revisions
    }

    #[test]
    fn events_group_by_revision_and_round_trip() {
        let revisions = sample();
        assert_eq!(
            revisions.iter().map(|r| (r.revision, r.events.len())).collect::<Vec<_>>(),
            [(5, 1), (6, 2), (7, 1)]
        );
        assert_eq!(decode(&encode(&revisions)).unwrap(), revisions);
        assert_eq!(decode(&encode(&[])).unwrap(), Vec::<Revision>::new());
    }

    #[test]
    fn a_truncated_or_altered_delta_is_refused() {
        let bytes = encode(&sample());
        let cut = &bytes[..bytes.len() - 20];
        assert!(decode(cut).unwrap_err().contains("trailer"), "{:?}", decode(cut));
        let mut altered = bytes.clone();
        altered[12] ^= 1;
        assert!(decode(&altered).is_err());
        let without_last_revision: Vec<u8> = {
            let text = String::from_utf8(bytes).unwrap();
            let mut lines: Vec<&str> = text.lines().collect();
            lines.remove(2);
            (lines.join("\n") + "\n").into_bytes()
        };
        assert!(decode(&without_last_revision).unwrap_err().contains("does not match"));
    }
}
