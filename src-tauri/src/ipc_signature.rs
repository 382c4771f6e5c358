//! A command's signature as the window's generated `Commands` table shows it (its arguments and
//! result in TypeScript, with ts-rs): what `commands`' `ipc_commands!` writes of each command and
//! `ipc_types` renders. A leaf, so that neither of the two imports the other's.

use ts_rs::{Config, TS};

/// One command as the window invokes it: its arguments by name and what it resolves to, in
/// TypeScript (`commands::signatures`).
pub(crate) struct Signature {
    pub name: &'static str,
    pub arguments: Vec<(&'static str, TsType)>,
    pub result: TsType,
}

/// A type as TypeScript names it, and the declared types that name refers to.
pub(crate) struct TsType {
    pub name: String,
    pub uses: Vec<String>,
}

impl TsType {
    fn of<T: TS + ?Sized + 'static>(cfg: &Config) -> TsType {
        TsType {
            name: T::name(cfg),
            uses: T::dependencies(cfg)
                .into_iter()
                .map(|dependency| dependency.ts_name)
                .collect(),
        }
    }
}

/// A command's parameter: an argument the window passes (`Some`), or one Tauri fills in (`None`).
/// The window's argument types are listed once, in `for_window_argument_types!` (lib.rs).
pub(crate) trait Argument {
    fn ts(cfg: &Config) -> Option<TsType>;
}

macro_rules! arguments {
    ($($argument:ty),* $(,)?) => {
        $(impl Argument for $argument {
            fn ts(cfg: &Config) -> Option<TsType> {
                Some(TsType::of::<$argument>(cfg))
            }
        })*
    };
}

for_window_argument_types!(arguments);

impl<T: Send + Sync + 'static> Argument for tauri::State<'_, T> {
    fn ts(_: &Config) -> Option<TsType> {
        None
    }
}

impl Argument for tauri::AppHandle {
    fn ts(_: &Config) -> Option<TsType> {
        None
    }
}

/// What a command resolves to: a `Result`'s value (its error is always a `CommandError`), or
/// what it returns.
pub(crate) trait Returned {
    fn ts(cfg: &Config) -> TsType;
}

impl<T: TS + 'static> Returned for Result<T, crate::CommandError> {
    fn ts(cfg: &Config) -> TsType {
        TsType::of::<T>(cfg)
    }
}

impl<T: TS + 'static> Returned for Option<T> {
    fn ts(cfg: &Config) -> TsType {
        TsType::of::<Option<T>>(cfg)
    }
}

impl Returned for () {
    fn ts(cfg: &Config) -> TsType {
        TsType::of::<()>(cfg)
    }
}
