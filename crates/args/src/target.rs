//! What a workspace the studio recorded or was handed is: a folder here, one on another machine,
//! or a bucket prefix, told apart once ([`WorkspaceTarget::parse`]) for everything the desktop app
//! opens by its root (Open Recent, the window's `workspace_open`, a link's folder).

use std::path::{Path, PathBuf};

/// A workspace by where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkspaceTarget {
    /// A folder on this machine.
    Local(PathBuf),
    /// A workspace on another machine, `ssh://[USER@]HOST[:PORT]/PATH` (as the studio records
    /// one it opened; the command line also takes `HOST:PATH`, see [`crate::desktop::is_remote`]).
    Remote(String),
    /// A bucket prefix, `s3://`, `gs://` or `az://` (with the `?endpoint=…&profile=…` Open Recent
    /// keeps), opened read-only.
    Cloud(String),
}

impl WorkspaceTarget {
    /// `root` as the studio records workspaces: `ssh://…` on another machine, a bucket URL
    /// ([`crate::desktop::is_cloud`]), anything else (a name that is not UTF-8 too) a folder here.
    pub fn parse(root: &Path) -> WorkspaceTarget {
        match root.to_str() {
            Some(text) if text.starts_with("ssh://") => WorkspaceTarget::Remote(text.to_owned()),
            Some(text) if crate::desktop::is_cloud(text) => WorkspaceTarget::Cloud(text.to_owned()),
            _ => WorkspaceTarget::Local(root.to_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(root: &str) -> WorkspaceTarget {
        WorkspaceTarget::parse(Path::new(root))
    }

    #[test]
    fn a_recorded_root_is_a_folder_a_host_or_a_bucket() {
        assert_eq!(
            parse("ssh://me@box:2222/srv/p"),
            WorkspaceTarget::Remote("ssh://me@box:2222/srv/p".to_owned())
        );
        for url in [
            "s3://b/p",
            "gs://b/p",
            "az://c/p",
            "s3://b/p?endpoint=http%3A%2F%2F127.0.0.1%3A9000",
        ] {
            assert_eq!(parse(url), WorkspaceTarget::Cloud(url.to_owned()), "{url}");
        }
        for folder in ["/srv/p", "/srv/a:b", "proj", "box:p", "s3", "https://example.com/p"] {
            assert_eq!(parse(folder), WorkspaceTarget::Local(PathBuf::from(folder)), "{folder}");
        }
    }

    #[test]
    fn a_name_that_is_not_utf8_is_a_folder() {
        use std::os::unix::ffi::OsStrExt;
        let root = Path::new(std::ffi::OsStr::from_bytes(b"ssh://box/\xff"));
        assert_eq!(WorkspaceTarget::parse(root), WorkspaceTarget::Local(root.to_owned()));
    }
}
