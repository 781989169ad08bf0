//! The pool's storage when bytes of several classes are kept apart: one arena of fixed-size
//! blocks, allocated (and committed) once, and one FIFO [`Lane`] of blocks per class.
//!
//! Every class shares the one byte budget (the pool's capacity) and the one allocation: a lane
//! holds whole blocks, and only its first and last block may be partly used, so the arena needs
//! `capacity / BLOCK` blocks plus two per lane. Freed regions are zeroized at once, as in the
//! ring this replaces.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;

/// Bytes per block: the smallest page size of the platforms we run on.
pub(super) const BLOCK: usize = 4096;

/// Fixed blocks of bytes and the list of free ones.
#[derive(Debug)]
pub(super) struct Arena {
    buf: Box<[u8]>,
    free: Vec<u32>,
}

impl Arena {
    /// An arena for `capacity` bytes spread over at most `lanes` lanes.
    pub(super) fn new(capacity: usize, lanes: usize) -> Self {
        let blocks = capacity.div_ceil(BLOCK) + 2 * lanes;
        let mut buf = vec![0u8; blocks * BLOCK].into_boxed_slice();
        // Commit the memory now, one write per page (the zeroed allocation is otherwise only
        // reserved, and committed page by page on first touch): a host without the memory
        // fails at start, and storing a chunk never takes page faults (20% of the gateway's
        // CPU when a fresh ring filled, bench/README.md).
        for byte in buf.iter_mut().step_by(BLOCK) {
            *std::hint::black_box(byte) = 0;
        }
        let free = (0..u32::try_from(blocks).unwrap_or(u32::MAX)).rev().collect();
        Self { buf, free }
    }

    /// Every byte of the arena, for tests that look for what was not wiped.
    #[cfg(test)]
    pub(super) fn bytes(&self) -> &[u8] {
        &self.buf
    }

    fn block(&mut self, id: u32) -> &mut [u8] {
        let start = id as usize * BLOCK;
        &mut self.buf[start..start + BLOCK]
    }

    fn alloc(&mut self) -> u32 {
        // The budget check before every store keeps enough blocks free (see the module docs).
        self.free.pop().expect("the pool's budget keeps a block free for every store")
    }

    fn release(&mut self, id: u32) {
        self.free.push(id);
    }
}

/// One class's bytes in arrival order: a queue of arena blocks.
#[derive(Debug, Default)]
pub(super) struct Lane {
    blocks: VecDeque<u32>,
    /// Offset of the first byte in the first block.
    head: usize,
    /// Bytes held.
    pub(super) len: usize,
}

impl Lane {
    /// Room in the last block after the last byte.
    fn tail_room(&self) -> usize {
        if self.blocks.is_empty() { 0 } else { self.blocks.len() * BLOCK - self.head - self.len }
    }

    /// Appends `data`; the caller has checked the budget.
    pub(super) fn push_back(&mut self, arena: &mut Arena, mut data: &[u8]) {
        let room = self.tail_room().min(data.len());
        if room > 0 {
            let last = *self.blocks.back().expect("tail room means a block");
            let at = self.head + self.len - (self.blocks.len() - 1) * BLOCK;
            arena.block(last)[at..at + room].copy_from_slice(&data[..room]);
            self.len += room;
            data = &data[room..];
        }
        for piece in data.chunks(BLOCK) {
            let id = arena.alloc();
            arena.block(id)[..piece.len()].copy_from_slice(piece);
            self.blocks.push_back(id);
            self.len += piece.len();
        }
    }

    /// Prepends `data` (bytes given back); the caller has checked the budget.
    pub(super) fn push_front(&mut self, arena: &mut Arena, data: &[u8]) {
        let mut rest = data.len();
        // Fill the first block's unused head, then whole new blocks in front of it.
        let room = if self.blocks.is_empty() { 0 } else { self.head.min(rest) };
        if room > 0 {
            let first = self.blocks[0];
            arena.block(first)[self.head - room..self.head].copy_from_slice(&data[rest - room..]);
            self.head -= room;
            rest -= room;
        }
        while rest > 0 {
            let id = arena.alloc();
            let take = rest.min(BLOCK);
            arena.block(id)[BLOCK - take..].copy_from_slice(&data[rest - take..rest]);
            self.blocks.push_front(id);
            self.head = BLOCK - take;
            rest -= take;
        }
        self.len += data.len();
    }

    /// Moves the first `n` bytes to the end of `out`, zeroizes where they were, and returns
    /// emptied blocks to the arena.
    pub(super) fn pop_front_into(&mut self, arena: &mut Arena, out: &mut Vec<u8>, n: usize) {
        self.remove_front(arena, Some(out), n);
    }

    /// Zeroizes the first `n` bytes and drops them (expired bytes), returning emptied blocks.
    pub(super) fn discard_front(&mut self, arena: &mut Arena, n: usize) {
        self.remove_front(arena, None, n);
    }

    fn remove_front(&mut self, arena: &mut Arena, mut out: Option<&mut Vec<u8>>, mut n: usize) {
        assert!(n <= self.len, "pool takers claimed more than the bytes in the lane");
        self.len -= n;
        while n > 0 {
            let first = self.blocks[0];
            let take = n.min(BLOCK - self.head);
            let block = arena.block(first);
            if let Some(out) = out.as_deref_mut() {
                out.extend_from_slice(&block[self.head..self.head + take]);
            }
            // A plain fill (memset): the arena outlives this call and is read again, so these
            // stores are not dead; the fence keeps them before the lock is released.
            block[self.head..self.head + take].fill(0);
            self.head += take;
            n -= take;
            if self.head == BLOCK || (self.len == 0 && n == 0) {
                self.blocks.pop_front();
                arena.release(first);
                self.head = 0;
            }
        }
        std::sync::atomic::compiler_fence(Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn bytes(n: usize, seed: u8) -> Vec<u8> {
        (0..n).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
    }

    fn drain(lane: &mut Lane, arena: &mut Arena, n: usize) -> Vec<u8> {
        let mut out = Vec::new();
        lane.pop_front_into(arena, &mut out, n);
        out
    }

    #[test]
    fn lanes_keep_their_bytes_apart_and_in_order() {
        let mut arena = Arena::new(64 * 1024, 2);
        let (mut a, mut b) = (Lane::default(), Lane::default());
        let (x, y, z) = (bytes(5000, 1), bytes(3000, 2), bytes(9000, 3));
        a.push_back(&mut arena, &x);
        b.push_back(&mut arena, &y);
        a.push_back(&mut arena, &z);
        assert_eq!(drain(&mut b, &mut arena, 3000), y);
        assert_eq!(drain(&mut a, &mut arena, 7000), [&x[..], &z[..2000]].concat());
        assert_eq!(drain(&mut a, &mut arena, 7000), z[2000..]);
        assert_eq!((a.len, b.len), (0, 0));
        assert!(arena.buf.iter().all(|&v| v == 0), "every freed byte zeroized");
        assert_eq!(arena.free.len(), 64 * 1024 / BLOCK + 4, "every block back");
    }

    #[test]
    fn bytes_given_back_come_out_first() {
        let mut arena = Arena::new(32 * 1024, 1);
        let mut lane = Lane::default();
        let data = bytes(10_000, 7);
        lane.push_back(&mut arena, &data);
        let taken = drain(&mut lane, &mut arena, 6_000);
        lane.push_front(&mut arena, &taken);
        assert_eq!(drain(&mut lane, &mut arena, 10_000), data);
        lane.push_front(&mut arena, &data);
        assert_eq!(drain(&mut lane, &mut arena, 10_000), data, "into an empty lane");
    }

    proptest! {
        /// Any sequence of stores, gives-back and takes over two lanes reads back exactly what
        /// a pair of byte queues would, within the budget, and zeroizes what left.
        #[test]
        fn lanes_behave_like_byte_queues(ops in proptest::collection::vec((0u8..3, 0usize..2, 1usize..9000), 1..60)) {
            const CAPACITY: usize = 40_000;
            let mut arena = Arena::new(CAPACITY, 2);
            let mut lanes = [Lane::default(), Lane::default()];
            let mut model: [VecDeque<u8>; 2] = Default::default();
            let mut next = 0u8;
            for (op, l, n) in ops {
                let total = model[0].len() + model[1].len();
                match op {
                    0 | 1 if total + n <= CAPACITY => {
                        let data: Vec<u8> = (0..n).map(|_| { next = next.wrapping_add(1); next | 1 }).collect();
                        if op == 0 {
                            lanes[l].push_back(&mut arena, &data);
                            model[l].extend(&data);
                        } else {
                            lanes[l].push_front(&mut arena, &data);
                            for &b in data.iter().rev() { model[l].push_front(b); }
                        }
                    }
                    2 => {
                        let n = n.min(model[l].len());
                        let got = drain(&mut lanes[l], &mut arena, n);
                        let want: Vec<u8> = model[l].drain(..n).collect();
                        prop_assert_eq!(got, want);
                    }
                    _ => {}
                }
                prop_assert_eq!(lanes[l].len, model[l].len());
            }
            for l in 0..2 {
                let n = model[l].len();
                let got = drain(&mut lanes[l], &mut arena, n);
                prop_assert_eq!(got, model[l].drain(..).collect::<Vec<u8>>());
            }
            prop_assert!(arena.buf.iter().all(|&v| v == 0));
            prop_assert_eq!(arena.free.len(), CAPACITY.div_ceil(BLOCK) + 4);
        }
    }
}
