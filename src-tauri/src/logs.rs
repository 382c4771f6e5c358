//! The app's own log: a file a day in the platform log folder, private to the user, beside
//! stderr.

use std::path::{Path, PathBuf};

/// Where the app writes its log: the platform log folder (`$XDG_DATA_HOME/dev.zibby.studio/logs`,
/// as Tauri's `app_log_dir`).
pub fn log_dir() -> Option<PathBuf> {
    let data_home = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|path| path.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".local/share")))?;
    Some(data_home.join("dev.zibby.studio").join("logs"))
}

/// Makes the log folder private, before any file is written there: the folder `0700` (made so,
/// or changed to it), the files already there `0600`. A log holds paths, session ids and errors;
/// new files the appender makes later sit in the private folder.
pub fn make_log_dir_private(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    for entry in std::fs::read_dir(dir)?.flatten() {
        if entry.file_type().is_ok_and(|kind| kind.is_file()) {
            std::fs::set_permissions(entry.path(), std::fs::Permissions::from_mode(0o600))?;
        }
    }
    Ok(())
}

/// The log goes to stderr and to a file a day (the last 7 kept) in the platform log folder,
/// filtered by `RUST_LOG` (default: info).
pub fn init() {
    use std::io::IsTerminal;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    let file = log_dir().and_then(|dir| {
        // Made first: the appender prunes old files by reading the folder. Private: see there.
        if let Err(error) = make_log_dir_private(&dir) {
            eprintln!("zibby-studio: no log file in {}: {error}", dir.display());
            return None;
        }
        tracing_appender::rolling::Builder::new()
            .rotation(tracing_appender::rolling::Rotation::DAILY)
            .filename_prefix("zibby-studio")
            .filename_suffix("log")
            .max_log_files(7)
            .build(&dir)
            .inspect_err(|error| eprintln!("zibby-studio: no log file in {}: {error}", dir.display()))
            .ok()
            // The appender made today's file with the umask's mode: the user's alone too. (A
            // file a later day's rotation makes is in the private folder.)
            .inspect(|_| {
                if let Err(error) = make_log_dir_private(&dir) {
                    eprintln!("zibby-studio: the log files in {} stay as made: {error}", dir.display());
                }
            })
    });
    let file = file.map(|appender| tracing_subscriber::fmt::layer().with_writer(appender).with_ansi(false));
    tracing_subscriber::registry()
        .with(filter)
        .with(stderr)
        .with(file)
        .init();
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    /// Issue 26, point 8: the log was world-readable (0644 in 0755).
    #[test]
    fn the_log_folder_and_its_files_are_private() {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join("dev.zibby.studio/logs");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let old = dir.join("zibby-studio.2026-01-01.log");
        std::fs::write(&old, "zibby-studio://open?workspace=/home/me\n").unwrap();
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o644)).unwrap();
        super::make_log_dir_private(&dir).unwrap();
        let mode = |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&old), 0o600);

        let fresh = home.path().join("fresh/logs");
        super::make_log_dir_private(&fresh).unwrap();
        assert_eq!(mode(&fresh), 0o700);
    }
}
