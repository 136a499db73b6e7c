//! Stopping a run from outside: Ctrl-C in the CLI or a notebook.
//!
//! Every simulation loop ([`crate::sim::Sim`]) polls [`poll`] every 2^16
//! events (a few ms of wall time). A front end registers how to tell that
//! the user asked to stop ([`set_check`]: the Python boundary checks
//! Python's signal handlers, so Ctrl-C raises `KeyboardInterrupt`); once a
//! check says so, the flag stays set, every loop ends at once with
//! `Outcome::Interrupted`, and the front end raises ([`take`]). The MPI
//! tools (IMB, OSU, Cbench) report what completed, marked `interrupted`,
//! perftest the sizes and HPL the tests that ended, and the Python
//! boundary hands that over with the exception (the CLI prints it); the
//! others' cut-short reports are discarded. Without a
//! registered check nothing is polled but the flag ([`request`]).
//!
//! The same poll gives a check-only mode ([`check_only`], per thread): a
//! tool run in it goes through its checks of the input and builds its
//! fabric, and every simulation loop it starts ends at once, so bad input
//! is found before anything is simulated (`fabriclab run` checks every
//! item of a scenario this way, and sweeps every point, before the first
//! runs). Left out: checks a tool makes only after a first simulation
//! (none of the seed tools has one today).

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static CHECK: OnceLock<fn() -> bool> = OnceLock::new();

thread_local! {
    static CHECKING: Cell<bool> = const { Cell::new(false) };
}

/// Turn check-only mode on or off for this thread (see [`check_only`];
/// the Python boundary sets it around a tool's call).
pub fn set_checking(on: bool) {
    CHECKING.with(|c| c.set(on));
}

/// Whether this thread is in check-only mode.
pub fn checking() -> bool {
    CHECKING.with(Cell::get)
}

/// Run `f` in check-only mode on this thread: every simulation loop it
/// starts ends at once with `Outcome::Interrupted`, and what `f` returns
/// matters only as its input errors. The mode is restored afterwards,
/// even if `f` panics.
pub fn check_only<T>(f: impl FnOnce() -> T) -> T {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            set_checking(self.0);
        }
    }
    let _restore = Restore(checking());
    set_checking(true);
    f()
}

/// Register the front end's check (once per process; later calls are
/// ignored). It returns true when the user asked to stop.
pub fn set_check(check: fn() -> bool) {
    let _ = CHECK.set(check);
}

/// Ask every running and future loop to stop, until [`take`].
pub fn request() {
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// True when a stop was asked for (the flag, else the registered check),
/// or this thread is in check-only mode.
pub fn poll() -> bool {
    if INTERRUPTED.load(Ordering::Relaxed) || checking() {
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
