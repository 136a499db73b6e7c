//! Stopping a run from outside: Ctrl-C in the CLI or a notebook.
//!
//! Every simulation loop ([`crate::sim::Sim`]) polls [`poll`] every 2^16
//! events (a few ms of wall time). A front end registers how to tell that
//! the user asked to stop ([`set_check`]: the Python boundary checks
//! Python's signal handlers, so Ctrl-C raises `KeyboardInterrupt`); once a
//! check says so, the flag stays set, every loop ends at once with
//! `Outcome::Interrupted`, and the front end raises ([`take`]). The MPI
//! tools (IMB, OSU, Cbench) report what completed, marked `interrupted`,
//! and the Python boundary hands that over with the exception (the CLI
//! prints it); the others' cut-short reports are discarded. Without a
//! registered check nothing is polled but the flag ([`request`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static CHECK: OnceLock<fn() -> bool> = OnceLock::new();

/// Register the front end's check (once per process; later calls are
/// ignored). It returns true when the user asked to stop.
pub fn set_check(check: fn() -> bool) {
    let _ = CHECK.set(check);
}

/// Ask every running and future loop to stop, until [`take`].
pub fn request() {
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// True when a stop was asked for (the flag, else the registered check).
pub fn poll() -> bool {
    if INTERRUPTED.load(Ordering::Relaxed) {
        return true;
    }
    if CHECK.get().is_some_and(|check| check()) {
        request();
        return true;
    }
    false
}

/// Whether a stop was asked for, clearing it (the front end reports it).
pub fn take() -> bool {
    INTERRUPTED.swap(false, Ordering::Relaxed)
}
