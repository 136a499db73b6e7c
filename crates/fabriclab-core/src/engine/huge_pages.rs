//! Transparent huge pages for the simulator's large arrays.
//!
//! A packet run reads its packets, queue pairs, ports and event buckets at
//! random, so on large runs a good share of its loads also miss the TLB,
//! and a TLB miss costs most under a hypervisor, where each walk of the
//! page table is itself translated. Linux can back memory with 2 MiB pages
//! (one TLB entry where 512 were needed), but most distributions enable
//! that only for memory that asks for it (`madvise` in
//! `/sys/kernel/mm/transparent_hugepage/enabled`).
//!
//! [`HugePageAlloc`] is the system allocator with that request added:
//! every allocation or reallocation of at least [`HUGE_PAGE_BYTES`] asks
//! the kernel (`madvise(MADV_HUGEPAGE)`) to back the whole 2 MiB pages it
//! spans with huge pages. Smaller blocks are left alone, since they share
//! pages with other blocks. The binaries that run simulations install it
//! with `#[global_allocator]` (the bench binary, the Python extension).
//!
//! What it leaves out: it never changes what a run computes (where memory
//! lives is invisible to the model), it costs one system call per large
//! block, and where the kernel has huge pages disabled or unavailable the
//! request fails quietly and memory stays in 4 KiB pages. Only Linux is
//! asked; on other systems it is the system allocator unchanged. Memory
//! can grow by up to one huge page per large block that is only partly
//! touched (a reserve that is never filled).

use std::alloc::{GlobalAlloc, Layout, System};

/// The huge page size asked for, and the smallest block that asks.
pub const HUGE_PAGE_BYTES: usize = 2 << 20;

/// The system allocator, asking for huge pages for large blocks.
pub struct HugePageAlloc;

/// Ask the kernel to back the whole huge pages of `[ptr, ptr + len)`.
#[cfg(target_os = "linux")]
fn advise(ptr: *mut u8, len: usize) {
    if ptr.is_null() || len < HUGE_PAGE_BYTES {
        return;
    }
    let start = (ptr as usize).next_multiple_of(HUGE_PAGE_BYTES);
    let end = (ptr as usize + len) / HUGE_PAGE_BYTES * HUGE_PAGE_BYTES;
    if end <= start {
        return;
    }
    // SAFETY: `[start, end)` lies inside a block this allocator just
    // handed out, so it is mapped and ours; MADV_HUGEPAGE only changes how
    // the kernel backs those pages, never their contents, and a failure
    // (huge pages disabled) leaves them as they were.
    unsafe {
        libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
    }
}

/// Other systems are not asked.
#[cfg(not(target_os = "linux"))]
fn advise(_ptr: *mut u8, _len: usize) {}

// SAFETY: every method forwards to `System` with the same arguments and
// returns its result unchanged; `advise` does not touch the block's bytes.
unsafe impl GlobalAlloc for HugePageAlloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let ptr = unsafe { System.alloc(layout) };
        advise(ptr, layout.size());
        ptr
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let ptr = unsafe { System.alloc_zeroed(layout) };
        advise(ptr, layout.size());
        ptr
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if new_size > layout.size() {
            advise(new, new_size);
        }
        new
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_and_small_blocks_work_as_with_the_system_allocator() {
        for size in [
            8,
            4096,
            HUGE_PAGE_BYTES - 1,
            HUGE_PAGE_BYTES,
            5 * HUGE_PAGE_BYTES + 123,
        ] {
            let layout = Layout::from_size_align(size, 8).unwrap();
            unsafe {
                let p = HugePageAlloc.alloc(layout);
                assert!(!p.is_null());
                p.write_bytes(0xab, size);
                let q = HugePageAlloc.realloc(p, layout, size * 3);
                assert!(!q.is_null());
                assert_eq!(*q.add(size - 1), 0xab, "realloc keeps the bytes");
                HugePageAlloc.dealloc(q, Layout::from_size_align(size * 3, 8).unwrap());
                let z = HugePageAlloc.alloc_zeroed(layout);
                assert!(std::slice::from_raw_parts(z, size).iter().all(|&b| b == 0));
                HugePageAlloc.dealloc(z, layout);
            }
        }
    }

    /// The `VmFlags` of the mapping of this process that holds `addr`.
    #[cfg(target_os = "linux")]
    fn vm_flags(addr: usize) -> Option<String> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let mut inside = false;
        for line in smaps.lines() {
            let head = line.split_whitespace().next().unwrap_or("");
            if let Some((a, b)) = head.split_once('-') {
                if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
                {
                    inside = a <= addr && addr < b;
                    continue;
                }
            }
            if inside {
                if let Some(flags) = line.strip_prefix("VmFlags:") {
                    return Some(flags.trim().to_owned());
                }
            }
        }
        None
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_large_block_is_advised_for_huge_pages_and_the_system_allocators_is_not() {
        if !std::path::Path::new("/sys/kernel/mm/transparent_hugepage/enabled").exists() {
            eprintln!("skipped: this kernel has no transparent huge pages");
            return;
        }
        let advised = |addr: usize| {
            let flags = vm_flags(addr).expect("the block is mapped");
            flags.split_whitespace().any(|f| f == "hg")
        };
        let big = Layout::from_size_align(4 * HUGE_PAGE_BYTES, 8).unwrap();
        unsafe {
            // The control: glibc asks for nothing unless told to by its
            // `glibc.malloc.hugetlb` tunable.
            if !std::env::var("GLIBC_TUNABLES").is_ok_and(|t| t.contains("hugetlb")) {
                let s = System.alloc(big);
                let inner = (s as usize).next_multiple_of(HUGE_PAGE_BYTES);
                assert!(!advised(inner), "the system allocator alone");
                System.dealloc(s, big);
            }
            let p = HugePageAlloc.alloc(big);
            let inner = (p as usize).next_multiple_of(HUGE_PAGE_BYTES);
            assert!(advised(inner), "an 8 MiB block asks for huge pages");
            HugePageAlloc.dealloc(p, big);
        }
    }
}
