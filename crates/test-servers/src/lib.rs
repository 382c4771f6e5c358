//! Real servers for the tests, started on 127.0.0.1 at a free port and ended by their pid when
//! the value that owns them is dropped. A server whose program is missing panics with a message
//! naming what installs it (`scripts/setup.sh` installs them all): a test that needs one fails,
//! it never skips.
//!
//! A list of modules, one per server.

pub mod emulators;
pub mod moto;
pub mod otlp_collector;
pub mod phoenix;
pub mod process;
pub mod relay;
pub mod sshd;
pub mod throttle;
