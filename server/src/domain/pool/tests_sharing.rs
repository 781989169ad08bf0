//! The pool's tests of sharing under scarcity: classes' shares of the byte budget (eviction),
//! elastic takes, and a proptest that both keep at-most-once and the accounting identity.

use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use proptest::prelude::*;

use super::tests::numbered;
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

/// `ingested = kept + level + reserved + discarded + expired + evicted`, from the counters
/// and the lanes.
fn assert_books_balance(pool: &Pool) {
    let stats = pool.stats();
    let reserved: usize = pool.lock().lanes.iter().map(|l| l.scheduler.reserved).sum();
    assert_eq!(
        stats.ingested_total,
        stats.kept()
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

#[tokio::test]
async fn an_elastic_take_gets_its_maximum_at_once_when_the_bytes_are_there() {
    let pool = Pool::new(1 << 16);
    pool.put_test_bytes(&[7; 10_000]).expect("room");
    let drawn = pool.take_between(Tenant::ANONYMOUS, QUANTUM..=8192, Kinds::ANY, None);
    assert_eq!(drawn.now_or_never().expect("at once").expect("bytes").len(), 8192);
    // Fewer than the maximum but at least the minimum, and no one waiting: at once too.
    let drawn = pool.take_between(Tenant::ANONYMOUS, 1000..=8192, Kinds::ANY, None);
    assert_eq!(drawn.now_or_never().expect("at once").expect("bytes").len(), 1808);
    assert_eq!(pool.stats().waiters, 0);
}

#[tokio::test(start_paused = true)]
async fn an_elastic_take_leaves_with_what_reached_it_once_it_has_its_minimum() {
    let pool = Arc::new(Pool::new(1 << 20));
    let waiter = tokio::spawn({
        let pool = pool.clone();
        async move { pool.take_between(Tenant::named("s"), QUANTUM..=65536, Kinds::ANY, None).await }
    });
    tokio::time::sleep(Duration::from_millis(1)).await;
    pool.put_test_bytes(&[1; 1000]).expect("room");
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert!(!waiter.is_finished(), "1000 bytes are short of its minimum");
    pool.put_test_bytes(&[2; 4000]).expect("room");
    let drawn = waiter.await.expect("join").expect("bytes");
    assert_eq!(&*drawn, [[1; 1000].as_slice(), &[2; 4000]].concat());
    assert_books_balance(&pool);
}

#[tokio::test(start_paused = true)]
async fn an_elastic_take_never_takes_more_than_its_maximum() {
    let pool = Arc::new(Pool::new(1 << 20));
    let waiter = tokio::spawn({
        let pool = pool.clone();
        async move { pool.take_between(Tenant::named("s"), QUANTUM..=6000, Kinds::ANY, None).await }
    });
    tokio::time::sleep(Duration::from_millis(1)).await;
    pool.put_test_bytes(&[1; 10_000]).expect("room");
    assert_eq!(waiter.await.expect("join").expect("bytes").len(), 6000);
    assert_eq!(pool.level(), 4000);
}

#[tokio::test(start_paused = true)]
async fn an_elastic_take_that_gives_up_consumes_nothing() {
    let pool = Arc::new(Pool::new(1 << 20));
    let deadline = Instant::now() + Duration::from_millis(100);
    let waiter = tokio::spawn({
        let pool = pool.clone();
        async move {
            pool.take_between(Tenant::named("s"), QUANTUM..=65536, Kinds::ANY, Some(deadline)).await
        }
    });
    tokio::time::sleep(Duration::from_millis(1)).await;
    pool.put_test_bytes(&[1; 3000]).expect("room");
    assert_eq!(pool.level(), 0, "reserved for the waiter");
    assert_eq!(waiter.await.expect("join"), Err(TakeError::TimedOut));
    let stats = pool.stats();
    assert_eq!((stats.level, stats.kept(), stats.waiters), (3000, 0, 0));
}

#[tokio::test(start_paused = true)]
async fn elastic_takes_of_many_keys_share_a_scarce_supply_turn_by_turn() {
    // Finding 10: 50 keys each waiting for a 64 KiB message. All or nothing, none was served
    // before 50 × 64 KiB had arrived; elastic, each key leaves with a turn's worth.
    let pool = Arc::new(Pool::new(4 << 20));
    let waiters: Vec<_> = (0..50)
        .map(|i| {
            let pool = pool.clone();
            let tenant = Tenant::named(&format!("key-{i}"));
            tokio::spawn(async move {
                let deadline = Instant::now() + Duration::from_secs(1);
                pool.take_between(tenant, QUANTUM..=65536, Kinds::ANY, Some(deadline)).await
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(pool.stats().waiters, 50);
    for _ in 0..50 {
        pool.put_test_bytes(&[5; QUANTUM]).expect("room");
    }
    for waiter in waiters {
        assert_eq!(waiter.await.expect("join").expect("a turn").len(), QUANTUM);
    }
    assert_books_balance(&pool);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Elastic and exact takers of random classes race a producer of chunks of random classes
    /// into a pool small enough to evict: no byte reaches two takers, no evicted byte reaches
    /// any, each draw is within what it asked for and of a class it accepts, reservations never
    /// exceed a lane's bytes, and the books balance.
    #[test]
    fn evictions_and_elastic_takes_keep_at_most_once_and_the_books(
        takers in proptest::collection::vec(
            (1u8..8, proptest::collection::vec((1usize..=2500, 1usize..=2500), 1..6)), 2..10),
        chunks in proptest::collection::vec((1u8..8, 1u32..1200), 1..60),
    ) {
        // Shares of a multiple of 1680 bytes are whole words for any number of classes, so
        // every count the pool moves is a whole number of 4-byte words.
        const CAPACITY: usize = 1680 * 8;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_time()
            .build()
            .expect("runtime");
        runtime.block_on(async {
            let pool = Arc::new(Pool::new(CAPACITY));
            let mut handles = Vec::new();
            for (i, (mask, sizes)) in takers.clone().into_iter().enumerate() {
                let (pool, accept) = (pool.clone(), Kinds::of_lane(usize::from(mask) - 1));
                let tenant = Tenant::named(&format!("taker-{i}"));
                handles.push(tokio::spawn(async move {
                    let mut got = Vec::new();
                    for (a, b) in sizes {
                        let (min, max) = (4 * a.min(b), 4 * a.max(b));
                        let deadline = Instant::now() + Duration::from_millis(30);
                        match pool.take_between(tenant, min..=max, accept, Some(deadline)).await {
                            Ok(drawn) => {
                                let kinds = drawn.provenance(Instant::now()).expect("p").kinds;
                                got.push((accept, kinds, min, max, drawn.to_vec()));
                            }
                            Err(TakeError::TimedOut | TakeError::NoAcceptedClass { .. }) => {}
                            Err(e) => panic!("{e}"),
                        }
                    }
                    got
                }));
            }
            let mut next = 0u32;
            for (class, words) in chunks {
                let kinds = Kinds::of_lane(usize::from(class) - 1);
                if pool.put(&numbered(next, words), test_origin(kinds, u64::from(next))).is_ok() {
                    next += words;
                }
                {
                    let state = pool.lock();
                    for (l, lane) in state.lanes.iter().enumerate() {
                        prop_assert!(lane.scheduler.reserved <= lane.bytes.len, "lane {} over-reserved", l);
                    }
                }
                tokio::task::yield_now().await;
            }
            let mut seen = vec![false; next as usize];
            let mut mark = |bytes: &[u8]| -> Result<(), TestCaseError> {
                for w in bytes.chunks_exact(4) {
                    let w = u32::from_le_bytes(w.try_into().expect("4 bytes"));
                    prop_assert!(w < next, "word {w} invented");
                    prop_assert!(!seen[w as usize], "word {w} served twice");
                    seen[w as usize] = true;
                }
                Ok(())
            };
            for handle in handles {
                for (accept, kinds, min, max, bytes) in handle.await.expect("join") {
                    prop_assert!(kinds.within(accept), "{kinds} served to a taker of {accept}");
                    prop_assert!((min..=max).contains(&bytes.len()), "{} not in {min}..={max}", bytes.len());
                    prop_assert_eq!(bytes.len() % 4, 0);
                    mark(&bytes)?;
                }
            }
            let stats = pool.stats();
            // What is left, drained (no one waits now): with what was served, every word that
            // was not evicted, once.
            let mut left = 0;
            while let Some(n) = pool.levels_by_class().0.into_iter().filter(|&n| n > 0).min() {
                let drawn = pool.try_take(n).expect("what is left");
                left += drawn.len();
                mark(&drawn)?;
            }
            prop_assert_eq!(left, stats.level);
            let unseen = seen.iter().filter(|s| !**s).count() as u64 * 4;
            prop_assert_eq!(unseen, stats.evicted_total, "the evicted words, and only they, never left");
            prop_assert_eq!(stats.ingested_total, stats.kept() + stats.level as u64 + stats.evicted_total);
            prop_assert_eq!(unwiped(&pool), 0, "every byte that left was wiped");
            Ok(())
        })?;
    }
}
