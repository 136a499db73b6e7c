//! Errors a user can cause, each with a message that says what to change.
//!
//! Internal invariants are `debug_assert!`s, not errors: anything that
//! reaches this enum is the user's input (a fabric file, a host name, an
//! option value) and its message names the offending field.

use std::fmt;

/// What went wrong with the user's input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// The fabric description is impossible or inconsistent.
    InvalidFabric(String),
    /// A host (or node) name that the fabric does not have.
    UnknownHost(String),
    /// An option or argument value out of its domain.
    InvalidArgument(String),
    /// A fabric or scenario file that is not valid TOML / JSON, or has
    /// unknown or mistyped keys.
    Parse(String),
    /// The run failed: the simulated fabric deadlocked (PFC). Not the
    /// input's syntax but what it describes; the message names the cycle.
    Deadlock(String),
    /// The run failed: an RC QP exhausted its retries (its peer became
    /// unreachable). The message names the QP, the hosts and the time; the
    /// second field is what the real tool prints on such a completion
    /// error (perftest's or the MPI library's lines), shown before it; the
    /// third, where the tool keeps them, the run's port and QP counters
    /// when it failed, as JSON (`ports` and `qps` one array per column,
    /// `ports_table` and `qps_table` as printed), else empty.
    TransportRetry(String, String, String),
    /// The conservation audit found the model's books out of balance (a
    /// bug in fabriclab, not in the input); the message names the switch,
    /// priority or QP and the numbers.
    Audit(String),
    /// The run was stopped before it had a result to give (Ctrl-C, or
    /// check-only mode: [`crate::interrupt`]); the message says what was
    /// cut short. Not an error of the input.
    Stopped(String),
}

impl Error {
    /// The message, without the kind.
    pub fn message(&self) -> &str {
        match self {
            Error::InvalidFabric(m)
            | Error::UnknownHost(m)
            | Error::InvalidArgument(m)
            | Error::Parse(m)
            | Error::Deadlock(m)
            | Error::TransportRetry(m, ..)
            | Error::Audit(m)
            | Error::Stopped(m) => m,
        }
    }

    /// A short stable name of the kind (used to map to Python exceptions).
    pub fn kind(&self) -> &'static str {
        match self {
            Error::InvalidFabric(_) => "InvalidFabric",
            Error::UnknownHost(_) => "UnknownHost",
            Error::InvalidArgument(_) => "InvalidArgument",
            Error::Parse(_) => "Parse",
            Error::Deadlock(_) => "Deadlock",
            Error::TransportRetry(..) => "TransportRetry",
            Error::Audit(_) => "Audit",
            Error::Stopped(_) => "Stopped",
        }
    }
}

impl Error {
    /// What the real tool prints on this failure (perftest's or the MPI
    /// library's error lines), empty for input errors.
    pub fn tool_output(&self) -> &str {
        match self {
            Error::TransportRetry(_, out, _) => out,
            _ => "",
        }
    }

    /// The counters of the run that failed, as JSON, where the tool keeps
    /// them (see [`Error::TransportRetry`]); empty otherwise.
    pub fn counters_json(&self) -> &str {
        match self {
            Error::TransportRetry(.., counters) => counters,
            _ => "",
        }
    }

    /// True for a run that failed (deadlock, transport retry error), as
    /// opposed to bad input: the command line exits 3 instead of 2.
    pub fn is_run_failure(&self) -> bool {
        matches!(self, Error::Deadlock(_) | Error::TransportRetry(..))
    }

    /// True for an error of the input (fabric, host, option value, file
    /// syntax), which a check of the input without a run can find.
    pub fn is_input_error(&self) -> bool {
        matches!(
            self,
            Error::InvalidFabric(_)
                | Error::UnknownHost(_)
                | Error::InvalidArgument(_)
                | Error::Parse(_)
        )
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self {
            Error::InvalidFabric(_) => "invalid fabric",
            Error::UnknownHost(_) => "unknown host",
            Error::InvalidArgument(_) => "invalid argument",
            Error::Parse(_) => "cannot parse input",
            Error::Deadlock(_) | Error::TransportRetry(..) => "the run failed",
            Error::Audit(_) => "internal error",
            Error::Stopped(_) => "stopped",
        };
        write!(f, "{what}: {}", self.message())
    }
}

impl std::error::Error for Error {}

/// Result with the crate's error.
pub type Result<T> = std::result::Result<T, Error>;

/// Shorthand for an `InvalidFabric` error.
pub(crate) fn fabric_err<T>(msg: impl Into<String>) -> Result<T> {
    Err(Error::InvalidFabric(msg.into()))
}

/// Shorthand for an `InvalidArgument` error.
pub(crate) fn arg_err<T>(msg: impl Into<String>) -> Result<T> {
    Err(Error::InvalidArgument(msg.into()))
}

/// A deserializer's message with the Rust type it expected put in words
/// ("expected u32" -> "expected a whole number from 0 to 4294967295"): the
/// user wrote TOML or passed options, not Rust.
pub(crate) fn types_in_words(msg: &str) -> String {
    for (rust, words) in [
        (
            "expected u64",
            "expected a whole number from 0 to 18446744073709551615",
        ),
        (
            "expected u32",
            "expected a whole number from 0 to 4294967295",
        ),
        ("expected u16", "expected a whole number from 0 to 65535"),
        ("expected u8", "expected a whole number from 0 to 255"),
        ("expected usize", "expected a whole number of 0 or more"),
        ("expected i64", "expected a whole number"),
        (
            "expected i32",
            "expected a whole number from -2147483648 to 2147483647",
        ),
        ("expected f64", "expected a number"),
    ] {
        if let Some(head) = msg.strip_suffix(rust) {
            return format!("{head}{words}");
        }
    }
    msg.to_string()
}

/// [`types_in_words`] for a fabric TOML file's parser, which also names
/// the tables and enums it expected by their Rust types.
pub(crate) fn toml_types_in_words(msg: &str) -> String {
    for (rust, words) in [
        (
            "expected internally tagged enum TopologySpec",
            "expected the [topology] table, with its kind (such as kind = \"leaf_spine\") and \
             the layout's keys",
        ),
        (
            "wanted string or table",
            "expected one of the setting's names, in quotes",
        ),
    ] {
        if let Some(head) = msg.strip_suffix(rust) {
            return format!("{head}{words}");
        }
    }
    // A Rust type's name means nothing in a TOML file: say what it is.
    let last = msg.rfind('\n').map_or(0, |i| i + 1);
    for (rust, words) in [
        (
            "expected struct ",
            "expected a table of keys (a [section] of its own), not a single value",
        ),
        (
            "expected enum ",
            "expected one of the setting's names, in quotes",
        ),
    ] {
        if let Some(i) = msg[last..].find(rust) {
            let name = &msg[last + i + rust.len()..];
            if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric()) {
                return format!("{}{words}", &msg[..last + i]);
            }
        }
    }
    types_in_words(msg)
}
