//! Keeps secret material out of text that leaves a component: `lastErrors` and
//! `lastOperation.description` (which project members read), events and logs.
//!
//! Two layers, both applied by [`Redactor::redact`]:
//!
//! * **known values**: the secrets the component holds for the object (a shoot's CA keys,
//!   tokens and kubeconfigs, its cloud provider credentials), each also in base64, and the long
//!   credential-like words of multi-line values (a key's PEM body lines, a kubeconfig's token);
//! * **shapes** of secrets whose values are not known: PEM blocks (private keys), JSON Web Tokens,
//!   bootstrap tokens, `Bearer` credentials, and `password`/`token`/`secret`-style assignments.
//!
//! Text from extensions is untrusted: gardenlet redacts an extension's error before it reaches
//! the Shoot, and the extension SDK redacts the shapes before it writes an extension's status.

use regex::Regex;
use std::sync::LazyLock;

/// What a redacted secret is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Values shorter than this are not redacted by value (they would hit ordinary words).
const MIN_VALUE_LEN: usize = 8;
/// Words of a multi-line value at least this long, made of credential characters, are
/// redacted on their own.
const MIN_WORD_LEN: usize = 24;

static SHAPES: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    [
        // A PEM block (a private key above all; certificates go too, nobody needs one in a
        // message), also when cut off before its END line.
        (r"(?s)-----BEGIN .*?(?:-----END [A-Z0-9 ]+-----|\z)", REDACTED),
        // A JSON Web Token (header.payload.signature, base64url; the header starts with `{"`).
        (r"eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*", REDACTED),
        // A bootstrap token `<id>.<secret>`.
        (r"\b[a-z0-9]{6}\.[a-z0-9]{16}\b", REDACTED),
        // `Bearer <credential>`.
        (r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]+", "$1 [redacted]"),
        // `password: x`, `token=x`, `"secret": "x"`, `client_secret=x`, `apiKey: x`, ...
        (
            r#"(?i)\b([a-z_-]*(?:password|passwd|token|secret|api[_-]?key|access[_-]?key)["']?\s*[:=]\s*)["']?[^\s"',;}]{4,}["']?"#,
            "${1}[redacted]",
        ),
    ]
    .into_iter()
    .filter_map(|(pattern, with)| Regex::new(pattern).ok().map(|r| (r, with)))
    .collect()
});

/// Redacts the shapes of secrets (see the module docs) from `text`.
pub fn redact_shapes(text: &str) -> String {
    let mut out = text.to_string();
    for (regex, with) in SHAPES.iter() {
        if regex.is_match(&out) {
            out = regex.replace_all(&out, *with).into_owned();
        }
    }
    out
}

/// Known secret values to redact, plus the shapes. `Debug` shows how many values it holds,
/// never the values.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Redactor {
    /// Longest first, so a value containing another is replaced whole.
    values: Vec<String>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redactor").field("values", &self.values.len()).finish()
    }
}

fn credential_word(word: &str) -> bool {
    word.len() >= MIN_WORD_LEN
        && word.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=' | '_' | '-' | '.'))
}

impl Redactor {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds secret values (their base64 forms and the credential-like words of multi-line
    /// values too).
    pub fn add<I, S>(&mut self, values: I)
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        use base64::Engine;
        for value in values {
            let value = value.as_ref().trim();
            if value.len() < MIN_VALUE_LEN {
                continue;
            }
            self.values.push(value.to_string());
            self.values.push(base64::engine::general_purpose::STANDARD.encode(value));
            if value.contains('\n') {
                self.values.extend(value.split_whitespace().filter(|w| credential_word(w)).map(str::to_string));
            }
        }
        self.values.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        self.values.dedup();
    }

    /// How many values (with derived forms) it redacts.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// `text` without the known values and without the shapes of secrets.
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for value in &self.values {
            if out.contains(value.as_str()) {
                out = out.replace(value.as_str(), REDACTED);
            }
        }
        redact_shapes(&out)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

    use super::*;

    #[test]
    fn known_values_go_in_plain_base64_and_by_word() {
        let mut r = Redactor::new();
        let pem = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQmVy\nZm9yZS1hZnRlci10ZXN0LXZhbHVl\n-----END CERTIFICATE-----";
        r.add(["s3cr3t-access-key-value", "short", pem]);
        let b64 = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, "s3cr3t-access-key-value");
        let out = r.redact(&format!("auth failed with s3cr3t-access-key-value ({b64}); line MIIBszCCAVmgAwIBAgIUQmVy"));
        assert_eq!(out, "auth failed with [redacted] ([redacted]); line [redacted]");
        assert_eq!(r.redact("short words stay"), "short words stay");
        assert!(!format!("{r:?}").contains("s3cr3t"));
    }

    #[test]
    fn shapes_of_unknown_secrets_go() {
        let cases = [
            ("key: -----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY----- end", "key: [redacted] end"),
            ("cut -----BEGIN PRIVATE KEY-----\nAAAA", "cut [redacted]"),
            ("token eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl used", "token [redacted] used"),
            ("join with abcdef.0123456789abcdef please", "join with [redacted] please"),
            ("Authorization: Bearer abc.def-123456789", "Authorization: Bearer [redacted]"),
            ("password=hunter22 user=bob", "password=[redacted] user=bob"),
            (r#"{"client_secret": "xyz12345", "id": "a"}"#, r#"{"client_secret": [redacted], "id": "a"}"#),
            ("accessKey: AKIAEXAMPLE1234", "accessKey: [redacted]"),
        ];
        for (input, want) in cases {
            assert_eq!(redact_shapes(input), want, "{input}");
        }
    }

    #[test]
    fn ordinary_messages_are_left_alone() {
        for text in [
            "task \"Deploying Infrastructure\" failed: simulated provider error: rate limit exceeded",
            "reading Secret garden-dev/credentials for shoot shoot--dev--app: 404 not found",
            "waiting for Deployment kube-apiserver: 0/1 replicas ready (token bucket empty)",
            "https://api.app.dev.internal.local:443 did not answer within 10s",
        ] {
            assert_eq!(Redactor::new().redact(text), text);
        }
    }
}
