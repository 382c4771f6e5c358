//! One module per command or group of commands, each a function of its arguments, the global
//! options and the output. [`run`] dispatches; the keeper ([`keep`]) runs apart, from `main`,
//! because it writes to standard output itself.

pub mod build_info;
pub mod cloud;
mod delete;
pub mod diff;
pub mod keep;
mod logs;
pub(crate) mod otlp;
mod parse;
mod pins;
pub mod run;
mod runs;
mod search;
pub mod serve;
pub(crate) mod sessions;
pub(crate) mod share;
pub(crate) mod stop;
pub(crate) mod tags;
mod tail;
pub mod watch;

use std::io::Write;
use std::process::ExitCode;

use crate::cli::{Globals, StudioCommand};
use crate::place::Place;

/// Runs one command; its exit status is success unless it says otherwise (`run` and `diff` do).
pub fn run(command: StudioCommand, globals: &Globals, out: &mut impl Write) -> anyhow::Result<ExitCode> {
    if let Some(url) = &globals.source.source {
        return cloud::run(command, globals, url, out);
    }
    // `--remote`: connected here (`Cli::check` refused it for the commands that do not take it).
    let place = Place::of(&command, globals)?;
    let done = match command {
        StudioCommand::Sessions(args) => sessions::list(&args, &place, globals, out),
        StudioCommand::Show(args) => sessions::show(&args, &place, globals, out),
        StudioCommand::Parse(args) => parse::parse(&args, globals, out),
        StudioCommand::Pin(args) => pins::pin(&args, globals, out),
        StudioCommand::Unpin(args) => pins::unpin(&args, globals, out),
        StudioCommand::Pins => pins::list(globals, out),
        // The app service's operations, here or as the server of `--remote` answers them.
        StudioCommand::Tag(_) | StudioCommand::Untag(_) | StudioCommand::Note(_) | StudioCommand::View(_) => {
            tags::run(&command, place.methods()?, globals.format(), out)
        }
        StudioCommand::Runs(args) => runs::list(&args, globals, out),
        StudioCommand::Logs(args) => logs::logs(&args, globals, out),
        StudioCommand::Search(args) => search::search(&args, globals, out),
        StudioCommand::Delete(args) => delete::delete(&args, globals, out),
        StudioCommand::Prune(args) => delete::prune(&args, globals, out),
        StudioCommand::Stop(args) => stop::stop(&args, &place, globals, out),
        StudioCommand::Watch => watch::watch(&place, globals, out),
        StudioCommand::Tail(args) => tail::tail(&args, globals, out),
        StudioCommand::Export(args) => share::export(&args, &place, globals, out),
        StudioCommand::Import(args) => share::import(&args, &place, globals, out),
        StudioCommand::Open(args) => share::open(&args, &place, globals, out),
        StudioCommand::Otlp(args) => otlp::otlp(&args, &place, globals, out),
        // `main` runs these two before it locks standard output.
        StudioCommand::Serve(args) => serve::serve(&args, globals),
        StudioCommand::Mcp(args) => crate::mcp::mcp(&args, globals),
        StudioCommand::Run(args) => return run::run(&args, &place, globals, out),
        StudioCommand::Diff(args) => return diff::diff(&args, &place, globals, out),
    };
    done.map(|()| ExitCode::SUCCESS)
}
