//! Questions about processes the studio does not own any more (after a restart): are they alive?

use nix::errno::Errno;
use nix::sys::signal::kill;
use nix::unistd::Pid;

fn answers(pid: i32) -> bool {
    // EPERM: it exists, but belongs to someone else.
    matches!(kill(Pid::from_raw(pid), None), Ok(()) | Err(Errno::EPERM))
}

/// Whether a process with this id exists.
pub fn process_alive(pid: u32) -> bool {
    i32::try_from(pid).is_ok_and(|pid| pid > 0 && answers(pid))
}

/// Whether any process of this process group exists.
pub fn group_alive(process_group: u32) -> bool {
    i32::try_from(process_group).is_ok_and(|group| group > 1 && answers(-group))
}

/// Moves a file or folder to the system trash (the freedesktop.org trash on Linux).
pub fn move_to_trash(path: &std::path::Path) -> Result<(), crate::Error> {
    trash::delete(path).map_err(|e| crate::Error::Trash {
        path: path.to_owned(),
        reason: e.to_string(),
    })
}
