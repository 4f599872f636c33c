//! Field paths and field errors in the shape of Kubernetes' `field.ErrorList`: every refusal
//! names the field (`spec.provider.workers[0].name`) and the reason, and renders the way
//! `kubectl` users know (`spec.kubernetes.version: Unsupported value: "1.19.0": supported
//! values: "1.20.2"`).

use std::fmt;

/// A path to a field, built by [`Path::child`], [`Path::index`] and [`Path::key`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Path(String);

impl Path {
    /// A root field such as `spec` or `metadata`.
    pub fn new(root: &str) -> Self {
        Self(root.to_string())
    }

    /// `self.name`.
    pub fn child(&self, name: &str) -> Self {
        if self.0.is_empty() { Self(name.to_string()) } else { Self(format!("{}.{name}", self.0)) }
    }

    /// `self[i]`.
    pub fn index(&self, i: usize) -> Self {
        Self(format!("{}[{i}]", self.0))
    }

    /// `self[key]`.
    pub fn key(&self, key: &str) -> Self {
        Self(format!("{}[{key}]", self.0))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The kind of a field error (Kubernetes' `field.ErrorType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorType {
    Required,
    Invalid,
    Unsupported,
    Duplicate,
    Forbidden,
    NotFound,
}

impl ErrorType {
    /// The wording Kubernetes uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Required => "Required value",
            Self::Invalid => "Invalid value",
            Self::Unsupported => "Unsupported value",
            Self::Duplicate => "Duplicate value",
            Self::Forbidden => "Forbidden",
            Self::NotFound => "Not found",
        }
    }
}

/// One refused field: where, what kind of problem, the offending value (when it helps) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    pub path: Path,
    pub type_: ErrorType,
    /// The offending value, already quoted for display; `None` when showing it adds nothing.
    pub value: Option<String>,
    pub detail: String,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.type_.as_str())?;
        if let Some(v) = &self.value {
            write!(f, ": {v}")?;
        }
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

fn quote(value: &str) -> Option<String> {
    // Values are shown truncated so that a huge input cannot make a huge response.
    let shown: String = value.chars().take(256).collect();
    Some(format!("{shown:?}"))
}

/// Constructors mirroring Kubernetes' `field.Required(...)` and friends.
impl FieldError {
    pub fn required(path: Path, detail: impl Into<String>) -> Self {
        Self { path, type_: ErrorType::Required, value: None, detail: detail.into() }
    }

    pub fn invalid(path: Path, value: &str, detail: impl Into<String>) -> Self {
        Self { path, type_: ErrorType::Invalid, value: quote(value), detail: detail.into() }
    }

    pub fn unsupported<S: AsRef<str>>(path: Path, value: &str, supported: &[S]) -> Self {
        let list: Vec<String> = supported.iter().take(20).map(|s| format!("{:?}", s.as_ref())).collect();
        let detail = if list.is_empty() {
            "no values are offered".to_string()
        } else {
            format!("supported values: {}", list.join(", "))
        };
        Self { path, type_: ErrorType::Unsupported, value: quote(value), detail }
    }

    pub fn duplicate(path: Path, value: &str) -> Self {
        Self { path, type_: ErrorType::Duplicate, value: quote(value), detail: String::new() }
    }

    pub fn forbidden(path: Path, detail: impl Into<String>) -> Self {
        Self { path, type_: ErrorType::Forbidden, value: None, detail: detail.into() }
    }

    pub fn not_found(path: Path, value: &str) -> Self {
        Self { path, type_: ErrorType::NotFound, value: quote(value), detail: String::new() }
    }
}

/// The errors of one object; empty means admitted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ErrorList(pub Vec<FieldError>);

impl ErrorList {
    pub fn push(&mut self, e: FieldError) {
        self.0.push(e);
    }

    pub fn extend(&mut self, other: ErrorList) {
        self.0.extend(other.0);
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn iter(&self) -> impl Iterator<Item = &FieldError> {
        self.0.iter()
    }

    /// Whether some error is about exactly `path`.
    pub fn has(&self, path: &str) -> bool {
        self.0.iter().any(|e| e.path.as_str() == path)
    }
}

impl fmt::Display for ErrorList {
    /// Kubernetes' aggregate form: one error alone, or `[e1, e2]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.as_slice() {
            [] => Ok(()),
            [one] => write!(f, "{one}"),
            many => {
                f.write_str("[")?;
                for (i, e) in many.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{e}")?;
                }
                f.write_str("]")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_like_kubernetes() {
        let spec = Path::new("spec");
        let cases = [
            (FieldError::required(spec.child("region"), ""), "spec.region: Required value"),
            (
                FieldError::unsupported(spec.child("kubernetes").child("version"), "1.19.0", &["1.20.2", "1.21.0"]),
                "spec.kubernetes.version: Unsupported value: \"1.19.0\": supported values: \"1.20.2\", \"1.21.0\"",
            ),
            (
                FieldError::invalid(spec.child("workers").index(1).child("name"), "A", "must be a DNS label"),
                "spec.workers[1].name: Invalid value: \"A\": must be a DNS label",
            ),
            (FieldError::duplicate(spec.child("w").key("a"), "a"), "spec.w[a]: Duplicate value: \"a\""),
            (FieldError::forbidden(spec.child("seedName"), "no"), "spec.seedName: Forbidden: no"),
            (FieldError::not_found(spec.child("x"), "y"), "spec.x: Not found: \"y\""),
        ];
        for (e, want) in cases {
            assert_eq!(e.to_string(), want);
        }
    }

    #[test]
    fn list_aggregates_and_truncates_values() {
        let mut l = ErrorList::default();
        assert_eq!(l.to_string(), "");
        l.push(FieldError::required(Path::new("a"), ""));
        assert_eq!(l.to_string(), "a: Required value");
        l.push(FieldError::invalid(Path::new("b"), &"x".repeat(1000), "long"));
        let s = l.to_string();
        assert!(s.starts_with("[a: Required value, b: Invalid value: \"xxx"), "{s}");
        assert!(s.len() < 400, "{}", s.len());
        assert!(l.has("b") && !l.has("c"));
    }
}
