//! A draw's whole life: signed, logged, proven, opened, audited; and every kind of tampering
//! refused.

use entropy_receipts::verify::{
    audit_key, open_commitment, verify_consistency, verify_inclusion, verify_receipt,
    verify_receipt_bytes,
};
use entropy_receipts::{
    Commitment, KeyNameDigest, LogConfig, LogReader, ReceiptLog, ReceiptSigner, Rpc, Salt,
    ServedValues, SignedReceipt, SignedTreeHead, SyncPolicy, VerifyError,
};

use crate::receipt;

struct Draw {
    receipt: SignedReceipt,
    values: Vec<i64>,
    salt: Salt,
}

fn draw(log: &ReceiptLog, signer: &ReceiptSigner, key: &str, values: Vec<i64>) -> Draw {
    let salt = Salt::random().unwrap();
    let commitment = Commitment::commit(ServedValues::Integers(&values), &salt);
    let rpc = Rpc::GetIntegers { min: 1, max: 49, count: values.len() as u32 };
    let appended = log
        .append_with(|serial| signer.sign(receipt(signer, serial, key, rpc, commitment)))
        .unwrap();
    Draw { receipt: appended.receipt, values, salt }
}

fn flip(bytes: &[u8], bit: usize) -> Vec<u8> {
    let mut b = bytes.to_vec();
    b[bit / 8] ^= 1 << (bit % 8);
    b
}

#[test]
fn a_lottery_draw_is_verified_end_to_end_and_a_redraw_shows_in_the_audit() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _) =
        ReceiptLog::open(&LogConfig { dir: dir.path().to_owned(), sync: SyncPolicy::Group })
            .unwrap();
    let signer = ReceiptSigner::from_seed(&[42; 32]);
    let pk = signer.public_key().clone();

    let first = draw(&log, &signer, "lottery", vec![3, 11, 19, 27, 38, 45]);
    let other = draw(&log, &signer, "someone-else", vec![1]);
    let head_before = log.signed_head(&signer, 1_000).unwrap();
    // The operator did not like the numbers and drew again: a second receipt, in the log.
    let redraw = draw(&log, &signer, "lottery", vec![1, 2, 3, 4, 5, 6]);
    let head = log.signed_head(&signer, 2_000).unwrap();
    assert_eq!((head_before.head.size, head.head.size), (2, 3));

    // The caller's checks, offline.
    for d in [&first, &other, &redraw] {
        let r = verify_receipt(&d.receipt, &pk).unwrap();
        open_commitment(r, ServedValues::Integers(&d.values), &d.salt).unwrap();
        let proof = log.inclusion_proof(r.serial, head.head.size).unwrap();
        verify_inclusion(&d.receipt, &proof, &head, &pk).unwrap();
        // Served bytes round-trip.
        assert_eq!(verify_receipt_bytes(&d.receipt.to_bytes(), &pk).unwrap(), d.receipt);
    }
    let proof = log.consistency_proof(2, 3).unwrap();
    verify_consistency(&head_before, &head, &proof, &pk).unwrap();

    // The auditor's listing: both lottery draws, so the redraw is visible.
    let digest = KeyNameDigest::of("lottery");
    let listed =
        audit_key(LogReader::open(dir.path()).unwrap(), &head, &pk, &digest, 0..u64::MAX).unwrap();
    assert_eq!(listed.iter().map(|e| e.serial).collect::<Vec<_>>(), vec![0, 2]);
    assert_eq!(listed[1].receipt, redraw.receipt);
    let listed =
        audit_key(LogReader::open(dir.path()).unwrap(), &head, &pk, &digest, 1..2).unwrap();
    assert!(listed.is_empty());
    // Against the earlier head, only what it covers.
    let listed =
        audit_key(LogReader::open(dir.path()).unwrap(), &head_before, &pk, &digest, 0..u64::MAX)
            .unwrap();
    assert_eq!(listed.len(), 1);
}

#[test]
fn tampered_receipts_heads_proofs_and_logs_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _) =
        ReceiptLog::open(&LogConfig { dir: dir.path().to_owned(), sync: SyncPolicy::EveryAppend })
            .unwrap();
    let signer = ReceiptSigner::from_seed(&[42; 32]);
    let pk = signer.public_key().clone();
    let draws: Vec<Draw> = (0..5).map(|i| draw(&log, &signer, "k", vec![i, i + 1])).collect();
    let head = log.signed_head(&signer, 5).unwrap();
    let old_head = {
        // A head of the first 3, signed now (the log signs the whole log: rebuild by hand).
        let root = log.root(3).unwrap();
        entropy_receipts::TreeHead { size: 3, root, timestamp_unix_ms: 3, key_id: signer.key_id() }
            .sign(&signer)
    };

    // Receipt bytes: every flipped bit refused (decode or signature).
    let d = &draws[1];
    let bytes = d.receipt.to_bytes();
    for bit in 0..bytes.len() * 8 {
        assert!(verify_receipt_bytes(&flip(&bytes, bit), &pk).is_err(), "bit {bit}");
    }
    // Another key's public key.
    let stranger = ReceiptSigner::from_seed(&[43; 32]);
    assert_eq!(verify_receipt(&d.receipt, stranger.public_key()), Err(VerifyError::WrongKey));

    // Commitment: other values, other salt.
    let r = &d.receipt.receipt;
    assert_eq!(
        open_commitment(r, ServedValues::Integers(&[9, 9]), &d.salt),
        Err(VerifyError::CommitmentMismatch)
    );
    assert_eq!(
        open_commitment(r, ServedValues::Integers(&d.values), &draws[2].salt),
        Err(VerifyError::CommitmentMismatch)
    );

    // Inclusion: a flipped proof bit, another receipt's proof, another head.
    let proof = log.inclusion_proof(1, 5).unwrap();
    verify_inclusion(&d.receipt, &proof, &head, &pk).unwrap();
    for i in 0..proof.len() {
        let mut bad = proof.clone();
        bad[i][0] ^= 0x80;
        assert!(matches!(
            verify_inclusion(&d.receipt, &bad, &head, &pk),
            Err(VerifyError::BadProof(_))
        ));
    }
    let proof_of_2 = log.inclusion_proof(2, 5).unwrap();
    assert!(verify_inclusion(&d.receipt, &proof_of_2, &head, &pk).is_err());
    assert!(verify_inclusion(&d.receipt, &proof, &old_head, &pk).is_err());

    // Heads: every flipped bit refused; a head re-signed by another key refused.
    let head_bytes = head.to_bytes();
    for bit in 0..head_bytes.len() * 8 {
        let refused = match SignedTreeHead::from_bytes(&flip(&head_bytes, bit)) {
            Err(_) => true,
            Ok(h) => verify_inclusion(&d.receipt, &proof, &h, &pk).is_err(),
        };
        assert!(refused, "head bit {bit}");
    }
    let forged = head.head.sign(&stranger);
    assert_eq!(verify_inclusion(&d.receipt, &proof, &forged, &pk), Err(VerifyError::WrongKey));

    // Consistency: the right proof verifies; flipped, or heads swapped, does not.
    let cproof = log.consistency_proof(3, 5).unwrap();
    verify_consistency(&old_head, &head, &cproof, &pk).unwrap();
    for i in 0..cproof.len() {
        let mut bad = cproof.clone();
        bad[i][31] ^= 1;
        assert!(verify_consistency(&old_head, &head, &bad, &pk).is_err());
    }
    assert!(verify_consistency(&head, &old_head, &cproof, &pk).is_err());

    // A rewritten log (the gateway re-signs a receipt with other contents, the same key) is
    // refused by an audit against a head it published before.
    drop(log);
    let copy = tempfile::tempdir().unwrap();
    let mut records = Vec::new();
    for item in LogReader::open(dir.path()).unwrap() {
        records.push(item.unwrap().1);
    }
    let mut rewritten = records[1].receipt.clone();
    rewritten.commitment = Commitment([0; 32]);
    records[1] = signer.sign(rewritten).unwrap();
    {
        let (w, _) =
            ReceiptLog::open(&LogConfig { dir: copy.path().to_owned(), sync: SyncPolicy::Group })
                .unwrap();
        for r in &records {
            w.append_with(|_| Ok(r.clone())).unwrap();
        }
    }
    let digest = KeyNameDigest::of("k");
    let err =
        audit_key(LogReader::open(copy.path()).unwrap(), &head, &pk, &digest, 0..5).unwrap_err();
    assert!(matches!(err, VerifyError::LogMismatch(_)), "{err}");
    // A log missing its last receipt: refused too.
    let log_file = dir.path().join("receipts.log");
    let len = std::fs::metadata(&log_file).unwrap().len();
    let last = records[4].to_bytes().len() as u64 + 8;
    let f = std::fs::OpenOptions::new().write(true).open(&log_file).unwrap();
    f.set_len(len - last).unwrap();
    let err =
        audit_key(LogReader::open(dir.path()).unwrap(), &head, &pk, &digest, 0..5).unwrap_err();
    assert!(matches!(err, VerifyError::LogMismatch(_)), "{err}");
}
