//! The pool's tests: order, all-or-nothing, zeroization, fairness and at-most-once.

use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;

use super::*;

/// Bytes that identify their position in an ingest sequence: byte i of the whole stream
/// fed to the pool is `serial(i)`, so any duplicate or loss shows up when decoding.
fn numbered(start: u32, count: u32) -> Vec<u8> {
    (start..start + count).flat_map(u32::to_le_bytes).collect()
}

#[tokio::test]
async fn put_then_take_returns_bytes_in_order() {
    let pool = Pool::new(64);
    pool.put(b"hello world").expect("room");
    assert_eq!(&*pool.take(5, None).await.expect("bytes"), b"hello");
    assert_eq!(&*pool.take(6, None).await.expect("bytes"), b" world");
    assert_eq!(pool.level(), 0);
}

#[test]
fn full_pool_rejects_the_whole_chunk() {
    let pool = Pool::new(10);
    pool.put(&[1; 8]).expect("room");
    assert_eq!(pool.put(&[2; 3]), Err(PoolFull { free: 2, needed: 3 }));
    assert_eq!(pool.level(), 8, "nothing of the rejected chunk was stored");
    pool.put(&[3; 2]).expect("exactly fits");
    assert_eq!(pool.stats().ingested_total, 10);
}

#[test]
fn taken_bytes_are_zeroized_in_the_ring() {
    let pool = Pool::new(8);
    pool.put(&[0xAA; 8]).expect("room");
    let drawn = pool.try_take(5).expect("bytes");
    assert_eq!(&*drawn, &[0xAA; 5]);
    let state = pool.lock();
    assert_eq!(&state.ring.buf[..5], &[0; 5], "consumed region is zeroized");
    assert_eq!(&state.ring.buf[5..], &[0xAA; 3], "unconsumed bytes stay");
}

#[tokio::test(start_paused = true)]
async fn short_pool_times_out_and_consumes_nothing() {
    let pool = Pool::new(64);
    pool.put(&[7; 10]).expect("room");
    let deadline = Instant::now() + Duration::from_millis(100);
    assert_eq!(pool.take(11, Some(deadline)).await, Err(TakeError::TimedOut));
    assert_eq!(pool.level(), 10);
    assert_eq!(pool.stats().served_total, 0);
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
        pool.put(&[1; 10]).expect("room");
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
        async move { pool.take_for(Tenant::named("greedy"), 1 << 20, None).await }
    });
    while pool.stats().waiters < 1 {
        tokio::task::yield_now().await;
    }
    let small = tokio::spawn({
        let pool = pool.clone();
        async move { pool.take_for(Tenant::named("modest"), 32, None).await }
    });
    while pool.stats().waiters < 2 {
        tokio::task::yield_now().await;
    }
    pool.put(&[9; 2 * QUANTUM]).expect("room");
    let small = small.await.expect("join").expect("served by the first chunk");
    assert_eq!(small.len(), 32);
    assert!(!big.is_finished(), "the big take still waits for the rest");
    pool.put(&vec![9; 1 << 20]).expect("room");
    assert_eq!(big.await.expect("join").expect("served").len(), 1 << 20);
    let stats = pool.stats();
    assert_eq!(stats.ingested_total, stats.served_total + stats.level as u64);
}

#[tokio::test(start_paused = true)]
async fn a_waiter_that_times_out_hands_its_share_to_the_others() {
    let pool = Arc::new(Pool::new(1 << 20));
    let quitter = tokio::spawn({
        let pool = pool.clone();
        let deadline = Instant::now() + Duration::from_millis(100);
        async move { pool.take_for(Tenant::named("a"), 4 * QUANTUM, Some(deadline)).await }
    });
    let stayer = tokio::spawn({
        let pool = pool.clone();
        async move { pool.take_for(Tenant::named("b"), 4 * QUANTUM, None).await }
    });
    while pool.stats().waiters < 2 {
        tokio::task::yield_now().await;
    }
    pool.put(&[1; 4 * QUANTUM]).expect("room");
    assert_eq!(pool.level(), 0, "all of it reserved, half each");
    assert_eq!(quitter.await.expect("join"), Err(TakeError::TimedOut));
    let got = stayer.await.expect("join").expect("the quitter's half completed b");
    assert_eq!(got.len(), 4 * QUANTUM);
    let stats = pool.stats();
    assert_eq!((stats.level, stats.served_total, stats.waiters), (0, 4 * QUANTUM as u64, 0));
}

#[tokio::test]
async fn give_back_returns_bytes_to_the_front() {
    let pool = Pool::new(16);
    pool.put(b"abcdef").expect("room");
    let drawn = pool.try_take(3).expect("bytes");
    pool.give_back(drawn);
    assert_eq!(pool.level(), 6);
    assert_eq!(&*pool.try_take(6).expect("bytes"), b"abcdef");
    let stats = pool.stats();
    assert_eq!((stats.served_total, stats.discarded_total), (6, 0));
}

#[test]
fn give_back_into_a_refilled_pool_discards() {
    let pool = Pool::new(8);
    pool.put(&[1; 8]).expect("room");
    let drawn = pool.try_take(4).expect("bytes");
    pool.put(&[2; 4]).expect("room again");
    pool.give_back(drawn);
    let stats = pool.stats();
    assert_eq!((stats.level, stats.served_total, stats.discarded_total), (8, 0, 4));
    assert_eq!(stats.ingested_total, stats.served_total + stats.level as u64 + 4);
}

#[test]
fn ring_wraps_around() {
    let pool = Pool::new(10);
    for round in 0u8..50 {
        let chunk = [round; 7];
        pool.put(&chunk).expect("room");
        assert_eq!(&*pool.try_take(7).expect("bytes"), &chunk);
    }
    pool.put(b"0123456789").expect("exactly full");
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
                if let Err(full) = pool.put(&numbered(next, count)) {
                    // Put what fits: the head waiter may need exactly the missing room.
                    count = count.min((full.free / 4) as u32);
                    if count > 0 {
                        pool.put(&numbered(next, count)).expect("fits now");
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
            prop_assert_eq!(stats.ingested_total, stats.served_total);
            Ok(())
        })?;
    }
}
