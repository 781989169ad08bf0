//! The lease file: round trip, what a crash or a bad disk can leave, when it is written, and
//! what concurrent publishes see.

use std::sync::Arc;

use super::*;

const NOW: i64 = 1_800_000_000_000;
const SKEW: Duration = Duration::from_secs(2);

fn on_disk(dir: &Path) -> i64 {
    decode(&fs::read(dir.join(LEASE_FILE)).expect("lease file")).expect("valid lease")
}

#[test]
fn a_new_state_starts_at_start_plus_skew_and_a_reopened_one_where_the_lease_was() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lease = Lease::open_at(dir.path(), NOW, SKEW).expect("open");
    assert!(lease.is_new());
    assert_eq!(lease.accepts_from_unix_ms(), NOW + 2_000, "no file: the start rule");
    assert_eq!(on_disk(dir.path()), NOW + 1_999, "written at open, before any chunk");
    lease.cover(NOW + 25_000).expect("cover");
    drop(lease);

    // Restarted with another skew (and a clock that went back): the lease decides.
    for skew in [Duration::from_millis(100), Duration::from_secs(60)] {
        let again = Lease::open_at(dir.path(), NOW - 5_000, skew).expect("reopen");
        assert!(!again.is_new());
        assert_eq!(again.accepts_from_unix_ms(), NOW + 25_000 + LEASE_MARGIN_MS + 1);
        assert_eq!(again.accepted_until_unix_ms(), NOW + 25_000 + LEASE_MARGIN_MS);
    }
}

#[test]
fn the_text_round_trips_and_is_checked() {
    for until in [0, 1, NOW, -5, i64::MAX, i64::MIN] {
        assert_eq!(decode(encode(until).as_bytes()), Ok(until));
    }
    let text = encode(NOW);
    assert!(
        text.starts_with("entropy-gateway ingest lease v1\naccepted_until_unix_ms 1800000000000\n")
    );
}

#[test]
fn every_truncation_and_any_changed_byte_is_refused() {
    let text = encode(NOW + 123_456).into_bytes();
    for len in 0..text.len() {
        assert!(decode(&text[..len]).is_err(), "truncated to {len} bytes: accepted");
    }
    for i in 0..text.len() {
        let mut edited = text.clone();
        edited[i] ^= 0x01;
        assert!(decode(&edited).is_err(), "byte {i} changed: accepted");
    }
    let mut longer = text.clone();
    longer.extend_from_slice(b"x\n");
    assert!(decode(&longer).is_err(), "trailing line");
    assert!(decode(&[0xff, 0xfe, b'\n']).is_err());
}

#[test]
fn a_corrupt_or_unreadable_file_stops_the_open_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(LEASE_FILE);
    let text = encode(NOW);
    fs::write(&path, &text[..text.len() - 5]).expect("write");
    match Lease::open_at(dir.path(), NOW, SKEW) {
        Err(e @ OpenError::Corrupt { .. }) => {
            let message = e.to_string();
            assert!(message.contains(&path.display().to_string()), "{message}");
            assert!(message.contains("delete it to start a new state"), "{message}");
        }
        other => panic!("a truncated lease must stop the gateway, got {other:?}"),
    }
    assert_eq!(fs::read_to_string(&path).expect("kept"), text[..text.len() - 5], "left as found");

    fs::remove_file(&path).expect("remove");
    fs::create_dir(&path).expect("a directory where the file should be");
    assert!(matches!(Lease::open_at(dir.path(), NOW, SKEW), Err(OpenError::Read { .. })));

    let file = dir.path().join("plain-file");
    fs::write(&file, "not a directory").expect("write");
    assert!(matches!(Lease::open_at(&file, NOW, SKEW), Err(OpenError::Dir { .. })));
}

#[test]
fn a_temp_file_left_by_a_crash_is_ignored_then_replaced() {
    let dir = tempfile::tempdir().expect("tempdir");
    drop(Lease::open_at(dir.path(), NOW, SKEW).expect("open"));
    // A crash between creating the new file and renaming it: half a lease under the temp name.
    fs::write(dir.path().join(TEMP_FILE), "entropy-gateway ingest lease v1\naccepted_un")
        .expect("write");
    let lease = Lease::open_at(dir.path(), NOW + 60_000, SKEW).expect("open");
    assert!(!lease.is_new());
    assert_eq!(lease.accepts_from_unix_ms(), NOW + 2_000, "the renamed file, not the temp one");
    lease.cover(NOW + 70_000).expect("cover");
    assert_eq!(on_disk(dir.path()), NOW + 70_000 + LEASE_MARGIN_MS);
    assert!(!dir.path().join(TEMP_FILE).exists(), "renamed away");
}

#[test]
fn the_lease_moves_only_for_a_chunk_it_does_not_cover() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lease = Lease::open_at(dir.path(), NOW, SKEW).expect("open");
    let writes = || lease.writes.load(Ordering::Relaxed);
    lease.cover(NOW + 1_999).expect("covered since open");
    assert_eq!(writes(), 0);
    lease.cover(NOW + 2_000).expect("moves");
    assert_eq!((writes(), on_disk(dir.path())), (1, NOW + 2_000 + LEASE_MARGIN_MS));
    for ts in (NOW + 2_000..=NOW + 3_000).step_by(50) {
        lease.cover(ts).expect("covered");
    }
    assert_eq!(writes(), 1, "a margin of chunk time costs one write");
    lease.cover(NOW - 50_000).expect("older chunks are covered");
    lease.cover(NOW + 3_001).expect("moves");
    assert_eq!((writes(), lease.accepted_until_unix_ms()), (2, NOW + 3_001 + LEASE_MARGIN_MS));
}

#[test]
fn a_failed_write_refuses_the_chunk_and_leaves_the_old_lease() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lease = Lease::open_at(dir.path(), NOW, SKEW).expect("open");
    lease.cover(NOW + 5_000).expect("moves");
    // Something the temp file cannot replace: a non-empty directory under its name.
    let temp = dir.path().join(TEMP_FILE);
    fs::create_dir(&temp).expect("mkdir");
    fs::write(temp.join("x"), "x").expect("write");
    assert!(lease.cover(NOW + 9_000).is_err(), "not covered: the chunk is not stored");
    assert_eq!(lease.accepted_until_unix_ms(), NOW + 5_000 + LEASE_MARGIN_MS);
    assert_eq!(on_disk(dir.path()), NOW + 5_000 + LEASE_MARGIN_MS, "the old lease, whole");
    lease.cover(NOW + 5_500).expect("still covered by the old lease");
    fs::remove_dir_all(&temp).expect("cleared");
    lease.cover(NOW + 9_000).expect("writable again");
    assert_eq!(on_disk(dir.path()), NOW + 9_000 + LEASE_MARGIN_MS);
}

#[test]
fn one_directory_serves_one_process_at_a_time() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = Lease::open_at(dir.path(), NOW, SKEW).expect("open");
    match Lease::open_at(dir.path(), NOW, SKEW) {
        Err(OpenError::Locked { path }) => assert_eq!(path, dir.path().join(LOCK_FILE)),
        other => panic!("a second user of the directory must be refused, got {other:?}"),
    }
    drop(first);
    Lease::open_at(dir.path(), NOW, SKEW).expect("free once the first is gone");
}

#[test]
fn in_memory_moves_without_a_file() {
    let lease = Lease::in_memory(NOW);
    assert_eq!((lease.accepts_from_unix_ms(), lease.path()), (NOW, None));
    lease.cover(NOW + 10).expect("in memory never fails");
    assert_eq!(lease.accepted_until_unix_ms(), NOW + 10 + LEASE_MARGIN_MS);
}

/// Many publishes at once: each cover returns only once the file holds a lease at or past its
/// chunk's time, the lease only grows, and writes happen only when a chunk needed one.
#[test]
fn concurrent_covers_never_return_before_the_file_covers_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lease = Arc::new(Lease::open_at(dir.path(), NOW, SKEW).expect("open"));
    let (threads, per_thread) = (8, 200);
    // Interleaved, partly out of order, like chunks from several collectors.
    let chunk_time = |t: i64, i: i64| NOW + 2_000 + (i * 97 + t * 101) % 20_000;
    std::thread::scope(|scope| {
        for t in 0..threads {
            let lease = lease.clone();
            let dir = dir.path().to_owned();
            scope.spawn(move || {
                let mut last_seen = i64::MIN;
                for i in 0..per_thread {
                    let ts = chunk_time(t, i);
                    lease.cover(ts).expect("cover");
                    let file = on_disk(&dir);
                    assert!(file >= ts, "acknowledged {ts} with {file} on disk");
                    let seen = lease.accepted_until_unix_ms();
                    assert!(seen >= last_seen, "the lease went back: {seen} < {last_seen}");
                    last_seen = seen;
                }
            });
        }
    });
    let max_ts = (0..threads).flat_map(|t| (0..per_thread).map(move |i| chunk_time(t, i))).max();
    assert!(Some(lease.accepted_until_unix_ms()) >= max_ts);
    // Each write moves the lease a margin past the chunk that needed it, and every chunk is
    // within 20 s of chunk time: at most 20 s / margin + 1 writes, whatever the interleaving.
    let writes = lease.writes.load(Ordering::Relaxed);
    assert!(writes <= 21, "{writes} writes for 20 s of chunk time");
}
