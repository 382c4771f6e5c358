//! The studio over a link: [`protocol`] (JSON lines: the banner, requests, replies,
//! notifications, bounded frames), [`server`] (`zstudio serve --stdio`: the app service's
//! operations, the window's IPC commands by name, served to one client; [`reply`]: its replies
//! written as their results are serialised; [`table`]: the session listing's compact form on the
//! wire), [`client`]
//! ([`client::RemoteClient`]: a server's command started, its banner found, calls matched to
//! replies), [`ssh`] (a workspace on another machine: the target `host:path`, one ssh
//! ControlMaster per host, commands through it, the server binary put on the host), [`link`]
//! ([`link::Link`]: a server connected again whenever its link drops, its state), [`follow`]
//! (a run followed over a link, each output line once) and [`window`] (the window's remote
//! workspace: the app service's `Elsewhere` over a server on a host); [`export`] and [`import`]
//! carry bundles down and files up in chunks, through a private folder of the server's
//! ([`scratch`]). The lane
//! above `app`: it serves the app service and imports nothing above it.

pub mod client;
pub mod export;
pub mod follow;
pub mod import;
pub mod kept_server;
pub mod link;
pub mod methods;
pub mod prelude;
pub mod protocol;
pub mod reply;
pub mod scratch;
pub mod server;
pub mod ssh;
pub mod table;
pub mod transfer;
pub mod window;
