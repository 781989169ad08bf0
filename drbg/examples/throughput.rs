//! Output throughput of each mechanism on one core: 1 GiB generated in 64 KiB generate calls
//! (the largest request SP 800-90A allows), without additional input, three rounds each, the
//! median printed in MB/s (10^6 bytes per second).
//!
//! ```sh
//! cargo run --release -p entropy-drbg --example throughput
//! ```
//!
//! The numbers and the machine they were measured on are in the crate's README.

use std::hint::black_box;
use std::time::{Duration, Instant};

use entropy_drbg::limits::MAX_BYTES_PER_REQUEST;
use entropy_drbg::{CtrDrbg, DrbgError, HmacDrbg};

/// Bytes generated per round: 1 GiB.
const TOTAL_BYTES: usize = 1 << 30;

/// Rounds per mechanism; the median is reported.
const ROUNDS: usize = 3;

// Fixed seed material: the output is never looked at, only timed.
const ENTROPY: [u8; 32] = [0x5a; 32];
const NONCE: [u8; 16] = [0xa5; 16];
const PERSONALIZATION: &[u8] = b"entropy-drbg throughput example";

fn main() {
    println!(
        "{} MiB per round in {} KiB generate calls, median of {ROUNDS} rounds",
        TOTAL_BYTES >> 20,
        MAX_BYTES_PER_REQUEST >> 10
    );
    let ctr = measure("CTR_DRBG", || {
        let mut drbg = CtrDrbg::instantiate(&ENTROPY, &NONCE, PERSONALIZATION)?;
        fill_total(|out| drbg.generate(out, &[]))
    });
    report("CTR_DRBG AES-256 (df)", ctr);
    let hmac = measure("HMAC_DRBG", || {
        let mut drbg = HmacDrbg::instantiate(&ENTROPY, &NONCE, PERSONALIZATION)?;
        fill_total(|out| drbg.generate(out, &[]))
    });
    report("HMAC_DRBG SHA-256", hmac);
    println!("CTR_DRBG / HMAC_DRBG: {:.1}x", mb_per_s(ctr) / mb_per_s(hmac));
}

/// Generates [`TOTAL_BYTES`] in requests of [`MAX_BYTES_PER_REQUEST`] and returns the time the
/// generate calls took.
fn fill_total(
    mut generate: impl FnMut(&mut [u8]) -> Result<(), DrbgError>,
) -> Result<Duration, DrbgError> {
    let mut out = vec![0; MAX_BYTES_PER_REQUEST];
    // One call before the clock starts: page the buffer in, warm the caches.
    generate(&mut out)?;
    let start = Instant::now();
    for _ in 0..TOTAL_BYTES / MAX_BYTES_PER_REQUEST {
        generate(&mut out)?;
        black_box(&mut out);
    }
    Ok(start.elapsed())
}

/// Runs `round` [`ROUNDS`] times, printing each, and returns the median duration.
fn measure(name: &str, mut round: impl FnMut() -> Result<Duration, DrbgError>) -> Duration {
    let mut times: Vec<Duration> = (1..=ROUNDS)
        .map(|i| {
            let elapsed = round().expect("fixed, valid seed material");
            println!("  {name} round {i}: {:.0} MB/s", mb_per_s(elapsed));
            elapsed
        })
        .collect();
    times.sort_unstable();
    times[ROUNDS / 2]
}

fn mb_per_s(elapsed: Duration) -> f64 {
    TOTAL_BYTES as f64 / elapsed.as_secs_f64() / 1e6
}

fn report(name: &str, elapsed: Duration) {
    println!(
        "{name:<24} {:>8.0} MB/s  ({:.2} GiB/s, {:.3} s per GiB)",
        mb_per_s(elapsed),
        mb_per_s(elapsed) * 1e6 / f64::from(1u32 << 30),
        elapsed.as_secs_f64()
    );
}
