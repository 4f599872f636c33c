//! Configuration files, as every binary reads them: the file read, parsed (YAML or JSON, which
//! is YAML) and validated once at start-up, with an error that names the file and the offending
//! field. A binary's configuration type says what serde cannot check in [`ConfigFile::check`]
//! and what an empty document means in [`ConfigFile::empty`].

use serde::de::DeserializeOwned;
use std::fmt;
use std::path::{Path, PathBuf};

/// A configuration type read from a file.
pub trait ConfigFile: DeserializeOwned {
    /// What an empty document stands for; `None` where the file must say something.
    fn empty() -> Option<Self> {
        None
    }

    /// Checks what serde cannot; the error names the offending field.
    fn check(&self) -> Result<(), Invalid>;
}

/// A value serde accepted that the binary cannot use: the field (dotted, as written in the
/// file) and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invalid {
    pub field: String,
    pub problem: String,
}

impl Invalid {
    pub fn new(field: impl Into<String>, problem: impl Into<String>) -> Self {
        Self { field: field.into(), problem: problem.into() }
    }
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.problem)
    }
}

impl std::error::Error for Invalid {}

impl From<(&'static str, String)> for Invalid {
    fn from((field, problem): (&'static str, String)) -> Self {
        Self::new(field, problem)
    }
}

/// Why a configuration document cannot be used; the message says all (no source chain).
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    #[error("parsing the configuration: {0}")]
    Syntax(serde_yaml::Error),
    #[error("invalid configuration: {0}")]
    Invalid(Invalid),
}

/// Why a configuration file cannot be used; every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("reading the configuration file {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("parsing the configuration file {path}")]
    Parse {
        path: PathBuf,
        #[source]
        source: serde_yaml::Error,
    },
    #[error("configuration file {path}: {invalid}")]
    Invalid { path: PathBuf, invalid: Invalid },
}

/// Parses and checks a configuration document; an empty one is [`ConfigFile::empty`] where
/// the type has one.
pub fn parse<C: ConfigFile>(text: &str) -> Result<C, ParseError> {
    let config = match C::empty() {
        Some(empty) if text.trim().is_empty() => empty,
        _ => serde_yaml::from_str(text).map_err(ParseError::Syntax)?,
    };
    config.check().map_err(ParseError::Invalid)?;
    Ok(config)
}

/// Reads, parses and checks a configuration file.
pub fn load<C: ConfigFile>(path: &Path) -> Result<C, ConfigError> {
    let text =
        std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: path.to_path_buf(), source })?;
    parse(&text).map_err(|e| match e {
        ParseError::Syntax(source) => ConfigError::Parse { path: path.to_path_buf(), source },
        ParseError::Invalid(invalid) => ConfigError::Invalid { path: path.to_path_buf(), invalid },
    })
}

/// [`load`]s the file at `path`; without one, the defaults.
pub fn load_or_default<C: ConfigFile + Default>(path: Option<&Path>) -> Result<C, ConfigError> {
    path.map_or_else(|| Ok(C::default()), load)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Default, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct Sample {
        #[serde(default)]
        concurrent_syncs: u32,
    }

    impl ConfigFile for Sample {
        fn empty() -> Option<Self> {
            Some(Self { concurrent_syncs: 1 })
        }
        fn check(&self) -> Result<(), Invalid> {
            if self.concurrent_syncs == 0 {
                return Err(Invalid::new("concurrentSyncs", "must be at least 1"));
            }
            Ok(())
        }
    }

    #[derive(Debug, Deserialize)]
    struct Required {
        #[allow(dead_code)]
        name: String,
    }

    impl ConfigFile for Required {
        fn check(&self) -> Result<(), Invalid> {
            Ok(())
        }
    }

    #[test]
    fn an_empty_document_is_the_types_empty_value_or_an_error() {
        assert_eq!(parse::<Sample>(" \n").ok(), Some(Sample { concurrent_syncs: 1 }));
        assert!(matches!(parse::<Required>(""), Err(ParseError::Syntax(_))));
    }

    #[test]
    fn errors_name_the_file_and_the_field() {
        let dir = std::env::temp_dir().join(format!("runtime-config-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let cases =
            [("concurrentSyncs: 0", "concurrentSyncs: must be at least 1"), ("concurentSyncs: 2", "concurentSyncs")];
        for (i, (yaml, expected)) in cases.into_iter().enumerate() {
            let path = dir.join(format!("c{i}.yaml"));
            let _ = std::fs::write(&path, yaml);
            let report = match load::<Sample>(&path) {
                Ok(c) => panic!("{yaml:?} was accepted as {c:?}"),
                Err(e) => crate::cli::report(&e),
            };
            assert!(report.contains(&path.display().to_string()), "{report}");
            assert!(report.contains(expected), "{report} does not say {expected}");
        }
        assert_eq!(load_or_default::<Sample>(None).ok(), Some(Sample::default()));
        let missing = dir.join("missing.yaml");
        assert!(matches!(load::<Sample>(&missing), Err(ConfigError::Read { .. })));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
