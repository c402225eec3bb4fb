//! A global allocator for the tests that hold a figure of memory to what a run holds: the
//! system allocator, counting the bytes held now ([`held`]) and the most held since
//! [`reset_peak`] ([`peak`]). Each such test is a binary of its own, so that no other
//! test's allocations share the count.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

static HELD: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// The counting allocator. `BOTH_BLOCKS`: a reallocation counts the old and the new block
/// together, as an allocator that copies holds both; otherwise only its growth, as glibc
/// moves a large block by remapping its pages (`mremap`), never holding both.
pub struct Counting<const BOTH_BLOCKS: bool>;

unsafe impl<const BOTH_BLOCKS: bool> GlobalAlloc for Counting<BOTH_BLOCKS> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = HELD.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        HELD.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            let old = if BOTH_BLOCKS { 0 } else { layout.size() };
            let now = HELD.fetch_add(new_size, Ordering::Relaxed) + new_size - old;
            PEAK.fetch_max(now, Ordering::Relaxed);
            HELD.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        p
    }
}

/// The bytes held now.
pub fn held() -> usize {
    HELD.load(Ordering::Relaxed)
}

/// Start the peak afresh from what is held now, and return that.
pub fn reset_peak() -> usize {
    let now = held();
    PEAK.store(now, Ordering::Relaxed);
    now
}

/// The most held since [`reset_peak`].
pub fn peak() -> usize {
    PEAK.load(Ordering::Relaxed)
}
