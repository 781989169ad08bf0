//! The pool's ring is committed memory from the start (written, not lazily zeroed pages), so a
//! gateway that starts fits its pool or fails at start, never later under load.
//!
//! A test binary of its own with one test: it measures this process's resident memory, which
//! other tests running at the same time (the main suite runs many) would move.

use entropy_gateway::domain::pool::Pool;

/// Resident memory of this process, from /proc (Linux).
fn rss_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("Linux /proc");
    let pages: usize = statm.split_whitespace().nth(1).and_then(|f| f.parse().ok()).expect("rss");
    pages * 4096
}

#[test]
fn the_ring_is_committed_when_the_pool_is_made() {
    let before = rss_bytes();
    let pool = Pool::new(256 << 20);
    let grown = rss_bytes().saturating_sub(before);
    // Lazily zeroed memory would add next to nothing here.
    assert!(grown >= 200 << 20, "RSS grew by only {} MiB", grown >> 20);
    drop(pool);
}
