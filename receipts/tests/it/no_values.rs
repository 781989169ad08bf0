//! No served value ever appears in a receipt or in the log's files: the commitment hides them.
//! The scan looks for every 8-byte window of every value's encodings (raw bytes; integers and
//! floats big- and little-endian; UUID bytes), and is first shown to find a planted value.

use std::collections::HashSet;

use entropy_receipts::{
    Commitment, LogConfig, ReceiptLog, ReceiptSigner, Rpc, Salt, ServedValues, SyncPolicy,
};

use crate::receipt;

fn windows(values: &[Vec<u8>]) -> HashSet<[u8; 8]> {
    values.iter().flat_map(|v| v.windows(8).map(|w| <[u8; 8]>::try_from(w).unwrap())).collect()
}

/// The offset of the first 8-byte window of `hay` that is one of `needles`.
fn contains_any(hay: &[u8], needles: &HashSet<[u8; 8]>) -> Option<usize> {
    hay.windows(8).position(|w| needles.contains(<&[u8; 8]>::try_from(w).unwrap()))
}

#[test]
fn no_served_value_is_in_a_receipt_or_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _) =
        ReceiptLog::open(&LogConfig { dir: dir.path().to_owned(), sync: SyncPolicy::Group })
            .unwrap();
    let signer = ReceiptSigner::from_seed(&[1; 32]);
    let mut encodings: Vec<Vec<u8>> = Vec::new();
    let mut receipts = Vec::new();

    for i in 0..50u32 {
        let mut bytes = [0u8; 64];
        getrandom::fill(&mut bytes).unwrap();
        let ints: Vec<i64> =
            bytes.chunks_exact(8).map(|c| i64::from_be_bytes(c.try_into().unwrap())).collect();
        let floats: Vec<f64> =
            ints.iter().map(|x| (*x as u64 >> 11) as f64 / (1u64 << 53) as f64).collect();
        let uuids: Vec<[u8; 16]> = bytes.chunks_exact(16).map(|c| c.try_into().unwrap()).collect();
        let (values, rpc) = match i % 4 {
            0 => (ServedValues::Bytes(&bytes), Rpc::GetRandom { num_bytes: 64 }),
            1 => (
                ServedValues::Integers(&ints),
                Rpc::GetIntegers { min: i64::MIN, max: i64::MAX, count: 8 },
            ),
            2 => (ServedValues::Floats(&floats), Rpc::GetFloats { count: 8 }),
            _ => (ServedValues::Uuids(&uuids), Rpc::GetUuids { count: 4 }),
        };
        encodings.push(bytes.to_vec());
        for x in &ints {
            encodings.push(x.to_be_bytes().to_vec());
            encodings.push(x.to_le_bytes().to_vec());
        }
        for f in &floats {
            encodings.push(f.to_be_bytes().to_vec());
            encodings.push(f.to_le_bytes().to_vec());
        }
        let salt = Salt::random().unwrap();
        let c = Commitment::commit(values, &salt);
        let a = log.append_with(|s| signer.sign(receipt(&signer, s, "scan", rpc, c))).unwrap();
        receipts.push(a.receipt.to_bytes());
    }
    let needles = windows(&encodings);

    // The scan finds a value when one is there.
    let mut planted = receipts[0].clone();
    planted.extend_from_slice(&encodings[3]);
    assert!(contains_any(&planted, &needles).is_some());

    for r in &receipts {
        assert_eq!(contains_any(r, &needles), None);
    }
    drop(log);
    for file in ["receipts.log", "leaves.bin"] {
        let bytes = std::fs::read(dir.path().join(file)).unwrap();
        assert_eq!(contains_any(&bytes, &needles), None, "{file}");
    }
}
