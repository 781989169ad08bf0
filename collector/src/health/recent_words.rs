//! The block repetition test's memory: the last `window` words a source produced, and a fast
//! answer to "is this word among them?".
//!
//! A ring holds the words in order and an open-addressed table (linear probing, at most half
//! full) indexes them. Each word is hashed once, with foldhash seeded per process, so a source
//! cannot aim collisions at the table; the ring remembers each word's home slot and where it
//! sits now, so evicting the oldest word needs no second hash and no search, and deletion
//! shifts its followers back (no tombstones, so probes stay short however long a source runs).
//! This replaced a `HashSet<u128>` beside a `VecDeque<u128>`, which cost a set insert and a
//! set removal per word.

use std::hash::BuildHasher;

/// An empty table slot; an occupied one holds a ring index + 1.
const EMPTY: u16 = 0;

/// The last `window` words, in order, and an index of them.
#[derive(Debug, Clone)]
pub(super) struct RecentWords {
    /// Words in arrival order, wrapping; `next` is where the next one goes.
    ring: Box<[u128]>,
    /// Each ring entry's home slot (where its hash points).
    home: Box<[u16]>,
    /// Each ring entry's slot now (at or after its home, in probe order).
    slot_of: Box<[u16]>,
    /// The table: ring index + 1, or EMPTY.
    slots: Box<[u16]>,
    len: usize,
    next: usize,
    hasher: foldhash::fast::RandomState,
}

impl RecentWords {
    /// Remembers the last `window` words (1 to 32,767).
    pub(super) fn new(window: usize) -> Self {
        assert!((1..=i16::MAX as usize).contains(&window), "window {window} out of range");
        let table = (2 * window).next_power_of_two();
        Self {
            ring: vec![0; window].into_boxed_slice(),
            home: vec![0; window].into_boxed_slice(),
            slot_of: vec![0; window].into_boxed_slice(),
            slots: vec![EMPTY; table].into_boxed_slice(),
            len: 0,
            next: 0,
            hasher: foldhash::fast::RandomState::default(),
        }
    }

    /// Adds `w` as the newest word, forgetting the oldest once `window` are held; `false`
    /// (and nothing changed) if `w` is already among them.
    pub(super) fn insert(&mut self, w: u128) -> bool {
        let mask = self.slots.len() - 1;
        let home = (self.hasher.hash_one(w) as usize) & mask;
        let mut i = home;
        loop {
            match self.slots[i] {
                EMPTY => break,
                s if self.ring[usize::from(s) - 1] == w => return false,
                _ => i = (i + 1) & mask,
            }
        }
        let idx = self.next;
        if self.len == self.ring.len() {
            // Forget the oldest word. Its removal can shift entries of the probe chain from
            // `home`, so the first empty slot is looked for again.
            self.remove_slot(usize::from(self.slot_of[idx]));
            i = home;
            while self.slots[i] != EMPTY {
                i = (i + 1) & mask;
            }
        } else {
            self.len += 1;
        }
        self.ring[idx] = w;
        self.home[idx] = home as u16;
        self.slot_of[idx] = i as u16;
        self.slots[i] = idx as u16 + 1;
        self.next = (idx + 1) % self.ring.len();
        true
    }

    /// The words held, oldest first.
    #[cfg(test)]
    pub(super) fn words(&self) -> impl Iterator<Item = u128> + '_ {
        let start = if self.len == self.ring.len() { self.next } else { 0 };
        (0..self.len).map(move |k| self.ring[(start + k) % self.ring.len()])
    }

    /// Empties slot `i`, shifting back the entries after it that may live closer to their
    /// home (backward-shift deletion).
    fn remove_slot(&mut self, mut i: usize) {
        let mask = self.slots.len() - 1;
        let mut j = i;
        loop {
            self.slots[i] = EMPTY;
            loop {
                j = (j + 1) & mask;
                let s = self.slots[j];
                if s == EMPTY {
                    return;
                }
                let home = usize::from(self.home[usize::from(s) - 1]);
                // The entry at j may move to i only if its home is not cyclically in (i, j].
                if !Self::between(i, home, j) {
                    self.slots[i] = s;
                    self.slot_of[usize::from(s) - 1] = i as u16;
                    i = j;
                    break;
                }
            }
        }
    }

    /// Whether `x` lies cyclically in (lo, hi].
    fn between(lo: usize, x: usize, hi: usize) -> bool {
        if lo <= hi { lo < x && x <= hi } else { lo < x || x <= hi }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use proptest::prelude::*;

    use super::*;

    /// The obvious version: a list of the last `window` words, searched.
    fn model_insert(model: &mut VecDeque<u128>, window: usize, w: u128) -> bool {
        if model.contains(&w) {
            return false;
        }
        model.push_back(w);
        if model.len() > window {
            model.pop_front();
        }
        true
    }

    /// Every slot is reachable from its entry's home without crossing an empty slot, and the
    /// ring and the table agree.
    fn check_table(r: &RecentWords) {
        let mask = r.slots.len() - 1;
        let occupied: Vec<usize> = (0..r.slots.len()).filter(|&i| r.slots[i] != EMPTY).collect();
        assert_eq!(occupied.len(), r.len, "one slot per word held");
        for i in occupied {
            let idx = usize::from(r.slots[i]) - 1;
            assert_eq!(usize::from(r.slot_of[idx]), i, "slot_of agrees with the table");
            let mut k = usize::from(r.home[idx]);
            while k != i {
                assert_ne!(r.slots[k], EMPTY, "an empty slot between home and entry");
                k = (k + 1) & mask;
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Small windows over a small alphabet: constant repeats, evictions and collisions.
        #[test]
        fn answers_like_a_list_of_the_last_words(
            window in 1usize..40,
            words in proptest::collection::vec(prop_oneof![4 => 0u128..48, 1 => any::<u128>()], 0..600),
        ) {
            let mut r = RecentWords::new(window);
            let mut model = VecDeque::new();
            for w in words {
                prop_assert_eq!(r.insert(w), model_insert(&mut model, window, w), "word {}", w);
                prop_assert!(r.words().eq(model.iter().copied()));
            }
            check_table(&r);
        }
    }

    #[test]
    fn a_word_repeats_only_within_the_window() {
        let window = 4096;
        let mut r = RecentWords::new(window);
        for w in 0..window as u128 {
            assert!(r.insert(w));
        }
        assert!(!r.insert(0), "the oldest word is still held");
        assert!(r.insert(window as u128), "a new word pushes the oldest out");
        assert!(r.insert(0), "word 0 fell out of the window");
        assert!(!r.insert(window as u128 - 1));
        for w in (1 << 20)..(1 << 20) + 100_000u128 {
            assert!(r.insert(w));
        }
        check_table(&r);
        assert_eq!(r.words().count(), window);
    }

    #[test]
    #[should_panic(expected = "out of range")]
    fn a_window_too_large_for_the_table_is_refused() {
        let _ = RecentWords::new(1 << 15);
    }
}
