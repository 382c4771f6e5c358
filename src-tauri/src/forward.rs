//! The one place a command reaches a remote workspace: `ipc_commands!` puts [`remote_answer`]
//! before every command's body. When the open workspace is on another machine and the command
//! is one of its studio server's methods (`studio_core::remote::methods::IPC_METHODS`), its
//! arguments go there by their IPC names ([`CommandArgument`]) and the server's answer comes back
//! as the command's own result ([`Answer`]); the body does not run. Any other command runs here
//! (what needs the workspace's folder here is refused by the core with `local_only`).

use std::any::Any;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use tauri::{AppHandle, Manager, State};

use crate::{CommandError, Studio};

/// A command's parameter: an argument the window passes (its value), or what Tauri fills in (the
/// studio, when it is the studio's state or the app).
pub(crate) trait CommandArgument {
    fn studio(&self) -> Option<&Studio> {
        None
    }

    fn ipc_value(&self) -> Option<Value> {
        None
    }
}

impl<T: Send + Sync + 'static> CommandArgument for State<'_, T> {
    fn studio(&self) -> Option<&Studio> {
        (self.inner() as &dyn Any).downcast_ref::<Studio>()
    }
}

impl CommandArgument for AppHandle {
    fn studio(&self) -> Option<&Studio> {
        self.try_state::<Studio>().map(|state| state.inner())
    }
}

/// The arguments the window passes, as JSON (their types: `for_window_argument_types!`).
macro_rules! passed {
    ($($argument:ty),* $(,)?) => {
        $(impl CommandArgument for $argument {
            fn ipc_value(&self) -> Option<Value> {
                serde_json::to_value(self).ok()
            }
        })*
    };
}

for_window_argument_types!(passed);

/// What a command returns, made from a server's answer: a `Result`'s value read back as its own
/// type. Commands that return no `Result` are never forwarded.
pub(crate) trait Answer: Sized {
    fn from_remote(method: &str, answer: Result<Value, studio_core::Error>) -> Option<Self>;
}

impl<T: DeserializeOwned> Answer for Result<T, CommandError> {
    fn from_remote(method: &str, answer: Result<Value, studio_core::Error>) -> Option<Self> {
        Some(
            answer
                .and_then(|value| {
                    serde_json::from_value(value).map_err(|e| studio_core::Error::InvalidRequest {
                        reason: format!("the remote answer to `{method}` does not read: {e}"),
                    })
                })
                .map_err(CommandError::from),
        )
    }
}

impl Answer for () {
    fn from_remote(_: &str, _: Result<Value, studio_core::Error>) -> Option<Self> {
        None
    }
}

impl<T> Answer for Option<T> {
    fn from_remote(_: &str, _: Result<Value, studio_core::Error>) -> Option<Self> {
        None
    }
}

/// The remote workspace's answer to command `method` with `arguments` (each parameter by name),
/// when the open workspace is remote and answers it; `None`: the command runs here.
pub(crate) fn remote_answer<R: Answer>(method: &str, arguments: &[(&str, &dyn CommandArgument)]) -> Option<R> {
    let studio = arguments.iter().find_map(|(_, argument)| argument.studio())?;
    let params: Map<String, Value> = arguments
        .iter()
        .filter_map(|(name, argument)| Some(((*name).to_owned(), argument.ipc_value()?)))
        .collect();
    let answer = studio.forward(method, Value::Object(params))?;
    R::from_remote(method, answer)
}
