//! Running a program of the image (iproute2's `ip`, iptables) and reading its output: the node
//! agents' one way to change the node's network.

use std::io::Write;
use std::process::{Command, Stdio};

/// A program that could not be run, or that failed.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    #[error("running `{command}`: {source}")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{command}` failed: {stderr}")]
    Failed { command: String, stderr: String },
}

/// Runs `program` with `args` (and `stdin` on its standard input); its standard output.
pub fn run<S: AsRef<str>>(program: &str, args: &[S], stdin: Option<&str>) -> Result<String, CommandError> {
    let args: Vec<&str> = args.iter().map(AsRef::as_ref).collect();
    let command = format!("{program} {}", args.join(" "));
    let spawn_err = |source| CommandError::Spawn { command: command.clone(), source };
    let mut child = Command::new(program)
        .args(&args)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(spawn_err)?;
    if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(input.as_bytes()).map_err(spawn_err)?;
    }
    let out = child.wait_with_output().map_err(spawn_err)?;
    if !out.status.success() {
        return Err(CommandError::Failed { command, stderr: String::from_utf8_lossy(&out.stderr).trim().to_string() });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_input_and_failures() {
        assert_eq!(run("cat", &[] as &[&str], Some("through stdin")).unwrap(), "through stdin");
        let failed = run("sh", &["-c", "echo bad >&2; exit 3"], None).unwrap_err();
        assert!(matches!(&failed, CommandError::Failed { stderr, .. } if stderr == "bad"), "{failed}");
        let missing = run("/nonexistent/program", &["x"], None).unwrap_err();
        assert!(missing.to_string().contains("/nonexistent/program x"), "{missing}");
    }
}
