//! The pool's tests of sharing under scarcity: classes' shares of the byte budget (eviction).

use std::sync::Arc;
use std::time::Duration;

use super::*;

const Q: Kinds = Kinds::QUANTUM;
const HW: Kinds = Kinds::HARDWARE;
const OS: Kinds = Kinds::OS;

fn put_class(pool: &Pool, data: &[u8], kinds: Kinds, sequence: u64) -> Result<(), PoolFull> {
    pool.put(data, test_origin(kinds, sequence))
}

fn level_of(pool: &Pool, kinds: Kinds) -> usize {
    pool.levels_by_class().0[kinds.lane()]
}

/// `ingested = served + level + reserved + discarded + expired + evicted`, from the counters
/// and the lanes.
fn assert_books_balance(pool: &Pool) {
    let stats = pool.stats();
    let reserved: usize = pool.lock().lanes.iter().map(|l| l.scheduler.reserved).sum();
    assert_eq!(
        stats.ingested_total,
        stats.served_total
            + (stats.level + reserved) as u64
            + stats.discarded_total
            + stats.expired_total
            + stats.evicted_total,
        "{stats:?}, reserved {reserved}"
    );
}

/// Bytes left in the arena that were never wiped: the bytes the lanes hold, no more.
fn unwiped(pool: &Pool) -> usize {
    pool.lock().arena.bytes().iter().filter(|&&b| b != 0).count()
}

#[test]
fn a_class_below_its_share_evicts_the_oldest_unclaimed_bytes_of_the_class_above() {
    // Finding 6: OS filled the pool and kept quantum out for as long as no one drew OS bytes.
    let pool = Pool::new(1000);
    for seq in 0..10 {
        put_class(&pool, &[seq as u8 + 1; 100], OS, seq).expect("room");
    }
    put_class(&pool, &[0xEE; 100], Q, 100).expect("quantum is below its share: room is made");
    let stats = pool.stats();
    assert_eq!((stats.evicted_total, level_of(&pool, OS), level_of(&pool, Q)), (100, 900, 100));
    assert_eq!(unwiped(&pool), 1000, "the evicted bytes were wiped");
    // The oldest OS chunk went; the next is served first.
    assert_eq!(&*pool.try_take(100).expect("bytes"), &[2; 100]);
    put_class(&pool, &[0xEE; 100], Q, 101).expect("into the free room");
    // Quantum may grow to its share (500 of 1000), no further, while OS is fed.
    for seq in 102..105 {
        put_class(&pool, &[0xEE; 100], Q, seq).expect("up to its share");
    }
    assert_eq!((level_of(&pool, OS), level_of(&pool, Q)), (500, 500));
    assert_eq!(put_class(&pool, &[0xEE; 100], Q, 105), Err(PoolFull { free: 0, needed: 100 }));
    assert_eq!(put_class(&pool, &[9; 100], OS, 11), Err(PoolFull { free: 0, needed: 100 }));
    assert_eq!(pool.stats().evicted_total, 400);
    assert_books_balance(&pool);
}

#[tokio::test(start_paused = true)]
async fn reserved_bytes_are_never_evicted() {
    let pool = Arc::new(Pool::new(1000));
    put_class(&pool, &[1; 900], OS, 1).expect("room");
    // An OS-only take waits for 1000 and reserves all 900.
    let waiter = tokio::spawn({
        let pool = pool.clone();
        let deadline = Instant::now() + Duration::from_millis(100);
        async move { pool.take_for(Tenant::named("os"), 1000, OS, Some(deadline)).await }
    });
    tokio::time::sleep(Duration::from_millis(10)).await;
    put_class(&pool, &[2; 100], HW, 2).expect("free room");
    // Three classes present: quantum's share is 333, OS is 567 above its own, all reserved.
    assert_eq!(put_class(&pool, &[3; 100], Q, 3), Err(PoolFull { free: 0, needed: 100 }));
    assert_eq!(pool.stats().evicted_total, 0);
    assert_books_balance(&pool);
    // The waiter gives up: its bytes are unclaimed again, and may be evicted.
    assert_eq!(waiter.await.expect("join"), Err(TakeError::TimedOut));
    put_class(&pool, &[3; 100], Q, 3).expect("room from OS");
    assert_eq!((level_of(&pool, OS), level_of(&pool, HW), level_of(&pool, Q)), (800, 100, 100));
    assert_books_balance(&pool);
}

#[tokio::test(start_paused = true)]
async fn a_class_stops_counting_once_it_is_absent() {
    let limits = PoolLimits { class_absent_after: Duration::from_secs(1), ..PoolLimits::default() };
    let pool = Pool::with_limits(900, limits);
    put_class(&pool, &[1; 100], HW, 1).expect("room");
    drop(pool.try_take(100).expect("drained"));
    put_class(&pool, &[2; 900], OS, 2).expect("room");
    // Hardware was fed a moment ago: three shares of 300.
    assert!(put_class(&pool, &[3; 400], Q, 3).is_err(), "400 is more than a third");
    put_class(&pool, &[3; 300], Q, 3).expect("a third");
    tokio::time::advance(Duration::from_secs(2)).await;
    // Hardware is absent now: halves.
    put_class(&pool, &[4; 150], Q, 4).expect("up to half");
    assert_eq!((level_of(&pool, OS), level_of(&pool, Q)), (450, 450));
    assert_books_balance(&pool);
}
