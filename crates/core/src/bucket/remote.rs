//! The provider's client and the small runtime it runs on, owned here: the rest of the core calls
//! these blocking functions. Every request has a bounded time; nothing here writes to the bucket
//! (the client is only ever asked to list, stat and read).

use std::ops::Range;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};

use crate::bucket::source::Source;
use crate::vocabulary::error::Error;

/// One object under the source's prefix, as listed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RemoteObject {
    /// The key relative to the prefix (`<session id>/<path in the session>`).
    pub key: String,
    pub size: u64,
    /// The provider's entity tag, quotes and all: compared, never read as a digest (a multipart
    /// upload's is not an MD5 of the content).
    pub etag: Option<String>,
    pub last_modified: Option<String>,
}

/// Most objects one listing takes: past it the listing fails naming the source, rather than
/// holding an unbounded list in memory.
pub const MAX_LISTED_OBJECTS: usize = 2_000_000;

/// How many reads run at once.
const CONCURRENT_READS: usize = 16;

/// The client of one source, with its runtime.
pub struct Remote {
    source: Source,
    operator: opendal::Operator,
    runtime: tokio::runtime::Runtime,
    timeout: Duration,
}

impl Remote {
    /// The client for `source`; each request (a page of the listing, one read) gives up after
    /// `timeout`.
    pub fn connect(source: &Source, timeout: Duration) -> Result<Remote, Error> {
        // reqwest is built without a crypto provider of its own (aws-lc's C build is left out):
        // ring is the process's. Installed once; a second call finds it there.
        static HTTP: std::sync::Once = std::sync::Once::new();
        HTTP.call_once(|| {
            let _ = rustls::crypto::ring::default_provider().install_default();
            opendal_http_transport_reqwest::install_default();
        });
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::io_spawn("the bucket client's runtime", e))?;
        let operator = {
            let _entered = runtime.enter();
            source.operator()?
        };
        Ok(Remote {
            source: source.clone(),
            operator,
            runtime,
            timeout,
        })
    }

    pub fn source(&self) -> &Source {
        &self.source
    }

    /// Every object under the prefix, page by page as the provider gives them (1,000 a page on
    /// S3); directories left out.
    pub fn list_all(&self) -> Result<Vec<RemoteObject>, Error> {
        self.runtime.block_on(async {
            let mut lister = self.timed("", self.operator.lister_with("/").recursive(true)).await?;
            let mut objects = Vec::new();
            loop {
                let entry = match tokio::time::timeout(self.timeout, lister.try_next()).await {
                    Err(_) => return Err(self.stalled("")),
                    Ok(Err(e)) => return Err(self.failed("", "cannot list", &e)),
                    Ok(Ok(None)) => break,
                    Ok(Ok(Some(entry))) => entry,
                };
                let metadata = entry.metadata();
                if !metadata.is_file() {
                    continue;
                }
                if objects.len() == MAX_LISTED_OBJECTS {
                    return Err(self.source.error(
                        "",
                        format!("the prefix holds more than {MAX_LISTED_OBJECTS} objects: name a narrower prefix"),
                    ));
                }
                objects.push(RemoteObject {
                    key: entry.path().trim_start_matches('/').to_owned(),
                    size: metadata.content_length(),
                    etag: metadata.etag().map(str::to_owned),
                    last_modified: metadata.last_modified().map(|t| t.to_string()),
                });
            }
            Ok(objects)
        })
    }

    /// The bytes of `key` in `range` (the provider may give fewer at the object's end).
    pub fn read_range(&self, key: &str, range: Range<u64>) -> Result<Vec<u8>, Error> {
        self.runtime.block_on(self.read(key, range))
    }

    /// Several reads at once, each result in the order asked.
    pub fn read_many(&self, reads: &[(String, Range<u64>)]) -> Vec<Result<Vec<u8>, Error>> {
        self.runtime.block_on(async {
            futures::stream::iter(reads.iter().map(|(key, range)| self.read(key, range.clone())))
                .buffered(CONCURRENT_READS)
                .collect()
                .await
        })
    }

    async fn read(&self, key: &str, range: Range<u64>) -> Result<Vec<u8>, Error> {
        if range.is_empty() {
            return Ok(Vec::new());
        }
        let buffer = self.timed(key, self.operator.read_with(key).range(range)).await?;
        Ok(buffer.to_vec())
    }

    async fn timed<T>(
        &self,
        key: &str,
        request: impl std::future::IntoFuture<Output = opendal::Result<T>>,
    ) -> Result<T, Error> {
        match tokio::time::timeout(self.timeout, request.into_future()).await {
            Err(_) => Err(self.stalled(key)),
            Ok(Err(e)) => Err(self.failed(key, if key.is_empty() { "cannot list" } else { "cannot read" }, &e)),
            Ok(Ok(value)) => Ok(value),
        }
    }

    fn stalled(&self, key: &str) -> Error {
        self.source.error(
            key,
            format!(
                "no answer within {} s (the server stalled or is unreachable)",
                self.timeout.as_secs_f32()
            ),
        )
    }

    /// A provider's error, said with what failed and, when access may be the cause, the identity.
    fn failed(&self, key: &str, what: &str, error: &opendal::Error) -> Error {
        use opendal::ErrorKind;
        let identity = self.source.identity();
        let reason = match error.kind() {
            ErrorKind::PermissionDenied => format!("access refused for {identity}: {error}"),
            ErrorKind::NotFound if key.is_empty() => {
                format!("{what}: the bucket or prefix does not exist (identity: {identity}): {error}")
            }
            ErrorKind::NotFound => format!("{what}: the object is gone (changed since it was listed?): {error}"),
            _ => format!("{what}: {error} (identity: {identity})"),
        };
        self.source.error(key, reason)
    }
}
