//! One ssh command that starts a remote workspace's server: [`Connection::start_server`] runs the
//! start script through the master, which probes the host (its `$HOME`, `uname -sm`, the
//! workspace folder's state), finds the server of the local build there (checked as `bootstrap`
//! checks it: the login's own, written by no one else, its SHA-256 the build's, or its file's
//! identity the one this machine saw when it last read that SHA-256) and, when both are right,
//! `exec`s it on the workspace. What the script says before the server's banner is a prelude of
//! a few `key value` lines between two lines naming the client's nonce
//! ([`RemoteClient::connect_after_prelude`]: bounded in lines and bytes, what a remote shell
//! prints before it skipped as before a banner), read here strictly ([`HostPrelude::parse`]:
//! each key in its place, once). A sequence of commands through a kept master pays one command
//! through it before the call, where it paid three (issue 41, point 7: `ssh -O check`, the
//! probe, the server's check, then the server). Only a host without the build takes more: the
//! upload, then the server.
//!
//! [`Connection::open`] probes with the same script, the search left out.

use std::path::Path;

use super::bootstrap::{BuildInfo, Verified, FIND_FUNCTION, SCRIPT_HELPERS};
use super::connection::Connection;
use super::errors::SshError;
use crate::remote::client::{ClientOptions, RemoteClient};
use crate::remote::prelude::{read_prelude, Prelude};
use crate::vocabulary::error::Error;

/// After [`SCRIPT_HELPERS`] and [`FIND_FUNCTION`]: `$1` the workspace as given (`~` for the
/// remote home), `$2` the build's file name (empty: the host probed only), `$3` its build id,
/// `$4` the identity of the server file last seen, `$5` how long a kept server waits for the next
/// command in seconds (empty: none is kept), then `--nonce NONCE` (handed on to the server). The prelude: `home`, `platform`, `workspace`, `state` (`ok`, `missing`, `link`,
/// `not-a-folder`, `link-inside SUB`), then what `find_server` said when the workspace is right
/// and a build is named; `serve` and the server `exec`ed when it found one, else `stop`.
const START_BODY: &str = r#"ws=$1 name=$2 build=$3 seen=$4 keep=$5
shift 5
case $keep in *[!0-9]*) keep= ;; esac
if [ "$1" != --nonce ] || [ -z "$2" ]; then echo 'the start script takes --nonce NONCE' >&2; exit 2; fi
n=$2
printf 'zstudio-prelude %s\n' "$n"
printf 'home %s\nplatform %s\n' "$HOME" "$(uname -sm)"
case "$ws" in "~") ws=$HOME ;; "~/"*) ws=$HOME/${ws#"~/"} ;; esac
printf 'workspace %s\n' "$ws"
state=ok
if [ ! -e "$ws" ] && [ ! -L "$ws" ]; then state=missing
elif [ -L "$ws" ]; then state=link
elif [ ! -d "$ws" ]; then state=not-a-folder
else for sub in .zibby .zibby/output .zibby/output/sessions; do
  if [ -L "$ws/$sub" ]; then state="link-inside $sub"; break; fi; done; fi
printf 'state %s\n' "$state"
server=
if [ "$state" = ok ] && [ -n "$name" ]; then find_server "$name" "$build" "$seen"; fi
if [ -n "$server" ]; then
  printf 'zstudio-prelude-end %s serve\n' "$n"
  if [ -n "$keep" ]; then exec "$server" serve --stdio --workspace "$ws" --keep-for "$keep" --kept-build "$build" "$@"; fi
  exec "$server" serve --stdio --workspace "$ws" "$@"
fi
printf 'zstudio-prelude-end %s stop\n' "$n""#;

/// The whole start script.
fn start_script() -> String {
    format!("{SCRIPT_HELPERS}{FIND_FUNCTION}{START_BODY}")
}

/// What the start script said, read strictly.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct HostPrelude {
    home: String,
    platform: String,
    workspace: String,
    state: String,
    found: Found,
}

/// What the search for the server found.
#[derive(Debug, PartialEq, Eq)]
enum Found {
    /// Not looked for (the host probed only, or its workspace is wrong).
    NotLooked,
    /// In [`super::SERVER_DIR`], its file's identity said.
    Installed { path: String, identity: String },
    /// On the PATH.
    OnPath(String),
    /// Neither: to be uploaded.
    Missing,
}

impl HostPrelude {
    /// `prelude`'s lines as the start script says them (`searched`: whether a build was named),
    /// or what is wrong with them.
    pub(super) fn parse(prelude: &Prelude, searched: bool) -> Result<HostPrelude, String> {
        let mut lines = prelude
            .lines
            .iter()
            .map(|line| line.split_once(' ').unwrap_or((line.as_str(), "")));
        let mut next = |key: &str| match lines.next() {
            Some((said, value)) if said == key => Ok(value.to_owned()),
            Some((said, _)) => Err(format!("`{key}` was expected, `{}` came", shown(said))),
            None => Err(format!("`{key}` was expected, the lines ended")),
        };
        let (home, platform, workspace, state) = (next("home")?, next("platform")?, next("workspace")?, next("state")?);
        let rest: Vec<(&str, &str)> = lines.collect();
        let found = match (rest.as_slice(), searched && state == "ok") {
            ([], false) => Found::NotLooked,
            ([("identity", identity), ("installed", path)], true) if !path.is_empty() => Found::Installed {
                path: path.to_string(),
                identity: identity.to_string(),
            },
            ([("path", path)], true) if !path.is_empty() => Found::OnPath(path.to_string()),
            ([("none", "")], true) => Found::Missing,
            (other, _) => {
                let keys: Vec<&str> = other.iter().map(|(key, _)| *key).collect();
                return Err(format!(
                    "unexpected lines after the state: `{}`",
                    shown(&keys.join(" "))
                ));
            }
        };
        let found_one = matches!(found, Found::Installed { .. } | Found::OnPath(_));
        if prelude.server_follows != found_one {
            return Err(format!(
                "it said `{}` with the server {}",
                if prelude.server_follows { "serve" } else { "stop" },
                if found_one { "found" } else { "not found" }
            ));
        }
        Ok(HostPrelude {
            home,
            platform,
            workspace,
            state,
            found,
        })
    }
}

fn shown(text: &str) -> String {
    crate::vocabulary::visible::shown(text)
}

impl Connection {
    /// Probes the host (its home and platform, the workspace folder's state): one command.
    pub(super) fn probe(&mut self) -> Result<(), SshError> {
        let nonce = uuid::Uuid::now_v7().simple().to_string();
        let script = start_script();
        let path = self.target().path.clone();
        let argv = ["sh", "-c", &script, "sh", &path, "", "", "", "", "--nonce", &nonce];
        let output = self.run(&argv, None, 64 * 1024)?;
        let junk = std::sync::Mutex::new(Vec::new());
        let host = read_prelude(&mut &output[..], &nonce, 64 * 1024, &junk)
            .and_then(|prelude| HostPrelude::parse(&prelude, false))
            .map_err(|what| self.unexpected(what))?;
        self.take_prelude(&host)
    }

    /// Starts the server of `local_binary`'s build (the running `zstudio`) on the host, on the
    /// target's workspace: probed, found and started in one command through the master; uploaded
    /// first when the host has no such build (then started by a second command). With `keep`, the
    /// server is the workspace's kept server (`remote::kept_server`), which waits that long for
    /// the next command, reached through the kept master when it can be
    /// ([`Connection::reach_kept_server`]). Errors name the host and what is wrong (the
    /// workspace, the upload, the link).
    pub fn start_server(
        &mut self,
        local_binary: &Path,
        client: &ClientOptions,
        keep: Option<std::time::Duration>,
    ) -> Result<RemoteClient, Error> {
        let build = BuildInfo::of_binary(local_binary)?;
        let name = build.file_name();
        // What this machine saw of the server there when it last read its SHA-256.
        let verified = self.verified(&format!("server {name}"));
        let seen = verified.as_ref().and_then(Verified::read).unwrap_or_default();
        let script = start_script();
        let path = self.target().path.clone();
        let keep_secs = keep.map(|keep| keep.as_secs().max(1).to_string()).unwrap_or_default();
        let argv = ["sh", "-c", &script, "sh", &path, &name, &build.build, &seen, &keep_secs];
        let command = self.command(argv)?;
        let (prelude, started) = RemoteClient::connect_after_prelude(self.host(), command, client.clone())
            // The master's own words when it is what failed.
            .map_err(|error| self.check().map_or_else(Error::from, |()| error))?;
        let host = HostPrelude::parse(&prelude, true).map_err(|what| self.unexpected(what))?;
        self.take_prelude(&host)?;
        if let Some(verified) = &verified {
            verified.keep_identity(&prelude.lines.join("\n"), &seen);
        }
        if let Some(started) = started {
            if keep.is_some() {
                self.remember_kept_server(&build.build);
            }
            return Ok(started);
        }
        let server = self.upload(local_binary, build)?;
        let mut argv = vec![
            server.program.as_str(),
            "serve",
            "--stdio",
            "--workspace",
            self.workspace_path(),
        ];
        if keep.is_some() {
            argv.extend(["--keep-for", &keep_secs, "--kept-build", &server.build.build]);
        }
        let started = RemoteClient::connect(self.host(), self.command(argv)?, client.clone())?;
        if keep.is_some() {
            self.remember_kept_server(&server.build.build);
        }
        Ok(started)
    }

    /// The error of a start script whose words do not read.
    fn unexpected(&self, what: String) -> SshError {
        SshError::Ssh {
            host: self.host(),
            detail: format!("the host's start script said something unexpected: {what}"),
        }
    }

    /// Keeps what the host said of itself; the workspace's error when its folder is wrong.
    fn take_prelude(&mut self, host: &HostPrelude) -> Result<(), SshError> {
        self.set_host_facts(&host.home, &host.platform, &host.workspace);
        let reason = match host.state.as_str() {
            "ok" => return Ok(()),
            "missing" => "does not exist".to_string(),
            "link" => "is a symbolic link: give the folder it points to".to_string(),
            "not-a-folder" => "is not a folder".to_string(),
            other => match other.strip_prefix("link-inside ") {
                Some(sub) => format!("has {sub} as a symbolic link, which could lead out of the workspace"),
                None => format!("could not be checked ({other})"),
            },
        };
        Err(SshError::RemotePath {
            host: self.host(),
            // What the host's shell printed: shown escaped.
            path: shown(self.workspace_path()),
            reason,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prelude(lines: &[&str], server_follows: bool) -> Prelude {
        Prelude {
            lines: lines.iter().map(|line| line.to_string()).collect(),
            server_follows,
        }
    }

    const PROBED: [&str; 4] = [
        "home /home/me",
        "platform Linux x86_64",
        "workspace /home/me/ws",
        "state ok",
    ];

    #[test]
    fn a_start_scripts_words_are_read_in_their_order() {
        let mut lines = PROBED.to_vec();
        lines.extend([
            "identity 1:2:3:4:5",
            "installed /home/me/.zibby-studio/server/zstudio-0.1.0-ab",
        ]);
        let host = HostPrelude::parse(&prelude(&lines, true), true).unwrap();
        assert_eq!(host.workspace, "/home/me/ws");
        assert_eq!(
            host.found,
            Found::Installed {
                path: "/home/me/.zibby-studio/server/zstudio-0.1.0-ab".into(),
                identity: "1:2:3:4:5".into()
            }
        );
        let mut lines = PROBED.to_vec();
        lines.push("none");
        assert_eq!(
            HostPrelude::parse(&prelude(&lines, false), true).unwrap().found,
            Found::Missing
        );
        assert_eq!(
            HostPrelude::parse(&prelude(&PROBED, false), false).unwrap().found,
            Found::NotLooked
        );
        let wrong = ["home /h", "platform Linux x86_64", "workspace /h/ws", "state missing"];
        assert_eq!(
            HostPrelude::parse(&prelude(&wrong, false), true).unwrap().state,
            "missing"
        );
    }

    #[test]
    fn anything_else_a_start_script_says_is_refused() {
        let with = |extra: &[&str], follows: bool| {
            let mut lines = PROBED.to_vec();
            lines.extend(extra);
            HostPrelude::parse(&prelude(&lines, follows), true).unwrap_err()
        };
        // A key out of its place, twice, unknown, or a verdict that does not match.
        assert!(with(&["installed /x"], true).contains("unexpected lines"));
        assert!(with(&["path /a", "path /b"], true).contains("unexpected lines"));
        assert!(with(&["run /bin/sh"], true).contains("unexpected lines"));
        assert!(with(&["none"], true).contains("with the server not found"));
        assert!(with(&["path /usr/bin/zstudio"], false).contains("with the server found"));
        let swapped = ["platform Linux x86_64", "home /h", "workspace /h/ws", "state ok"];
        let error = HostPrelude::parse(&prelude(&swapped, false), false).unwrap_err();
        assert!(error.contains("`home` was expected, `platform` came"), "{error}");
        assert!(HostPrelude::parse(&prelude(&PROBED[..3], false), false).is_err());
    }
}
