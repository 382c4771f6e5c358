//! The desktop app's command line: `zibby-studio [--db PATH | --memory] [WORKSPACE]`, WORKSPACE a
//! folder here or one on another machine (`ssh://host/path`, `host:path`).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{CommandFactory, Parser};

use crate::StoreArgs;

/// The one-line usage, printed under an error.
pub const USAGE: &str =
    "usage: zibby-studio [--db PATH | --memory] [--session ID] [--ssh-config FILE] [WORKSPACE | HOST:PATH | s3://BUCKET/PREFIX]";

const ENVIRONMENT: &str = "\
Environment:
  ZIBBY_STUDIO_DB  the store, when --db is not given
  ZIBBY_STUDIO_SSH_CONFIG  the ssh config file, when --ssh-config is not given
  RUST_LOG         log filter, e.g. RUST_LOG=debug (default: info); the log goes to stderr and
                   to a file a day in $XDG_DATA_HOME/dev.zibby.studio/logs (Help > About shows
                   where; File > Reveal Log Folder opens it)";

/// The app's arguments, as clap reads them. [`parse_args`] turns them into an [`Invocation`].
#[derive(Parser, Debug)]
#[command(
    name = "zibby-studio",
    about = "Zibby Studio: watch, start and stop Zibby agent runs on your own machine",
    version,
    override_usage = "zibby-studio [--db PATH | --memory] [--session ID] [--ssh-config FILE] [WORKSPACE | HOST:PATH | s3://BUCKET/PREFIX]",
    after_help = ENVIRONMENT,
    mut_arg("memory", |arg| arg.help("A throwaway store that lives as long as the app")),
)]
pub struct DesktopArgs {
    /// The project folder whose runs to show (sessions live in WORKSPACE/.zibby/output/sessions/)
    /// [default: the last one opened, else a folder picker asks]. A second launch hands its
    /// WORKSPACE to the running window (one window per store). A workspace on another machine
    /// is `ssh://[USER@]HOST[:PORT]/PATH` or `HOST:PATH` (HOST an alias of the ssh config),
    /// reached with the system's ssh. A bucket prefix `s3://BUCKET/PREFIX` (or `gs://`, `az://`)
    /// opens read-only (endpoint, region and keys from the provider's variables, e.g.
    /// AWS_ENDPOINT_URL, AWS_REGION, AWS_PROFILE)
    #[arg(value_name = "WORKSPACE")]
    pub workspace: Option<PathBuf>,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Open this session of the workspace (`zstudio open` asks for it so); a second launch
    /// brings the running window to it
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// The ssh config file ssh reads (`ssh -F`) to reach a remote workspace [default:
    /// $ZIBBY_STUDIO_SSH_CONFIG, else ssh's own]
    #[arg(long, value_name = "FILE", env = studio_core::remote::ssh::SSH_CONFIG_ENV)]
    pub ssh_config: Option<PathBuf>,
    /// WebKitWebDriver starts the browser binary with this flag when it drives the app: ignored.
    #[arg(long, hide = true)]
    automation: bool,
}

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
pub enum Invocation {
    Open {
        /// None: the last workspace opened, else the folder picker.
        workspace: Option<PathBuf>,
        db: Option<PathBuf>,
        memory: bool,
        /// The session to open (`--session`).
        session: Option<String>,
        /// A workspace on another machine (`ssh://host/path`, `host:path`), given as WORKSPACE.
        remote: Option<String>,
        /// `--ssh-config`: the ssh config file for a remote workspace.
        ssh_config: Option<PathBuf>,
        /// A bucket prefix (`s3://bucket/prefix`, `gs://…`, `az://…`) given as WORKSPACE: opened
        /// read-only, through a mirror in the studio's cache.
        cloud: Option<String>,
    },
    Help,
    Version,
}

/// The scheme of the studio's links (registered by the package through Tauri's deep-link plugin).
pub const LINK_SCHEME: &str = "zibby-studio";

/// The link the arguments are, when they are one (a link comes alone, but for the `--automation`
/// WebKitWebDriver adds): a link is written by anyone, so what it opens is asked first.
pub fn link_in(args: &[OsString]) -> Option<&str> {
    let link_prefix = format!("{LINK_SCHEME}://");
    let mut given = args.iter().filter(|arg| *arg != "--automation");
    match (given.next().and_then(|arg| arg.to_str()), given.next()) {
        (Some(link), None) if link.starts_with(&link_prefix) => Some(link),
        _ => None,
    }
}

/// `args` as the log may hold them: a link without its query's values (a link may carry what
/// its sender wants kept out of a log readable later: paths, ids).
pub fn loggable(args: &[String]) -> Vec<String> {
    let link_prefix = format!("{LINK_SCHEME}://");
    args.iter()
        .map(|arg| {
            if !arg.starts_with(&link_prefix) {
                return arg.clone();
            }
            match url::Url::parse(arg) {
                Ok(mut url) => {
                    // The keys the studio knows; another could carry data too.
                    let keys: Vec<&str> = url
                        .query_pairs()
                        .map(|(key, _)| match key.as_ref() {
                            "workspace" => "workspace",
                            "session" => "session",
                            _ => "…",
                        })
                        .collect();
                    if keys.is_empty() {
                        url.set_query(None);
                    } else {
                        url.set_query(Some(
                            &keys.iter().map(|key| format!("{key}=…")).collect::<Vec<_>>().join("&"),
                        ));
                    }
                    url.to_string()
                }
                Err(_) => format!("{link_prefix}…"),
            }
        })
        .collect()
}

/// A `zibby-studio://open?workspace=<folder>&session=<id>` link (both optional, percent-encoded),
/// as the desktop hands it to the app in place of its arguments: what it opens.
pub fn parse_link(link: &str) -> Result<Invocation, String> {
    let url = url::Url::parse(link).map_err(|e| format!("`{link}` is not a link: {e}"))?;
    if url.scheme() != LINK_SCHEME {
        return Err(format!("`{link}` is not a {LINK_SCHEME}:// link"));
    }
    if url.host_str() != Some("open") {
        return Err(format!(
            "`{link}`: the studio's links are {LINK_SCHEME}://open?workspace=…&session=…"
        ));
    }
    let (mut workspace, mut session) = (None, None);
    for (key, value) in url.query_pairs() {
        match key.as_ref() {
            // A bucket's endpoint and profile decide where the user's cloud credentials are sent:
            // a link (any web page can open one) never names them (issue 40).
            "workspace" if is_cloud(&value) && value.contains('?') => {
                return Err(format!(
                    "a link cannot name a bucket's endpoint or profile (they decide where your cloud \
                     credentials are sent): open {} from File > Open Cloud Workspace…",
                    value.split('?').next().unwrap_or_default()
                ))
            }
            "workspace" => workspace = Some(PathBuf::from(value.into_owned())),
            "session" => session = Some(value.into_owned()),
            other => return Err(format!("`{link}`: unknown part `{other}` (workspace, session)")),
        }
    }
    Ok(Invocation::Open {
        workspace,
        db: None,
        memory: false,
        session,
        remote: None,
        ssh_config: None,
        cloud: None,
    })
}

/// Parses the arguments after the program name. A mistake is one sentence naming it. A single
/// `zibby-studio://` link (the desktop opening one) is read by [`parse_link`].
pub fn parse_args(args: impl IntoIterator<Item = OsString>) -> Result<Invocation, String> {
    let args: Vec<OsString> = args.into_iter().collect();
    if let Some(link) = link_in(&args) {
        return parse_link(link);
    }
    let program = std::iter::once(OsString::from("zibby-studio"));
    match DesktopArgs::try_parse_from(program.chain(args)) {
        Ok(DesktopArgs {
            workspace,
            store,
            session,
            ssh_config,
            ..
        }) => {
            let text = workspace.as_ref().and_then(|path| path.to_str());
            let remote = text.filter(|text| is_remote(text)).map(str::to_owned);
            let cloud = text.filter(|text| is_cloud(text)).map(str::to_owned);
            Ok(Invocation::Open {
                workspace: workspace.filter(|_| remote.is_none() && cloud.is_none()),
                db: store.db,
                memory: store.memory,
                session,
                remote,
                ssh_config,
                cloud,
            })
        }
        Err(error) => match error.kind() {
            ErrorKind::DisplayHelp => Ok(Invocation::Help),
            ErrorKind::DisplayVersion => Ok(Invocation::Version),
            _ => Err(mistake(&error)),
        },
    }
}

/// Whether WORKSPACE names a workspace on another machine: `ssh://…`, or `HOST:PATH` (a `:` before
/// any `/`) that is no path here (a local folder named `a:b` stays a folder).
pub fn is_remote(workspace: &str) -> bool {
    if workspace.starts_with("ssh://") {
        return true;
    }
    let colon_first = match (workspace.find(':'), workspace.find('/')) {
        // `scheme://…` of another scheme is no `HOST:PATH`.
        (Some(colon), _) if workspace[colon..].starts_with("://") => false,
        (Some(colon), Some(slash)) => colon < slash,
        (Some(colon), None) => colon > 0,
        (None, _) => false,
    };
    colon_first && !std::path::Path::new(workspace).exists()
}

/// Whether WORKSPACE names a bucket prefix: `s3://`, `gs://` or `az://`.
pub fn is_cloud(workspace: &str) -> bool {
    ["s3://", "gs://", "az://"]
        .iter()
        .any(|scheme| workspace.starts_with(scheme))
}

/// The help `--help` prints.
pub fn help() -> String {
    DesktopArgs::command().render_help().to_string()
}

/// clap's error as the app says it: one sentence, the usage printed under it by the caller.
fn mistake(error: &clap::Error) -> String {
    let invalid = match error.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(arg)) => arg.as_str(),
        _ => "",
    };
    match error.kind() {
        ErrorKind::UnknownArgument if invalid.starts_with('-') && invalid.len() > 1 => {
            format!("unknown option `{invalid}`")
        }
        ErrorKind::UnknownArgument => format!("unexpected argument `{invalid}`: give one WORKSPACE"),
        ErrorKind::InvalidValue if invalid.starts_with("--db") => "`--db` needs a PATH".to_owned(),
        ErrorKind::ArgumentConflict => "give `--db PATH` or `--memory`, not both".to_owned(),
        _ => {
            let text = error.render().to_string();
            let first = text.lines().next().unwrap_or_default();
            first.strip_prefix("error: ").unwrap_or(first).to_owned()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Invocation, String> {
        parse_args(args.iter().map(OsString::from))
    }

    #[test]
    fn a_workspace_on_another_machine_is_told_from_a_folder() {
        let remote = |args: &[&str]| match parse(args) {
            Ok(Invocation::Open {
                workspace,
                remote,
                ssh_config,
                ..
            }) => (workspace, remote, ssh_config),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            remote(&["ssh://box/srv/p"]),
            (None, Some("ssh://box/srv/p".to_owned()), None)
        );
        assert_eq!(
            remote(&["--ssh-config", "cfg", "box:~/p"]),
            (None, Some("box:~/p".to_owned()), Some(PathBuf::from("cfg")))
        );
        assert_eq!(remote(&["/srv/a:b"]), (Some(PathBuf::from("/srv/a:b")), None, None));
        assert_eq!(remote(&["proj"]), (Some(PathBuf::from("proj")), None, None));
    }

    #[test]
    fn a_bucket_prefix_is_told_from_a_folder_and_a_host() {
        let cloud = |args: &[&str]| match parse(args) {
            Ok(Invocation::Open {
                workspace,
                remote,
                cloud,
                ..
            }) => (workspace, remote, cloud),
            other => panic!("{other:?}"),
        };
        for url in ["s3://bucket/ci/sessions", "gs://b", "az://container/p"] {
            assert_eq!(cloud(&[url]), (None, None, Some(url.to_owned())), "{url}");
        }
        assert_eq!(cloud(&["s3"]), (Some(PathBuf::from("s3")), None, None));
    }

    #[test]
    fn the_definition_is_consistent() {
        DesktopArgs::command().debug_assert();
    }

    #[test]
    fn a_second_workspace_or_an_unknown_option_is_named() {
        assert_eq!(
            parse(&["a", "b"]),
            Err("unexpected argument `b`: give one WORKSPACE".into())
        );
        assert_eq!(parse(&["-x"]), Err("unknown option `-x`".into()));
        assert_eq!(parse(&["--db"]), Err("`--db` needs a PATH".into()));
        assert_eq!(
            parse(&["--memory", "--db", "a"]),
            Err("give `--db PATH` or `--memory`, not both".into())
        );
    }

    #[test]
    fn a_link_opens_its_workspace_and_session() {
        assert_eq!(
            parse(&["zibby-studio://open?workspace=%2Fhome%2Fu%2Fmy%20project&session=1796000000000_abcd"]),
            Ok(Invocation::Open {
                workspace: Some(PathBuf::from("/home/u/my project")),
                db: None,
                memory: false,
                session: Some("1796000000000_abcd".to_owned()),
                remote: None,
                ssh_config: None,
                cloud: None,
            })
        );
        assert_eq!(
            parse(&["zibby-studio://open?session=s1", "--automation"]),
            Ok(Invocation::Open {
                workspace: None,
                db: None,
                memory: false,
                session: Some("s1".to_owned()),
                remote: None,
                ssh_config: None,
                cloud: None,
            })
        );
        assert!(parse(&["zibby-studio://delete?session=s1"])
            .unwrap_err()
            .contains("zibby-studio://open?"));
        assert!(parse(&["zibby-studio://open?command=rm"])
            .unwrap_err()
            .contains("unknown part `command`"));
        // Issue 40: a link that names a bucket's endpoint or profile is refused, not opened
        // without them; the bucket alone opens as any workspace of a link does.
        for link in [
            "zibby-studio://open?workspace=gs%3A%2F%2Fb%2Fp%3Fendpoint%3Dhttp%3A%2F%2Fattacker.example",
            "zibby-studio://open?workspace=s3%3A%2F%2Fb%2Fp%3Fprofile%3Dprod",
        ] {
            let error = parse(&[link]).unwrap_err();
            assert!(error.contains("cannot name a bucket's endpoint"), "{error}");
            assert!(!error.contains("attacker") && !error.contains("prod"), "{error}");
        }
        assert!(matches!(
            parse(&["zibby-studio://open?workspace=s3%3A%2F%2Fb%2Fp"]),
            Ok(Invocation::Open { workspace: Some(w), .. }) if w == std::path::Path::new("s3://b/p")
        ));
        // A folder of that name, with other arguments, is a workspace as before.
        assert!(matches!(
            parse(&["--db", "s.sqlite", "zibby-studio://open"]),
            Ok(Invocation::Open { workspace: Some(_), .. })
        ));
    }

    #[test]
    fn the_help_names_the_workspace_the_store_and_the_environment() {
        let help = help();
        for text in [
            "usage: zibby-studio [--db PATH | --memory] [--session ID] [--ssh-config FILE] [WORKSPACE | HOST:PATH | s3://BUCKET/PREFIX]",
            "ZIBBY_STUDIO_SSH_CONFIG",
            "[WORKSPACE]",
            "--db <PATH>",
            "A throwaway store that lives as long as the app",
            "ZIBBY_STUDIO_DB",
            "RUST_LOG",
        ] {
            assert!(help.to_lowercase().contains(&text.to_lowercase()), "{text} in {help}");
        }
        assert!(!help.contains("automation"), "{help}");
    }

    #[test]
    fn a_link_is_logged_without_its_query_values() {
        let logged = loggable(&[
            "zibby-studio".to_owned(),
            "zibby-studio://open?workspace=%2Fhome%2Fme%2Fsecret&session=20260101-000000-abcdef".to_owned(),
        ]);
        assert_eq!(logged[0], "zibby-studio");
        assert!(
            !logged[1].contains("secret") && !logged[1].contains("abcdef"),
            "{logged:?}"
        );
        assert!(logged[1].starts_with("zibby-studio://open?workspace="), "{logged:?}");
        let unknown = loggable(&["zibby-studio://open?%2Fhome%2Fme%2Fsecret".to_owned()]);
        assert!(!unknown[0].contains("secret"), "{unknown:?}");
    }

    #[test]
    fn a_link_is_told_from_a_command_line() {
        let args = |given: &[&str]| given.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(
            link_in(&args(&["--automation", "zibby-studio://open?workspace=/etc"])),
            Some("zibby-studio://open?workspace=/etc")
        );
        assert_eq!(link_in(&args(&["/etc"])), None);
        assert_eq!(link_in(&args(&["zibby-studio://open", "/etc"])), None);
    }
}
