//! Memory hints: ask the CPU to start loading data that an upcoming event
//! will read, so that the load overlaps with other work.
//!
//! A hint never changes what the program computes (a prefetch cannot fault
//! and has no visible effect), only when data reaches the cache. On targets
//! other than x86_64 it does nothing.

/// Start loading every cache line of `value` into all cache levels.
#[inline(always)]
pub fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let start: *const i8 = (value as *const T).cast();
        let first_line = start as usize % 64;
        let mut offset = 0;
        while offset < first_line + std::mem::size_of::<T>() {
            // SAFETY: PREFETCHT0 is part of SSE, which every x86_64 CPU
            // has; it reads nothing the program can observe and cannot
            // fault whatever the address.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(start.wrapping_add(offset)) };
            offset += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}
