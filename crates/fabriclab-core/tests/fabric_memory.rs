//! The fabric's memory estimate against what building it allocates,
//! counted by a global allocator: the estimate must not fall short of the
//! heap a built fabric holds at its peak (else a fabric the machine cannot
//! hold is not refused), nor be far above it.

use fabriclab_core::config::memory::estimate_bytes;
use fabriclab_core::config::FabricSpec;
use fabriclab_core::net::Net;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system allocator, counting the bytes live and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let now = LIVE.fetch_add(l.size(), Ordering::Relaxed) + l.size();
        PEAK.fetch_max(now, Ordering::Relaxed);
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        System.dealloc(p, l)
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

fn leaf_spine(links_per_pair: u32) -> FabricSpec {
    FabricSpec::from_toml(&format!(
        "[topology]\nkind = \"leaf_spine\"\nspines = 2\nleaves = 2\nhosts_per_leaf = 2\n\
         host_link_gbps = 100\nuplink_gbps = 100\nlinks_per_pair = {links_per_pair}\n[switch]\nbuffer_bytes = 1000000000000\n"
    ))
    .unwrap()
}

/// Peak heap bytes above what was live before, while building `spec`.
fn built_peak(spec: &FabricSpec) -> usize {
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let net = Net::new(spec, 1).unwrap();
    let held = LIVE.load(Ordering::Relaxed) - before;
    drop(net);
    let peak = PEAK.load(Ordering::Relaxed) - before;
    eprintln!("held {held} peak {peak} estimate {}", estimate_bytes(spec));
    peak
}

#[test]
fn parallel_links_are_counted_at_what_they_cost() {
    let small = leaf_spine(1);
    let big = leaf_spine(20_000);
    let got = built_peak(&big) as f64 - built_peak(&small) as f64;
    let est = estimate_bytes(&big) as f64 - estimate_bytes(&small) as f64;
    let r = est / got;
    assert!(
        (1.0..=1.6).contains(&r),
        "estimate {est:.0} B for {got:.0} B built: {r:.2}"
    );
}
