//! A remote workspace as the user writes it: `HOST:PATH` (HOST an alias of the ssh config, or
//! `[USER@]HOST[:PORT]`, an IPv6 address in brackets) or `ssh://[USER@]HOST[:PORT]/PATH`.
//!
//! The path is absolute (`/srv/project`) or in the remote home (`~`, `~/project`), expanded with
//! the remote's `$HOME` once connected (`Connection::workspace_path`). A relative path is
//! refused: a login's folder is not always its home, and the same text must name the same folder
//! whichever way the host is reached.

use std::fmt;

use super::errors::SshError;

/// A remote workspace: where to connect and which folder there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteTarget {
    /// What `ssh` is given as the host: an alias of the ssh config, a name or an address.
    pub host: String,
    /// The login name, when given (`user@host`); else the ssh config's or the local one.
    pub user: Option<String>,
    /// The port, when given (`host:2222:/path`, `ssh://host:2222/path`); else the config's or 22.
    pub port: Option<u16>,
    /// The workspace folder on the host, as given: absolute, `~` or `~/…`.
    pub path: String,
}

impl RemoteTarget {
    /// Reads `HOST:PATH`, `USER@HOST:PORT:PATH` or `ssh://[USER@]HOST[:PORT]/PATH`.
    pub fn parse(text: &str) -> Result<RemoteTarget, SshError> {
        let bad = |reason: &str| SshError::BadTarget {
            input: text.to_string(),
            reason: reason.to_string(),
        };
        if text.chars().any(char::is_control) {
            return Err(bad("it holds a control character"));
        }
        let (authority, path) = match text.strip_prefix("ssh://") {
            Some(rest) => {
                let slash = rest
                    .find('/')
                    .ok_or_else(|| bad("no path after the host (ssh://host/path)"))?;
                let path = &rest[slash + 1..];
                // `ssh://host/~/p` is in the home; `ssh://host/srv/p` is `/srv/p`.
                let path = if path == "~" || path.starts_with("~/") {
                    path.to_string()
                } else {
                    format!("/{path}")
                };
                (rest[..slash].to_string(), path)
            }
            None => split_scp_like(text).ok_or_else(|| bad("no `:` between the host and the path (HOST:PATH)"))?,
        };
        let (user, host_port) = match authority.rsplit_once('@') {
            Some((user, rest)) => (Some(user.to_string()), rest.to_string()),
            None => (None, authority),
        };
        let (host, port) = split_port(&host_port).map_err(|reason| bad(&reason))?;
        check_name(&host, "host").map_err(|reason| bad(&reason))?;
        if let Some(user) = &user {
            check_name(user, "user").map_err(|reason| bad(&reason))?;
        }
        check_path(&path).map_err(|reason| bad(&reason))?;
        Ok(RemoteTarget { host, user, port, path })
    }

    /// The host as errors name it: `user@host:port`, with what was given.
    pub fn label(&self) -> String {
        let mut label = match &self.user {
            Some(user) => format!("{user}@{}", self.host),
            None => self.host.clone(),
        };
        if let Some(port) = self.port {
            label.push_str(&format!(":{port}"));
        }
        label
    }
}

impl fmt::Display for RemoteTarget {
    /// `ssh://[user@]host[:port]/path`, which reads back to the same target.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        let user = self.user.as_ref().map(|u| format!("{u}@")).unwrap_or_default();
        let port = self.port.map(|p| format!(":{p}")).unwrap_or_default();
        let path = self.path.strip_prefix('/').unwrap_or(&self.path);
        write!(f, "ssh://{user}{host}{port}/{path}")
    }
}

impl std::str::FromStr for RemoteTarget {
    type Err = SshError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        RemoteTarget::parse(text)
    }
}

/// `[user@]host[:port]` and the path of `HOST[:PORT]:PATH`; a bracketed host (`[::1]`) may hold
/// colons. A port is digits followed by another `:`.
fn split_scp_like(text: &str) -> Option<(String, String)> {
    let host_end = match text.find('[') {
        Some(open) if !text[..open].contains(':') => open + text[open..].find(']')? + 1,
        _ => 0,
    };
    let colon = host_end + text[host_end..].find(':')?;
    let (authority, rest) = (&text[..colon], &text[colon + 1..]);
    if let Some((port, path)) = rest.split_once(':') {
        if !port.is_empty() && port.chars().all(|c| c.is_ascii_digit()) {
            return Some((format!("{authority}:{port}"), path.to_string()));
        }
    }
    Some((authority.to_string(), rest.to_string()))
}

/// `host`, `host:port`, `[v6]` or `[v6]:port` into the host and its port.
fn split_port(text: &str) -> Result<(String, Option<u16>), String> {
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let (host, after) = rest.split_once(']').ok_or("a `[` without its `]`")?;
        match after {
            "" => (host, None),
            _ => (
                host,
                Some(after.strip_prefix(':').ok_or("text after `]` that is not `:PORT`")?),
            ),
        }
    } else {
        match text.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (text, None),
        }
    };
    let port = match port {
        None => None,
        Some(port) => match port.parse::<u16>() {
            Ok(number) if number > 0 => Some(number),
            _ => return Err(format!("`{port}` is not a port (1 to 65535)")),
        },
    };
    Ok((host.to_string(), port))
}

/// A host or user name that `ssh` cannot take for an option or split into words.
fn check_name(name: &str, what: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err(format!("the {what} is empty"));
    }
    if name.starts_with('-') {
        return Err(format!("the {what} `{name}` starts with `-`"));
    }
    if name.chars().any(|c| {
        // Shell metacharacters too: OpenSSH refuses them in a host name, but older clients
        // with `%h` in a ProxyCommand handed them to a shell (issue 40).
        c.is_whitespace()
            || matches!(
                c,
                '/' | '@' | '\'' | '"' | '`' | '$' | '\\' | ';' | '|' | '&' | '(' | ')' | '<' | '>'
            )
    }) {
        return Err(format!("the {what} `{name}` holds a character a {what} cannot have"));
    }
    Ok(())
}

/// An absolute path, `~` or `~/…`.
fn check_path(path: &str) -> Result<(), String> {
    if path.is_empty() {
        return Err("the path is empty (HOST:/absolute/path or HOST:~/path)".to_string());
    }
    if !(path.starts_with('/') || path == "~" || path.starts_with("~/")) {
        return Err(format!(
            "the path `{path}` is relative: give it from the root (/srv/project) or the remote home (~/project)"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(host: &str, user: Option<&str>, port: Option<u16>, path: &str) -> RemoteTarget {
        RemoteTarget {
            host: host.into(),
            user: user.map(Into::into),
            port,
            path: path.into(),
        }
    }

    #[test]
    fn the_forms_of_a_remote_workspace_are_read() {
        let cases = [
            ("box:/srv/p", target("box", None, None, "/srv/p")),
            ("box:~/p", target("box", None, None, "~/p")),
            ("box:~", target("box", None, None, "~")),
            ("me@box:2222:/srv/p", target("box", Some("me"), Some(2222), "/srv/p")),
            ("me@box:/srv/p:x", target("box", Some("me"), None, "/srv/p:x")),
            ("[::1]:22:/p", target("::1", None, Some(22), "/p")),
            ("ssh://box/srv/p", target("box", None, None, "/srv/p")),
            ("ssh://me@box:2200/~/p", target("box", Some("me"), Some(2200), "~/p")),
            ("ssh://[fe80::1]:2200/p", target("fe80::1", None, Some(2200), "/p")),
        ];
        for (text, expected) in cases {
            assert_eq!(RemoteTarget::parse(text).unwrap(), expected, "{text}");
            let again = RemoteTarget::parse(&expected.to_string()).unwrap();
            assert_eq!(again, expected, "{text} written as {expected}");
        }
    }

    #[test]
    fn bad_remote_workspaces_are_refused_with_their_reason() {
        let cases = [
            ("box", "no `:`"),
            ("box:", "the path is empty"),
            ("box:project", "is relative"),
            (":/p", "the host is empty"),
            ("-oProxyCommand=x:/p", "starts with `-`"),
            ("@box:/p", "the user is empty"),
            ("ssh://box", "no path"),
            ("ssh://box:99999/p", "not a port"),
            ("box:0:/p", "not a port"),
            ("b ox:/p", "cannot have"),
            ("box;touch:/p", "cannot have"),
            ("a|b:/p", "cannot have"),
            ("a&b:/p", "cannot have"),
            ("a(b):/p", "cannot have"),
            ("a<b:/p", "cannot have"),
            ("a>b:/p", "cannot have"),
            ("box:/p\n", "control character"),
        ];
        for (text, reason) in cases {
            let error = RemoteTarget::parse(text).unwrap_err().to_string();
            assert!(error.contains(reason), "{text:?}: {error}");
        }
    }
}
