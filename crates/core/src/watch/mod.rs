//! The watch lane: [`watcher`], session folders as they change, as typed changes.

mod recorded_runs;
pub mod watcher;
