//! The window's Traces setting: where the open workspace's runs are sent as traces now (the
//! exporter's variables, which win, else the workspace's `[otlp]` table), and the table itself,
//! which the setting writes into `.zibby/studio.toml` (the agents, the budget and the table's
//! headers kept). A run reads where to send as it starts: a change applies from the next run.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::sessions::agents;
use crate::share::otlp::push::{check_url, studio_table, traces_url, Endpoint, Protocol};
use crate::vocabulary::error::Error;

/// Where a workspace's runs go as traces, as the window's Traces setting shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct TraceSetting {
    /// The URL every run's spans are sent to now (`…/v1/traces`); `None`: runs are not sent.
    pub sending_to: Option<String>,
    /// Where that comes from: a variable's name (`OTEL_EXPORTER_OTLP_ENDPOINT`, …, which wins over
    /// the file) or the workspace's `.zibby/studio.toml`.
    pub from: Option<String>,
    /// The `[otlp]` table's `endpoint` as written (a collector's base: traces go to
    /// `/v1/traces` under it); `None`: the workspace names none.
    pub endpoint: Option<String>,
    /// The table's `protocol` (`http/protobuf`, the default, or `http/json`).
    pub protocol: Option<String>,
}

/// The Traces setting of the workspace at `workspace_root`, the variables read through `var`.
pub fn trace_setting(var: impl Fn(&str) -> Option<String>, workspace_root: &Path) -> Result<TraceSetting, Error> {
    // The file read once: what the setting shows of it, and where runs go when no variable wins.
    let table = studio_table(workspace_root)?;
    let (endpoint, protocol) = match &table {
        Some(table) => (Some(table.endpoint.clone()), table.protocol.clone()),
        None => (None, None),
    };
    let sending = Endpoint::chosen(var, || Ok(table), workspace_root)?;
    Ok(TraceSetting {
        sending_to: sending.as_ref().map(|endpoint| endpoint.url.clone()),
        from: sending.map(|endpoint| endpoint.from),
        endpoint,
        protocol,
    })
}

/// Writes the workspace's `[otlp]` table: `endpoint` (an `http://` or `https://` collector base)
/// with `protocol` when given, its headers kept; `None` removes the table. A URL or a protocol
/// the studio would not send to is refused, naming it, and nothing is written.
pub fn save_trace_setting(workspace_root: &Path, endpoint: Option<&str>, protocol: Option<&str>) -> Result<(), Error> {
    let Some(endpoint) = endpoint.map(str::trim).filter(|endpoint| !endpoint.is_empty()) else {
        return agents::save_otlp(workspace_root, None);
    };
    let from = "the traces endpoint";
    check_url(&traces_url(endpoint), from)?;
    let mut table = toml::Table::new();
    table.insert("endpoint".into(), endpoint.into());
    if let Some(protocol) = protocol.map(str::trim).filter(|protocol| !protocol.is_empty()) {
        table.insert("protocol".into(), Protocol::parse(protocol, from)?.as_str().into());
    }
    // A table that does not read (the one replaced) has no headers to keep.
    let headers = studio_table(workspace_root)
        .ok()
        .flatten()
        .map(|table| table.headers)
        .unwrap_or_default();
    if !headers.is_empty() {
        let headers: toml::Table = headers.into_iter().map(|(name, value)| (name, value.into())).collect();
        table.insert("headers".into(), headers.into());
    }
    agents::save_otlp(workspace_root, Some(toml::Value::Table(table)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sessions::agents::AGENTS_FILE;

    fn workspace(studio_toml: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".zibby")).unwrap();
        std::fs::write(dir.path().join(AGENTS_FILE), studio_toml).unwrap();
        dir
    }

    const NO_VARIABLES: fn(&str) -> Option<String> = |_| None;

    #[test]
    fn the_setting_writes_the_table_and_keeps_the_agents_and_headers() {
        let dir = workspace(
            "[[agent]]\nname = \"a\"\nrun = [\"true\"]\n\n[budget]\ndaily_usd = 2.0\n\n\
             [otlp]\nendpoint = \"http://old:4318\"\nheaders = { authorization = \"Bearer t\" }\n",
        );
        save_trace_setting(dir.path(), Some(" http://localhost:6006 "), Some("http/json")).unwrap();
        let setting = trace_setting(NO_VARIABLES, dir.path()).unwrap();
        assert_eq!(setting.sending_to.as_deref(), Some("http://localhost:6006/v1/traces"));
        assert_eq!(setting.endpoint.as_deref(), Some("http://localhost:6006"));
        assert_eq!(setting.protocol.as_deref(), Some("http/json"));
        let endpoint = Endpoint::resolve(NO_VARIABLES, dir.path()).unwrap().unwrap();
        assert_eq!(endpoint.headers, [("authorization".to_owned(), "Bearer t".to_owned())]);
        assert_eq!(agents::load(dir.path()).unwrap()[0].name, "a");
        let text = std::fs::read_to_string(dir.path().join(AGENTS_FILE)).unwrap();
        assert!(text.contains("daily_usd = 2.0"), "{text}");

        save_trace_setting(dir.path(), None, None).unwrap();
        let setting = trace_setting(NO_VARIABLES, dir.path()).unwrap();
        assert_eq!((setting.sending_to, setting.endpoint), (None, None));
        assert_eq!(agents::load(dir.path()).unwrap().len(), 1);
    }

    #[test]
    fn a_variable_wins_over_the_file_and_says_so() {
        let dir = workspace("[otlp]\nendpoint = \"http://file:4318\"\n");
        let var = |name: &str| (name == "OTEL_EXPORTER_OTLP_ENDPOINT").then(|| "http://env:4318".to_owned());
        let setting = trace_setting(var, dir.path()).unwrap();
        assert_eq!(setting.sending_to.as_deref(), Some("http://env:4318/v1/traces"));
        assert_eq!(setting.from.as_deref(), Some("OTEL_EXPORTER_OTLP_ENDPOINT"));
        assert_eq!(setting.endpoint.as_deref(), Some("http://file:4318"));
    }

    #[test]
    fn what_the_studio_would_not_send_to_is_refused_and_nothing_written() {
        let dir = workspace("[[agent]]\nname = \"a\"\nrun = [\"true\"]\n");
        let before = std::fs::read(dir.path().join(AGENTS_FILE)).unwrap();
        for (endpoint, protocol, says) in [
            ("localhost:6006", None, "not an http:// or https:// URL"),
            ("http://localhost:6006", Some("grpc"), "protocol `grpc`"),
        ] {
            let error = save_trace_setting(dir.path(), Some(endpoint), protocol)
                .unwrap_err()
                .to_string();
            assert!(error.contains(says), "{error}");
        }
        assert_eq!(std::fs::read(dir.path().join(AGENTS_FILE)).unwrap(), before);
    }
}
