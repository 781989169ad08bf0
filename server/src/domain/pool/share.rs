//! How the classes share the pool's one byte budget: no class can keep another's bytes out.
//!
//! Before this rule a full pool refused every chunk, so the first class to fill it kept it: an
//! OS collector that filled a 2 MiB pool kept a quantum collector out for as long as nobody drew
//! OS bytes, and every quantum-only call failed.
//!
//! # The rule
//!
//! Every *present* class (it holds bytes, or a chunk of it was stored within
//! [`super::PoolLimits::class_absent_after`]; the class of the chunk being stored counts as
//! present) is entitled to an equal *share*: the capacity divided by the number of present
//! classes. A chunk that fits in the free room is stored as always. One that does not is stored
//! anyway when its class, with the chunk, holds no more than its share: room is made by wiping
//! the oldest *unclaimed* bytes of the classes above their share, the furthest above first,
//! never taking one below its share. Otherwise the chunk is refused ([`PoolFull`]; the collector
//! sends it again later), and nothing is wiped.
//!
//! Why it holds, and why it cannot oscillate: the present classes include every class that
//! holds bytes, so their shares add up to at most the capacity. When the pool is full and a
//! class below its share brings a chunk, the classes above theirs together hold at least the
//! room it needs, unless waiting takes have reserved those bytes (see below). A class only
//! makes room up to its share, and only takes from classes above theirs, down to theirs: two
//! fed classes settle at their shares instead of wiping each other's bytes in turn.
//!
//! Reserved bytes are never wiped: a reservation is a count of a lane's bytes, not a position,
//! so wiping at most a lane's unclaimed count from its front leaves every reservation whole
//! (reservations never exceed bytes). Wiped bytes are zeroized and counted as evicted.
//!
//! A class's share bounds what it can hold while others are fed: a call that accepts one class
//! only is sure to be served up to capacity / present classes bytes at once (more while others
//! leave room), and a chunk larger than its class's share is stored only into free room.

use super::PoolFull;
use super::origin::Kinds;

/// One lane as the sharing rule sees it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct LaneLoad {
    /// Bytes in the lane.
    pub(super) held: usize,
    /// Bytes in the lane that no waiting take has reserved.
    pub(super) unclaimed: usize,
    /// Holds bytes or was fed within the absence window.
    pub(super) present: bool,
}

/// Bytes to wipe from the front of each lane.
pub(super) type Evictions = [usize; Kinds::CLASSES];

/// Where `needed` bytes of `lane` go in a pool of `capacity` bytes whose lanes are `loads`: the
/// bytes to wipe from each lane first (all zero when they fit in the free room), or why they
/// cannot be stored.
pub(super) fn make_room(
    loads: &[LaneLoad; Kinds::CLASSES],
    capacity: usize,
    lane: usize,
    needed: usize,
) -> Result<Evictions, PoolFull> {
    let held: usize = loads.iter().map(|l| l.held).sum();
    let free = capacity.saturating_sub(held);
    let mut evict = [0; Kinds::CLASSES];
    if needed <= free {
        return Ok(evict);
    }
    let refused = PoolFull { free, needed };
    let present = loads.iter().enumerate().filter(|&(l, load)| load.present || l == lane).count();
    let share = capacity / present;
    if loads[lane].held + needed > share {
        return Err(refused);
    }
    // The others above their share, furthest first; each gives at most its excess, and at most
    // its unclaimed bytes.
    let mut above: Vec<(usize, usize, usize)> = loads
        .iter()
        .enumerate()
        .filter(|&(l, _)| l != lane)
        .filter_map(|(l, load)| {
            let excess = load.held.saturating_sub(share);
            let give = excess.min(load.unclaimed);
            (give > 0).then_some((l, excess, give))
        })
        .collect();
    above.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut short = needed - free;
    for (l, _, give) in above {
        let wipe = give.min(short);
        evict[l] = wipe;
        short -= wipe;
        if short == 0 {
            return Ok(evict);
        }
    }
    Err(refused)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const Q: usize = 0; // Kinds::QUANTUM's lane
    const OS: usize = 3; // Kinds::OS's lane

    fn loads(entries: &[(usize, usize, usize)]) -> [LaneLoad; Kinds::CLASSES] {
        let mut loads = [LaneLoad::default(); Kinds::CLASSES];
        for &(lane, held, unclaimed) in entries {
            loads[lane] = LaneLoad { held, unclaimed, present: true };
        }
        loads
    }

    #[test]
    fn lanes_are_where_the_tests_say() {
        assert_eq!((Kinds::QUANTUM.lane(), Kinds::OS.lane()), (Q, OS));
    }

    #[test]
    fn a_chunk_that_fits_wipes_nothing() {
        let room = make_room(&loads(&[(OS, 600, 600)]), 1000, Q, 400);
        assert_eq!(room, Ok([0; Kinds::CLASSES]));
    }

    #[test]
    fn a_class_below_its_share_gets_room_from_the_one_above() {
        // Finding 6: OS filled the pool; quantum arrives.
        let room = make_room(&loads(&[(OS, 1000, 1000)]), 1000, Q, 64).expect("room");
        assert_eq!((room[OS], room.iter().sum::<usize>()), (64, 64));
        // Up to its share (1000 / 2), with the chunk.
        let room = make_room(&loads(&[(OS, 564, 564), (Q, 436, 436)]), 1000, Q, 64);
        assert_eq!(room.map(|r| r[OS]), Ok(64));
    }

    #[test]
    fn a_class_at_its_share_is_refused_and_nothing_is_wiped() {
        let full = PoolFull { free: 0, needed: 64 };
        // Quantum would hold 501 of 1000 with two classes present.
        assert_eq!(make_room(&loads(&[(OS, 563, 563), (Q, 437, 437)]), 1000, Q, 64), Err(full));
        // OS is the one above its share: it never takes room from quantum.
        assert_eq!(make_room(&loads(&[(OS, 900, 900), (Q, 100, 100)]), 1000, OS, 64), Err(full));
    }

    #[test]
    fn reserved_bytes_are_never_wiped() {
        // OS is 500 above its share, but takes waiting for OS bytes have reserved 990 of them.
        let full = PoolFull { free: 0, needed: 64 };
        assert_eq!(make_room(&loads(&[(OS, 1000, 10)]), 1000, Q, 64), Err(full));
        let room = make_room(&loads(&[(OS, 1000, 64)]), 1000, Q, 64);
        assert_eq!(room.map(|r| r[OS]), Ok(64));
    }

    #[test]
    fn the_class_furthest_above_its_share_gives_first_and_none_goes_below_its_share() {
        // Three present classes: shares of 300. Hardware is 250 above, OS 50 above.
        const HW: usize = 1;
        let pool = loads(&[(OS, 350, 350), (HW, 550, 550), (Q, 0, 0)]);
        let room = make_room(&pool, 900, Q, 200).expect("room");
        assert_eq!((room[HW], room[OS]), (200, 0));
        // More than hardware's excess: hardware down to its share, then OS.
        let room = make_room(&pool, 900, Q, 300).expect("room");
        assert_eq!((room[HW], room[OS]), (250, 50));
    }

    #[test]
    fn an_absent_class_has_no_share_and_the_storer_counts_as_present() {
        // A lane fed long ago and now empty is absent: OS and quantum share halves, not thirds.
        let mut pool = loads(&[(OS, 1000, 1000)]);
        pool[1] = LaneLoad { held: 0, unclaimed: 0, present: false };
        assert_eq!(make_room(&pool, 1000, Q, 500).map(|r| r[OS]), Ok(500));
        pool[1].present = true;
        assert!(make_room(&pool, 1000, Q, 500).is_err(), "a third each now");
    }

    proptest! {
        /// Over any loads: the room made is exactly what the chunk lacks, taken from unclaimed
        /// bytes of classes above their share and leaving them at or above it; a class whose
        /// chunk keeps it within its share is refused only when the bytes above the shares are
        /// reserved.
        #[test]
        fn room_is_made_only_from_unclaimed_bytes_above_the_shares(
            raw in proptest::collection::vec((0usize..4000, 0usize..=100, any::<bool>()), Kinds::CLASSES),
            lane in 0..Kinds::CLASSES,
            needed in 1usize..2000,
            capacity in 1usize..12_000,
        ) {
            let mut pool = [LaneLoad::default(); Kinds::CLASSES];
            let mut budget = capacity;
            for (l, &(held, claimed_pct, fed)) in raw.iter().enumerate() {
                let held = held.min(budget);
                budget -= held;
                let unclaimed = held - held * claimed_pct / 100;
                pool[l] = LaneLoad { held, unclaimed, present: fed || held > 0 };
            }
            let held: usize = pool.iter().map(|l| l.held).sum();
            let free = capacity - held;
            let present = (0..Kinds::CLASSES).filter(|&l| pool[l].present || l == lane).count();
            let share = capacity / present;
            let spare: usize = (0..Kinds::CLASSES)
                .filter(|&l| l != lane)
                .map(|l| pool[l].held.saturating_sub(share).min(pool[l].unclaimed))
                .sum();
            match make_room(&pool, capacity, lane, needed) {
                Ok(evict) => {
                    let wiped: usize = evict.iter().sum();
                    prop_assert_eq!(wiped, needed.saturating_sub(free));
                    prop_assert!(held - wiped + needed <= capacity);
                    prop_assert_eq!(evict[lane], 0);
                    for l in 0..Kinds::CLASSES {
                        prop_assert!(evict[l] <= pool[l].unclaimed);
                        if evict[l] > 0 {
                            prop_assert!(pool[l].held - evict[l] >= share, "lane {} below its share", l);
                        }
                    }
                    if wiped > 0 {
                        prop_assert!(pool[lane].held + needed <= share);
                    }
                }
                Err(full) => {
                    prop_assert_eq!(full, PoolFull { free, needed });
                    prop_assert!(needed > free);
                    prop_assert!(pool[lane].held + needed > share || spare < needed - free);
                }
            }
        }
    }
}
