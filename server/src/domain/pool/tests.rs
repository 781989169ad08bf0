//! The pool's tests: order, all-or-nothing, zeroization, fairness and at-most-once.

use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;

use super::*;

/// Bytes that identify their position in an ingest sequence: byte i of the whole stream
/// fed to the pool is `serial(i)`, so any duplicate or loss shows up when decoding.
pub(super) fn numbered(start: u32, count: u32) -> Vec<u8> {
    (start..start + count).flat_map(u32::to_le_bytes).collect()
}

#[tokio::test]
async fn put_then_take_returns_bytes_in_order() {
    let pool = Pool::new(64);
    pool.put_test_bytes(b"hello world").expect("room");
    assert_eq!(&*pool.take(5, None).await.expect("bytes"), b"hello");
    assert_eq!(&*pool.take(6, None).await.expect("bytes"), b" world");
    assert_eq!(pool.level(), 0);
}

#[test]
fn full_pool_rejects_the_whole_chunk() {
    let pool = Pool::new(10);
    pool.put_test_bytes(&[1; 8]).expect("room");
    assert_eq!(pool.put_test_bytes(&[2; 3]), Err(PoolFull { free: 2, needed: 3 }));
    assert_eq!(pool.level(), 8, "nothing of the rejected chunk was stored");
    pool.put_test_bytes(&[3; 2]).expect("exactly fits");
    assert_eq!(pool.stats().ingested_total, 10);
}

#[test]
fn taken_bytes_are_zeroized_in_the_ring() {
    let pool = Pool::new(8);
    pool.put_test_bytes(&[0xAA; 8]).expect("room");
    let drawn = pool.try_take(5).expect("bytes");
    assert_eq!(&*drawn, &[0xAA; 5]);
    let state = pool.lock();
    let left: Vec<u8> = state.arena.bytes().iter().copied().filter(|&b| b != 0).collect();
    assert_eq!(left, [0xAA; 3], "the consumed region is zeroized, the unconsumed bytes stay");
}

#[tokio::test(start_paused = true)]
async fn short_pool_times_out_and_consumes_nothing() {
    let pool = Pool::new(64);
    pool.put_test_bytes(&[7; 10]).expect("room");
    let deadline = Instant::now() + Duration::from_millis(100);
    assert_eq!(pool.take(11, Some(deadline)).await, Err(TakeError::TimedOut));
    assert_eq!(pool.level(), 10);
    assert_eq!(pool.stats().kept(), 0);
}

#[tokio::test]
async fn take_larger_than_capacity_fails_at_once() {
    let pool = Pool::new(16);
    assert_eq!(pool.take(17, None).await, Err(TakeError::TooLarge { requested: 17, capacity: 16 }));
}

#[tokio::test]
async fn close_wakes_waiters() {
    let pool = Arc::new(Pool::new(16));
    let waiter = tokio::spawn({
        let pool = pool.clone();
        async move { pool.take(4, None).await }
    });
    tokio::task::yield_now().await;
    pool.close();
    assert_eq!(waiter.await.expect("join"), Err(TakeError::Closed));
    assert_eq!(pool.try_take(1), Err(TakeError::Closed));
}

#[tokio::test]
async fn waiters_are_served_in_arrival_order() {
    // A big request that arrives first is not overtaken by later small ones, and small
    // ones that arrived before a big one are served before it.
    let pool = Arc::new(Pool::new(1024));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut tasks = Vec::new();
    for (label, n) in [("small-1", 10), ("big", 500), ("small-2", 10), ("small-3", 10)] {
        let taker = pool.clone();
        let tx = tx.clone();
        tasks.push(tokio::spawn(async move {
            let bytes = taker.take(n, None).await.expect("bytes");
            tx.send((label, bytes.len())).expect("receiver alive");
        }));
        // Let the task join the queue before the next one arrives.
        while pool.stats().waiters < tasks.len() {
            tokio::task::yield_now().await;
        }
    }
    // Feed in small amounts: small-1 can be served at once, the big one needs many puts,
    // and small-2/3 must wait behind it even though each put would satisfy them.
    for _ in 0..53 {
        pool.put_test_bytes(&[1; 10]).expect("room");
        tokio::task::yield_now().await;
    }
    for task in tasks {
        task.await.expect("join");
    }
    let order: Vec<_> = std::iter::from_fn(|| rx.try_recv().ok()).map(|(l, _)| l).collect();
    assert_eq!(order, ["small-1", "big", "small-2", "small-3"]);
}

#[tokio::test]
async fn a_big_waiter_does_not_hold_up_another_keys_small_take() {
    // Before the fair scheduler, one key waiting for 1 MiB at the head of a single line made
    // every other key's 32-byte call wait behind it.
    let pool = Arc::new(Pool::new(2 << 20));
    let big = tokio::spawn({
        let pool = pool.clone();
        async move { pool.take_for(Tenant::named("greedy"), 1 << 20, Kinds::ANY, None).await }
    });
    while pool.stats().waiters < 1 {
        tokio::task::yield_now().await;
    }
    let small = tokio::spawn({
        let pool = pool.clone();
        async move { pool.take_for(Tenant::named("modest"), 32, Kinds::ANY, None).await }
    });
    while pool.stats().waiters < 2 {
        tokio::task::yield_now().await;
    }
    pool.put_test_bytes(&[9; 2 * QUANTUM]).expect("room");
    let small = small.await.expect("join").expect("served by the first chunk");
    assert_eq!(small.len(), 32);
    assert!(!big.is_finished(), "the big take still waits for the rest");
    pool.put_test_bytes(&vec![9; 1 << 20]).expect("room");
    assert_eq!(big.await.expect("join").expect("served").len(), 1 << 20);
    let stats = pool.stats();
    assert_eq!(stats.ingested_total, stats.kept() + stats.level as u64);
}

#[tokio::test(start_paused = true)]
async fn a_waiter_that_times_out_hands_its_share_to_the_others() {
    let pool = Arc::new(Pool::new(1 << 20));
    let quitter = tokio::spawn({
        let pool = pool.clone();
        let deadline = Instant::now() + Duration::from_millis(100);
        async move { pool.take_for(Tenant::named("a"), 4 * QUANTUM, Kinds::ANY, Some(deadline)).await }
    });
    let stayer = tokio::spawn({
        let pool = pool.clone();
        async move { pool.take_for(Tenant::named("b"), 4 * QUANTUM, Kinds::ANY, None).await }
    });
    while pool.stats().waiters < 2 {
        tokio::task::yield_now().await;
    }
    pool.put_test_bytes(&[1; 4 * QUANTUM]).expect("room");
    assert_eq!(pool.level(), 0, "all of it reserved, half each");
    assert_eq!(quitter.await.expect("join"), Err(TakeError::TimedOut));
    let got = stayer.await.expect("join").expect("the quitter's half completed b");
    assert_eq!(got.len(), 4 * QUANTUM);
    let stats = pool.stats();
    assert_eq!((stats.level, stats.kept(), stats.waiters), (0, 4 * QUANTUM as u64, 0));
}

#[tokio::test]
async fn give_back_returns_bytes_to_the_front() {
    let pool = Pool::new(16);
    pool.put_test_bytes(b"abcdef").expect("room");
    let drawn = pool.try_take(3).expect("bytes");
    pool.give_back(drawn);
    assert_eq!(pool.level(), 6);
    assert_eq!(&*pool.try_take(6).expect("bytes"), b"abcdef");
    let stats = pool.stats();
    assert_eq!((stats.kept(), stats.discarded_total), (6, 0));
    // Counted as events, none subtracted: 3 + 6 taken, 3 given back.
    assert_eq!((stats.taken_total, stats.given_back_total), (9, 3));
}

#[test]
fn give_back_into_a_refilled_pool_discards() {
    let pool = Pool::new(8);
    pool.put_test_bytes(&[1; 8]).expect("room");
    let drawn = pool.try_take(4).expect("bytes");
    pool.put_test_bytes(&[2; 4]).expect("room again");
    pool.give_back(drawn);
    let stats = pool.stats();
    assert_eq!((stats.level, stats.kept(), stats.discarded_total), (8, 0, 4));
    assert_eq!(stats.ingested_total, stats.kept() + stats.level as u64 + 4);
}

#[test]
fn ring_wraps_around() {
    let pool = Pool::new(10);
    for round in 0u8..50 {
        let chunk = [round; 7];
        pool.put_test_bytes(&chunk).expect("room");
        assert_eq!(&*pool.try_take(7).expect("bytes"), &chunk);
    }
    pool.put_test_bytes(b"0123456789").expect("exactly full");
    assert_eq!(&*pool.try_take(10).expect("bytes"), b"0123456789");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// At most once, exactly once: with concurrent takers of random sizes racing a
    /// producer, every byte the producer put is received by exactly one taker, none twice,
    /// none invented, and within one taker's draw the bytes keep their order.
    #[test]
    fn concurrent_takers_never_share_a_byte(
        capacity_words in 16usize..512,
        takes in proptest::collection::vec(
            proptest::collection::vec(1usize..64, 1..20), 2..33),
        chunk_words in 1u32..64,
        threads in 1usize..4,
    ) {
        let capacity = capacity_words * 4;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_time()
            .build()
            .expect("runtime");
        runtime.block_on(async {
            let pool = Arc::new(Pool::new(capacity));
            // Each taker asks for whole 4-byte words so words stay decodable.
            let mut handles = Vec::new();
            for sizes in takes.clone() {
                let pool = pool.clone();
                handles.push(tokio::spawn(async move {
                    let mut got = Vec::new();
                    for words in sizes {
                        let n = (words * 4).min(pool.capacity() / 4 * 4);
                        got.extend_from_slice(&pool.take(n, None).await.expect("bytes"));
                    }
                    got
                }));
            }
            // Produce exactly what the takers will consume, in chunks, racing them.
            let total_words = takes
                .iter()
                .flatten()
                .map(|w| (*w * 4).min(capacity / 4 * 4) as u64 / 4)
                .sum::<u64>() as u32;
            let mut next = 0u32;
            while next < total_words {
                let mut count = chunk_words.min(total_words - next);
                if let Err(full) = pool.put_test_bytes(&numbered(next, count)) {
                    // Put what fits: the head waiter may need exactly the missing room.
                    count = count.min((full.free / 4) as u32);
                    if count > 0 {
                        pool.put_test_bytes(&numbered(next, count)).expect("fits now");
                    }
                }
                next += count;
                tokio::task::yield_now().await;
            }
            let mut seen = vec![false; total_words as usize];
            for handle in handles {
                let got = handle.await.expect("join");
                let words: Vec<u32> = got
                    .chunks_exact(4)
                    .map(|w| u32::from_le_bytes(w.try_into().expect("4 bytes")))
                    .collect();
                for w in words {
                    prop_assert!(w < total_words, "byte invented: word {w}");
                    prop_assert!(!seen[w as usize], "word {w} served twice");
                    seen[w as usize] = true;
                }
            }
            prop_assert!(seen.iter().all(|s| *s), "every produced byte was served");
            let stats = pool.stats();
            prop_assert_eq!(stats.level, 0);
            prop_assert_eq!(stats.ingested_total, stats.kept());
            Ok(())
        })?;
    }
}

// --- classes, provenance and the age limit ---------------------------------------------------

const Q: Kinds = Kinds::QUANTUM;
const OS: Kinds = Kinds::OS;

fn put_class(pool: &Pool, data: &[u8], kinds: Kinds, sequence: u64) {
    pool.put(data, test_origin(kinds, sequence)).expect("room");
}

#[tokio::test]
async fn classes_are_kept_apart_and_a_draw_says_where_it_came_from() {
    let pool = Pool::new(64);
    put_class(&pool, &[1; 10], OS, 1);
    put_class(&pool, &[2; 10], Q, 2);
    put_class(&pool, &[3; 10], Q, 3);
    let quantum = pool.take_for(Tenant::ANONYMOUS, 15, Q, None).await.expect("quantum bytes");
    assert_eq!(&*quantum, [[2; 10].as_slice(), &[3; 5]].concat());
    let p = quantum.provenance(Instant::now()).expect("provenance");
    assert_eq!((p.kinds, p.first.sequence, p.last.sequence, p.chunks), (Q, 2, 3, 2));
    // Any class: the lane whose oldest byte is oldest (the OS chunk came first).
    let any = pool.take(10, None).await.expect("bytes");
    assert_eq!(&*any, &[1; 10]);
    assert_eq!(any.provenance(Instant::now()).expect("provenance").kinds, OS);
    assert_eq!(pool.levels_by_class().held(), [(Q, 5)]);
}

#[tokio::test]
async fn a_class_the_pool_does_not_hold_is_refused_at_once_naming_what_it_holds() {
    let pool = Pool::new(1024);
    put_class(&pool, &[1; 100], OS, 1);
    let refused = pool.take_for(Tenant::ANONYMOUS, 10, Q, None).await.expect_err("refused");
    let TakeError::NoAcceptedClass { held, .. } = refused else { panic!("{refused:?}") };
    assert_eq!(held.held(), [(OS, 100)]);
    let message = refused.to_string();
    assert!(message.contains("accepts bytes of source kinds QUANTUM only"), "{message}");
    assert!(message.contains("the pool holds OS: 100 bytes"), "{message}");
    assert_eq!(pool.level(), 100, "nothing consumed");
    // Mixed chunks of quantum and OS bytes serve a caller that accepts both, not quantum only.
    put_class(&pool, &[2; 10], Q.with(OS), 2);
    assert!(pool.take_for(Tenant::ANONYMOUS, 10, Q, None).await.is_err());
    let both = pool.take_for(Tenant::ANONYMOUS, 10, Q.with(OS), None).await.expect("bytes");
    assert_eq!(&*both, &[1; 10], "the oldest accepted bytes first");
}

#[tokio::test(start_paused = true)]
async fn an_empty_pool_or_a_fed_class_waits_instead_of_refusing() {
    let pool = Arc::new(Pool::new(1024));
    let deadline = Instant::now() + Duration::from_millis(50);
    // Nothing at all: the feed may be starting; wait as any call does.
    assert_eq!(
        pool.take_for(Tenant::ANONYMOUS, 10, Q, Some(deadline)).await,
        Err(TakeError::TimedOut)
    );
    // The quantum lane was fed a moment ago and is empty now: wait for more of it.
    put_class(&pool, &[2; 10], Q, 1);
    drop(pool.try_take(10).expect("drain"));
    put_class(&pool, &[1; 100], OS, 2);
    let waiter = tokio::spawn({
        let pool = pool.clone();
        async move { pool.take_for(Tenant::ANONYMOUS, 20, Q, None).await }
    });
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(pool.stats().waiters, 1);
    put_class(&pool, &[3; 20], Q, 3);
    assert_eq!(&*waiter.await.expect("join").expect("bytes"), &[3; 20]);
    assert_eq!(pool.level(), 100, "the OS bytes were never reserved for it");
}

#[tokio::test(start_paused = true)]
async fn a_take_waiting_in_several_lanes_is_served_once_by_the_first_ready() {
    let pool = Arc::new(Pool::new(1024));
    put_class(&pool, &[1; 30], OS, 1);
    put_class(&pool, &[2; 30], Q, 2);
    // Asks for more than either lane holds: it waits in both, reserving 30 in each.
    let waiter = tokio::spawn({
        let pool = pool.clone();
        async move { pool.take_for(Tenant::ANONYMOUS, 40, Kinds::ANY, None).await }
    });
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!((pool.level(), pool.stats().waiters), (0, 1));
    put_class(&pool, &[3; 10], Q, 3);
    let drawn = waiter.await.expect("join").expect("bytes");
    assert_eq!(&*drawn, [[2; 30].as_slice(), &[3; 10]].concat());
    assert_eq!(pool.stats().waiters, 0);
    assert_eq!(pool.levels_by_class().held(), [(OS, 30)], "the OS reservation came back");
    assert_eq!(&*pool.try_take(30).expect("bytes"), &[1; 30]);
}

#[test]
fn bytes_given_back_keep_their_class_and_origin() {
    let pool = Pool::new(64);
    put_class(&pool, &[1; 8], Q, 7);
    put_class(&pool, &[2; 8], OS, 8);
    let drawn = pool.try_take(8).expect("bytes");
    pool.give_back(drawn);
    assert_eq!(pool.levels_by_class().held(), [(Q, 8), (OS, 8)]);
    let again = pool.try_take(8).expect("bytes");
    assert_eq!(&*again, &[1; 8]);
    assert_eq!(again.provenance(Instant::now()).expect("provenance").first.sequence, 7);
}

#[tokio::test(start_paused = true)]
async fn bytes_older_than_the_limit_are_wiped_and_counted_never_served() {
    let limits = PoolLimits { max_byte_age: Some(Duration::from_secs(1)), ..PoolLimits::default() };
    let pool = Arc::new(Pool::with_limits(1024, limits));
    put_class(&pool, &[1; 100], OS, 1);
    tokio::time::advance(Duration::from_millis(600)).await;
    put_class(&pool, &[2; 100], OS, 2);
    tokio::time::advance(Duration::from_millis(500)).await;
    pool.expire();
    let stats = pool.stats();
    assert_eq!((stats.level, stats.expired_total), (100, 100));
    let drawn = pool.try_take(100).expect("the younger chunk");
    assert_eq!(&*drawn, &[2; 100]);
    assert_eq!(drawn.provenance(Instant::now()).expect("p").oldest_age, Duration::from_millis(500));
    {
        let state = pool.lock();
        assert!(state.arena.bytes().iter().all(|&b| b == 0), "expired bytes were wiped");
    }

    // A waiter whose reserved bytes expire gives them up and waits for fresh ones.
    put_class(&pool, &[3; 50], OS, 3);
    let waiter = tokio::spawn({
        let pool = pool.clone();
        async move { pool.take(80, None).await }
    });
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    pool.expire();
    assert_eq!(pool.stats().expired_total, 150);
    put_class(&pool, &[4; 80], OS, 4);
    assert_eq!(&*waiter.await.expect("join").expect("bytes"), &[4; 80]);
    let stats = pool.stats();
    assert_eq!(stats.ingested_total, stats.kept() + stats.expired_total + stats.level as u64);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// At most once across classes: takers that accept random sets of kinds race a producer
    /// of chunks of random classes; no byte reaches two takers, and every byte a taker gets is
    /// of a class it accepts.
    #[test]
    fn takers_of_different_classes_never_share_a_byte(
        takers in proptest::collection::vec((1u8..8, proptest::collection::vec(1usize..40, 1..8)), 2..12),
        chunks in proptest::collection::vec((1u8..8, 1u32..50), 1..80),
    ) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_time()
            .build()
            .expect("runtime");
        runtime.block_on(async {
            // Small enough that classes evict each other's bytes at their shares; a multiple
            // of 1680 so that every share (capacity / 1..=7 classes), and so every count the
            // pool moves, is a whole number of the 4-byte words this test decodes.
            let pool = Arc::new(Pool::new(1680 * 3));
            let mut handles = Vec::new();
            for (mask, sizes) in takers.clone() {
                let (pool, accept) = (pool.clone(), Kinds::of_lane(usize::from(mask) - 1));
                handles.push(tokio::spawn(async move {
                    let mut got = Vec::new();
                    for words in sizes {
                        let deadline = Instant::now() + Duration::from_millis(200);
                        match pool.take_for(Tenant::ANONYMOUS, words * 4, accept, Some(deadline)).await {
                            Ok(drawn) => {
                                let kinds = drawn.provenance(Instant::now()).expect("p").kinds;
                                got.push((accept, kinds, drawn.to_vec()));
                            }
                            Err(TakeError::TimedOut | TakeError::NoAcceptedClass { .. }) => break,
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
                tokio::task::yield_now().await;
            }
            let mut seen = vec![false; next as usize];
            for handle in handles {
                for (accept, kinds, bytes) in handle.await.expect("join") {
                    prop_assert!(kinds.within(accept), "{kinds} served to a taker of {accept}");
                    for w in bytes.chunks_exact(4) {
                        let w = u32::from_le_bytes(w.try_into().expect("4 bytes"));
                        prop_assert!(w < next, "word {w} invented");
                        prop_assert!(!seen[w as usize], "word {w} served twice");
                        seen[w as usize] = true;
                    }
                }
            }
            {
                let state = pool.lock();
                for (l, lane) in state.lanes.iter().enumerate() {
                    prop_assert_eq!(lane.scheduler.reserved, 0, "lane {} keeps a reservation", l);
                    prop_assert_eq!(lane.scheduler.waiting(), 0, "lane {} keeps a waiter", l);
                }
                prop_assert_eq!(state.tickets, 0);
            }
            let stats = pool.stats();
            let served = seen.iter().filter(|s| **s).count() as u64 * 4;
            prop_assert_eq!(stats.kept(), served);
            // Chunks of a class below its share evict unclaimed bytes of the classes above.
            prop_assert_eq!(
                stats.ingested_total,
                stats.kept() + stats.level as u64 + stats.evicted_total
            );
            Ok(())
        })?;
    }
}
