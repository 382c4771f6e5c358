//! `zstudio search`: the store's full-text search of a workspace.

use std::io::Write;

use crate::cli::{Globals, SearchArgs};
use crate::print;

pub fn search(args: &SearchArgs, globals: &Globals, out: &mut impl Write) -> anyhow::Result<()> {
    let hits = globals
        .open_store()?
        .search(&globals.open_workspace()?, &args.text, args.limit)?;
    print::emit(out, globals.format(), &hits, |out, hits| print::search_hits(out, hits))
}
