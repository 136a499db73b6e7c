//! The discrete-event engine: simulated time and the event queue.
//!
//! The engine knows nothing about networks. It orders events of any small
//! `Copy` type by (time, insertion sequence), so that events scheduled for
//! the same picosecond run in the order they were scheduled and a run is a
//! pure function of its inputs and seed. Cancellation is lazy: components
//! keep a generation counter and ignore events whose generation is stale
//! (see [`Timer`]), so a cancelled timer costs one pop and nothing else.
//! [`prefetch`] lets models ask for memory they will read soon; it never
//! changes results; [`HugePageAlloc`] puts large arrays on huge pages.

mod hint;
mod huge_pages;
mod queue;
mod timer;

pub use hint::prefetch;
pub use huge_pages::{HugePageAlloc, HUGE_PAGE_BYTES};
pub use queue::EventQueue;
pub use timer::Timer;
