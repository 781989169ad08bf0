//! The pool's storage: a fixed ring of bytes allocated (and committed) once, whose freed
//! regions are zeroized at once.

use std::sync::atomic::Ordering;

/// Distance between the writes that commit the ring's memory at start: the smallest page size
/// of the platforms we run on (a larger page is committed by its first write).
const COMMIT_STRIDE: usize = 4096;

/// A fixed-size ring buffer of bytes. Freed regions are zeroized at once.
#[derive(Debug)]
pub(super) struct Ring {
    pub(super) buf: Box<[u8]>,
    head: usize,
    pub(super) len: usize,
}

impl Ring {
    pub(super) fn new(capacity: usize) -> Self {
        let mut buf = vec![0u8; capacity].into_boxed_slice();
        // Commit the memory now, one write per page (the zeroed allocation is otherwise only
        // reserved): a host without the memory fails at start, not when the pool first fills,
        // and storing a chunk never takes page faults (20% of the gateway's CPU when a fresh
        // pool filled, bench/README.md). `black_box` keeps the compiler from dropping the
        // writes as stores of zero into zeroed memory.
        for byte in buf.iter_mut().step_by(COMMIT_STRIDE) {
            *std::hint::black_box(byte) = 0;
        }
        Self { buf, head: 0, len: 0 }
    }

    /// Free room.
    pub(super) fn free(&self) -> usize {
        self.buf.len() - self.len
    }

    /// The ring as (up to) two slices of physical positions, starting at logical offset
    /// `start` and `len` bytes long.
    fn spans(&self, start: usize, len: usize) -> (std::ops::Range<usize>, std::ops::Range<usize>) {
        let cap = self.buf.len();
        if cap == 0 {
            return (0..0, 0..0);
        }
        let first = start % cap;
        let first_len = len.min(cap - first);
        (first..first + first_len, 0..len - first_len)
    }

    /// Appends `data`; the caller has checked there is room.
    pub(super) fn push_back(&mut self, data: &[u8]) {
        let (a, b) = self.spans(self.head + self.len, data.len());
        let split = a.len();
        self.buf[a].copy_from_slice(&data[..split]);
        self.buf[b].copy_from_slice(&data[split..]);
        self.len += data.len();
    }

    /// Prepends `data`; the caller has checked there is room.
    pub(super) fn push_front(&mut self, data: &[u8]) {
        let cap = self.buf.len();
        let new_head = (self.head + cap - data.len() % cap) % cap;
        let (a, b) = self.spans(new_head, data.len());
        let split = a.len();
        self.buf[a].copy_from_slice(&data[..split]);
        self.buf[b].copy_from_slice(&data[split..]);
        self.head = new_head;
        self.len += data.len();
    }

    /// Moves the first `n` bytes to the end of `out` and zeroizes where they were.
    pub(super) fn pop_front_into(&mut self, out: &mut Vec<u8>, n: usize) {
        assert!(n <= self.len, "pool takers claimed more than the bytes in the ring");
        let (a, b) = self.spans(self.head, n);
        out.extend_from_slice(&self.buf[a.clone()]);
        out.extend_from_slice(&self.buf[b.clone()]);
        // A plain fill (memset) where `zeroize` writes byte by byte: the ring outlives this
        // call and is read again, so the compiler cannot drop these stores as dead, and the
        // fence keeps them ordered before the lock is released.
        self.buf[a].fill(0);
        self.buf[b].fill(0);
        std::sync::atomic::compiler_fence(Ordering::SeqCst);
        self.head = if self.buf.is_empty() { 0 } else { (self.head + n) % self.buf.len() };
        self.len -= n;
    }
}
