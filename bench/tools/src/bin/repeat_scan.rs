//! `repeat-scan`: is any run of bytes served twice? Reads every file named, indexes each
//! aligned 16-byte block of every file, then looks up the 16-byte window at every offset of
//! every file: a run of 31 bytes or more that appears twice, anywhere (in one file or two, at
//! any alignment), is found. Random data repeats a 16-byte block by chance with probability
//! about n²/2¹²⁹, nothing at these sizes.
//!
//! Prints one JSON line: `{"files": N, "bytes": B, "repeat": null}` or with
//! `"repeat": {"file": F, "offset": I, "also_file": G, "also_offset": J}`; exits 1 on a repeat,
//! 2 on an unreadable file. Used by the restart rows of the client conformance run and by the
//! chaos runs.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::process::ExitCode;

use serde_json::json;

/// The blocks are random: their first eight bytes are already a good hash.
#[derive(Default)]
struct FirstBytes(u64);

impl Hasher for FirstBytes {
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
}

type Index = HashMap<[u8; 16], (usize, usize), BuildHasherDefault<FirstBytes>>;

fn main() -> ExitCode {
    let names: Vec<String> = std::env::args().skip(1).collect();
    let mut files = Vec::with_capacity(names.len());
    for name in &names {
        match std::fs::read(name) {
            Ok(bytes) => files.push(bytes),
            Err(e) => {
                eprintln!("repeat-scan: {name}: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let total: usize = files.iter().map(Vec::len).sum();
    let mut index = Index::with_capacity_and_hasher(total / 16 + 1, Default::default());
    for (f, bytes) in files.iter().enumerate() {
        for (i, block) in bytes.chunks_exact(16).enumerate() {
            let key: [u8; 16] = block.try_into().unwrap_or_default();
            index.entry(key).or_insert((f, i * 16));
        }
    }
    for (f, bytes) in files.iter().enumerate() {
        for (i, window) in bytes.windows(16).enumerate() {
            let key: [u8; 16] = window.try_into().unwrap_or_default();
            if let Some(&(g, j)) = index.get(&key)
                && (g, j) != (f, i)
            {
                let repeat = json!({
                    "file": names[f], "offset": i, "also_file": names[g], "also_offset": j
                });
                println!("{}", json!({ "files": files.len(), "bytes": total, "repeat": repeat }));
                return ExitCode::FAILURE;
            }
        }
    }
    println!("{}", json!({ "files": files.len(), "bytes": total, "repeat": null }));
    ExitCode::SUCCESS
}
