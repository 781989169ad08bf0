//! `ReceiptLog::read_signed`, the listing an auditor pages through: every receipt in order,
//! across checkpoint groups and reopenings, within the page bounds, never past the size asked.

use entropy_receipts::{
    Commitment, LogConfig, LogReader, ReceiptLog, ReceiptSigner, Rpc, Salt, ServedValues,
    SyncPolicy,
};

use crate::receipt;

fn append(log: &ReceiptLog, signer: &ReceiptSigner, n: u64) {
    for i in 0..n {
        let salt = Salt::random().unwrap();
        let values = vec![i as i64];
        let commitment = Commitment::commit(ServedValues::Integers(&values), &salt);
        let rpc = Rpc::GetIntegers { min: 0, max: 1000, count: 1 };
        log.append_with(|serial| signer.sign(receipt(signer, serial, "k", rpc, commitment)))
            .unwrap();
    }
}

#[test]
fn pages_list_every_receipt_in_order_across_groups_and_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let signer = ReceiptSigner::from_seed(&[9; 32]);
    let config = LogConfig { dir: dir.path().to_owned(), sync: SyncPolicy::Group };
    let (log, _) = ReceiptLog::open(&config).unwrap();
    append(&log, &signer, 150);
    drop(log);
    // Reopened: the checkpoints are rebuilt from the file, then appends add more.
    let (log, _) = ReceiptLog::open(&config).unwrap();
    append(&log, &signer, 61);
    let size = log.size();
    assert_eq!(size, 211);
    let on_disk: Vec<Vec<u8>> =
        LogReader::open(dir.path()).unwrap().map(|r| r.unwrap().1.to_bytes()).collect();
    assert_eq!(on_disk.len(), 211);

    // Every start, several page shapes: the pages are the file's records, in order.
    for start in [0, 1, 63, 64, 65, 127, 128, 150, 200, 210] {
        for (count, bytes) in [(1, usize::MAX), (7, usize::MAX), (1000, usize::MAX), (1000, 1)] {
            let page = log.read_signed(start, size, (count, bytes)).unwrap();
            let want = if bytes == 1 { 1 } else { count.min((size - start) as usize) };
            assert_eq!(page.len(), want, "start {start} count {count} bytes {bytes}");
            for (i, r) in page.iter().enumerate() {
                assert_eq!(r, &on_disk[start as usize + i], "start {start} item {i}");
            }
        }
    }
    // A byte bound stops a page after the record that reaches it.
    let one = on_disk[0].len();
    assert_eq!(log.read_signed(0, size, (1000, 3 * one)).unwrap().len(), 3);
    // Never past the size asked, nor past the acknowledged receipts.
    assert_eq!(log.read_signed(0, 100, (1000, usize::MAX)).unwrap().len(), 100);
    assert!(log.read_signed(0, size, (1000, usize::MAX)).unwrap().len() == 211);
    assert!(log.read_signed(size, size, (10, usize::MAX)).unwrap().is_empty());
    assert!(log.read_signed(0, size + 1, (10, usize::MAX)).is_err());
    assert!(log.read_signed(size + 1, size, (10, usize::MAX)).is_err());
}

/// `audit_listing` over the pages is `audit_key` over the file: the same listing, and a page
/// left out, a receipt repeated, or two swapped is refused.
#[test]
fn an_audit_of_the_pages_equals_the_audit_of_the_file_and_refuses_gaps() {
    use entropy_receipts::KeyNameDigest;
    use entropy_receipts::verify::{audit_key, audit_listing};

    let dir = tempfile::tempdir().unwrap();
    let signer = ReceiptSigner::from_seed(&[3; 32]);
    let config = LogConfig { dir: dir.path().to_owned(), sync: SyncPolicy::EveryAppend };
    let (log, _) = ReceiptLog::open(&config).unwrap();
    append(&log, &signer, 70);
    let head = log.signed_head(&signer, 1).unwrap();
    let key = signer.public_key();
    let digest = KeyNameDigest::of("k");
    let mut pages = Vec::new();
    let mut start = 0;
    while start < head.head.size {
        let page = log.read_signed(start, head.head.size, (16, usize::MAX)).unwrap();
        start += page.len() as u64;
        pages.extend(page);
    }
    let from_file = audit_key(LogReader::open(dir.path()).unwrap(), &head, key, &digest, 5..60);
    let from_pages = audit_listing(pages.clone(), &head, key, &digest, 5..60);
    let serials = |r: Vec<entropy_receipts::verify::AuditEntry>| -> Vec<u64> {
        r.into_iter().map(|e| e.serial).collect()
    };
    assert_eq!(serials(from_file.unwrap()), (5..60).collect::<Vec<_>>());
    assert_eq!(serials(from_pages.unwrap()), (5..60).collect::<Vec<_>>());

    let mut gap = pages.clone();
    gap.remove(30);
    assert!(audit_listing(gap, &head, key, &digest, 0..70).is_err(), "a receipt left out");
    let mut repeated = pages.clone();
    repeated[31] = repeated[30].clone();
    assert!(audit_listing(repeated, &head, key, &digest, 0..70).is_err(), "a receipt repeated");
    let mut swapped = pages.clone();
    swapped.swap(1, 2);
    assert!(audit_listing(swapped, &head, key, &digest, 0..70).is_err(), "two swapped");
    let short: Vec<Vec<u8>> = pages[..69].to_vec();
    assert!(audit_listing(short, &head, key, &digest, 0..70).is_err(), "the last one missing");
}
