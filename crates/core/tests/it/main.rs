//! studio-core's integration tests: real captures of the engine, real folders.

mod adopted_runs;
mod architecture_doc;
mod captures;
mod compare;
mod detached_runs;
mod folder_reads;
mod folder_search;
mod harness;
mod hostile_processes;
mod hostile_workspace;
mod import_cycles;
mod live;
mod never_panics;
mod private_files;
mod room_sizes;
mod run_records;
mod runner;
mod seen_live;
mod session_folders;
mod share;
mod start_up;
mod store;
mod tags;
mod trust;
mod usage;
mod watcher;
