//! The provider's client and the small runtime it runs on, owned here: the rest of the core calls
//! these blocking functions. Every request has a bounded time; nothing here writes to the bucket
//! (the client is only ever asked to list, stat and read).

use std::ops::{ControlFlow, Range};
use std::time::Duration;

use futures::{FutureExt, StreamExt, TryStreamExt};

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

/// One read of [`Remote::read_many`]: `range` of `key`, when its ETag is still `etag`.
pub struct Read {
    pub key: String,
    pub range: Range<u64>,
    pub etag: Option<String>,
}

/// Most objects one listing takes: past it the listing fails naming the source, rather than
/// holding an unbounded list in memory.
pub const MAX_LISTED_OBJECTS: usize = 2_000_000;

/// How many requests (listings, reads of small files) run at once.
const CONCURRENT_REQUESTS: usize = 32;

/// A large object is read in pieces of this size…
pub const CHUNK_BYTES: u64 = 4 * 1024 * 1024;
/// …this many at once (memory: their product).
const CONCURRENT_CHUNKS: usize = 8;

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
        // ring is the process's. Installed once, with the lane's transport (`bucket::transport`:
        // no redirects, ranged reads bounded); a second call finds them there.
        static HTTP: std::sync::Once = std::sync::Once::new();
        HTTP.call_once(|| {
            let _ = rustls::crypto::ring::default_provider().install_default();
            super::transport::install();
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
        self.runtime.block_on(self.list("", MAX_LISTED_OBJECTS, false))
    }

    /// The names of the folders directly under the prefix (its common prefixes: a delimiter
    /// listing, paged, 1,000 names a page on S3), without their trailing `/`, in the provider's
    /// (byte) order. Objects directly under the prefix are left out.
    ///
    /// `splits` (folder names, such as every thousandth of the previous listing) cut the listing
    /// into ranges listed at once, each its own listing starting after its split (`start-after`)
    /// and stopping past the next: pages that would come one after the other are asked together.
    /// Where the provider has no `start-after` (Azure), one listing page after page.
    pub fn list_folders(&self, splits: &[String]) -> Result<Vec<String>, Error> {
        let can_split = self.operator.info().capability().list_with_start_after;
        let mut bounds: Vec<String> = if can_split {
            splits.iter().map(|name| format!("{name}/")).collect()
        } else {
            Vec::new()
        };
        bounds.sort_unstable();
        bounds.dedup();
        let starts = std::iter::once(None).chain(bounds.iter().map(Some));
        let ends = bounds.iter().map(Some).chain(std::iter::once(None));
        let ranges: Vec<(Option<&String>, Option<&String>)> = starts.zip(ends).collect();
        // Counted across the ranges: all of them together hold at most MAX_LISTED_OBJECTS names.
        let counted = std::sync::atomic::AtomicUsize::new(0);
        let listed: Vec<Result<Vec<String>, Error>> = self.runtime.block_on(async {
            futures::stream::iter(ranges.iter().map(|(after, until)| {
                self.list_folder_range(*after, *until, &counted, |_, _| ControlFlow::Continue(()))
            }))
            .buffered(CONCURRENT_REQUESTS)
            .collect()
            .await
        });
        let mut names = Vec::new();
        for range in listed {
            names.extend(range?);
        }
        Ok(names)
    }

    /// The names of the folders directly under the prefix, as [`list_folders`](Self::list_folders)
    /// gives them without splits, handed to `page` as the provider answers: the names of one
    /// answer (1,000 on S3) before the next page is awaited, so that they can be shown while it
    /// is asked; with it, whether the listing is done. `page` returning [`ControlFlow::Break`]
    /// ends the listing there.
    pub fn list_folders_by_page(
        &self,
        mut page: impl FnMut(Vec<String>, bool) -> ControlFlow<()>,
    ) -> Result<(), Error> {
        let counted = std::sync::atomic::AtomicUsize::new(0);
        let hand_on = |names: &mut Vec<String>, last| page(std::mem::take(names), last);
        self.runtime
            .block_on(self.list_folder_range(None, None, &counted, hand_on))
            .map(drop)
    }

    /// The folder names listed after `after` (a folder's `name/`; from the first when `None`)
    /// up to `until` included (to the last when `None`), each name counted in `counted`. The names
    /// so far are given to `page_read` each time the provider's answer in hand is all read (the
    /// next one not there yet), and at the end saying so; those it leaves in the vector are
    /// returned.
    async fn list_folder_range(
        &self,
        after: Option<&String>,
        until: Option<&String>,
        counted: &std::sync::atomic::AtomicUsize,
        mut page_read: impl FnMut(&mut Vec<String>, bool) -> ControlFlow<()>,
    ) -> Result<Vec<String>, Error> {
        let mut request = self.operator.lister_with("/");
        if let Some(after) = after {
            // Every key of a folder after `name/` in byte order is past `name0` ('0' follows '/'),
            // and every key of `name/` itself and of the folders before it is not.
            request = request.start_after(&format!("{}0", after.trim_end_matches('/')));
        }
        let mut lister = self.timed("", request).await?;
        let mut names = Vec::new();
        loop {
            // An entry of the answer in hand is there at once; the next page's is not.
            let entry = match lister.try_next().now_or_never() {
                Some(entry) => entry.map_err(|e| self.failed("", "cannot list", &e))?,
                None if !names.is_empty() && page_read(&mut names, false).is_break() => return Ok(names),
                None => self.next_entry("", &mut lister).await?,
            };
            let Some(entry) = entry else { break };
            if !entry.metadata().is_dir() {
                continue;
            }
            let path = entry.path().trim_start_matches('/');
            if until.is_some_and(|until| path > until.as_str()) {
                break;
            }
            let name = path.trim_end_matches('/');
            if name.is_empty() {
                continue;
            }
            if counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed) == MAX_LISTED_OBJECTS {
                return Err(self.too_many(""));
            }
            names.push(name.to_owned());
            // The range's last name: the next range starts after it. Stopping here, not at the
            // first name past it, saves asking for a page when the range ends a page (as it does
            // when the splits are every thousandth name of the previous listing).
            if until.is_some_and(|until| path == until.as_str()) {
                break;
            }
        }
        if !names.is_empty() {
            let _ = page_read(&mut names, true);
        }
        Ok(names)
    }

    /// The objects under each of `folders` (each listed on its own, several at once), each
    /// listing stopping at `max_objects` objects; each result in the order asked.
    pub fn list_under(&self, folders: &[String], max_objects: usize) -> Vec<Result<Vec<RemoteObject>, Error>> {
        self.runtime.block_on(async {
            futures::stream::iter(folders.iter().map(|folder| self.list(folder, max_objects, true)))
                .buffered(CONCURRENT_REQUESTS)
                .collect()
                .await
        })
    }

    /// The objects under `folder` (`""`: the prefix; else a folder name, listed as `folder/`),
    /// at most `max_objects`: past them the listing stops when `stop_at_most`, else fails.
    async fn list(&self, folder: &str, max_objects: usize, stop_at_most: bool) -> Result<Vec<RemoteObject>, Error> {
        let path = if folder.is_empty() {
            "/".to_owned()
        } else {
            format!("{folder}/")
        };
        let key = if folder.is_empty() { "" } else { path.as_str() };
        let mut lister = self
            .timed(key, self.operator.lister_with(&path).recursive(true))
            .await?;
        let mut objects = Vec::new();
        while let Some(entry) = self.next_entry(key, &mut lister).await? {
            let metadata = entry.metadata();
            if !metadata.is_file() {
                continue;
            }
            if objects.len() == max_objects {
                if stop_at_most {
                    break;
                }
                return Err(self.too_many(key));
            }
            objects.push(RemoteObject {
                key: entry.path().trim_start_matches('/').to_owned(),
                size: metadata.content_length(),
                etag: metadata.etag().map(str::to_owned),
                last_modified: metadata.last_modified().map(|t| t.to_string()),
            });
        }
        Ok(objects)
    }

    async fn next_entry(&self, key: &str, lister: &mut opendal::Lister) -> Result<Option<opendal::Entry>, Error> {
        match tokio::time::timeout(self.timeout, lister.try_next()).await {
            Err(_) => Err(self.stalled(key)),
            Ok(Err(e)) => Err(self.failed(key, "cannot list", &e)),
            Ok(Ok(entry)) => Ok(entry),
        }
    }

    fn too_many(&self, key: &str) -> Error {
        let what = if key.is_empty() { "the prefix" } else { "the folder" };
        self.source.error(
            key,
            format!("{what} holds more than {MAX_LISTED_OBJECTS} objects: name a narrower prefix"),
        )
    }

    /// Several reads at once, each result in the order asked.
    pub fn read_many(&self, reads: &[Read]) -> Vec<Result<Vec<u8>, Error>> {
        self.runtime.block_on(async {
            futures::stream::iter(
                reads
                    .iter()
                    .map(|read| self.read(&read.key, read.range.clone(), read.etag.as_deref())),
            )
            .buffered(CONCURRENT_REQUESTS)
            .collect()
            .await
        })
    }

    /// Reads `ranges` of `key` in pieces of at most [`CHUNK_BYTES`], several at once, handing
    /// each piece to `write` with its offset, in order: memory holds a few pieces, never the
    /// object. A piece shorter than asked (the object changed since it was listed) fails,
    /// naming the key; so does an error of `write`.
    pub fn read_into(
        &self,
        key: &str,
        etag: Option<&str>,
        ranges: &[Range<u64>],
        mut write: impl FnMut(u64, &[u8]) -> Result<(), Error>,
    ) -> Result<u64, Error> {
        let pieces: Vec<Range<u64>> = ranges
            .iter()
            .flat_map(|range| {
                (range.start..range.end)
                    .step_by(CHUNK_BYTES as usize)
                    .map(move |start| start..(start + CHUNK_BYTES).min(range.end))
            })
            .collect();
        self.runtime.block_on(async {
            let mut reads = futures::stream::iter(pieces.into_iter().map(|piece| async move {
                let bytes = self.read(key, piece.clone(), etag).await?;
                Ok::<_, Error>((piece, bytes))
            }))
            .buffered(CONCURRENT_CHUNKS);
            let mut total = 0;
            while let Some(read) = reads.next().await {
                let (piece, bytes) = read?;
                if bytes.len() as u64 != piece.end - piece.start {
                    return Err(self.source.error(
                        key,
                        format!(
                            "changed since it was listed: read {} of the {} bytes asked at {}",
                            bytes.len(),
                            piece.end - piece.start,
                            piece.start
                        ),
                    ));
                }
                write(piece.start, &bytes)?;
                total += bytes.len() as u64;
            }
            Ok(total)
        })
    }

    /// The bytes of `key` in `range`, when its ETag is still `etag` (when known): a piece of
    /// another version of the object fails, naming the key, rather than joining the others.
    async fn read(&self, key: &str, range: Range<u64>, etag: Option<&str>) -> Result<Vec<u8>, Error> {
        if range.is_empty() {
            return Ok(Vec::new());
        }
        let mut request = self.operator.read_with(key).range(range);
        if let Some(etag) = etag {
            request = request.if_match(etag);
        }
        let buffer = self.timed(key, request).await?;
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
            ErrorKind::ConditionNotMatch => {
                format!("{what}: changed since it was listed (its ETag is not the one listed): {error}")
            }
            _ => format!("{what}: {error} (identity: {identity})"),
        };
        self.source.error(key, reason)
    }
}
