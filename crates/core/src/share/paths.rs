//! What a path inside a session may be, and a folder's entries in the order they are exported and
//! imported.

use std::path::Path;

use crate::vocabulary::error::Error;
use crate::vocabulary::id::folder_name_problem;

/// Why a path inside a session (`a/b/c`, from an archive or a folder) cannot be written, if it
/// cannot: absolute, `..`, an invalid name, too deep.
pub(super) fn path_problem(relative: &str, max_depth: usize) -> Option<String> {
    if relative.starts_with('/') || relative.starts_with('\\') || relative.get(1..2) == Some(":") {
        return Some("it is an absolute path".to_owned());
    }
    let components: Vec<&str> = relative.split('/').collect();
    if components.contains(&"..") {
        return Some("its path goes up (`..`)".to_owned());
    }
    if components.len() > max_depth {
        return Some(format!("it is more than {max_depth} folders deep"));
    }
    components.iter().find_map(|name| {
        folder_name_problem(name).map(|reason| {
            format!(
                "`{}` is not a name a session folder holds: {reason}",
                name.escape_debug()
            )
        })
    })
}

/// A folder's entries, by name.
pub(super) fn sorted_entries(dir: &Path) -> Result<Vec<std::fs::DirEntry>, Error> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .collect::<Result<_, _>>()
        .map_err(|e| Error::io(dir, e))?;
    entries.sort_by_key(|entry| entry.file_name());
    Ok(entries)
}
