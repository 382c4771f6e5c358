//! The watch lane: [`watcher`], session folders as they change, as typed changes.

pub mod watcher;
