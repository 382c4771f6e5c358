//! A bucket source as the user names it (`s3://bucket/prefix`, `gs://bucket/prefix`,
//! `az://container/prefix`), and the provider's client built for it from the provider's own
//! standard variables and files: the studio holds no secret and takes no endpoint flag.

use std::fmt;

use crate::vocabulary::error::Error;

/// The object store a source is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// Amazon S3 or an S3-compatible store (MinIO, R2, a local test server via `AWS_ENDPOINT_URL`).
    S3,
    /// Google Cloud Storage.
    Gcs,
    /// Azure Blob Storage (the URL names a container; the account comes from the environment).
    Azure,
}

impl Provider {
    /// The provider's name as its users know it.
    pub fn name(self) -> &'static str {
        match self {
            Provider::S3 => "Amazon S3",
            Provider::Gcs => "Google Cloud Storage",
            Provider::Azure => "Azure Blob Storage",
        }
    }

    /// What of the user's credentials each request to the endpoint carries.
    pub fn credentials_sent(self) -> &'static str {
        match self {
            Provider::S3 => "your AWS credentials (requests signed with your access key, with your session token)",
            Provider::Gcs => "your Google Cloud credentials (an OAuth bearer token)",
            Provider::Azure => "your Azure credentials (a SAS token, or requests signed with your account key)",
        }
    }

    /// The domains of the provider's own endpoints: an endpoint under one of them is the
    /// provider's, any other is someone else's server.
    fn own_domains(self) -> &'static [&'static str] {
        match self {
            Provider::S3 => &["amazonaws.com", "amazonaws.com.cn"],
            Provider::Gcs => &["googleapis.com"],
            Provider::Azure => &["core.windows.net", "core.chinacloudapi.cn", "core.usgovcloudapi.net"],
        }
    }

    fn scheme(self) -> &'static str {
        match self {
            Provider::S3 => "s3",
            Provider::Gcs => "gs",
            Provider::Azure => "az",
        }
    }
}

/// A bucket prefix read as a workspace: its session ids are the prefix's common prefixes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub provider: Provider,
    /// The bucket (S3, GCS) or container (Azure).
    pub bucket: String,
    /// The prefix the sessions are under, without leading or trailing `/` (empty: the whole bucket).
    pub prefix: String,
    /// The endpoint when given (the window's "Endpoint" field); else the provider's variables
    /// (`AWS_ENDPOINT_URL`, …) or its public endpoint.
    pub endpoint: Option<String>,
    /// The profile of the provider's credential chain when given (the window's "Profile" field,
    /// `?profile=NAME`); else `AWS_PROFILE`, else the chain's default. S3 only. A name, no secret.
    pub profile: Option<String>,
}

impl Source {
    /// Reads `url`: `s3://`, `gs://` or `az://`, a bucket name, an optional prefix, and optional
    /// `?endpoint=URL&profile=NAME` (form-encoded, as [`Source::target`] writes them). A prefix
    /// with an empty, `.` or `..` segment is refused, naming the URL.
    pub fn parse(url: &str) -> Result<Source, Error> {
        let (url, query) = url.split_once('?').unwrap_or((url, ""));
        // Named without its options: an endpoint refused for its user name and password is
        // never printed.
        let refuse = |reason: &str| Error::Bucket {
            source_url: url.escape_debug().to_string(),
            key: String::new(),
            reason: reason.to_owned(),
        };
        let (mut endpoint, mut profile) = (None, None);
        for (name, value) in form_urlencoded::parse(query.as_bytes()) {
            let value = value.trim().to_owned();
            match &*name {
                "endpoint" if !value.is_empty() => {
                    if let Some(problem) = endpoint_problem(&value) {
                        return Err(refuse(&format!("the endpoint is refused: {problem}")));
                    }
                    endpoint = Some(value)
                }
                "profile" if !value.is_empty() => profile = Some(value),
                "endpoint" | "profile" => {}
                other => {
                    return Err(refuse(&format!(
                        "unknown option `{}`: a bucket URL takes ?endpoint=URL&profile=NAME",
                        other.escape_debug()
                    )))
                }
            }
        }
        let (scheme, rest) = url.split_once("://").ok_or_else(|| {
            refuse("not a bucket URL: give s3://BUCKET/PREFIX, gs://BUCKET/PREFIX or az://CONTAINER/PREFIX")
        })?;
        let provider = match scheme {
            "s3" => Provider::S3,
            "gs" => Provider::Gcs,
            "az" => Provider::Azure,
            _ => return Err(refuse("the scheme is none of s3://, gs:// and az://")),
        };
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        let bucket_ok = !bucket.is_empty()
            && bucket.len() <= 255
            && bucket.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
        if !bucket_ok {
            return Err(refuse(
                "the bucket name is empty or holds characters bucket names cannot",
            ));
        }
        let prefix = prefix.trim_end_matches('/');
        if !prefix.is_empty() {
            for segment in prefix.split('/') {
                if let Some(reason) = crate::vocabulary::id::folder_name_problem(segment) {
                    return Err(refuse(&format!(
                        "the prefix segment `{}` is refused: {reason}",
                        segment.escape_debug()
                    )));
                }
            }
        }
        let source = Source {
            provider,
            bucket: bucket.to_owned(),
            prefix: prefix.to_owned(),
            endpoint,
            profile: None,
        };
        match profile {
            Some(profile) => source.with_profile(&profile),
            None => Ok(source),
        }
    }

    /// The endpoint given with this source (its URL's `?endpoint=`, the window's field) when it is
    /// not one of the provider's own: the server the user's credentials would be sent to, which
    /// the window names in its question before opening (`None`: no endpoint given, or the
    /// provider's own).
    pub fn foreign_endpoint(&self) -> Option<&str> {
        let endpoint = self.endpoint.as_deref()?;
        let host = endpoint_host(endpoint).unwrap_or_default().to_ascii_lowercase();
        let own = self
            .provider
            .own_domains()
            .iter()
            .any(|domain| host == *domain || host.ends_with(&format!(".{domain}")));
        (!own).then_some(endpoint)
    }

    /// This source at `endpoint` (an S3-compatible store's URL, path-style addressing).
    pub fn with_endpoint(mut self, endpoint: impl Into<String>) -> Source {
        self.endpoint = Some(endpoint.into());
        self
    }

    /// This source read with `profile` of the provider's credential chain (S3: a profile of the
    /// shared config and credentials files, with its SSO or credential process). A name of
    /// letters, digits and `-_.@+` is taken; another is refused, naming the source.
    pub fn with_profile(mut self, profile: &str) -> Result<Source, Error> {
        let profile = profile.trim();
        let name_ok = !profile.is_empty()
            && profile.len() <= 128
            && profile
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.@+".contains(c));
        if !name_ok {
            return Err(self.error(
                "",
                format!(
                    "the profile `{}` is not a profile name (letters, digits, -_.@+)",
                    profile.escape_debug()
                ),
            ));
        }
        if self.provider != Provider::S3 {
            return Err(self.error("", "a profile is taken for s3:// sources only"));
        }
        self.profile = Some(profile.to_owned());
        Ok(self)
    }

    /// What opens this source again (Open Recent): its URL, with the endpoint and profile given
    /// as `?endpoint=URL&profile=NAME` ([`Source::parse`] reads them back).
    pub fn target(&self) -> String {
        let mut options = form_urlencoded::Serializer::new(String::new());
        if let Some(endpoint) = &self.endpoint {
            options.append_pair("endpoint", endpoint);
        }
        if let Some(profile) = &self.profile {
            options.append_pair("profile", profile);
        }
        match options.finish() {
            query if query.is_empty() => self.to_string(),
            query => format!("{self}?{query}"),
        }
    }

    /// A variable of the environment, as the client reads it: `AWS_PROFILE` is this source's
    /// profile when one was given.
    fn var(&self, name: &str) -> Option<String> {
        if name == "AWS_PROFILE" {
            if let Some(profile) = &self.profile {
                return Some(profile.clone());
            }
        }
        std::env::var(name).ok().filter(|v| !v.is_empty())
    }

    /// The error for `key` (relative to the prefix; empty for the source itself).
    pub fn error(&self, key: &str, reason: impl Into<String>) -> Error {
        Error::Bucket {
            source_url: self.to_string(),
            key: key.escape_debug().to_string(),
            reason: reason.into(),
        }
    }

    /// The endpoint the client talks to when not the provider's public one: the one given, else
    /// the provider's variables (S3: `AWS_ENDPOINT_URL_S3`, `AWS_ENDPOINT_URL`, and the older
    /// `AWS_ENDPOINT` and `AWS_S3_ENDPOINT` that OpenDAL also reads; Azure:
    /// `AZURE_STORAGE_ENDPOINT`), written one way (scheme and host in lower case, no trailing
    /// `/`): the client and the cache's folder name take it from here, so one bucket is one
    /// folder however its endpoint was said.
    pub fn resolved_endpoint(&self) -> Option<String> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let endpoint = self.endpoint.clone().or_else(|| match self.provider {
            Provider::S3 => [
                "AWS_ENDPOINT_URL_S3",
                "AWS_ENDPOINT_URL",
                "AWS_ENDPOINT",
                "AWS_S3_ENDPOINT",
            ]
            .into_iter()
            .find_map(var),
            Provider::Gcs => var(GCS_EMULATOR).map(|host| emulator_endpoint(&host)),
            Provider::Azure => var("AZURE_STORAGE_ENDPOINT"),
        })?;
        Some(normalized_endpoint(&endpoint))
    }

    /// The identity the provider's chain will use, as far as the environment tells it, for the
    /// message of a refusal (never a secret: an access key id shows its last four characters).
    pub fn identity(&self) -> String {
        identity_from(self.provider, |name| self.var(name))
    }

    /// Whose bucket this is, as far as the environment tells, for the cache's folder name: two
    /// accounts or profiles may see different objects under one URL, so they never share a mirror
    /// (S3: the profile and the access key id; GCS: the credentials file; Azure: the account).
    /// `None` for the default chain. Never shown: it goes into a digest.
    pub fn account(&self) -> Option<String> {
        let parts: Vec<String> = match self.provider {
            Provider::S3 => ["AWS_PROFILE", "AWS_ACCESS_KEY_ID"]
                .into_iter()
                .filter_map(|name| self.var(name).map(|value| format!("{name}={value}")))
                .collect(),
            Provider::Gcs => self
                .var("GOOGLE_APPLICATION_CREDENTIALS")
                .map(|path| format!("GOOGLE_APPLICATION_CREDENTIALS={path}"))
                .into_iter()
                .collect(),
            Provider::Azure => self
                .var("AZURE_STORAGE_CONNECTION_STRING")
                .and_then(|connection| {
                    connection
                        .split(';')
                        .find_map(|part| part.trim().strip_prefix("AccountName="))
                        .map(str::to_owned)
                })
                .or_else(|| {
                    self.var("AZURE_STORAGE_ACCOUNT_NAME")
                        .or_else(|| self.var("AZURE_STORAGE_ACCOUNT"))
                })
                .map(|account| format!("account={account}"))
                .into_iter()
                .collect(),
        };
        (!parts.is_empty()).then(|| parts.join("\n"))
    }

    /// The provider's client for this source, with its standard credential chain. An endpoint
    /// given with the source (its URL's `?endpoint=`, the window's field) is held to
    /// [`endpoint_problem`]'s rules here, where every client is made.
    pub(super) fn operator(&self) -> Result<opendal::Operator, Error> {
        if let Some(problem) = self.endpoint.as_deref().and_then(endpoint_problem) {
            return Err(self.error("", format!("the endpoint is refused: {problem}")));
        }
        let root = format!("/{}", self.prefix);
        let built = match self.provider {
            Provider::S3 => {
                let region = s3_region(|name| self.var(name));
                let mut builder = opendal::services::S3::default()
                    .bucket(&self.bucket)
                    .root(&root)
                    .region(&region);
                if let Some(profile) = &self.profile {
                    builder = builder.profile(profile);
                }
                if let Some(endpoint) = self.resolved_endpoint() {
                    builder = builder.endpoint(&endpoint);
                }
                if std::env::var("AWS_S3_ADDRESSING_STYLE").is_ok_and(|style| style == "virtual") {
                    builder = builder.enable_virtual_host_style();
                }
                opendal::Operator::new(builder)
            }
            Provider::Gcs => {
                let mut builder = opendal::services::Gcs::default().bucket(&self.bucket).root(&root);
                if self.var(GCS_EMULATOR).is_some() {
                    // As Google's own client libraries do: an emulator takes no credentials.
                    builder = builder.skip_signature().disable_vm_metadata().disable_config_load();
                }
                if let Some(endpoint) = self.resolved_endpoint() {
                    builder = builder.endpoint(&endpoint);
                }
                opendal::Operator::new(builder)
            }
            Provider::Azure => self.azure_operator(&root),
        };
        built
            .map(|operator| operator.layer(retries()))
            .map_err(|e| self.error("", format!("cannot set up the client: {e}")))
    }

    fn azure_operator(&self, root: &str) -> opendal::Result<opendal::Operator> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let mut builder = match var("AZURE_STORAGE_CONNECTION_STRING") {
            Some(connection) => opendal::services::Azblob::from_connection_string(&connection)?,
            None => {
                let account = var("AZURE_STORAGE_ACCOUNT_NAME").or_else(|| var("AZURE_STORAGE_ACCOUNT"));
                let mut builder = opendal::services::Azblob::default();
                if let Some(account) = account {
                    let endpoint = var("AZURE_STORAGE_ENDPOINT")
                        .unwrap_or_else(|| format!("https://{account}.blob.core.windows.net"));
                    builder = builder.account_name(&account).endpoint(&endpoint);
                }
                builder
            }
        };
        builder = builder.container(&self.bucket).root(root);
        if let Some(endpoint) = &self.endpoint {
            builder = builder.endpoint(endpoint);
        }
        opendal::Operator::new(builder)
    }
}

/// What a provider asks to be tried again, by its own rules (OpenDAL's services mark them: S3's
/// 503 `SlowDown`, `ServiceUnavailable`, 500, 429, a dropped connection...), tried again up to
/// four times, 200 ms to 5 s apart with jitter; each request's time bound (`Remote`'s timeout)
/// holds over its tries.
fn retries() -> opendal::layers::RetryLayer {
    opendal::layers::RetryLayer::new()
        .with_max_times(4)
        .with_min_delay(std::time::Duration::from_millis(200))
        .with_max_delay(std::time::Duration::from_secs(5))
        .with_jitter()
}

/// The region of an S3 source, in the SDKs' order: `AWS_REGION`, else `AWS_DEFAULT_REGION`, else
/// the `region` of the profile (`AWS_PROFILE`, else `default`) in the shared config file
/// (`AWS_CONFIG_FILE`, else `~/.aws/config`; read with rust-ini, as reqsign reads the profile's
/// credentials: OpenDAL reads only the two variables), else `us-east-1`.
fn s3_region(var: impl Fn(&str) -> Option<String>) -> String {
    if let Some(region) = var("AWS_REGION").or_else(|| var("AWS_DEFAULT_REGION")) {
        return region;
    }
    let profile = var("AWS_PROFILE").unwrap_or_else(|| "default".to_owned());
    let config = var("AWS_CONFIG_FILE")
        .map(std::path::PathBuf::from)
        .or_else(|| var("HOME").map(|home| std::path::Path::new(&home).join(".aws").join("config")));
    config
        .and_then(|file| profile_region(&file, &profile))
        .unwrap_or_else(|| "us-east-1".to_owned())
}

/// The `region` of `profile` in the shared config file `file` (`[profile NAME]`; the default
/// profile is `[default]` or `[profile default]`); `None` when the file or the entry is missing.
fn profile_region(file: &std::path::Path, profile: &str) -> Option<String> {
    let config = ini::Ini::load_from_file(file).ok()?;
    let mut sections = vec![format!("profile {profile}")];
    if profile == "default" {
        sections.insert(0, "default".to_owned());
    }
    sections
        .iter()
        .find_map(|name| config.section(Some(name.as_str()))?.get("region"))
        .map(str::trim)
        .filter(|region| !region.is_empty())
        .map(str::to_owned)
}

/// Google's client libraries' variable naming a Cloud Storage emulator (`host:port`, or a URL),
/// reached without credentials: fake-gcs-server, gcp-storage-emulator, a local test server.
const GCS_EMULATOR: &str = "STORAGE_EMULATOR_HOST";

/// An emulator's host as a URL: `http://` unless it says its scheme.
fn emulator_endpoint(host: &str) -> String {
    if host.contains("://") {
        host.to_owned()
    } else {
        format!("http://{host}")
    }
}

/// Why an endpoint given with a source (its URL's `?endpoint=`, the window's field) cannot be
/// where the provider's credentials are sent, or `None`: it is an `https://` URL, or `http://` to
/// this machine's loopback (a local test server, an emulator), with no user name or password in
/// it (credentials come from the provider's chain; a URL's would be printed in errors). The
/// provider's own variables (`AWS_ENDPOINT_URL`, ...) are the user's settings and are not held to
/// this.
pub fn endpoint_problem(endpoint: &str) -> Option<&'static str> {
    let Some((scheme, rest)) = endpoint.trim().split_once("://") else {
        return Some("it is not a URL: give https://HOST[:PORT]");
    };
    if rest.split(['/', '?', '#']).next().unwrap_or_default().contains('@') {
        return Some(
            "it holds a user name or password; the provider's credential chain gives the \
             credentials, never the URL",
        );
    }
    let host = endpoint_host(endpoint).unwrap_or_default();
    if host.is_empty() {
        return Some("it names no host");
    }
    match scheme.to_ascii_lowercase().as_str() {
        "https" => None,
        "http" if is_loopback(host) => None,
        "http" => Some(
            "plain http:// would send the provider's credentials unencrypted; it is taken only to \
             this machine (127.0.0.1, ::1, localhost): use https://, or AWS_ENDPOINT_URL for a \
             store of your own",
        ),
        _ => Some("only https:// (or http:// to this machine) is taken"),
    }
}

/// The host an endpoint URL names (`None`: not a URL), without its port, user or brackets.
fn endpoint_host(endpoint: &str) -> Option<&str> {
    let (_, rest) = endpoint.trim().split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let authority = authority.rsplit('@').next().unwrap_or_default();
    Some(match authority.strip_prefix('[') {
        Some(bracketed) => bracketed.split(']').next().unwrap_or_default(),
        None => authority.split(':').next().unwrap_or_default(),
    })
}

/// Whether `host` is this machine's loopback: `localhost`, 127.0.0.0/8 or `::1`.
fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// `endpoint` with its scheme and host in lower case and no trailing `/`.
fn normalized_endpoint(endpoint: &str) -> String {
    let endpoint = endpoint.trim().trim_end_matches('/');
    let authority_end = endpoint
        .find("://")
        .map(|at| at + 3)
        .and_then(|after| endpoint[after..].find('/').map(|slash| after + slash))
        .unwrap_or(endpoint.len());
    format!(
        "{}{}",
        endpoint[..authority_end].to_ascii_lowercase(),
        &endpoint[authority_end..]
    )
}

/// [`Source::identity`] over a lookup of variables (the tests pass their own).
fn identity_from(provider: Provider, var: impl Fn(&str) -> Option<String>) -> String {
    match provider {
        Provider::S3 => {
            if let Some(key) = var("AWS_ACCESS_KEY_ID") {
                let tail: String = key
                    .chars()
                    .rev()
                    .take(4)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect();
                format!("access key …{tail} (AWS_ACCESS_KEY_ID)")
            } else if let Some(profile) = var("AWS_PROFILE") {
                format!(
                    "profile `{profile}` (AWS_PROFILE: shared config and credentials files, SSO or credential_process)"
                )
            } else if var("AWS_WEB_IDENTITY_TOKEN_FILE").is_some() {
                "web identity (AWS_WEB_IDENTITY_TOKEN_FILE, AWS_ROLE_ARN)".to_owned()
            } else {
                "the default chain: profile `default` of ~/.aws/config and ~/.aws/credentials, then container and instance credentials".to_owned()
            }
        }
        Provider::Gcs => match (var(GCS_EMULATOR), var("GOOGLE_APPLICATION_CREDENTIALS")) {
            (Some(host), _) => format!("no credentials: the emulator of STORAGE_EMULATOR_HOST ({host})"),
            (None, Some(path)) => format!("the service account file of GOOGLE_APPLICATION_CREDENTIALS ({path})"),
            (None, None) => {
                "Application Default Credentials (gcloud auth application-default login, or the VM's service account)"
                    .to_owned()
            }
        },
        Provider::Azure => {
            if var("AZURE_STORAGE_CONNECTION_STRING").is_some() {
                "the connection string of AZURE_STORAGE_CONNECTION_STRING".to_owned()
            } else {
                match var("AZURE_STORAGE_ACCOUNT_NAME").or_else(|| var("AZURE_STORAGE_ACCOUNT")) {
                    Some(account) => format!("account `{account}` with the default Azure chain (AZURE_STORAGE_KEY, AZURE_STORAGE_SAS_TOKEN, a service principal, a managed identity)"),
                    None => "no account: set AZURE_STORAGE_ACCOUNT_NAME or AZURE_STORAGE_CONNECTION_STRING".to_owned(),
                }
            }
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}", self.provider.scheme(), self.bucket)?;
        if !self.prefix.is_empty() {
            write!(f, "/{}", self.prefix)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_of_the_three_providers_are_read() {
        let s3 = Source::parse("s3://team-runs/ci/main/").unwrap();
        assert_eq!(
            (s3.provider, s3.bucket.as_str(), s3.prefix.as_str()),
            (Provider::S3, "team-runs", "ci/main")
        );
        assert_eq!(s3.to_string(), "s3://team-runs/ci/main");
        assert_eq!(Source::parse("gs://b").unwrap().prefix, "");
        assert_eq!(Source::parse("az://c/p").unwrap().provider, Provider::Azure);
    }

    #[test]
    fn the_endpoint_and_profile_go_with_the_url_and_come_back() {
        let source = Source::parse("s3://team-runs/ci")
            .unwrap()
            .with_endpoint("http://127.0.0.1:9000/x?y=1&z")
            .with_profile("ci-reader")
            .unwrap();
        let target = source.target();
        assert!(target.starts_with("s3://team-runs/ci?endpoint="), "{target}");
        assert_eq!(Source::parse(&target).unwrap(), source);
        assert_eq!(
            source.to_string(),
            "s3://team-runs/ci",
            "errors and labels name the URL alone"
        );
        assert_eq!(Source::parse("s3://b/p").unwrap().target(), "s3://b/p");
        assert_eq!(
            Source::parse("s3://b/p?profile=dev").unwrap().profile.as_deref(),
            Some("dev")
        );
        assert!(source.identity().contains("profile `ci-reader`") || std::env::var("AWS_ACCESS_KEY_ID").is_ok());
        for (url, says) in [
            ("s3://b/p?region=x", "unknown option `region`"),
            ("s3://b/p?profile=a%20b", "not a profile name"),
            ("gs://b/p?profile=dev", "s3:// sources only"),
        ] {
            let error = Source::parse(url).unwrap_err().to_string();
            assert!(error.contains(says), "{url}: {error}");
        }
    }

    #[test]
    fn odd_urls_are_refused_naming_them() {
        for (url, says) in [
            ("/tmp/x", "not a bucket URL"),
            ("ftp://b/p", "scheme"),
            ("s3:///p", "bucket name"),
            ("s3://b/a/../c", "`..`"),
            ("s3://b/a//c", "empty"),
        ] {
            let error = Source::parse(url).unwrap_err().to_string();
            assert!(error.contains(url) && error.contains(says), "{url}: {error}");
        }
    }

    #[test]
    fn the_region_comes_from_the_variables_else_the_profile_s_config() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config");
        std::fs::write(
            &config,
            "[default]\nregion = ap-south-1\n\n[profile dev]\nregion = eu-west-3\noutput = json\n",
        )
        .unwrap();
        let config = config.to_str().unwrap().to_owned();
        let with = |pairs: &[(&str, &str)]| {
            let pairs: Vec<(String, String)> = pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
            s3_region(move |name| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
        };
        assert_eq!(
            with(&[("AWS_CONFIG_FILE", &config), ("AWS_PROFILE", "dev")]),
            "eu-west-3"
        );
        assert_eq!(with(&[("AWS_CONFIG_FILE", &config)]), "ap-south-1");
        assert_eq!(
            with(&[
                ("AWS_CONFIG_FILE", &config),
                ("AWS_PROFILE", "dev"),
                ("AWS_REGION", "us-west-2")
            ]),
            "us-west-2"
        );
        assert_eq!(
            with(&[("AWS_CONFIG_FILE", &config), ("AWS_PROFILE", "none")]),
            "us-east-1"
        );
        assert_eq!(with(&[("HOME", dir.path().to_str().unwrap())]), "us-east-1");
    }

    /// Issue 40: a bucket URL (a link's, a pasted one's) could send the provider's credentials to
    /// any host, in the clear, and printed a user name and password given in it.
    #[test]
    fn an_endpoint_is_https_or_loopback_and_carries_no_credentials() {
        for good in [
            "https://minio.example:9000",
            "http://127.0.0.1:9000",
            "http://127.8.0.1:9000/x",
            "http://localhost:4443",
            "http://[::1]:10000/devstoreaccount1",
        ] {
            assert_eq!(endpoint_problem(good), None, "{good}");
            let url = format!(
                "s3://b/p?endpoint={}",
                form_urlencoded::byte_serialize(good.as_bytes()).collect::<String>()
            );
            assert_eq!(Source::parse(&url).unwrap().endpoint.as_deref(), Some(good));
        }
        for (bad, says) in [
            ("http://attacker.example", "unencrypted"),
            ("http://10.0.0.5:9000", "unencrypted"),
            ("http://127.0.0.1.attacker.example", "unencrypted"),
            ("ftp://127.0.0.1", "only https://"),
            ("attacker.example", "not a URL"),
            ("https://user:hunter2@minio.example", "user name or password"),
            ("http://user:hunter2@127.0.0.1:9000", "user name or password"),
        ] {
            let url = format!(
                "gs://b/p?endpoint={}",
                form_urlencoded::byte_serialize(bad.as_bytes()).collect::<String>()
            );
            let error = Source::parse(&url).unwrap_err().to_string();
            assert!(error.contains(says), "{bad}: {error}");
            assert!(
                !error.contains("hunter2") && !error.contains("attacker"),
                "{bad}: {error}"
            );
            // However it was given, no client is made for it.
            let given = Source::parse("gs://b/p").unwrap().with_endpoint(bad);
            let error = given.operator().unwrap_err().to_string();
            assert!(error.contains(says), "{bad}: {error}");
        }
    }

    /// Issue 40, point 2: an endpoint that is not the provider's own is named before the user's
    /// credentials go there; the provider's own (any region) is not.
    #[test]
    fn an_endpoint_not_the_providers_own_is_foreign() {
        let at = |url: &str, endpoint: &str| Source::parse(url).unwrap().with_endpoint(endpoint);
        for (url, own) in [
            ("s3://b/p", "https://s3.eu-west-1.amazonaws.com"),
            ("s3://b/p", "https://S3.cn-north-1.Amazonaws.com.cn/"),
            ("gs://b/p", "https://storage.googleapis.com"),
            ("az://c/p", "https://acct.blob.core.windows.net"),
        ] {
            assert_eq!(at(url, own).foreign_endpoint(), None, "{url} at {own}");
        }
        for (url, foreign) in [
            ("s3://b/p", "https://minio.example:9000"),
            ("s3://b/p", "https://amazonaws.com.attacker.example"),
            ("s3://b/p", "https://notamazonaws.com"),
            ("gs://b/p", "http://127.0.0.1:4443"),
            ("gs://b/p", "https://s3.amazonaws.com"),
            ("az://c/p", "http://[::1]:10000/devstoreaccount1"),
        ] {
            assert_eq!(at(url, foreign).foreign_endpoint(), Some(foreign), "{url} at {foreign}");
        }
        assert_eq!(Source::parse("s3://b/p").unwrap().foreign_endpoint(), None);
    }

    #[test]
    fn an_endpoint_is_written_one_way() {
        for said in [
            "http://127.0.0.1:9000",
            "http://127.0.0.1:9000/",
            "HTTP://127.0.0.1:9000//",
        ] {
            assert_eq!(normalized_endpoint(said), "http://127.0.0.1:9000", "{said}");
        }
        assert_eq!(
            normalized_endpoint("https://Minio.Example/Path/"),
            "https://minio.example/Path"
        );
    }

    #[test]
    fn the_identity_names_the_variable_and_hides_the_key() {
        let vars = |name: &str| (name == "AWS_ACCESS_KEY_ID").then(|| "AKIAEXAMPLEWXYZ".to_owned());
        let said = identity_from(Provider::S3, vars);
        assert!(said.contains("…WXYZ") && !said.contains("AKIA"), "{said}");
        let profile = identity_from(Provider::S3, |name| (name == "AWS_PROFILE").then(|| "dev".to_owned()));
        assert!(profile.contains("profile `dev`"), "{profile}");
    }
}
