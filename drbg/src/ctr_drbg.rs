//! The CTR_DRBG mechanism, SP 800-90A Rev. 1 §10.2.1, with AES-256 and the block-cipher
//! derivation function (§10.3.2).
//!
//! The working state is K (32 bytes), V (16 bytes) and a reseed counter. AES-256 sets
//! `blocklen` = `outlen` = 128 bits, `keylen` = 256 bits and `seedlen` = `keylen` + `blocklen`
//! = 384 bits. The counter field is the whole block (`ctr_len` = `blocklen`): V + 1 is taken
//! mod 2^128. Every operation is the spec's `CTR_DRBG_Update` around its inputs, each input
//! first brought to `seedlen` bits by `Block_Cipher_df`:
//!
//! ```text
//! update(data):          temp = E(K, V+1) || E(K, V+2) || E(K, V+3)     (V advances by 3)
//!                        temp = temp XOR data;  K = temp[0..32];  V = temp[32..48]
//! instantiate(e, n, p):  K = 0x00…00;  V = 0x00…00;  update(df(e || n || p));  counter = 1
//! reseed(e, a):          update(df(e || a));  counter = 1
//! generate(len, a):      refuse if counter > reseed_interval
//!                        if a is not empty: a' = df(a); update(a')  else a' = 0x00…00 (48 bytes)
//!                        out = E(K, V+1) || E(K, V+2) || … truncated to len  (V advances each block)
//!                        update(a');  counter += 1
//!
//! df(s):                 S = be32(len(s)) || be32(48) || s || 0x80, zero-padded to whole blocks
//!                        T = BCC(K0, be32(0) || 0^96 || S) || BCC(K0, be32(1) || …) || BCC(K0, be32(2) || …)
//!                            with K0 = 0x00 01 02 … 1F
//!                        K = T[0..32];  X = T[32..48];  X1 = E(K, X);  X2 = E(K, X1);  X3 = E(K, X2)
//!                        df(s) = X1 || X2 || X3
//! BCC(K, b1 || … || bn): c = 0^128;  for each block: c = E(K, c XOR bi);  BCC = c
//! ```
//!
//! An empty byte string is the spec's Null. Generate's additional input is derived once and the
//! same 48 bytes feed both updates, as §10.2.1.5.2 steps 2 and 6 say.
//!
//! The state keeps K only as an expanded AES-256 key schedule (an `aes::Aes256Enc`, whose first
//! two round keys are K itself), rebuilt in each update, the one place K changes; no second copy
//! of K is kept. Generate writes its counter blocks straight into the caller's buffer and
//! encrypts them there in place, in batches of 960 blocks (15 KiB) with one `encrypt_blocks` call
//! each: the blocks are independent, so the `aes` crate's backend encrypts them in parallel
//! (AES-NI eight at a time, VAES with AVX2 30, VAES with AVX-512 64).
//!
//! Every check runs before the state is touched, so a refused call changes nothing. V and every
//! key schedule are wiped when dropped (the key schedules through the `aes` crate's `zeroize`
//! feature, also when an update replaces one), the instance cannot be cloned (two copies would
//! emit the same stream), and `Debug` shows only the counter and the interval.

use std::fmt;

use aes::Aes256Enc;
use aes::cipher::{Array, BlockCipherEncrypt, KeyInit};
use zeroize::{Zeroize, ZeroizeOnDrop};

use crate::error::{DrbgError, Input};
use crate::limits::{
    ReseedInterval, check_df_input, check_entropy_input, check_max_len, check_nonce, check_request,
};

/// `keylen`: the AES-256 key, K, in bytes.
pub const KEYLEN_BYTES: usize = 32;

/// `blocklen` (= `outlen`): an AES block, and V, in bytes.
pub const BLOCKLEN_BYTES: usize = 16;

/// `seedlen` = `keylen` + `blocklen`: what the derivation function returns and an update
/// consumes, in bytes (384 bits).
pub const SEEDLEN_BYTES: usize = KEYLEN_BYTES + BLOCKLEN_BYTES;

/// Counter blocks encrypted per `encrypt_blocks` call in generate: 960 blocks, 15 KiB, within
/// a core's L1 data cache while the counters written into it are encrypted.
///
/// 960 is the least common multiple of the numbers of blocks the `aes` crate's x86_64 backends
/// encrypt in parallel (`ParBlocksSize`: 8 for AES-NI, 30 for VAES with AVX2, 64 for VAES with
/// AVX-512, chosen at run time). A call hands the backend whole parallel groups and the blocks
/// left over go one at a time, so a batch the backend's group does not divide is partly
/// serial: batches of 8, the AES-NI group, ran at 2.1 GB/s on the AVX-512 build machine, where
/// every 8-block call is below the 64-block group, against 6.4 GB/s for batches of 64 and
/// 7.7 GB/s for 960 (the README has the measurement). Larger batches gained nothing more.
const BATCH_BLOCKS: usize = 960;

/// The derivation function's fixed BCC key (§10.3.2 step 8): the leftmost `keylen` bits of
/// 0x00010203…1F.
const DF_KEY: [u8; KEYLEN_BYTES] = {
    let mut key = [0; KEYLEN_BYTES];
    let mut i = 0;
    while i < KEYLEN_BYTES {
        key[i] = i as u8;
        i += 1;
    }
    key
};

type Block = [u8; BLOCKLEN_BYTES];

/// A CTR_DRBG instance with AES-256 and the derivation function, at 256-bit security strength.
///
/// It cannot be cloned: a copy would produce the same output as the original.
///
/// ```compile_fail
/// fn needs_clone<T: Clone>() {}
/// needs_clone::<entropy_drbg::CtrDrbg>();
/// ```
pub struct CtrDrbg {
    /// K, as the expanded AES-256 encryption key schedule.
    cipher: Aes256Enc,
    /// V, the counter block of the working state, as a big-endian integer.
    value: u128,
    /// Generate calls since the last seeding, plus one (the spec's `reseed_counter`).
    reseed_counter: u64,
    reseed_interval: ReseedInterval,
}

impl CtrDrbg {
    /// Instantiates with the spec's maximum reseed interval (2^48 generate calls).
    ///
    /// `entropy_input` must be at least 32 bytes and carry at least 256 bits of entropy. The
    /// `nonce` must be at least 16 bytes, unless `entropy_input` is at least 48 bytes and
    /// includes the nonce's share, in which case the nonce may be shorter or empty. The
    /// `personalization` string may be empty. No input may exceed 2^35 bits, and the three
    /// together must be under 2^32 bytes (the derivation function's length field).
    pub fn instantiate(
        entropy_input: &[u8],
        nonce: &[u8],
        personalization: &[u8],
    ) -> Result<Self, DrbgError> {
        Self::instantiate_with_reseed_interval(
            entropy_input,
            nonce,
            personalization,
            ReseedInterval::MAX,
        )
    }

    /// Instantiates as [`instantiate`](Self::instantiate) does, refusing to generate after
    /// `reseed_interval` generate calls without a reseed.
    pub fn instantiate_with_reseed_interval(
        entropy_input: &[u8],
        nonce: &[u8],
        personalization: &[u8],
        reseed_interval: ReseedInterval,
    ) -> Result<Self, DrbgError> {
        check_entropy_input(entropy_input.len())?;
        check_nonce(nonce.len(), entropy_input.len())?;
        check_max_len(Input::PersonalizationString, personalization.len())?;
        check_df_input(&[entropy_input.len(), nonce.len(), personalization.len()])?;

        let mut seed_material = [0; SEEDLEN_BYTES];
        block_cipher_df(&[entropy_input, nonce, personalization], &mut seed_material);
        let mut drbg = Self {
            cipher: Aes256Enc::new(&Array::from([0x00; KEYLEN_BYTES])),
            value: 0,
            reseed_counter: 1,
            reseed_interval,
        };
        drbg.update(&seed_material);
        seed_material.zeroize();
        Ok(drbg)
    }

    /// Reseeds with fresh `entropy_input` (at least 32 bytes, at least 256 bits of entropy) and
    /// optional `additional_input`, and restarts the count towards the reseed interval.
    pub fn reseed(
        &mut self,
        entropy_input: &[u8],
        additional_input: &[u8],
    ) -> Result<(), DrbgError> {
        check_entropy_input(entropy_input.len())?;
        check_max_len(Input::AdditionalInput, additional_input.len())?;
        check_df_input(&[entropy_input.len(), additional_input.len()])?;

        let mut seed_material = [0; SEEDLEN_BYTES];
        block_cipher_df(&[entropy_input, additional_input], &mut seed_material);
        self.update(&seed_material);
        seed_material.zeroize();
        self.reseed_counter = 1;
        Ok(())
    }

    /// Fills `out` (at most 65,536 bytes, 2^19 bits) with output, mixing in the optional
    /// `additional_input` first and after.
    ///
    /// Refuses with [`DrbgError::ReseedRequired`] once the reseed interval's generate calls have
    /// been answered since the last seeding. For prediction resistance, call
    /// [`reseed`](Self::reseed) with fresh entropy (and the additional input) before each call
    /// and pass empty additional input here, as SP 800-90A §9.3.1 does.
    pub fn generate(&mut self, out: &mut [u8], additional_input: &[u8]) -> Result<(), DrbgError> {
        check_request(out.len())?;
        check_max_len(Input::AdditionalInput, additional_input.len())?;
        check_df_input(&[additional_input.len()])?;
        if self.reseed_counter > self.reseed_interval.get() {
            return Err(DrbgError::ReseedRequired { interval: self.reseed_interval.get() });
        }

        // 0^seedlen when the additional input is Null (§10.2.1.5.2 step 2.2).
        let mut additional = [0; SEEDLEN_BYTES];
        if !additional_input.is_empty() {
            block_cipher_df(&[additional_input], &mut additional);
            self.update(&additional);
        }
        self.fill(out);
        self.update(&additional);
        additional.zeroize();
        // Cannot overflow: the counter is at most the interval (2^48) here.
        self.reseed_counter += 1;
        Ok(())
    }

    /// The spec's `reseed_counter`: 1 after instantiate or reseed, one more after each answered
    /// generate call. Generate refuses once it exceeds the reseed interval.
    pub fn reseed_counter(&self) -> u64 {
        self.reseed_counter
    }

    /// The number of generate calls this instance answers between seedings.
    pub fn reseed_interval(&self) -> ReseedInterval {
        self.reseed_interval
    }

    /// Generate's steps 3 to 5: `out` = E(K, V+1) || E(K, V+2) || …, the last block truncated.
    fn fill(&mut self, out: &mut [u8]) {
        let (whole, tail) = out.as_chunks_mut::<BLOCKLEN_BYTES>();
        for batch in whole.chunks_mut(BATCH_BLOCKS) {
            for block in batch.iter_mut() {
                *block = self.next_counter_block();
            }
            // In place, in the caller's buffer: the counter blocks become the output.
            self.cipher.encrypt_blocks(Array::cast_slice_from_core_mut(batch));
        }
        if !tail.is_empty() {
            let mut block = self.next_counter_block();
            self.encrypt(&mut block);
            tail.copy_from_slice(&block[..tail.len()]);
            // The unused rest of the block is output nobody should see either.
            block.zeroize();
        }
    }

    /// `CTR_DRBG_Update(provided_data, Key, V)`, §10.2.1.2, with `provided_data` of `seedlen`
    /// bits.
    fn update(&mut self, provided_data: &[u8; SEEDLEN_BYTES]) {
        let mut temp: [Block; SEEDLEN_BYTES / BLOCKLEN_BYTES] =
            std::array::from_fn(|_| self.next_counter_block());
        self.cipher.encrypt_blocks(Array::cast_slice_from_core_mut(&mut temp));
        let temp = temp.as_flattened_mut();
        for (t, p) in temp.iter_mut().zip(provided_data) {
            *t ^= p;
        }
        let (key, value) = temp.split_at(KEYLEN_BYTES);
        // Assigning drops the old key schedule, which wipes itself.
        self.cipher = Aes256Enc::new(Array::slice_as_array(key).expect("K is keylen bytes"));
        self.value = u128::from_be_bytes(value.try_into().expect("V is blocklen bytes"));
        temp.zeroize();
    }

    /// V = (V + 1) mod 2^blocklen, returned as the block to encrypt.
    fn next_counter_block(&mut self) -> Block {
        self.value = self.value.wrapping_add(1);
        self.value.to_be_bytes()
    }

    /// `Block_Encrypt(K, block)` in place.
    fn encrypt(&self, block: &mut Block) {
        self.cipher.encrypt_block(Array::cast_from_core_mut(block));
    }
}

/// `Block_Cipher_df(input_string, seedlen)`, §10.3.2, with `input_string` given as the pieces of
/// its concatenation (the caller has checked that they total at most 2^32 − 1 bytes), writing
/// the `seedlen` bits it returns into `out`.
///
/// S is never built in memory: the three BCC chains of step 9 (IV = 0, 1, 2) read the same S,
/// so they run side by side over it, one block of S at a time, encrypting the three chaining
/// values with one `encrypt_blocks` call per block.
fn block_cipher_df(input: &[&[u8]], out: &mut [u8; SEEDLEN_BYTES]) {
    let input_len: usize = input.iter().map(|piece| piece.len()).sum();
    let input_len = u32::try_from(input_len).expect("checked: df input fits its 32-bit length");

    // Steps 1 to 9: temp = BCC(K0, IV0 || S) || BCC(K0, IV1 || S) || BCC(K0, IV2 || S).
    let mut bcc = Bcc::new();
    bcc.absorb(&input_len.to_be_bytes());
    bcc.absorb(&(SEEDLEN_BYTES as u32).to_be_bytes());
    for piece in input {
        bcc.absorb(piece);
    }
    bcc.absorb(&[0x80]);
    let mut temp = bcc.finish();

    // Steps 10 to 14: K = leftmost keylen bits of temp, X = the next outlen bits; then
    // X = E(K, X), three times, each X a block of the result.
    let (key, x) = temp.as_flattened().split_at(KEYLEN_BYTES);
    let cipher = Aes256Enc::new(Array::slice_as_array(key).expect("K is keylen bytes"));
    let mut x: Block = x.try_into().expect("X is outlen bytes");
    for block in out.as_chunks_mut::<BLOCKLEN_BYTES>().0 {
        cipher.encrypt_block(Array::cast_from_core_mut(&mut x));
        *block = x;
    }
    x.zeroize();
    temp.zeroize();
    // `cipher`, keyed with a secret K, wipes its key schedule when dropped here.
}

/// The three BCC chains of `Block_Cipher_df` step 9, run side by side over the same S.
struct Bcc {
    /// The fixed-key cipher of step 8.
    cipher: Aes256Enc,
    /// The three chaining values, for IV = 0, 1 and 2.
    chains: [Block; SEEDLEN_BYTES / BLOCKLEN_BYTES],
    /// The part of S not yet a whole block.
    pending: Block,
    /// How many bytes of `pending` are filled.
    filled: usize,
}

impl Bcc {
    /// Starts the chains: each has absorbed its IV, `i` as 32 bits followed by zeros.
    fn new() -> Self {
        let cipher = Aes256Enc::new(&Array::from(DF_KEY));
        let mut chains: [Block; SEEDLEN_BYTES / BLOCKLEN_BYTES] = std::array::from_fn(|i| {
            let mut iv = [0; BLOCKLEN_BYTES];
            iv[..4].copy_from_slice(&(i as u32).to_be_bytes());
            // BCC's chaining value starts at zero, so its first block goes in as it is.
            iv
        });
        cipher.encrypt_blocks(Array::cast_slice_from_core_mut(&mut chains));
        Self { cipher, chains, pending: [0; BLOCKLEN_BYTES], filled: 0 }
    }

    /// Appends `data` to S, running the chains over each block it completes.
    fn absorb(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            let take = (BLOCKLEN_BYTES - self.filled).min(data.len());
            let (head, rest) = data.split_at(take);
            self.pending[self.filled..self.filled + take].copy_from_slice(head);
            self.filled += take;
            data = rest;
            if self.filled == BLOCKLEN_BYTES {
                self.chain_pending();
            }
        }
    }

    /// Pads S with zeros to a whole number of blocks (step 5) and returns the three chaining
    /// values, concatenated.
    fn finish(mut self) -> [Block; SEEDLEN_BYTES / BLOCKLEN_BYTES] {
        if self.filled > 0 {
            self.pending[self.filled..].fill(0);
            self.chain_pending();
        }
        // `self` is wiped on drop; the caller wipes the copy it gets.
        self.chains
    }

    /// c = E(K0, c XOR block) for each chain, the block being `pending`.
    fn chain_pending(&mut self) {
        for chain in &mut self.chains {
            for (c, b) in chain.iter_mut().zip(&self.pending) {
                *c ^= b;
            }
        }
        self.cipher.encrypt_blocks(Array::cast_slice_from_core_mut(&mut self.chains));
        self.filled = 0;
    }
}

impl Drop for Bcc {
    fn drop(&mut self) {
        // The chaining values are as good as the df's output; `pending` holds seed material.
        self.chains.zeroize();
        self.pending.zeroize();
    }
}

impl Drop for CtrDrbg {
    fn drop(&mut self) {
        // The key schedule (K) wipes itself when the field is dropped after this.
        self.value.zeroize();
    }
}

impl ZeroizeOnDrop for CtrDrbg {}

impl fmt::Debug for CtrDrbg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // K and V are the secret; the counter and interval are all a log needs.
        f.debug_struct("CtrDrbg")
            .field("reseed_counter", &self.reseed_counter)
            .field("reseed_interval", &self.reseed_interval.get())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::MAX_BYTES_PER_REQUEST;

    const ENTROPY: [u8; 32] = [0x11; 32];
    const NONCE: [u8; 16] = [0x22; 16];

    fn drbg() -> CtrDrbg {
        CtrDrbg::instantiate(&ENTROPY, &NONCE, b"entropy-drbg unit test").unwrap()
    }

    /// The output the spec describes, one block at a time with `encrypt_block`: E(K, V+1),
    /// E(K, V+2), … truncated to `len`, from a copy of the instance's key schedule and V.
    fn one_block_at_a_time(drbg: &CtrDrbg, len: usize) -> Vec<u8> {
        let cipher = drbg.cipher.clone();
        let mut value = drbg.value;
        let mut out = Vec::with_capacity(len + BLOCKLEN_BYTES);
        while out.len() < len {
            value = value.wrapping_add(1);
            let mut block = Array::from(value.to_be_bytes());
            cipher.encrypt_block(&mut block);
            out.extend_from_slice(&block);
        }
        out.truncate(len);
        out
    }

    /// `Block_Cipher_df` as §10.3.2 writes it: S built in memory, each BCC chain run on its own.
    fn df_as_written(input_string: &[u8]) -> [u8; SEEDLEN_BYTES] {
        let bcc = |key: &Aes256Enc, data: &[u8]| {
            let mut chaining_value = Array::from([0u8; BLOCKLEN_BYTES]);
            for block in data.chunks_exact(BLOCKLEN_BYTES) {
                for (c, b) in chaining_value.iter_mut().zip(block) {
                    *c ^= b;
                }
                key.encrypt_block(&mut chaining_value);
            }
            chaining_value
        };
        let mut s = Vec::new();
        s.extend_from_slice(&u32::try_from(input_string.len()).unwrap().to_be_bytes());
        s.extend_from_slice(&48u32.to_be_bytes());
        s.extend_from_slice(input_string);
        s.push(0x80);
        while s.len() % BLOCKLEN_BYTES != 0 {
            s.push(0x00);
        }
        let k0: Vec<u8> = (0..32).collect();
        let k0 = Aes256Enc::new_from_slice(&k0).unwrap();
        let mut temp = Vec::new();
        for i in 0u32..3 {
            let mut iv_s = i.to_be_bytes().to_vec();
            iv_s.resize(BLOCKLEN_BYTES, 0);
            iv_s.extend_from_slice(&s);
            temp.extend_from_slice(&bcc(&k0, &iv_s));
        }
        let k = Aes256Enc::new_from_slice(&temp[..32]).unwrap();
        let mut x = Array::from(<[u8; 16]>::try_from(&temp[32..48]).unwrap());
        let mut out = Vec::new();
        while out.len() < SEEDLEN_BYTES {
            k.encrypt_block(&mut x);
            out.extend_from_slice(&x);
        }
        out.try_into().unwrap()
    }

    #[test]
    fn df_matches_the_spec_as_written_at_every_padding() {
        // S = 8 length bytes || input || 0x80, padded: inputs of 0 to 80 bytes put the 0x80 at
        // every position in a block, including the last (input length 7 mod 16, no padding).
        // The CAVP vectors have inputs of 32, 48 and 80 bytes only.
        let input: Vec<u8> = (0..80u8).map(|i| i.wrapping_mul(151).wrapping_add(7)).collect();
        for len in 0..=input.len() {
            let whole = &input[..len];
            let expected = df_as_written(whole);
            let mut out = [0; SEEDLEN_BYTES];
            block_cipher_df(&[whole], &mut out);
            assert_eq!(out, expected, "input of {len} bytes");
            // Split into pieces anywhere: the pieces are one concatenated input string.
            for cut in [0, 1, len / 2, len.saturating_sub(1), len] {
                let (a, b) = whole.split_at(cut.min(len));
                let mut pieces = [0; SEEDLEN_BYTES];
                block_cipher_df(&[a, &[], b], &mut pieces);
                assert_eq!(pieces, expected, "input of {len} bytes cut at {cut}");
            }
        }
    }

    /// Checks the working state against a K and V given in hex: V directly, K through the
    /// key schedule (both must encrypt a block alike).
    fn assert_state(drbg: &CtrDrbg, key: &str, value: &str) {
        let value = u128::from_be_bytes(hex::decode(value).unwrap().try_into().unwrap());
        assert_eq!(drbg.value, value);
        let expected = Aes256Enc::new_from_slice(&hex::decode(key).unwrap()).unwrap();
        let (mut a, mut b) = (Array::from([0x3c; 16]), Array::from([0x3c; 16]));
        drbg.cipher.encrypt_block(&mut a);
        expected.encrypt_block(&mut b);
        assert_eq!(a, b);
    }

    #[test]
    fn state_after_each_step_matches_cavp_intermediate_values() {
        // drbgvectors_no_reseed/CTR_DRBG.txt (the CAVP file with intermediate values, not kept
        // in testdata/), [AES-256 use df], COUNT = 0: K and V after instantiate and after each
        // generate call. The CAVP test in tests/cavp.rs sees only the final output.
        let entropy =
            hex::decode("36401940fa8b1fba91a1661f211d78a0b9389a74e5bccfece8d766af1a6d3b14")
                .unwrap();
        let nonce = hex::decode("496f25b0f1301b4f501be30380a137eb").unwrap();
        let mut drbg = CtrDrbg::instantiate(&entropy, &nonce, &[]).unwrap();
        assert_state(
            &drbg,
            "3363d9000e6db47c16d3fc65f2872c08a35f99b2d174afa537a66ec153052d98",
            "9ee8d2e9c618ccbb8e66b5eb5333dce1",
        );
        let mut out = [0; 64];
        drbg.generate(&mut out, &[]).unwrap();
        assert_state(
            &drbg,
            "b1dff09c816af6d4b2111fe63c4507cb196154f8c59957a94a2b641a7c16cc01",
            "69eec01b2dd4ff3aab5fac9467f54485",
        );
        drbg.generate(&mut out, &[]).unwrap();
        assert_state(
            &drbg,
            "33a1f160b0bde1dd55fc314c3d1620c0581ace8b32f062fb1ed54cdecdc17694",
            "f537c07f36573a26b3f55c8b9f7246d1",
        );
        assert_eq!(
            hex::encode(out),
            "5862eb38bd558dd978a696e6df164782ddd887e7e9a6c9f3f1fbafb78941b535\
             a64912dfd224c6dc7454e5250b3d97165e16260c2faf1cc7735cb75fb4f07e1d"
        );
    }

    #[test]
    fn batched_output_is_the_counter_blocks_encrypted_one_at_a_time() {
        // Lengths around the block and the batch: less than a batch, a partial block, whole
        // batches with and without a partial one, and the largest request.
        let batch = BATCH_BLOCKS * BLOCKLEN_BYTES;
        for len in [0, 1, 15, 16, 17, 127, 128, 129, 1000, batch - 1, batch, batch + 1]
            .into_iter()
            .chain([2 * batch + 17, MAX_BYTES_PER_REQUEST])
        {
            let mut drbg = drbg();
            let start = drbg.value;
            let expected = one_block_at_a_time(&drbg, len);
            let mut out = vec![0; len];
            drbg.fill(&mut out);
            assert_eq!(out, expected, "{len} bytes");
            // V advanced by one per block, a partial block included.
            let blocks = u128::try_from(len.div_ceil(BLOCKLEN_BYTES)).unwrap();
            assert_eq!(drbg.value, start.wrapping_add(blocks));
        }
    }

    #[test]
    fn counter_wraps_modulo_two_to_the_128() {
        let mut drbg = drbg();
        drbg.value = u128::MAX - 2;
        let expected = one_block_at_a_time(&drbg, 80);
        let mut out = [0; 80];
        drbg.fill(&mut out);
        assert_eq!(out[..], expected[..]);
        assert_eq!(drbg.value, 2);
    }

    #[test]
    fn refused_calls_leave_v_as_it_was() {
        // The contract checks the output afterwards; this checks the state itself.
        let mut refused = drbg();
        let mut too_big = vec![0; MAX_BYTES_PER_REQUEST + 1];
        assert!(refused.generate(&mut too_big, b"x").is_err());
        assert!(refused.reseed(&[0; 8], b"y").is_err());
        assert_eq!(refused.value, drbg().value);
        let interval = ReseedInterval::new(1).unwrap();
        let mut spent =
            CtrDrbg::instantiate_with_reseed_interval(&ENTROPY, &NONCE, &[], interval).unwrap();
        let mut out = [0; 32];
        spent.generate(&mut out, &[]).unwrap();
        let value = spent.value;
        assert!(spent.generate(&mut out, &[]).is_err(), "past the reseed interval");
        assert_eq!(spent.value, value, "a refused call leaves V as it was");
    }

    crate::contract::mechanism_contract!(crate::CtrDrbg);

    #[test]
    fn debug_shows_no_key_material() {
        let drbg = drbg();
        let shown = format!("{drbg:?}");
        assert_eq!(shown, "CtrDrbg { reseed_counter: 1, reseed_interval: 281474976710656, .. }");
        let pretty = format!("{drbg:#?}");
        let value = drbg.value.to_be_bytes();
        let hex: String = value.iter().map(|b| format!("{b:02x}")).collect();
        for text in [&shown, &pretty] {
            assert!(!text.contains(&hex));
            assert!(!text.contains(&format!("{value:?}")));
            assert!(!text.contains(&drbg.value.to_string()));
            assert!(!text.contains("Aes256"));
        }
    }
}
