//! The arguments of `zstudio tag`, `untag`, `note` and `view`, and the filters of `sessions`
//! (`cli` holds the rest of the command line).

use clap::{Args, Subcommand};
use studio_core::label::Tag;
use studio_core::store::Filters;
use studio_core::Status;

/// The filters of the sessions table: what `sessions` lists, what a saved view keeps.
#[derive(Args, Default)]
pub struct FilterArgs {
    /// Only the sessions of this status: running, success, error, cancelled, interrupted, unknown
    #[arg(long, value_name = "STATUS", value_parser = parse_status)]
    pub status: Option<Status>,
    /// Only the sessions of this agent
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// Only the sessions holding this tag; give it again for several (each must be held)
    #[arg(long = "tag", id = "tags", value_name = "NAME", value_parser = parse_tag)]
    pub tags: Vec<Tag>,
    /// Only the pinned sessions
    #[arg(long)]
    pub pinned: bool,
    /// Only the sessions a search for TEXT finds (as `zstudio search TEXT`, among its first 5000
    /// hits)
    #[arg(long, value_name = "TEXT")]
    pub search: Option<String>,
}

impl FilterArgs {
    pub fn filters(&self) -> Filters {
        Filters {
            status: self.status,
            agent: self.agent.clone(),
            tags: self.tags.clone(),
            pinned: self.pinned,
            search: self.search.clone(),
        }
    }
}

fn parse_status(word: &str) -> Result<Status, String> {
    serde_json::from_value(serde_json::Value::String(word.to_owned()))
        .map_err(|_| "a status is one of running, success, error, cancelled, interrupted, unknown".to_owned())
}

fn parse_tag(tag: &str) -> Result<Tag, String> {
    Tag::parse(tag).map_err(|e| e.to_string())
}

#[derive(Args)]
pub struct TagArgs {
    pub session_id: String,
    /// The tags
    #[arg(required = true, value_name = "NAME", value_parser = parse_tag)]
    pub tags: Vec<Tag>,
}

#[derive(Args)]
pub struct NoteArgs {
    pub session_id: String,
    /// The note's text; - reads it from standard input; "" removes the note. Without it, the
    /// note is printed
    #[arg(value_name = "TEXT", allow_hyphen_values = true)]
    pub text: Option<String>,
}

#[derive(Args)]
pub struct ViewArgs {
    #[command(subcommand)]
    pub action: ViewAction,
}

#[derive(Subcommand)]
pub enum ViewAction {
    /// Save the filters given under NAME (a view of that name is replaced)
    Save {
        /// The view's name (a tag's rules)
        name: String,
        #[command(flatten)]
        filters: FilterArgs,
    },
    /// List the saved views of the workspace
    List,
    /// Delete a saved view
    Delete { name: String },
}
