//! The arguments of `zstudio otlp` (`cli` holds the rest of the command line).

use clap::Args;

#[derive(Args)]
pub struct OtlpArgs {
    #[command(subcommand)]
    pub command: OtlpCommand,
}

#[derive(clap::Subcommand)]
pub enum OtlpCommand {
    /// Send sessions' runs as traces to the OTLP endpoint that OTEL_EXPORTER_OTLP_ENDPOINT (or
    /// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, with OTEL_EXPORTER_OTLP_HEADERS and
    /// OTEL_EXPORTER_OTLP_PROTOCOL: http/protobuf or http/json) or the workspace's `[otlp]
    /// endpoint` in .zibby/studio.toml names. Sent again, a run keeps its trace and span ids
    Push(OtlpPushArgs),
}

#[derive(Args)]
pub struct OtlpPushArgs {
    /// The sessions to send
    #[arg(value_name = "ID", required_unless_present = "since", conflicts_with = "since")]
    pub session_ids: Vec<String>,
    /// Send every session updated within this long (`2h`, `3d`, `30m`)
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub since: Option<std::time::Duration>,
    /// Put each node's prompt and output in its span (their first 4 KiB, secrets redacted)
    #[arg(long)]
    pub include_output: bool,
    /// Give up on a request after this many seconds
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    pub timeout: u64,
}
