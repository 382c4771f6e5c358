//! What opening a workspace asks first. A workspace in Open Recent opens at once; any other, from
//! a link (which anyone can write) or from the page (which may only ask), is put to the user in
//! the system's own dialog, worded for what it opens: a folder here, a folder on another machine
//! (ssh logs in there as the user), or a bucket (the provider's credentials are sent to its
//! endpoint, named when it is not the provider's own). Every value shown came from elsewhere and
//! is escaped ([`studio_core::visible::shown`]).

use std::path::PathBuf;

use studio_args::target::WorkspaceTarget;
use studio_core::bucket::Source;
use studio_core::remote::ssh::RemoteTarget;
use studio_core::visible::shown;
use studio_core::Error;

/// A workspace the window was asked to open, read: where it is.
#[derive(Debug)]
pub enum Opening {
    /// A folder here, as given.
    Folder(PathBuf),
    /// A folder on another machine.
    Host(RemoteTarget),
    /// A bucket prefix, with the endpoint and profile it is read at.
    Bucket(Source),
}

/// The question asked before an [`Opening`] not in Open Recent opens.
#[derive(Debug, PartialEq, Eq)]
pub struct OpenQuestion {
    pub title: &'static str,
    pub text: String,
}

/// The title of the question before a folder here opens as a workspace.
pub const OPEN_FOLDER_TITLE: &str = "Open this folder as a workspace?";

/// The title of the question before a folder on another machine opens as a workspace.
pub const OPEN_HOST_TITLE: &str = "Open a workspace on this host?";

/// The title of the question before a bucket prefix opens as a workspace.
pub const OPEN_BUCKET_TITLE: &str = "Open this bucket as a workspace?";

impl Opening {
    /// Reads `target`; a host or a bucket URL that cannot be read is refused, naming it.
    pub fn read(target: WorkspaceTarget) -> Result<Opening, Error> {
        Ok(match target {
            WorkspaceTarget::Local(path) => Opening::Folder(path),
            WorkspaceTarget::Remote(target) => Opening::Host(studio_core::remote::window::parse_target(&target)?),
            WorkspaceTarget::Cloud(url) => Opening::Bucket(Source::parse(&url)?),
        })
    }

    /// What Open Recent records this workspace as once it is open: a folder's canonical path
    /// (as given when it has none: it does not exist), `ssh://…`, a bucket's URL with its
    /// endpoint and profile.
    pub fn recorded(&self) -> PathBuf {
        match self {
            Opening::Folder(path) => std::fs::canonicalize(path).unwrap_or_else(|_| path.clone()),
            Opening::Host(target) => PathBuf::from(target.to_string()),
            Opening::Bucket(source) => PathBuf::from(source.target()),
        }
    }

    /// Whether the studio opened this workspace before (it is one of `recent`, Open Recent's).
    pub fn is_known(&self, recent: &[PathBuf]) -> bool {
        match self {
            // A folder that does not exist is no workspace the studio opened.
            Opening::Folder(path) => std::fs::canonicalize(path).is_ok_and(|path| recent.contains(&path)),
            Opening::Host(_) | Opening::Bucket(_) => recent.contains(&self.recorded()),
        }
    }

    /// The native question before it opens, saying what opening it does.
    pub fn question(&self) -> OpenQuestion {
        match self {
            Opening::Folder(path) => OpenQuestion {
                title: OPEN_FOLDER_TITLE,
                text: format!(
                    "{}\n\nThe studio will list its sessions, and its .zibby/studio.toml may declare agents \
                     (each asks before it first runs).",
                    shown(&path.display().to_string())
                ),
            },
            Opening::Host(target) => {
                let user = target
                    .user
                    .as_deref()
                    .map_or_else(|| "your user name".to_owned(), |user| format!("user {}", shown(user)));
                OpenQuestion {
                    title: OPEN_HOST_TITLE,
                    text: format!(
                        "Host: {}\nFolder: {}\n\nThe studio will log in there with ssh as {user} (your keys, \
                         your ssh config's settings for this host), put its own zstudio there if it is \
                         missing, and list the folder's sessions. Agents there ask before they first run.",
                        shown(&target.host),
                        shown(&target.path),
                    ),
                }
            }
            Opening::Bucket(source) => {
                let provider = source.provider;
                let profile = source
                    .profile
                    .as_deref()
                    .map(|profile| format!(" (profile {})", shown(profile)))
                    .unwrap_or_default();
                let mut text = format!(
                    "{}\n\nThe studio will list and read its sessions, read-only, with {}{profile}.",
                    shown(&source.to_string()),
                    provider.credentials_sent(),
                );
                if let Some(endpoint) = source.foreign_endpoint() {
                    text.push_str(&format!(
                        "\n\nIts endpoint, {}, is not {}'s own: your credentials will be sent to that \
                         server. Open it only if you run that server or trust it.",
                        shown(endpoint),
                        provider.name(),
                    ));
                }
                OpenQuestion {
                    title: OPEN_BUCKET_TITLE,
                    text,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn read(target: &str) -> Opening {
        Opening::read(WorkspaceTarget::parse(Path::new(target))).unwrap()
    }

    #[test]
    fn a_folder_is_known_by_its_canonical_path() {
        let dir = tempfile::tempdir().unwrap();
        let canonical = std::fs::canonicalize(dir.path()).unwrap();
        let recent = vec![canonical.clone()];
        assert!(Opening::Folder(canonical.join(".")).is_known(&recent));
        assert!(!Opening::Folder(PathBuf::from("/etc")).is_known(&recent));
        assert!(!Opening::Folder(canonical.join("missing")).is_known(&recent));
    }

    /// Issue 40, point 8: a host or a bucket is known only as Open Recent recorded it: the same
    /// host and folder, the same bucket at the same endpoint with the same profile.
    #[test]
    fn a_host_or_a_bucket_is_known_as_open_recent_records_it() {
        let recent = vec![
            PathBuf::from("ssh://me@box:2222/srv/p"),
            PathBuf::from("s3://b/ci?endpoint=http%3A%2F%2F127.0.0.1%3A9000&profile=ci"),
        ];
        assert!(read("ssh://me@box:2222/srv/p").is_known(&recent));
        assert!(
            Opening::Host(studio_core::remote::window::parse_target("me@box:2222:/srv/p").unwrap()).is_known(&recent)
        );
        assert!(!read("ssh://box/srv/p").is_known(&recent));
        assert!(!read("ssh://me@box:2222/srv/other").is_known(&recent));
        let at = |endpoint: &str, profile: &str| {
            Opening::Bucket(
                Source::parse("s3://b/ci")
                    .unwrap()
                    .with_endpoint(endpoint)
                    .with_profile(profile)
                    .unwrap(),
            )
        };
        assert!(at("http://127.0.0.1:9000", "ci").is_known(&recent));
        assert!(!at("http://127.0.0.1:9001", "ci").is_known(&recent), "another endpoint");
        assert!(
            !at("http://127.0.0.1:9000", "prod").is_known(&recent),
            "another profile"
        );
        assert!(!read("s3://b/ci").is_known(&recent), "the provider's own endpoint");
    }

    /// Issue 40, point 2: each question says what it opens; a bucket's names the endpoint and
    /// the provider whose credentials would be sent there when it is not the provider's own.
    #[test]
    fn each_question_says_what_it_opens_and_where_credentials_go() {
        assert_eq!(read("/srv/p").question().title, OPEN_FOLDER_TITLE);
        let host = read("ssh://me@box/srv/p").question();
        assert_eq!(host.title, OPEN_HOST_TITLE);
        assert!(host.text.contains("Host: box\nFolder: /srv/p"), "{}", host.text);
        assert!(host.text.contains("as user me"), "{}", host.text);

        let own = read("gs://runs/ci").question();
        assert_eq!(own.title, OPEN_BUCKET_TITLE);
        assert!(own.text.starts_with("gs://runs/ci\n"), "{}", own.text);
        assert!(own.text.contains("Google Cloud credentials"), "{}", own.text);
        assert!(!own.text.contains("endpoint"), "{}", own.text);

        let elsewhere = Opening::Bucket(
            Source::parse("gs://runs/ci")
                .unwrap()
                .with_endpoint("https://gcs.example"),
        );
        let text = elsewhere.question().text;
        assert!(
            text.contains("Its endpoint, https://gcs.example, is not Google Cloud Storage's own"),
            "{text}"
        );
    }

    /// A value from a link is shown escaped: it cannot draw lines of its own in the question.
    #[test]
    fn a_forged_line_in_a_target_is_shown_escaped() {
        let question = Opening::Folder(PathBuf::from("/srv/p\n\nThe studio trusts this folder")).question();
        assert_eq!(
            question.text.lines().next(),
            Some(r"/srv/p\n\nThe studio trusts this folder")
        );
    }
}
