//! The share lane: sharing sessions. A session exported as one `.zip` bundle
//! ([`export_session`]), and a bundle, a session folder (a downloaded cloud session) or a
//! captured log brought into a workspace ([`import`]). The bundle format is documented in
//! docs/cli.md ("Bundles").
//!
//! - `format`: the bundle's names, its manifest and the hashing of its members.
//! - `paths`: what a path inside a session may be, and a folder's entries in order.
//! - `export`: a session written as a bundle, what it recorded of how it ran redacted by
//!   `redact` (secrets that look like keys and tokens, the home folder written as `~`).
//! - `options`: what an import takes ([`ImportOptions`], [`ImportLimits`]) and what it made.
//! - `import`: what a source is, then `import/bundle`, `import/folder` or `import/log` brings it
//!   in, each building the session in `import/staging` and committing it there.
//!
//! What is imported is untrusted. An entry with `..`, an absolute path, a link (symbolic or
//! hard), a device, FIFO or socket, a name the session layout cannot hold, more entries or more
//! bytes than [`ImportLimits`] allow (the declared sizes are checked before anything is read,
//! and the zip reader stops an entry that inflates past its declared size: a zip bomb stops
//! there, see `import/bundle.rs`), a manifest of an unknown version, a member that does not match
//! its checksum: each is refused with an error naming the entry, and nothing is left behind. So
//! is what is none of the three (a file that is not text, a folder that holds no session's
//! files). The session is built in a folder of its own beside the sessions folder
//! (`.zibby/output/.import-<boot>-<pid>-<start time>-<uuid>/`), its records are written in one
//! store transaction, and the folder is moved into place (never over another) only when
//! everything else succeeded; the transaction commits after. The folder of an import killed
//! part-way is removed by the next import or when the studio opens the workspace
//! ([`sweep_stale_imports`]). A bundle's central directory is sized from the zip's end records
//! before the zip reader reads it (it holds every entry in memory).

mod export;
mod format;
mod import;
mod options;
pub mod otlp;
mod paths;
mod redact;

pub use export::{export_session, Exported};
pub use format::{Folder, Manifest, Member, BUNDLE_FORMAT, BUNDLE_FORMAT_VERSION};
pub use import::{import, sweep_stale_imports};
pub use options::{ImportKind, ImportLimits, ImportOptions, ImportedSession, DEFAULT_MAX_BYTES};
pub use redact::{redact_secrets, RedactedSecret, Redaction, REDACTED};
