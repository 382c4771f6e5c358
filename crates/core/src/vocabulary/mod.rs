//! The vocabulary lane: the words every other lane speaks, importing only each other (and the
//! protocol crate's statuses). [`error`]: every error and its one list of codes; [`id`]: session
//! ids, checked before they touch a path; [`launch`]: what running an agent would do, as trust
//! sees it; [`process`]: who a process is (start time, boot) and whether it still is;
//! [`containment`]: a run's processes held together (its cgroup, its mark), to be ended together;
//! [`visible`]: untrusted text shown with its hidden characters as escapes; [`size`]: a byte
//! count as every surface shows it; [`owned`]: scratch folders named by their process, removed
//! once it is gone; [`label`]: tags, notes and saved views' names, checked before the store keeps
//! them; [`digest`]: a SHA-256, or its first bytes, as hex; [`said`]: a growing count (a loss)
//! said in the log at most so often.

pub mod containment;
pub mod digest;
pub mod error;
pub mod id;
pub mod label;
pub mod launch;
pub mod owned;
pub mod process;
pub mod said;
pub mod size;
pub mod visible;
