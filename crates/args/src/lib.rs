//! The command-line arguments that `zstudio` and the desktop app share, defined once with clap
//! (the core itself knows nothing of clap).
//!
//! - [`StoreArgs`]: `--db PATH | --memory`, where the studio's store is. `zstudio` takes them as
//!   global options of every command; the app as its own.
//! - [`desktop`]: the app's whole command line, `zibby-studio [--db PATH | --memory] [WORKSPACE]`.

pub mod desktop;

use std::path::PathBuf;

use studio_core::store::StoreLocation;

/// `--db PATH | --memory`: where the studio's store is (the default: `$ZIBBY_STUDIO_DB`, else the
/// platform data folder). The two are exclusive. Global: given before or after a subcommand.
#[derive(clap::Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreArgs {
    /// The studio's store [default: $ZIBBY_STUDIO_DB, else $XDG_DATA_HOME/zibby-studio/studio.sqlite]
    #[arg(long, value_name = "PATH", conflicts_with = "memory", global = true)]
    pub db: Option<PathBuf>,
    /// Use a throwaway in-memory store: nothing is kept after the command
    #[arg(long, global = true)]
    pub memory: bool,
}

impl StoreArgs {
    /// Whether either was given on the command line.
    pub fn given(&self) -> bool {
        self.db.is_some() || self.memory
    }

    /// Where the store is: [`StoreLocation::resolve`] of these arguments. Resolve it once per
    /// process: each in-memory location is a store of its own.
    pub fn location(&self) -> Result<StoreLocation, studio_core::Error> {
        StoreLocation::resolve(self.db.clone(), self.memory)
    }
}
