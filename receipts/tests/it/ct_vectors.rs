//! RFC 6962 / RFC 9162 known answers from an independent implementation.
//!
//! Source: Google's transparency-dev/merkle repository (Go), files `testonly/constants.go`
//! (leaf inputs, node hashes and roots of the trees of 0..=8 leaves) and `proof/verify_test.go`
//! (inclusion and consistency proofs on that tree; its leaf numbers are 1-based, converted to
//! 0-based indexes here). The same vectors go back to certificate-transparency's C++
//! `merkle_tree_test.cc`.

use entropy_receipts::merkle::{
    self, MemoryTree, consistency_proof, empty_root, inclusion_proof, leaf_hash, root,
    verify_consistency, verify_inclusion,
};

const LEAVES: [&str; 8] = [
    "",
    "00",
    "10",
    "2021",
    "3031",
    "40414243",
    "5051525354555657",
    "606162636465666768696a6b6c6d6e6f",
];

const ROOTS: [&str; 8] = [
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
];

/// (leaf index, tree size, proof)
const INCLUSION: [(u64, u64, &[&str]); 4] = [
    (
        0,
        8,
        &[
            "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
        ],
    ),
    (
        5,
        8,
        &[
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
    (2, 3, &["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"]),
    (
        1,
        5,
        &[
            "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        ],
    ),
];

/// (old size, new size, proof)
const CONSISTENCY: [(u64, u64, &[&str]); 5] = [
    (1, 1, &[]),
    (
        1,
        8,
        &[
            "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
        ],
    ),
    (
        6,
        8,
        &[
            "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
    (
        2,
        5,
        &[
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        ],
    ),
    (
        6,
        7,
        &[
            "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
];

fn h(s: &str) -> merkle::Hash {
    hex::decode(s).unwrap().try_into().unwrap()
}

fn hs(v: &[&str]) -> Vec<merkle::Hash> {
    v.iter().map(|s| h(s)).collect()
}

fn tree() -> MemoryTree {
    MemoryTree { leaves: LEAVES.iter().map(|l| leaf_hash(&hex::decode(l).unwrap())).collect() }
}

fn ok<T>(r: Result<T, std::convert::Infallible>) -> T {
    r.unwrap_or_else(|e| match e {})
}

#[test]
fn roots_of_every_prefix() {
    let t = tree();
    assert_eq!(
        hex::encode(empty_root()),
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
    for (i, want) in ROOTS.iter().enumerate() {
        assert_eq!(hex::encode(ok(root(&t, i as u64 + 1))), *want, "size {}", i + 1);
    }
}

#[test]
fn inclusion_proofs_are_generated_and_verified_as_published() {
    let t = tree();
    for (index, size, proof) in INCLUSION {
        let want = hs(proof);
        assert_eq!(ok(inclusion_proof(&t, index, size)), want, "leaf {index} of {size}");
        verify_inclusion(
            index,
            size,
            &t.leaves[index as usize],
            &want,
            &h(ROOTS[size as usize - 1]),
        )
        .unwrap();
    }
}

#[test]
fn consistency_proofs_are_generated_and_verified_as_published() {
    let t = tree();
    for (old, new, proof) in CONSISTENCY {
        let want = hs(proof);
        assert_eq!(ok(consistency_proof(&t, old, new)), want, "{old} -> {new}");
        verify_consistency(
            old,
            new,
            &h(ROOTS[old as usize - 1]),
            &h(ROOTS[new as usize - 1]),
            &want,
        )
        .unwrap();
    }
}
