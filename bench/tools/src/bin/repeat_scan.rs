//! `repeat-scan`: is any run of bytes served twice? Reads every file named and finds any run of
//! [`RUN`] (16) bytes or more that appears twice, anywhere: in one file or two, at any offset
//! and alignment.
//!
//! How: every aligned 8-byte block of every file goes into an index; then the 8-byte window at
//! every offset of every file is looked up. A run of 16 bytes (indeed of 15) always contains an
//! aligned block, so its second copy finds the first; each hit is extended both ways and counts
//! only when the two copies agree on at least [`RUN`] bytes, so a chance match of 8 bytes (about
//! n²/2⁶⁵ of them, a handful per exbibyte) never reports. Random data repeats a 16-byte run by
//! chance with probability about n²/2¹²⁹: nothing at these sizes.
//!
//! Prints one JSON line: `{"files": N, "bytes": B, "repeat": null}` or with
//! `"repeat": {"file": F, "offset": I, "also_file": G, "also_offset": J, "length": L}` (the
//! run as far as it extends); exits 1 on a repeat, 2 on an unreadable file. Used by the restart
//! rows of the client conformance run, the scaled-out run and the chaos runs.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::process::ExitCode;

use serde_json::json;

/// The shortest run reported.
const RUN: usize = 16;
/// The indexed block: a run of `2 * BLOCK - 1` bytes always holds an aligned one.
const BLOCK: usize = 8;
const _: () = assert!(2 * BLOCK - 1 <= RUN);

/// The blocks are random: they are their own hash.
#[derive(Default)]
struct Identity(u64);

impl Hasher for Identity {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 = self.0.rotate_left(5) ^ u64::from_le_bytes(word);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 ^= n;
    }
}

/// Where an aligned block was first seen: (file, offset). u32 keeps the index at 16 bytes an
/// entry; files are read whole, so each is well under 4 GiB.
type Index = HashMap<u64, (u32, u32), BuildHasherDefault<Identity>>;

/// A run found twice: (file, offset) of each copy and how long they agree.
#[derive(Debug, PartialEq, Eq)]
struct Repeat {
    at: (usize, usize),
    also: (usize, usize),
    length: usize,
}

fn block(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; BLOCK];
    word.copy_from_slice(&bytes[at..at + BLOCK]);
    u64::from_le_bytes(word)
}

/// The first run of [`RUN`] or more bytes that appears twice across `files`.
fn find_repeat(files: &[Vec<u8>]) -> Option<Repeat> {
    let total: usize = files.iter().map(Vec::len).sum();
    let mut index = Index::with_capacity_and_hasher(total / BLOCK + 1, Default::default());
    for (f, bytes) in files.iter().enumerate() {
        for at in (0..bytes.len().saturating_sub(BLOCK - 1)).step_by(BLOCK) {
            index.entry(block(bytes, at)).or_insert((f as u32, at as u32));
        }
    }
    for (f, bytes) in files.iter().enumerate() {
        for i in 0..bytes.len().saturating_sub(BLOCK - 1) {
            let Some(&(g, j)) = index.get(&block(bytes, i)) else { continue };
            let (g, j) = (g as usize, j as usize);
            if (g, j) == (f, i) {
                continue;
            }
            let other = &files[g];
            // How far the two copies agree around the 8 bytes that matched.
            let back = (1..=i.min(j)).take_while(|&k| bytes[i - k] == other[j - k]).count();
            let forward = (BLOCK..)
                .take_while(|&k| {
                    i + k < bytes.len() && j + k < other.len() && bytes[i + k] == other[j + k]
                })
                .count();
            let length = back + BLOCK + forward;
            if length >= RUN {
                return Some(Repeat { at: (f, i - back), also: (g, j - back), length });
            }
        }
    }
    None
}

fn main() -> ExitCode {
    let names: Vec<String> = std::env::args().skip(1).collect();
    let mut files = Vec::with_capacity(names.len());
    for name in &names {
        match std::fs::read(name) {
            Ok(bytes) if u32::try_from(bytes.len()).is_ok() => files.push(bytes),
            Ok(_) => {
                eprintln!("repeat-scan: {name}: 4 GiB or more; split it");
                return ExitCode::from(2);
            }
            Err(e) => {
                eprintln!("repeat-scan: {name}: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let total: usize = files.iter().map(Vec::len).sum();
    match find_repeat(&files) {
        Some(r) => {
            let repeat = json!({
                "file": names[r.at.0], "offset": r.at.1,
                "also_file": names[r.also.0], "also_offset": r.also.1, "length": r.length
            });
            println!("{}", json!({ "files": files.len(), "bytes": total, "repeat": repeat }));
            ExitCode::FAILURE
        }
        None => {
            println!("{}", json!({ "files": files.len(), "bytes": total, "repeat": null }));
            ExitCode::SUCCESS
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Distinct, patternless bytes (SplitMix64): no run repeats by chance.
    fn random(n: usize, seed: u64) -> Vec<u8> {
        let mut state = seed;
        let mut out = Vec::with_capacity(n + 8);
        while out.len() < n {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            out.extend_from_slice(&(z ^ (z >> 31)).to_le_bytes());
        }
        out.truncate(n);
        out
    }

    #[test]
    fn distinct_random_files_have_no_repeat() {
        assert_eq!(find_repeat(&[random(100_000, 1), random(77_777, 2)]), None);
    }

    #[test]
    fn a_run_of_sixteen_is_found_at_every_offset_pair() {
        let run = random(RUN, 99);
        for at in 0..BLOCK {
            for also in 0..BLOCK {
                let mut a = random(1_000, 3);
                let mut b = random(1_000, 4);
                a[100 + at..100 + at + RUN].copy_from_slice(&run);
                b[500 + also..500 + also + RUN].copy_from_slice(&run);
                let found = find_repeat(&[a, b]).expect("a 16-byte run twice");
                assert_eq!(found.length, RUN);
                let mut copies = [found.at, found.also];
                copies.sort_unstable();
                assert_eq!(copies, [(0, 100 + at), (1, 500 + also)], "at {at}, also {also}");
            }
        }
    }

    #[test]
    fn a_run_of_fifteen_is_not_reported() {
        let run = random(RUN - 1, 99);
        let mut a = random(1_000, 3);
        a[203..203 + RUN - 1].copy_from_slice(&run);
        a[611..611 + RUN - 1].copy_from_slice(&run);
        assert_eq!(find_repeat(&[a]), None);
    }

    #[test]
    fn a_repeat_within_one_file_and_at_its_edges_is_found() {
        let mut a = random(4_096, 5);
        let head: Vec<u8> = a[..RUN].to_vec();
        let len = a.len();
        a[len - RUN..].copy_from_slice(&head);
        let found = find_repeat(&[a]).expect("the first 16 bytes again at the end");
        let mut copies = [found.at, found.also];
        copies.sort_unstable();
        assert_eq!(copies, [(0, 0), (0, len - RUN)]);
    }

    #[test]
    fn a_stuck_stream_repeats() {
        assert!(find_repeat(&[vec![0x5A; 64]]).is_some());
    }
}
