//! The HTTP client every bucket request goes through (OpenDAL's reqwest transport, installed as
//! the process's default), held to two rules a hostile or broken server could otherwise break:
//!
//! - **No redirect is followed.** A signed S3 request carries the session token in its headers
//!   (`x-amz-security-token`), which a redirect to another host would take along; the endpoint
//!   answers for itself or the request fails, naming where it pointed.
//! - **A ranged read gets at most the bytes it asked for.** A `Content-Length` larger than the
//!   range is refused before the body is read, and a body without one is cut, with an error, at
//!   the first byte past the range: a 100-byte read never buffers a server's 3 GiB. An error's
//!   body, which the provider's client reads whole, is held to 1 MiB the same way.

use futures::StreamExt;
use opendal::{Buffer, Error, ErrorKind, HttpBody, HttpTransport, HttpTransporter};
use opendal_http_transport_reqwest::ReqwestTransport;

/// The most an error's body may hold (S3's XML errors are a few hundred bytes).
const ERROR_BYTES: u64 = 1 << 20;

/// Installs [`BucketTransport`] as OpenDAL's default for this process (once; later calls keep
/// the first).
pub(super) fn install() {
    HttpTransporter::install_default(BucketTransport::new());
}

struct BucketTransport {
    /// The client, or why it could not be made (then every request fails saying so).
    client: Result<ReqwestTransport, String>,
}

impl BucketTransport {
    fn new() -> BucketTransport {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map(ReqwestTransport::new)
            .map_err(|e| format!("cannot set up the HTTP client: {e}"));
        BucketTransport { client }
    }
}

impl HttpTransport for BucketTransport {
    async fn fetch(&self, request: http::Request<Buffer>) -> opendal::Result<http::Response<HttpBody>> {
        let client = self
            .client
            .as_ref()
            .map_err(|reason| Error::new(ErrorKind::Unexpected, reason.clone()))?;
        let asked = ranged_read_length(request.headers());
        let response = client.fetch(request).await?;
        if response.status().is_redirection() {
            return Err(Error::new(ErrorKind::Unexpected, redirect_refused(&response)));
        }
        // What a body may hold: a ranged read's range; an error's text (parsed whole by the
        // provider's client) at most ERROR_BYTES.
        let limit = if response.status().is_success() {
            asked
        } else {
            Some(ERROR_BYTES)
        };
        let Some(asked) = limit else {
            return Ok(response);
        };
        let declared = response
            .headers()
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if let Some(declared) = declared.filter(|&declared| declared > asked) {
            return Err(too_much(declared, asked));
        }
        Ok(response.map(|body| body.map_inner(|stream| Box::new(at_most(stream, asked)))))
    }
}

/// The stream of a body, failing at the first piece that takes it past `limit` bytes.
fn at_most(
    stream: Box<dyn futures::Stream<Item = opendal::Result<Buffer>> + Send + Sync + Unpin>,
    limit: u64,
) -> impl futures::Stream<Item = opendal::Result<Buffer>> + Send + Sync + Unpin {
    let mut received = 0u64;
    stream.map(move |piece| {
        let piece = piece?;
        received += piece.len() as u64;
        if received > limit {
            return Err(too_much(received, limit));
        }
        Ok(piece)
    })
}

fn too_much(bytes: u64, asked: u64) -> Error {
    Error::new(
        ErrorKind::Unexpected,
        format!("the server sent {bytes} bytes or more for a read of {asked}: refused, read no further"),
    )
}

/// The bytes a `Range: bytes=FIRST-LAST` header asks for (both ends inclusive); `None` for no
/// range or an open one (`bytes=FIRST-`), whose size the object's listing bounds instead.
fn ranged_read_length(headers: &http::HeaderMap) -> Option<u64> {
    let range = headers.get(http::header::RANGE)?.to_str().ok()?;
    let (first, last) = range.strip_prefix("bytes=")?.split_once('-')?;
    let (first, last) = (first.parse::<u64>().ok()?, last.parse::<u64>().ok()?);
    last.checked_sub(first)?.checked_add(1)
}

/// What a refused redirect says: its status and where it pointed (scheme, host and port only:
/// the rest of a location can hold a signature).
fn redirect_refused(response: &http::Response<HttpBody>) -> String {
    let location = response
        .headers()
        .get(http::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .map(|location| match reqwest::Url::parse(location) {
            Ok(url) => url.origin().ascii_serialization(),
            Err(_) => "a location that is not a URL".to_owned(),
        })
        .unwrap_or_else(|| "no location".to_owned());
    format!(
        "the server answered {} redirecting to {location}: redirects are not followed, so the \
         request's credentials go only to the endpoint",
        response.status()
    )
}

#[cfg(test)]
mod tests {
    use super::ranged_read_length;

    fn range(value: &str) -> Option<u64> {
        let mut headers = http::HeaderMap::new();
        headers.insert(http::header::RANGE, value.parse().unwrap());
        ranged_read_length(&headers)
    }

    #[test]
    fn a_closed_range_is_its_length_and_an_open_or_odd_one_is_none() {
        assert_eq!(range("bytes=0-99"), Some(100));
        assert_eq!(range("bytes=4194304-8388607"), Some(4 * 1024 * 1024));
        assert_eq!(range("bytes=7-7"), Some(1));
        assert_eq!(range("bytes=100-"), None);
        assert_eq!(range("bytes=-100"), None);
        assert_eq!(range("bytes=9-3"), None);
        assert_eq!(range("items=0-9"), None);
        assert_eq!(ranged_read_length(&http::HeaderMap::new()), None);
    }
}
