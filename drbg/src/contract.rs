//! The tests every mechanism must pass, written once: the bounds and their messages, refused
//! calls that change nothing, the reseed interval, output that is a prefix of longer output, and
//! different seeds giving different output. Each mechanism's test module invokes
//! [`mechanism_contract!`] with its type, and keeps the tests of its own internals (its state,
//! its `Debug`, its known-answer steps) beside it.

/// The shared tests for the mechanism `$drbg`, which has the crate's common API
/// (`instantiate`, `instantiate_with_reseed_interval`, `reseed`, `generate`, `reseed_counter`,
/// `reseed_interval`).
macro_rules! mechanism_contract {
    ($drbg:ty) => {
        mod contract {
            use proptest::prelude::*;

            use crate::error::DrbgError;
            use crate::limits::{MAX_BYTES_PER_REQUEST, MIN_ENTROPY_INPUT_BYTES, ReseedInterval};

            const ENTROPY: [u8; 32] = [0x11; 32];
            const NONCE: [u8; 16] = [0x22; 16];

            fn drbg() -> $drbg {
                <$drbg>::instantiate(&ENTROPY, &NONCE, b"entropy-drbg unit test").unwrap()
            }

            #[test]
            fn short_entropy_input_is_refused_with_the_bound_named() {
                let err = <$drbg>::instantiate(&[0; 16], &NONCE, &[]).unwrap_err();
                assert_eq!(err, DrbgError::EntropyInputTooShort { len: 16 });
                assert_eq!(
                    err.to_string(),
                    "entropy input is 16 bytes; SP 800-90A at 256-bit strength needs at least 32"
                );
                let mut drbg = drbg();
                let short = drbg.reseed(&[0; 31], &[]);
                assert_eq!(short, Err(DrbgError::EntropyInputTooShort { len: 31 }));
                assert!(<$drbg>::instantiate(&[0; MIN_ENTROPY_INPUT_BYTES], &NONCE, &[]).is_ok());
            }

            #[test]
            fn short_nonce_is_refused_unless_the_entropy_input_carries_it() {
                let err = <$drbg>::instantiate(&ENTROPY, &[0; 8], &[]).unwrap_err();
                assert_eq!(err, DrbgError::NonceTooShort { len: 8, entropy_input_len: 32 });
                let text = err.to_string();
                assert!(text.starts_with("nonce is 8 bytes with 32 bytes of entropy input;"));
                assert!(text.contains("at least 16 bytes, or at least 48 bytes"));
                assert!(<$drbg>::instantiate(&[0x33; 48], &[], &[]).is_ok());
            }

            #[test]
            fn request_over_two_to_the_19_bits_is_refused() {
                let mut drbg = drbg();
                let mut out = vec![0; MAX_BYTES_PER_REQUEST + 1];
                let err = drbg.generate(&mut out, &[]).unwrap_err();
                assert_eq!(err, DrbgError::RequestTooLarge { len: 65_537 });
                assert_eq!(
                    err.to_string(),
                    "request is for 65537 bytes; SP 800-90A allows at most 2^19 bits (65536 \
                     bytes) per generate call"
                );
                assert_eq!(drbg.reseed_counter(), 1, "a refused call counts for nothing");
                assert_eq!(drbg.generate(&mut out[..MAX_BYTES_PER_REQUEST], &[]), Ok(()));
                assert_eq!(drbg.reseed_counter(), 2);
            }

            #[test]
            fn refused_calls_leave_the_state_untouched() {
                let mut refused = drbg();
                let mut too_big = vec![0; MAX_BYTES_PER_REQUEST + 1];
                assert!(refused.generate(&mut too_big, b"x").is_err());
                assert!(refused.reseed(&[0; 8], b"y").is_err());
                let (mut a, mut b) = ([0; 64], [0; 64]);
                refused.generate(&mut a, &[]).unwrap();
                drbg().generate(&mut b, &[]).unwrap();
                assert_eq!(a, b);
            }

            #[test]
            fn generate_is_refused_past_the_reseed_interval_until_a_reseed() {
                let interval = ReseedInterval::new(3).unwrap();
                let mut drbg =
                    <$drbg>::instantiate_with_reseed_interval(&ENTROPY, &NONCE, &[], interval)
                        .unwrap();
                let mut out = [0; 32];
                for expected_counter in 2..=4 {
                    drbg.generate(&mut out, &[]).unwrap();
                    assert_eq!(drbg.reseed_counter(), expected_counter);
                }
                let err = drbg.generate(&mut out, &[]).unwrap_err();
                assert_eq!(err, DrbgError::ReseedRequired { interval: 3 });
                assert_eq!(
                    err.to_string(),
                    "reseed required: 3 generate calls since the last seeding reached the \
                     reseed interval"
                );
                assert_eq!(drbg.reseed_counter(), 4, "a refused call counts for nothing");
                drbg.reseed(&[0x44; 32], &[]).unwrap();
                assert_eq!(drbg.reseed_counter(), 1);
                assert_eq!(drbg.generate(&mut out, &[]), Ok(()));
            }

            #[test]
            fn default_interval_is_the_spec_maximum() {
                assert_eq!(drbg().reseed_interval(), ReseedInterval::MAX);
                assert_eq!(ReseedInterval::MAX.get(), 1 << 48);
            }

            #[test]
            fn additional_input_and_personalization_change_the_output() {
                let mut plain = [0; 64];
                drbg().generate(&mut plain, &[]).unwrap();
                let mut with_additional = [0; 64];
                drbg().generate(&mut with_additional, b"additional").unwrap();
                let mut personalized = [0; 64];
                <$drbg>::instantiate(&ENTROPY, &NONCE, b"another personalization")
                    .unwrap()
                    .generate(&mut personalized, &[])
                    .unwrap();
                assert_ne!(plain, with_additional);
                assert_ne!(plain, personalized);
            }

            #[test]
            fn output_of_any_length_is_a_prefix_of_longer_output() {
                // The same state gives the same prefix whatever the request's length, across
                // the block sizes of both mechanisms (16 and 32 bytes).
                let mut whole = [0; 300];
                drbg().generate(&mut whole, &[]).unwrap();
                for len in [0, 1, 15, 16, 17, 31, 32, 33, 95, 127, 128, 129, 255, 299] {
                    let mut part = vec![0; len];
                    drbg().generate(&mut part, &[]).unwrap();
                    assert_eq!(part, whole[..len]);
                }
            }

            proptest! {
                #[test]
                fn different_seeds_give_different_first_64_bytes(
                    entropy_a in proptest::collection::vec(any::<u8>(), 32..=64),
                    entropy_b in proptest::collection::vec(any::<u8>(), 32..=64),
                    nonce in proptest::collection::vec(any::<u8>(), 16..=32),
                ) {
                    prop_assume!(entropy_a != entropy_b);
                    let mut a = <$drbg>::instantiate(&entropy_a, &nonce, &[]).unwrap();
                    let mut b = <$drbg>::instantiate(&entropy_b, &nonce, &[]).unwrap();
                    let (mut out_a, mut out_b) = ([0; 64], [0; 64]);
                    a.generate(&mut out_a, &[]).unwrap();
                    b.generate(&mut out_b, &[]).unwrap();
                    prop_assert_ne!(out_a, out_b);
                }
            }
        }
    };
}

pub(crate) use mechanism_contract;
