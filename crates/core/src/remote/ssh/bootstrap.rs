//! The server binary on the host: the exact same build as the local `zstudio`, found on the
//! host's PATH or in `~/.zibby-studio/server/zstudio-<version>-<build>`, else uploaded there over
//! the same connection (written to a temporary file, checked, made 0700 and renamed into place,
//! so a half upload is never taken for the server), older builds in that folder removed.
//!
//! A build is named by its version and its **build id**: the first 16 hex digits of the SHA-256
//! of the binary file itself. It needs nothing at build time, and two binaries with the same id
//! are the same bytes (`zstudio build-info` prints it). A server on the host is run only once its
//! SHA-256 is the build's, read on the host without running it, and it (with its folders, for an
//! uploaded one) is the login's own and written by no one else: a program planted under the
//! build's name is replaced, never run.
//!
//! The binary uploaded is the local one, built for this machine's platform. The package's
//! `zstudio` is linked statically (static-pie, glibc inside: `scripts/package-deb.sh`), so it needs
//! no C library on a Linux host of the same architecture (not tried on another distribution); a `zstudio` of `cargo build` is dynamic, and a host
//! whose C library cannot run it gets the loader's own words. A host of another OS or
//! architecture gets an error saying no build for it is shipped (no aarch64 build is made).

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use flate2::write::GzEncoder;
use flate2::Compression;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::connection::Connection;
use super::errors::{io, last_lines, SshError};
use crate::remote::transfer::send_file;
use crate::vocabulary::error::Error;
use crate::vocabulary::visible::shown;

/// Where builds are kept on the host, under the login's `$HOME`.
pub const SERVER_DIR: &str = ".zibby-studio/server";

/// A `zstudio` build: what `zstudio build-info` prints (one JSON line).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildInfo {
    /// The package version (`0.1.0`).
    pub version: String,
    /// [`build_id`] of the binary.
    pub build: String,
    /// What it was built for, as `uname -sm` says it (`Linux x86_64`).
    pub platform: String,
}

impl BuildInfo {
    /// The build of `binary`, a `zstudio` of this version built for this platform (the running
    /// one, or one beside it).
    pub fn of_binary(binary: &Path) -> Result<BuildInfo, SshError> {
        Ok(BuildInfo {
            version: env!("CARGO_PKG_VERSION").to_string(),
            build: build_id(binary)?,
            platform: local_platform(),
        })
    }

    /// The file name of this build in [`SERVER_DIR`]: `zstudio-<version>-<build>`.
    pub fn file_name(&self) -> String {
        format!("zstudio-{}-{}", self.version, self.build)
    }
}

/// The server found or put on the host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteServer {
    /// The program to run on the host (an absolute path, or `zstudio` found on the PATH).
    pub program: String,
    /// Its build (the local one's).
    pub build: BuildInfo,
    /// Whether it was uploaded by this call.
    pub uploaded: bool,
    /// Older builds removed from [`SERVER_DIR`] by this call.
    pub removed: Vec<String>,
}

/// The first 16 hex digits of the SHA-256 of the file at `binary`: read once per path while the
/// file keeps its identity (device, inode, size and times: a binary upgraded or rebuilt under a
/// window that stays open is read again, so its bytes are never uploaded under the former
/// build's name), and between processes by that identity (kept in the runtime folder: a
/// `zstudio --remote` command does not read its own 30 MB again each time).
pub fn build_id(binary: &Path) -> Result<String, SshError> {
    type Known = std::collections::HashMap<PathBuf, (Option<String>, String)>;
    static KNOWN: std::sync::OnceLock<std::sync::Mutex<Known>> = std::sync::OnceLock::new();
    let known = KNOWN.get_or_init(Default::default);
    let identity = std::fs::metadata(binary).ok().map(|m| file_identity(&m));
    if let Some((seen, id)) = known.lock().unwrap_or_else(|p| p.into_inner()).get(binary) {
        if identity.is_some() && *seen == identity {
            return Ok(id.clone());
        }
    }
    let verified = identity
        .as_ref()
        .and_then(|_| Verified::open(None, &format!("build {}", binary.display())));
    let id = match (&identity, &verified) {
        (Some(identity), Some(verified)) => match verified.read().and_then(|line| {
            let (seen, id) = line.split_once(' ')?;
            (seen == identity).then(|| id.to_owned())
        }) {
            Some(id) => id,
            None => {
                let id = digest_of(binary)?;
                verified.write(&format!("{identity} {id}"));
                id
            }
        },
        _ => digest_of(binary)?,
    };
    known
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(binary.to_path_buf(), (identity, id.clone()));
    Ok(id)
}

/// What identifies a file's content as long as it is the same file, unchanged: its device, inode,
/// size, modification time and change time (which no one but the kernel sets: any write,
/// rename or mode change moves it), the times in nanoseconds.
fn file_identity(metadata: &std::fs::Metadata) -> String {
    use std::os::unix::fs::MetadataExt;
    let (m, c) = (
        metadata.mtime() as i128 * 1_000_000_000 + metadata.mtime_nsec() as i128,
        metadata.ctime() as i128 * 1_000_000_000 + metadata.ctime_nsec() as i128,
    );
    format!("{}:{}:{}:{m}:{c}", metadata.dev(), metadata.ino(), metadata.size())
}

/// A line this machine verified and keeps for the next process: a file of the private
/// [`runtime_dir`](super::sockets::runtime_dir) named by the SHA-256 of what it is about (a local binary's
/// build id by the binary's identity; the identity of a host's server once its SHA-256 was
/// checked there). Nothing is kept where that folder cannot be used.
pub(super) struct Verified {
    path: PathBuf,
}

impl Verified {
    /// The line about `about`, kept in `dir` (default: the runtime folder).
    pub(super) fn open(dir: Option<&Path>, about: &str) -> Option<Verified> {
        let dir = match dir {
            Some(dir) => dir.to_owned(),
            None => super::sockets::runtime_dir().ok()?,
        };
        let name = crate::vocabulary::digest::sha256_hex(about.as_bytes(), 8);
        Some(Verified {
            path: dir.join(format!("verified-{name}")),
        })
    }

    pub(super) fn read(&self) -> Option<String> {
        let text = std::fs::read_to_string(&self.path).ok()?;
        Some(text.trim().to_owned()).filter(|line| !line.is_empty() && line.len() < 1024)
    }

    pub(super) fn write(&self, line: &str) {
        let _ = crate::sessions::private::replace_file(&self.path, line.as_bytes());
    }

    /// Keeps the `identity ID` a script printed with `installed PATH` (`seen`: what was kept
    /// already); forgets what was kept when it printed none.
    pub(super) fn keep_identity(&self, said: &str, seen: &str) {
        let installed = said.lines().any(|line| line.starts_with("installed "));
        let identity = said
            .lines()
            .find_map(|line| line.strip_prefix("identity "))
            .filter(|id| installed && !id.is_empty());
        match identity {
            Some(identity) if identity != seen => self.write(identity),
            Some(_) => {}
            None => {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }
}

/// [`build_id`], read from the file.
fn digest_of(binary: &Path) -> Result<String, SshError> {
    let mut file = std::fs::File::open(binary).map_err(|source| io("read", binary, source))?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let read = file.read(&mut buffer).map_err(|source| io("read", binary, source))?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    Ok(crate::vocabulary::digest::hex(&hasher.finalize()[..8]))
}

/// This machine's platform as `uname -sm` says it (`Linux x86_64`, `Darwin arm64`).
pub fn local_platform() -> String {
    let os = match std::env::consts::OS {
        "linux" => "Linux",
        "macos" => "Darwin",
        "freebsd" => "FreeBSD",
        other => other,
    };
    format!("{os} {}", std::env::consts::ARCH)
}

/// `uname -sm`'s words for one platform (`arm64` is `aarch64`, `amd64` is `x86_64`).
fn same_platform(a: &str, b: &str) -> bool {
    let normal = |text: &str| text.trim().replace("arm64", "aarch64").replace("amd64", "x86_64");
    normal(a) == normal(b)
}

/// What the scripts share: `safe PATH…` (each the login's own, written by no one else: not
/// group- or other-writable; one `find` for all), `sum PATH` (the first 16 hex digits of its SHA-256, with
/// OpenSSL's `openssl dgst`, several times faster where the CPU has SHA instructions, else coreutils'
/// `sha256sum` or Perl's `shasum`; empty when the host has none).
pub(super) const SCRIPT_HELPERS: &str = r#"safe() { for s in "$@"; do [ -O "$s" ] || return 1; done; [ -z "$(find "$@" -prune \( -perm -020 -o -perm -002 \) -print)" ]; }
sum() { (openssl dgst -sha256 -r "$1" 2>/dev/null || sha256sum "$1" 2>/dev/null || shasum -a 256 "$1" 2>/dev/null) | cut -c1-16; }
"#;

/// `find_server NAME BUILD SEEN`: looks for the build in [`SERVER_DIR`] and on the PATH, prints
/// `installed PATH`, `path PATH` or `none`, and sets `server` to what it found. A file of the
/// build's name (`NAME`) is taken only when it, its folder and `~/.zibby-studio` are the login's
/// own and written by no one else, and its SHA-256 is the build's (`BUILD`): another program
/// planted under that name is never run (it is replaced by an upload). Its SHA-256 is not read
/// again when the file's identity (`stat -c %d:%i:%s:%.9Y:%.9Z`: device, inode, size,
/// modification and change times) is `SEEN`, the one this machine saw when it last checked it
/// (`identity ID` is printed before `installed`). A `zstudio` on the PATH is taken when its
/// SHA-256 is the build's, read without running it, and no one but its owner (the login or root)
/// can write it.
pub(super) const FIND_FUNCTION: &str = r#"find_server() {
  server=
  d=$HOME/.zibby-studio/server
  f="$d/$1"
  if [ -f "$f" ] && [ ! -L "$f" ] && [ -x "$f" ] && safe "$HOME/.zibby-studio" "$d" "$f"; then
    id=$(stat -c %d:%i:%s:%.9Y:%.9Z "$f" 2>/dev/null)
    if { [ -n "$3" ] && [ "$id" = "$3" ]; } || [ "$(sum "$f")" = "$2" ]; then
      printf 'identity %s\ninstalled %s\n' "$id" "$f"; server=$f; return 0; fi
  fi
  if p=$(command -v zstudio 2>/dev/null) && [ -z "$(find "$p" -prune \( -perm -020 -o -perm -002 \) -print)" ] \
     && [ "$(sum "$p")" = "$2" ]; then printf 'path %s\n' "$p"; server=$p; else echo none; fi
}
"#;

/// After [`SCRIPT_HELPERS`]: writes stdin (gzipped when `$4` is `gzip`: `gzip -d`; a host without
/// gzip exits 6 before it reads any, saying [`NO_GZIP`]) to a temporary file of [`SERVER_DIR`],
/// checks its size (`$2`) and that it runs (`--version`), renames it to `$1`, then removes the
/// other builds (`removed PATH` each).
/// `~/.zibby-studio` and its `server` folder are made the login's alone (0700) first; one that is
/// someone else's is refused (exit 5).
///
/// An upload may come in two parts ([`Connection::upload`]): with `$5` `+`, stdin may be the
/// first part only, and a file shorter than `$2` is kept for the rest (`partial NAME BYTES`, exit
/// 0); with `$5` that `NAME` (a `.upload.*` file of the folder, the login's own), stdin is the
/// rest, added to it before the same checks. Parts left more than a day are removed.
///
/// A file joined from two parts also has its SHA-256 checked against `$3` (the build id, where the
/// host can read one): the offset it continues at is this program's own logic, and on the slow
/// link that makes two parts the hash costs little next to the transfer. A whole upload (as it is
/// or gzipped whole) is not hashed on the host: ssh's transport authenticates every byte (its
/// MAC), `gzip -d` checks its own CRC-32 and length, and the size and `--version` checks above
/// still refuse a file cut short or one that does not run (docs/benchmarks.md, "The whole upload
/// unhashed on the host"). A file found later by [`FIND_FUNCTION`], not by the identity this
/// machine kept of it, is hashed there as before.
const UPLOAD_SCRIPT: &str = r#"set -e
if [ "$4" = gzip ] && ! command -v gzip >/dev/null 2>&1; then echo "zstudio-upload: no gzip on the host" >&2; exit 6; fi
d=$HOME/.zibby-studio/server
umask 077
mkdir -p "$d"
for f in "$HOME/.zibby-studio" "$d"; do
  if [ -L "$f" ] || [ ! -O "$f" ]; then echo "$f is not this login's own folder: the server is not put there" >&2; exit 5; fi
  chmod 700 "$f"
done
case "$5" in
  ''|+) find "$d" -name '.upload.*' -mmin +1440 -exec rm -f {} + 2>/dev/null || true
    t=$(mktemp "$d/.upload.XXXXXX");;
  */*) echo "no upload named $5 to continue" >&2; exit 5;;
  .upload.?*) t=$d/$5
    if [ -L "$t" ] || [ ! -f "$t" ] || ! safe "$t"; then echo "no upload of this login's named $5 to continue" >&2; exit 5; fi;;
  *) echo "no upload named $5 to continue" >&2; exit 5;;
esac
trap 'rm -f "$t"' EXIT
if [ "$4" = gzip ]; then
  if ! gzip -dc >> "$t"; then echo "the upload did not arrive whole: gzip -d failed" >&2; exit 3; fi
else cat >> "$t"; fi
size=$(wc -c < "$t")
if [ "$5" = + ] && [ "$size" -lt "$2" ]; then trap - EXIT; printf 'partial %s %s\n' "${t##*/}" "$size"; exit 0; fi
if [ "$size" -ne "$2" ]; then echo "the upload was cut short: $size of $2 bytes arrived" >&2; exit 3; fi
if [ "${5:-+}" != + ] && s=$(sum "$t") && [ -n "$s" ] && [ "$s" != "$3" ]; then
  echo "the upload arrived with another SHA-256 ($s, not the build's $3)" >&2; exit 3; fi
chmod 700 "$t"
if ! out=$("$t" --version 2>&1); then echo "the uploaded zstudio does not run there: $out" >&2; exit 4; fi
mv -f "$t" "$d/$1"
trap - EXIT
printf 'identity %s\ninstalled %s\n' "$(stat -c %d:%i:%s:%.9Y:%.9Z "$d/$1" 2>/dev/null)" "$d/$1"
for f in "$d"/zstudio-*; do
  if [ "$f" != "$d/$1" ] && [ -f "$f" ]; then rm -f "$f"; printf 'removed %s\n' "$f"; fi
done"#;

const NO_GZIP: &str = "zstudio-upload: no gzip on the host";

impl Connection {
    /// What this machine keeps about `about` on this host, reached this way, between processes
    /// (a server's verified identity), in the connection's runtime folder.
    pub(super) fn verified(&self, about: &str) -> Option<Verified> {
        let host = super::kept::kept_name(self.target(), self.options());
        Verified::open(self.options().runtime_dir.as_deref(), &format!("{host} {about}"))
    }

    /// The same build as `local_binary` (the running `zstudio`) on the host: in [`SERVER_DIR`],
    /// else a `zstudio` on the PATH whose SHA-256 is the build's, else uploaded (when the host's
    /// platform is the binary's). Errors name the host and what is missing.
    pub fn ensure_server(&self, local_binary: &Path) -> Result<RemoteServer, SshError> {
        let build = BuildInfo::of_binary(local_binary)?;
        let name = build.file_name();
        let script = format!("{SCRIPT_HELPERS}{FIND_FUNCTION}find_server \"$1\" \"$2\" \"$3\"");
        // What this machine saw of the server there when it last read its SHA-256.
        let verified = self.verified(&format!("server {name}"));
        let seen = verified.as_ref().and_then(Verified::read).unwrap_or_default();
        let found = self.run(
            &["sh", "-c", &script, "sh", &name, &build.build, &seen],
            None,
            64 * 1024,
        )?;
        let found = String::from_utf8_lossy(&found);
        let last = found.lines().last().unwrap_or("").to_string();
        if let Some(verified) = &verified {
            verified.keep_identity(&found, &seen);
        }
        if let Some(program) = last.strip_prefix("installed ") {
            return Ok(RemoteServer {
                program: program.to_string(),
                build,
                uploaded: false,
                removed: vec![],
            });
        }
        if let Some(program) = last.strip_prefix("path ") {
            return Ok(RemoteServer {
                program: program.to_string(),
                build,
                uploaded: false,
                removed: vec![],
            });
        }
        self.upload(local_binary, build)
    }

    pub(super) fn upload(&self, local_binary: &Path, build: BuildInfo) -> Result<RemoteServer, SshError> {
        if !same_platform(self.remote_platform(), &build.platform) {
            return Err(SshError::UnsupportedPlatform {
                host: self.host(),
                detail: format!(
                    "the host is {}, and this zstudio is built for {}: no zstudio {} build for {} is shipped \
                     (the package ships one static Linux build, for its own architecture), so the server \
                     cannot be uploaded; put zstudio {} built for the host at ~/{}/{}",
                    shown(self.remote_platform()),
                    build.platform,
                    build.version,
                    shown(self.remote_platform()),
                    build.version,
                    SERVER_DIR,
                    build.file_name()
                ),
            });
        }
        let size = std::fs::metadata(local_binary)
            .map_err(|source| io("read", local_binary, source))?
            .len();
        let name = build.file_name();
        let output = self
            .send_in_parts(local_binary, &name, size, &build.build)
            .map_err(|error| match error {
                SshError::Ssh { host, detail } => SshError::Bootstrap {
                    host,
                    what: format!(
                        "the server could not be uploaded to ~/{SERVER_DIR} (is the home folder there \
                         writable, and ~/.zibby-studio a folder of this login's?), or put zstudio {} \
                         of the same build ({}) on the host's PATH",
                        build.version, build.build
                    ),
                    detail,
                },
                other => other,
            })?;
        let text = String::from_utf8_lossy(&output);
        if let Some(verified) = self.verified(&format!("server {name}")) {
            verified.keep_identity(&text, "");
        }
        let program = text
            .lines()
            .find_map(|line| line.strip_prefix("installed "))
            .ok_or_else(|| SshError::Bootstrap {
                host: self.host(),
                what: "the upload did not confirm".into(),
                detail: last_lines(&text),
            })?;
        let removed = text
            .lines()
            .filter_map(|line| line.strip_prefix("removed "))
            .map(String::from)
            .collect();
        Ok(RemoteServer {
            program: program.to_string(),
            build,
            uploaded: true,
            removed,
        })
    }

    /// Sends `local_binary` (`size` bytes, build `build`) to be put at `name`: as it is while the
    /// link takes it fast ([`LinkGauge`]); once the link proves slow, the first part is kept on
    /// the host and the rest goes gzipped (as it is where the host has no gzip). What the last
    /// script printed.
    fn send_in_parts(&self, local_binary: &Path, name: &str, size: u64, build: &str) -> Result<Vec<u8>, SshError> {
        let stopped = std::sync::Mutex::new(None);
        let first = Part {
            gzip: false,
            from: 0,
            continues: "+",
            stopped: Some(&stopped),
        };
        let output = self.send_server(local_binary, name, size, build, first)?;
        let text = String::from_utf8_lossy(&output);
        let Some((file, kept)) = text
            .lines()
            .find_map(|line| line.strip_prefix("partial "))
            .and_then(|rest| rest.split_once(' '))
        else {
            return Ok(output);
        };
        let sent = stopped.lock().unwrap_or_else(|p| p.into_inner()).unwrap_or(size);
        if kept.parse::<u64>().ok() != Some(sent) {
            return Err(SshError::Ssh {
                host: self.host(),
                detail: format!("the upload was cut short: {kept} of the first {sent} bytes arrived"),
            });
        }
        let rest = |gzip| Part {
            gzip,
            from: sent,
            continues: file,
            stopped: None,
        };
        self.send_server(local_binary, name, size, build, rest(true))
            .or_else(|error| match error {
                SshError::Ssh { ref detail, .. } if detail.contains(NO_GZIP) => {
                    self.send_server(local_binary, name, size, build, rest(false))
                }
                other => Err(other),
            })
    }

    /// Runs the upload script with `part` of `local_binary` (`size` bytes, build `build`) as its
    /// input ([`crate::remote::transfer`]'s chunks, read once and, gzipped, compressed as they are
    /// sent), to be put at `name`; what the script printed.
    fn send_server(
        &self,
        local_binary: &Path,
        name: &str,
        size: u64,
        build: &str,
        part: Part<'_>,
    ) -> Result<Vec<u8>, SshError> {
        let script = format!("{SCRIPT_HELPERS}{UPLOAD_SCRIPT}");
        let size_text = size.to_string();
        let encoding = if part.gzip { "gzip" } else { "raw" };
        let argv = [
            "sh",
            "-c",
            &script,
            "sh",
            name,
            &size_text,
            build,
            encoding,
            part.continues,
        ];
        let feed = |pipe: &mut dyn Write| -> Result<(), String> {
            let read_error = |e| io("read", local_binary, e).to_string();
            let mut file = std::fs::File::open(local_binary).map_err(read_error)?;
            file.seek(SeekFrom::Start(part.from)).map_err(read_error)?;
            let rest = size.saturating_sub(part.from);
            let sent = match (part.gzip, part.stopped) {
                (true, _) => {
                    let mut encoder = GzEncoder::new(pipe, Compression::fast());
                    let sent = send_file(local_binary, file, rest, |_, chunk| write_chunk(&mut encoder, chunk));
                    sent.and_then(|()| encoder.finish().map(drop).map_err(|e| Error::io_write("the upload", e)))
                }
                (false, None) => send_file(local_binary, file, rest, |_, chunk| write_chunk(pipe, chunk)),
                (false, Some(stopped)) => {
                    let mut gauge = LinkGauge::default();
                    let sent = send_file(local_binary, file, rest, |offset, chunk| {
                        if gauge.slow(Instant::now(), offset, size, || gzip_rate(chunk)) {
                            *stopped.lock().unwrap_or_else(|p| p.into_inner()) = Some(offset);
                            return Err(Error::io_write("the upload", std::io::ErrorKind::Interrupted.into()));
                        }
                        write_chunk(pipe, chunk)
                    });
                    // Stopped for the link: the rest goes in a second part.
                    sent.or_else(|error| {
                        let stopped = stopped.lock().unwrap_or_else(|p| p.into_inner()).is_some();
                        if stopped {
                            Ok(())
                        } else {
                            Err(error)
                        }
                    })
                }
            };
            sent.map_err(|error| error.to_string())
        };
        self.run(&argv, Some(&feed), 64 * 1024)
    }
}

/// One part of the upload: from the byte `from` of the binary, gzipped or as it is; the part that
/// `continues` an upload the host kept (`+`: a new one, which may stop early, its offset then in
/// `stopped`).
#[derive(Clone, Copy)]
struct Part<'a> {
    gzip: bool,
    from: u64,
    continues: &'a str,
    stopped: Option<&'a std::sync::Mutex<Option<u64>>>,
}

/// Bytes the link takes in at once whatever its speed (the pipe, `ssh`'s channel window of 2 MiB,
/// the sockets' buffers): the gauge starts after them.
const GAUGE_AFTER: u64 = 8 << 20;
/// The bytes each look of the gauge judges the link by.
const GAUGE_WINDOW: u64 = 4 << 20;
/// A link faster than this (bytes a second) is never worth gzipping for: gzip's level 1 takes
/// about 130 MB/s on one core here, `gzip -d` gives about as much.
const FAST_LINK: f64 = 100e6;
/// Less than this left is sent as it is, whatever the link.
const WORTH_GZIPPING: u64 = 4 << 20;

/// How fast the link takes the upload as it is, against how fast gzip would go now: judged on
/// each [`GAUGE_WINDOW`] after [`GAUGE_AFTER`]. A window is slow when the link carried less than
/// a quarter of what gzip's level 1 compresses on this machine, timed on one chunk (the host
/// unpacking costs about as much again, and on a busy machine, where a chunk's time is a burst's,
/// the whole gzipped path went at a quarter to a half of it: docs/benchmarks.md, "Files to and
/// from a host"), timed once and again on each window that looks slow by it; two slow windows in
/// a row, with at least [`WORTH_GZIPPING`] left, make the link slow.
#[derive(Default)]
struct LinkGauge {
    window: Option<(Instant, u64)>,
    slow_windows: u32,
    gzip_rate: Option<f64>,
}

impl LinkGauge {
    /// Whether to stop sending as it is at `offset` (of `size`) at `now`; `gzip_rate` measures
    /// what gzip compresses a second now, asked only when the link is under [`FAST_LINK`], the
    /// first time and when a window looks slow.
    fn slow(&mut self, now: Instant, offset: u64, size: u64, gzip_rate: impl Fn() -> f64) -> bool {
        if offset < GAUGE_AFTER {
            return false;
        }
        let (since, from) = *self.window.get_or_insert((now, offset));
        if offset - from < GAUGE_WINDOW {
            return false;
        }
        self.window = Some((now, offset));
        let rate = (offset - from) as f64 / now.duration_since(since).as_secs_f64().max(1e-9);
        let slow = rate < FAST_LINK
            && rate < *self.gzip_rate.get_or_insert_with(&gzip_rate) / 4.0
            && rate < *self.gzip_rate.insert(gzip_rate()) / 4.0;
        self.slow_windows = if slow { self.slow_windows + 1 } else { 0 };
        self.slow_windows >= 2 && size.saturating_sub(offset) >= WORTH_GZIPPING
    }
}

/// What gzip's level 1 compresses a second on this machine now, timed on `chunk`.
fn gzip_rate(chunk: &[u8]) -> f64 {
    let started = Instant::now();
    let mut encoder = GzEncoder::new(std::io::sink(), Compression::fast());
    let _ = encoder.write_all(chunk).and_then(|()| encoder.finish().map(drop));
    chunk.len() as f64 / started.elapsed().as_secs_f64().max(1e-9)
}

/// Writes one chunk of the upload to the `ssh` command's input.
fn write_chunk(pipe: &mut (impl Write + ?Sized), chunk: &[u8]) -> Result<(), Error> {
    pipe.write_all(chunk).map_err(|e| Error::io_write("the upload", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platforms_are_compared_as_uname_says_them() {
        assert!(same_platform("Linux x86_64", "Linux x86_64"));
        assert!(same_platform("Darwin arm64", "Darwin aarch64"));
        assert!(!same_platform("Linux aarch64", "Linux x86_64"));
        assert!(!same_platform("FreeBSD amd64", "Linux x86_64"));
    }

    /// Runs the upload script here as a host would (`home` its `$HOME`, `path` its PATH) with
    /// `input` on its stdin: its exit code and stderr.
    fn upload_here(home: &Path, path: &str, args: &[&str], input: &[u8]) -> (Option<i32>, String) {
        let (code, said, _) = upload_here_said(home, path, args, input);
        (code, said)
    }

    /// [`upload_here`], with what the script printed on stdout too.
    fn upload_here_said(home: &Path, path: &str, args: &[&str], input: &[u8]) -> (Option<i32>, String, String) {
        let script = format!("{SCRIPT_HELPERS}{UPLOAD_SCRIPT}");
        let mut child = std::process::Command::new("/bin/sh")
            .args(["-c", &script, "sh"])
            .args(args)
            .env("HOME", home)
            .env("PATH", path)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let _ = stdin.write_all(input);
        drop(stdin);
        let output = child.wait_with_output().unwrap();
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
        )
    }

    /// Issue 42, point 5: the server may go to the host gzipped, and a whole upload is checked
    /// there before it is put in place: a gzip stream cut short, a file of fewer bytes than the
    /// build's, one that does not run are refused, nothing installed (its SHA-256 is not read
    /// there: ssh's MAC and gzip's CRC-32 vouch for the bytes); a host without gzip says so before
    /// it reads anything, and takes the server as it is.
    #[test]
    fn a_whole_upload_is_unpacked_and_checked_on_the_host_and_a_host_without_gzip_says_so() {
        let home = tempfile::tempdir().unwrap();
        let server = b"#!/bin/sh\necho zstudio 0.0.0\n".to_vec();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("zstudio");
        std::fs::write(&file, &server).unwrap();
        let build = digest_of(&file).unwrap();
        let mut encoder = GzEncoder::new(Vec::new(), Compression::fast());
        encoder.write_all(&server).unwrap();
        let gzipped = encoder.finish().unwrap();
        let size = server.len().to_string();
        let path = std::env::var("PATH").unwrap();
        let folder = home.path().join(".zibby-studio/server");
        let installed = folder.join("zstudio-0-a");
        let nothing_left = || std::fs::read_dir(&folder).unwrap().next().is_none();
        let args = ["zstudio-0-a", size.as_str(), build.as_str(), "gzip"];
        let cut = &gzipped[..gzipped.len() - 6];
        let (code, said) = upload_here(home.path(), &path, &args, cut);
        assert_eq!(code, Some(3), "a gzip stream cut short: {said}");
        assert!(said.contains("did not arrive whole") && nothing_left(), "{said}");
        let (code, said) = upload_here(home.path(), &path, &args, &server);
        assert_eq!(code, Some(3), "input that is not gzip: {said}");
        assert!(nothing_left(), "{said}");
        let raw = ["zstudio-0-a", size.as_str(), build.as_str(), "raw"];
        let (code, said) = upload_here(home.path(), &path, &raw, &server[..server.len() - 1]);
        assert_eq!(code, Some(3), "a file cut short: {said}");
        assert!(said.contains("cut short") && nothing_left(), "{said}");
        let mut broken = b"#!/bin/sh\nexit 9\n".to_vec();
        broken.resize(server.len(), b'#');
        let (code, said) = upload_here(home.path(), &path, &raw, &broken);
        assert_eq!(code, Some(4), "a file that does not run: {said}");
        assert!(said.contains("does not run") && nothing_left(), "{said}");
        let (code, said) = upload_here(home.path(), &path, &["zstudio-0-a", &size, &build, "gzip"], &gzipped);
        assert_eq!(code, Some(0), "{said}");
        assert_eq!(std::fs::read(&installed).unwrap(), server);
        // A host whose PATH has every tool but gzip.
        let tools = tempfile::tempdir().unwrap();
        for tool in [
            "mkdir",
            "chmod",
            "mktemp",
            "cat",
            "wc",
            "stat",
            "find",
            "sha256sum",
            "cut",
            "mv",
            "rm",
        ] {
            let found = path
                .split(':')
                .map(|d| Path::new(d).join(tool))
                .find(|p| p.is_file())
                .unwrap();
            std::os::unix::fs::symlink(found, tools.path().join(tool)).unwrap();
        }
        let bare = tools.path().to_str().unwrap();
        std::fs::remove_file(&installed).unwrap();
        let (code, said) = upload_here(home.path(), bare, &["zstudio-0-a", &size, &build, "gzip"], &gzipped);
        assert_eq!(code, Some(6), "{said}");
        assert!(said.contains(NO_GZIP), "{said}");
        let (code, said) = upload_here(home.path(), bare, &["zstudio-0-a", &size, &build, "raw"], &server);
        assert_eq!(code, Some(0), "{said}");
        assert_eq!(std::fs::read(&installed).unwrap(), server);
    }

    /// An upload in two parts: the first as it is (`+`, kept when short), the rest gzipped added to
    /// it by name; the whole checked as one. A part never continues a file outside the folder, nor
    /// one of another SHA-256.
    #[test]
    fn an_upload_in_two_parts_is_checked_whole() {
        let home = tempfile::tempdir().unwrap();
        let server = b"#!/bin/sh\necho zstudio 0.0.0\n# the rest of the build\n".to_vec();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("zstudio");
        std::fs::write(&file, &server).unwrap();
        let build = digest_of(&file).unwrap();
        let (head, tail) = server.split_at(20);
        let mut encoder = GzEncoder::new(Vec::new(), Compression::fast());
        encoder.write_all(tail).unwrap();
        let tail_gzipped = encoder.finish().unwrap();
        let size = server.len().to_string();
        let path = std::env::var("PATH").unwrap();
        let folder = home.path().join(".zibby-studio/server");
        let installed = folder.join("zstudio-0-a");
        let first = |home: &Path| {
            let (code, said, printed) =
                upload_here_said(home, &path, &["zstudio-0-a", &size, &build, "raw", "+"], head);
            assert_eq!(code, Some(0), "{said}");
            let kept = printed.strip_prefix("partial ").unwrap().trim().to_owned();
            let (name, bytes) = kept.split_once(' ').unwrap();
            assert_eq!(bytes, "20", "{printed}");
            assert!(!installed.exists(), "a first part is not put in place");
            name.to_owned()
        };
        // A part of another name, or outside the folder, is refused before it is read.
        for name in [
            "../../x",
            ".upload.x/../../../x",
            ".upload.none",
            "zstudio-0-a",
            "/etc/passwd",
        ] {
            let (code, said) = upload_here(
                home.path(),
                &path,
                &["zstudio-0-a", &size, &build, "gzip", name],
                &tail_gzipped,
            );
            assert_eq!(code, Some(5), "{name}: {said}");
        }
        // The rest of another SHA-256 (gzipped, or as it is from a host without gzip): refused,
        // the part removed.
        for (encoding, rest) in [("gzip", &tail_gzipped[..]), ("raw", tail)] {
            let name = first(home.path());
            let (code, said) = upload_here(
                home.path(),
                &path,
                &["zstudio-0-a", &size, "0123456789abcdef", encoding, &name],
                rest,
            );
            assert_eq!(code, Some(3), "{encoding}: {said}");
            assert!(said.contains("another SHA-256"), "{encoding}: {said}");
            assert!(!folder.join(&name).exists() && !installed.exists(), "{said}");
        }
        // The rest, gzipped: installed, the part gone.
        let name = first(home.path());
        let (code, said, printed) = upload_here_said(
            home.path(),
            &path,
            &["zstudio-0-a", &size, &build, "gzip", &name],
            &tail_gzipped,
        );
        assert_eq!(code, Some(0), "{said}");
        assert!(printed.contains("installed "), "{printed}");
        assert_eq!(std::fs::read(&installed).unwrap(), server);
        assert!(!folder.join(&name).exists());
        // A whole upload with `+` is installed at once, checked as any whole upload is: one that
        // does not run is refused, nothing kept.
        std::fs::remove_file(&installed).unwrap();
        let mut broken = server.clone();
        broken[..10].copy_from_slice(b"#!/bin/no\n");
        let (code, said, printed) =
            upload_here_said(home.path(), &path, &["zstudio-0-a", &size, &build, "raw", "+"], &broken);
        assert_eq!(code, Some(4), "{said}");
        assert!(!printed.contains("partial") && !installed.exists(), "{printed} {said}");
        assert!(std::fs::read_dir(&folder).unwrap().next().is_none(), "{said}");
        let (code, said, printed) =
            upload_here_said(home.path(), &path, &["zstudio-0-a", &size, &build, "raw", "+"], &server);
        assert_eq!(code, Some(0), "{said}");
        assert!(
            printed.contains("installed ") && !printed.contains("partial"),
            "{printed}"
        );
        assert_eq!(std::fs::read(&installed).unwrap(), server);
    }

    /// The link is judged after the bytes its buffers take in at once, on each window, against
    /// what gzip compresses now: slow after two windows under a quarter of it, with enough left to be
    /// worth gzipping; never over [`FAST_LINK`], never before [`GAUGE_AFTER`].
    #[test]
    fn the_link_is_judged_against_gzips_pace_once_the_buffers_are_full() {
        let start = Instant::now();
        let at = |ms: u64| start + std::time::Duration::from_millis(ms);
        let size = 96 << 20;
        let window = |n: u64| GAUGE_AFTER + n * GAUGE_WINDOW;
        let gzip = || 130e6;
        let unasked = || -> f64 { panic!("gzip's pace asked of a fast link") };
        // 10 MB/s: a window of 4 MiB takes 419 ms; slow on the second slow window.
        let mut gauge = LinkGauge::default();
        assert!(!gauge.slow(at(0), 0, size, unasked));
        assert!(
            !gauge.slow(at(0), 4 << 20, size, unasked),
            "the buffers take these at once"
        );
        assert!(!gauge.slow(at(0), window(0), size, unasked));
        assert!(
            !gauge.slow(at(300), window(0) + (2 << 20), size, unasked),
            "half a window"
        );
        assert!(!gauge.slow(at(419), window(1), size, gzip), "one slow window");
        assert!(gauge.slow(at(838), window(2), size, gzip), "10 MB/s");
        // 200 MB/s: never slow, gzip's pace not even asked.
        let mut gauge = LinkGauge::default();
        assert!(!gauge.slow(at(0), window(0), size, unasked));
        for n in 1..5 {
            assert!(!gauge.slow(at(21 * n), window(n), size, unasked), "200 MB/s");
        }
        // 25 MB/s on a busy machine where gzip does 60 MB/s: as it is, gzip's pace timed once;
        // where it does 130, gzipped.
        let mut gauge = LinkGauge::default();
        let asked = std::cell::Cell::new(0);
        assert!(!gauge.slow(at(0), window(0), size, unasked));
        for n in 1..5 {
            let busy = || {
                asked.set(asked.get() + 1);
                60e6
            };
            assert!(
                !gauge.slow(at(168 * n), window(n), size, busy),
                "busy: 25 against 60 MB/s"
            );
        }
        assert_eq!(asked.get(), 1, "gzip's pace timed once while the link looks fast");
        let mut gauge = LinkGauge::default();
        assert!(!gauge.slow(at(0), window(0), size, unasked));
        assert!(!gauge.slow(at(168), window(1), size, gzip));
        assert!(gauge.slow(at(336), window(2), size, gzip), "25 against 130 MB/s");
        // A slow window between fast ones is not enough.
        let mut gauge = LinkGauge::default();
        assert!(!gauge.slow(at(0), window(0), size, unasked));
        assert!(!gauge.slow(at(419), window(1), size, gzip));
        assert!(!gauge.slow(at(440), window(2), size, gzip));
        assert!(!gauge.slow(at(859), window(3), size, gzip));
        // Too little left: as it is.
        let small = window(2) + WORTH_GZIPPING - 1;
        let mut gauge = LinkGauge::default();
        assert!(!gauge.slow(at(0), window(0), small, unasked));
        assert!(!gauge.slow(at(419), window(1), small, gzip));
        assert!(!gauge.slow(at(838), window(2), small, gzip), "too little left");
    }

    #[test]
    fn a_build_id_is_the_files_digest() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, b"one build").unwrap();
        std::fs::write(&b, b"another build").unwrap();
        let id = build_id(&a).unwrap();
        assert_eq!(id.len(), 16);
        assert_eq!(id, build_id(&a).unwrap());
        assert_ne!(id, build_id(&b).unwrap());
        // SHA-256("one build"), its first 8 bytes.
        assert_eq!(id, "35b5c9836731bd31");
    }

    /// A binary changed under a process that stays open (an upgrade beside the window) is read
    /// again: its bytes are never uploaded under the former build's name.
    #[test]
    fn a_build_id_is_read_again_once_its_file_changed() {
        let dir = tempfile::tempdir().unwrap();
        let binary = dir.path().join("zstudio");
        std::fs::write(&binary, b"one build").unwrap();
        let first = build_id(&binary).unwrap();
        assert_eq!(build_id(&binary).unwrap(), first);
        std::fs::write(&binary, b"another build").unwrap();
        let second = build_id(&binary).unwrap();
        assert_ne!(second, first);
        assert_eq!(second, digest_of(&binary).unwrap());
        // Replaced by another file (a package upgrade renames the new one into place).
        let upgraded = dir.path().join("zstudio.new");
        std::fs::write(&upgraded, b"a third build").unwrap();
        std::fs::rename(&upgraded, &binary).unwrap();
        assert_eq!(build_id(&binary).unwrap(), digest_of(&binary).unwrap());
    }
}
