//! The command-line arguments that `zstudio` and the desktop app share, defined once with clap
//! (the core itself knows nothing of clap).
//!
//! - [`StoreArgs`]: `--db PATH | --memory`, where the studio's store is. `zstudio` takes them as
//!   global options of every command; the app as its own.
//! - [`desktop`]: the app's whole command line, `zibby-studio [--db PATH | --memory] [WORKSPACE]`.
//! - [`target`]: a workspace's root told apart: a folder here, on another machine, a bucket.

pub mod desktop;
pub mod target;

use std::path::PathBuf;

use studio_core::store::StoreLocation;

/// `--db PATH | --memory`: where the studio's store is (the default: `$ZIBBY_STUDIO_DB`, else the
/// platform data folder). The two are exclusive. Global: given before or after a subcommand.
#[derive(clap::Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreArgs {
    /// The studio's store [default: $ZIBBY_STUDIO_DB, else $XDG_DATA_HOME/zibby-studio/studio.sqlite]
    #[arg(long, value_name = "PATH", conflicts_with = "memory", global = true)]
    pub db: Option<PathBuf>,
    /// Use a throwaway in-memory store: nothing is kept after the command
    #[arg(long, global = true)]
    pub memory: bool,
}

impl StoreArgs {
    /// Whether either was given on the command line.
    pub fn given(&self) -> bool {
        self.db.is_some() || self.memory
    }

    /// Where the store is: [`StoreLocation::resolve`] of these arguments. Resolve it once per
    /// process: each in-memory location is a store of its own.
    pub fn location(&self) -> Result<StoreLocation, studio_core::Error> {
        StoreLocation::resolve(self.db.clone(), self.memory)
    }
}

/// A size: bytes, or a number with K, M, G or T (KiB, MiB, GiB, TiB; `KiB`, `KB` read the same).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let digits = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a size: a number of bytes, or with K, M, G or T"))?;
    let shift = match unit.trim().trim_end_matches(['B', 'b']).trim_end_matches(['i', 'I']) {
        "" => 0,
        "K" | "k" => 10,
        "M" | "m" => 20,
        "G" | "g" => 30,
        "T" | "t" => 40,
        _ => return Err(format!("`{text}` is not a size: its unit is not K, M, G or T")),
    };
    number
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("`{text}` is too large"))
}

/// `bytes` as [`parse_size`] reads it back: in the largest of T, G, M, K that divides it, else
/// in bytes (`2G`, `1536M`, `1000`).
pub fn format_size(bytes: u64) -> String {
    for (unit, shift) in [("T", 40), ("G", 30), ("M", 20), ("K", 10)] {
        if bytes != 0 && bytes.trailing_zeros() >= shift {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    bytes.to_string()
}

#[cfg(test)]
mod tests {
    use super::{format_size, parse_size};

    #[test]
    fn a_size_written_reads_back() {
        for bytes in [0, 1000, 2 << 30, 1536 << 20, 3 << 10, 5 << 40, (2 << 30) + 1] {
            assert_eq!(parse_size(&format_size(bytes)), Ok(bytes), "{}", format_size(bytes));
        }
        assert_eq!(format_size(2 << 30), "2G");
        assert_eq!(format_size(1536 << 20), "1536M");
    }

    #[test]
    fn sizes_read_in_binary_units() {
        assert_eq!(parse_size("512"), Ok(512));
        assert_eq!(parse_size(" 2G "), Ok(2 << 30));
        assert_eq!(parse_size("500MiB"), Ok(500 << 20));
        assert_eq!(parse_size("3 kb"), Ok(3 << 10));
        assert!(parse_size("2X").unwrap_err().contains("unit"));
        assert!(parse_size("").unwrap_err().contains("not a size"));
        assert!(parse_size("99999999T").unwrap_err().contains("too large"));
    }
}
