//! studio-core: everything Zibby Studio does, without a window.
//!
//! - [`protocol`]: the streaming reader of a run's stdout/stderr (markers, timeline lines).
//! - [`timeline`]: the fold of those events into node executions and a run status.
//! - [`session`]: session folders on disk, one at a time or a whole workspace.
//! - [`id`], [`status`], [`error`]: the shared vocabulary.

pub mod agents;
pub mod error;
pub mod files;
pub mod id;
pub mod index;
pub mod keeper;
pub mod live;
pub mod private;
pub mod process;
pub mod protocol;
pub mod runner;
pub mod session;
pub mod status;
pub mod store;
pub mod tail;
pub mod timeline;
pub mod untrusted;
pub mod watcher;

pub use error::Error;
pub use id::SessionId;
pub use session::{Session, SessionSummary, Workspace};
pub use status::Status;
