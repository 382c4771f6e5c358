//! What can go wrong reaching a remote workspace, each error naming the host and what failed;
//! `ssh`'s own words (its stderr, bounded) are read to tell which.

use std::path::{Path, PathBuf};

use crate::vocabulary::error::{Error, ErrorCode};
use crate::vocabulary::visible::push_visible;

/// The most of ssh's stderr an error keeps (its last lines).
pub const STDERR_KEPT: usize = 2048;

/// An error of a remote workspace's connection or bootstrap.
#[derive(Debug, thiserror::Error)]
pub enum SshError {
    #[error("bad remote workspace `{input}`: {reason}")]
    BadTarget { input: String, reason: String },
    #[error("{host}: not answering ({detail})")]
    NotAnswering { host: String, detail: String },
    #[error("{host}: the key was refused ({detail}); check the IdentityFile or the agent's keys for this host")]
    KeyRefused { host: String, detail: String },
    #[error(
        "{host}: its host key has CHANGED since it was recorded in known_hosts: the connection is refused \
         (if the host was reinstalled, remove its old key with `ssh-keygen -R`) ({detail})"
    )]
    HostKeyChanged { host: String, detail: String },
    #[error(
        "{host}: its host key is not known and was not accepted; connect once with `ssh` in a terminal to \
         check and record it ({detail})"
    )]
    HostKeyUnknown { host: String, detail: String },
    #[error("{host}: the connection was lost ({detail})")]
    LinkLost { host: String, detail: String },
    #[error("{host}: ssh failed: {detail}")]
    Ssh { host: String, detail: String },
    #[error("{host}: the workspace {path} {reason}")]
    RemotePath { host: String, path: String, reason: String },
    #[error("{host}: {what}: {detail}")]
    Bootstrap { host: String, what: String, detail: String },
    #[error("{host}: {detail}")]
    UnsupportedPlatform { host: String, detail: String },
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl SshError {
    /// Reads what `ssh` said on failing (`stderr`) into the error it was, for `host`.
    pub fn from_ssh_stderr(host: &str, stderr: &str) -> SshError {
        let detail = last_lines(stderr);
        let host = host.to_string();
        let says = |words: &[&str]| words.iter().any(|w| stderr.contains(w));
        if says(&[
            "REMOTE HOST IDENTIFICATION HAS CHANGED",
            "Host key for",
            "POSSIBLE DNS SPOOFING",
        ]) && says(&["CHANGED", "has changed"])
        {
            SshError::HostKeyChanged { host, detail }
        } else if says(&[
            "Host key verification failed",
            "No matching host key",
            "host key is known",
        ]) {
            SshError::HostKeyUnknown { host, detail }
        } else if says(&[
            "Permission denied",
            "Too many authentication failures",
            "incorrect passphrase",
        ]) {
            SshError::KeyRefused { host, detail }
        } else if says(&[
            "not responding",
            "Broken pipe",
            "Connection reset",
            "closed by remote host",
            "Connection to",
        ]) && says(&["Timeout", "Broken pipe", "reset", "closed"])
        {
            SshError::LinkLost { host, detail }
        } else if says(&[
            "timed out",
            "Connection refused",
            "No route to host",
            "Could not resolve hostname",
            "Network is unreachable",
            "Connection closed by",
            "kex_exchange_identification",
        ]) {
            SshError::NotAnswering { host, detail }
        } else if detail.is_empty() {
            SshError::Ssh {
                host,
                detail: "it exited without saying why".to_string(),
            }
        } else {
            SshError::Ssh { host, detail }
        }
    }

    /// The code IPC and `--json` carry for this error: one per way a connection fails, so the
    /// window can tell a refused key from a lost link.
    pub fn code(&self) -> ErrorCode {
        match self {
            SshError::NotAnswering { .. } => ErrorCode::SshNotAnswering,
            SshError::KeyRefused { .. } => ErrorCode::SshKeyRefused,
            SshError::HostKeyChanged { .. } => ErrorCode::SshHostKeyChanged,
            SshError::HostKeyUnknown { .. } => ErrorCode::SshHostKeyUnknown,
            SshError::LinkLost { .. } => ErrorCode::SshLinkLost,
            SshError::BadTarget { .. } | SshError::Ssh { .. } => ErrorCode::Ssh,
            SshError::RemotePath { .. } => ErrorCode::RemoteWorkspace,
            SshError::Bootstrap { .. } | SshError::UnsupportedPlatform { .. } => ErrorCode::RemoteBootstrap,
            SshError::Io { .. } => ErrorCode::Io,
        }
    }

    /// The host the error names, when it names one.
    pub fn host(&self) -> Option<&str> {
        match self {
            SshError::BadTarget { .. } | SshError::Io { .. } => None,
            SshError::NotAnswering { host, .. }
            | SshError::KeyRefused { host, .. }
            | SshError::HostKeyChanged { host, .. }
            | SshError::HostKeyUnknown { host, .. }
            | SshError::LinkLost { host, .. }
            | SshError::Ssh { host, .. }
            | SshError::RemotePath { host, .. }
            | SshError::Bootstrap { host, .. }
            | SshError::UnsupportedPlatform { host, .. } => Some(host),
        }
    }
}

/// An ssh error as the core's: its message, and [`SshError::code`].
impl From<SshError> for Error {
    fn from(error: SshError) -> Error {
        Error::Unavailable {
            code: error.code(),
            message: error.to_string(),
        }
    }
}

/// The last [`STDERR_KEPT`] bytes of `text`, its warnings' decorations (`@@@` lines) left out,
/// lines joined by `; `, control characters escaped (`text` is what ssh and the remote shell
/// printed: untrusted).
pub fn last_lines(text: &str) -> String {
    let mut visible = String::with_capacity(text.len().min(4 * STDERR_KEPT));
    push_visible(&mut visible, &kept_lines(text), false);
    visible
}

/// [`last_lines`] before escaping.
fn kept_lines(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("@@@"))
        .collect();
    let joined = lines.join("; ");
    if joined.len() <= STDERR_KEPT {
        return joined;
    }
    let mut start = joined.len() - STDERR_KEPT;
    while !joined.is_char_boundary(start) {
        start += 1;
    }
    format!("…{}", &joined[start..])
}

/// An [`SshError::Io`]: `what` failed on `path`.
pub fn io(what: &'static str, path: &Path, source: std::io::Error) -> SshError {
    SshError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssh_messages_are_read_into_what_failed() {
        let cases = [
            ("ssh: connect to host 10.0.0.9 port 22: Connection timed out", "not answering"),
            ("ssh: connect to host 127.0.0.1 port 9: Connection refused", "not answering"),
            ("root@127.0.0.1: Permission denied (publickey).", "key was refused"),
            ("No ED25519 host key is known for [127.0.0.1]:4 and you have requested strict checking.\nHost key verification failed.", "not known"),
            ("@@@@@\n@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\nHost key verification failed.", "CHANGED"),
            ("Timeout, server 127.0.0.1 not responding.", "connection was lost"),
            ("something else", "ssh failed: something else"),
        ];
        for (stderr, words) in cases {
            let error = SshError::from_ssh_stderr("box", stderr).to_string();
            assert!(error.starts_with("box: "), "{error}");
            assert!(error.contains(words), "{stderr:?} -> {error}");
        }
    }

    #[test]
    fn what_ssh_said_is_shown_with_its_control_characters_escaped() {
        let error = SshError::from_ssh_stderr("box", "bad\x1b[2Jthing\u{202e}here");
        let said = error.to_string();
        assert!(!said.contains('\x1b') && !said.contains('\u{202e}'), "{said:?}");
        assert!(said.contains("bad") && said.contains("thing"), "{said}");
    }

    #[test]
    fn each_way_of_failing_has_its_own_code() {
        let refused = SshError::from_ssh_stderr("box", "root@h: Permission denied (publickey).");
        let lost = SshError::from_ssh_stderr("box", "Timeout, server h not responding.");
        assert_eq!(refused.code(), ErrorCode::SshKeyRefused);
        assert_eq!(lost.code(), ErrorCode::SshLinkLost);
        let error = Error::from(lost);
        assert_eq!(error.code(), ErrorCode::SshLinkLost);
        assert!(error.to_string().starts_with("box: the connection was lost"), "{error}");
    }

    #[test]
    fn a_long_stderr_is_kept_to_its_end() {
        let text = "x".repeat(10 * STDERR_KEPT) + "\nthe end";
        let kept = last_lines(&text);
        assert!(kept.len() <= STDERR_KEPT + "…".len());
        assert!(kept.ends_with("the end"));
    }
}
