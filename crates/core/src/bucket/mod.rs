//! Bucket sources: a prefix of S3, GCS or Azure Blob Storage read as a workspace of sessions,
//! read-only, through a mirror in the studio's cache that the rest of the core opens as any
//! local workspace.
//!
//! - [`source`]: the URL (`s3://bucket/prefix`, `gs://…`, `az://…`) and the provider's client
//!   with its standard credential chain (the studio stores no secret).
//! - [`remote`]: the client's listing and ranged reads, on a small runtime owned here, each
//!   request bounded in time; it never writes to the bucket.
//! - [`keys`]: bucket keys read as session paths, held to the local id and name rules.
//! - [`cache`]: the mirror's folder, its manifests, files written by temp file and rename.
//! - [`mirror`]: a refresh, change detection, the writer lock; `listing`: the prefix listed (every
//!   key, the sessions' folders, inside the ones not complete) and grouped by session; `plan`:
//!   what is fetched of one session and whether its upload is done; `fetch`: the fetching (small
//!   files, a large output's tail, a page, a whole session) and the cache's bound; `fill`: a
//!   first fill, a chunk at a time, its progress told; `recency`: which sessions the bound keeps
//!   (the ones opened or uploaded most recently).

pub mod cache;
mod fetch;
mod fill;
pub mod keys;
mod listing;
pub mod mirror;
mod plan;
mod recency;
pub mod remote;
pub mod source;
mod transport;

pub use mirror::{FillProgress, Listing, Mirror, MirrorOptions, UploadState};
pub use source::Source;
