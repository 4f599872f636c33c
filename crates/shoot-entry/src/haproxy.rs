//! haproxy's Runtime API on its admin socket (`stats socket ... level admin`): one command per
//! connection, as haproxy's non-interactive mode expects; the answer is everything it writes
//! before closing.

use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

/// How long one command may take (connect, write, read the answer).
const TIMEOUT: Duration = Duration::from_secs(5);
/// Answers longer than this are cut (a map of every shoot stays far below).
const MAX_ANSWER: u64 = 64 << 20;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("haproxy's admin socket {socket}: {command:?}: {source}")]
    Io {
        socket: PathBuf,
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("haproxy's admin socket {socket}: {command:?} took longer than {TIMEOUT:?}")]
    Timeout { socket: PathBuf, command: String },
    #[error("haproxy refused {command:?}: {answer}")]
    Refused { command: String, answer: String },
}

/// The admin socket of one haproxy.
#[derive(Clone, Debug)]
pub struct RuntimeApi {
    socket: PathBuf,
}

impl RuntimeApi {
    pub fn new(socket: impl Into<PathBuf>) -> Self {
        Self { socket: socket.into() }
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Sends `command`, returns haproxy's answer.
    pub async fn run(&self, command: &str) -> Result<String, Error> {
        let io = |source| Error::Io { socket: self.socket.clone(), command: command.to_string(), source };
        let exchange = async {
            let mut stream = UnixStream::connect(&self.socket).await.map_err(io)?;
            stream.write_all(format!("{command}\n").as_bytes()).await.map_err(io)?;
            let mut answer = String::new();
            (&mut stream).take(MAX_ANSWER).read_to_string(&mut answer).await.map_err(io)?;
            Ok(answer)
        };
        tokio::time::timeout(TIMEOUT, exchange)
            .await
            .map_err(|_| Error::Timeout { socket: self.socket.clone(), command: command.to_string() })?
    }

    /// Sends a command that changes something: haproxy answers such commands with an empty
    /// line when they worked and with a message when not.
    pub async fn change(&self, command: &str) -> Result<(), Error> {
        let answer = self.run(command).await?;
        if answer.trim().is_empty() {
            Ok(())
        } else {
            Err(Error::Refused { command: command.to_string(), answer: answer.trim().to_string() })
        }
    }
}
