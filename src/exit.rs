//! What kind of failure an error is, so the process's exit code is decided
//! by the error itself and not by the CLI matching variants. Every library
//! error type implements [`Classify`]; `cli` asks each link of an error's
//! chain and maps the class to a number. Nothing here depends on any other
//! module of ours: every layer may use it.
//!
//! | class | exit | meaning |
//! |---|---|---|
//! | `BadInput` | 1 | the data, query or update given is wrong (syntax, a limit, a failing evaluation) |
//! | `Failure` | 2 | the store or the environment is wrong (damage, I/O, bad arguments) |
//! | `Locked` | 3 | another writer holds the store: retry later, or pass `--wait` |

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitClass {
    BadInput,
    Failure,
    Locked,
}

impl ExitClass {
    /// The process exit code of this class.
    pub fn code(self) -> u8 {
        match self {
            ExitClass::BadInput => 1,
            ExitClass::Failure => 2,
            ExitClass::Locked => 3,
        }
    }
}

/// An error that knows its exit class.
pub trait Classify {
    fn exit_class(&self) -> ExitClass;
}
