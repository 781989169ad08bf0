//! RFC 9162 Merkle tree hashing (the same as RFC 6962's): tree heads, inclusion and consistency
//! proofs, and their verification.
//!
//! Hashing (RFC 9162 section 2.1.1): a leaf is SHA-256(0x00 || data), an interior node
//! SHA-256(0x01 || left || right), the empty tree SHA-256(""). A tree of n leaves splits at k,
//! the largest power of two below n: the left subtree is perfect (2^j leaves), the right holds
//! the rest. So every subtree a root or proof needs is either perfect and aligned (it starts at
//! a multiple of its size) or splits into such ones. Storage answers only for perfect aligned
//! subtrees ([`Subtrees::perfect`]); this file composes everything else from them, so the log can
//! cache the large perfect subtrees and hash the small ones from its leaf file.
//!
//! Proof generation follows RFC 9162 sections 2.1.3.1 (PATH) and 2.1.4.1 (SUBPROOF), and
//! verification sections 2.1.3.2 and 2.1.4.2, step by step.

use sha2::{Digest as _, Sha256};

/// A SHA-256 digest: a leaf hash, a node hash, a root.
pub type Hash = [u8; 32];

/// SHA-256(0x00 || data).
pub fn leaf_hash(data: &[u8]) -> Hash {
    let mut h = Sha256::new();
    h.update([0u8]);
    h.update(data);
    h.finalize().into()
}

/// SHA-256(0x01 || left || right).
pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    let mut h = Sha256::new();
    h.update([1u8]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// The root of the empty tree: SHA-256 of nothing.
pub fn empty_root() -> Hash {
    Sha256::digest([]).into()
}

/// Where a tree's perfect subtrees come from.
pub trait Subtrees {
    /// What reading them can fail with.
    type Error;
    /// The hash of the perfect subtree of 2^`level` leaves starting at leaf `start`, a multiple
    /// of 2^`level`. Called only for subtrees inside the tree size the caller asked about.
    fn perfect(&self, start: u64, level: u32) -> Result<Hash, Self::Error>;
}

/// The largest power of two strictly below `n` (n >= 2).
fn split(n: u64) -> u64 {
    1u64 << (63 - (n - 1).leading_zeros())
}

/// MTH(D[lo:hi]) for `lo < hi`, from perfect subtrees.
pub fn subtree_hash<S: Subtrees>(s: &S, lo: u64, hi: u64) -> Result<Hash, S::Error> {
    let n = hi - lo;
    if n.is_power_of_two() && lo.is_multiple_of(n) {
        return s.perfect(lo, n.trailing_zeros());
    }
    let k = split(n);
    Ok(node_hash(&subtree_hash(s, lo, lo + k)?, &subtree_hash(s, lo + k, hi)?))
}

/// The root of the first `size` leaves.
pub fn root<S: Subtrees>(s: &S, size: u64) -> Result<Hash, S::Error> {
    if size == 0 { Ok(empty_root()) } else { subtree_hash(s, 0, size) }
}

/// The inclusion proof of leaf `index` in the tree of the first `size` leaves (`index < size`):
/// RFC 9162 PATH(m, D[n]), nearest sibling first.
pub fn inclusion_proof<S: Subtrees>(s: &S, index: u64, size: u64) -> Result<Vec<Hash>, S::Error> {
    let mut proof = Vec::new();
    path(s, index, 0, size, &mut proof)?;
    Ok(proof)
}

fn path<S: Subtrees>(s: &S, m: u64, lo: u64, hi: u64, out: &mut Vec<Hash>) -> Result<(), S::Error> {
    let n = hi - lo;
    if n <= 1 {
        return Ok(());
    }
    let k = split(n);
    if m - lo < k {
        path(s, m, lo, lo + k, out)?;
        out.push(subtree_hash(s, lo + k, hi)?);
    } else {
        path(s, m, lo + k, hi, out)?;
        out.push(subtree_hash(s, lo, lo + k)?);
    }
    Ok(())
}

/// The consistency proof from the tree of the first `old` leaves to that of the first `new`
/// (`old <= new`): RFC 9162 PROOF(m, D[n]); empty when `old` is 0 or equals `new`.
pub fn consistency_proof<S: Subtrees>(s: &S, old: u64, new: u64) -> Result<Vec<Hash>, S::Error> {
    let mut proof = Vec::new();
    if old > 0 && old < new {
        subproof(s, old, 0, new, true, &mut proof)?;
    }
    Ok(proof)
}

fn subproof<S: Subtrees>(
    s: &S,
    m: u64,
    lo: u64,
    hi: u64,
    whole: bool,
    out: &mut Vec<Hash>,
) -> Result<(), S::Error> {
    let n = hi - lo;
    if m == n {
        if !whole {
            out.push(subtree_hash(s, lo, hi)?);
        }
        return Ok(());
    }
    let k = split(n);
    if m <= k {
        subproof(s, m, lo, lo + k, whole, out)?;
        out.push(subtree_hash(s, lo + k, hi)?);
    } else {
        subproof(s, m - k, lo + k, hi, false, out)?;
        out.push(subtree_hash(s, lo, lo + k)?);
    }
    Ok(())
}

/// Why a proof does not verify.
pub type ProofError = &'static str;

/// RFC 9162 section 2.1.3.2: does `proof` show the leaf with `leaf_hash` at `index` in the tree
/// of `size` leaves with root `root`?
pub fn verify_inclusion(
    index: u64,
    size: u64,
    leaf_hash: &Hash,
    proof: &[Hash],
    root: &Hash,
) -> Result<(), ProofError> {
    if index >= size {
        return Err("leaf index is not below the tree size");
    }
    let (mut fn_, mut sn) = (index, size - 1);
    let mut r = *leaf_hash;
    for p in proof {
        if sn == 0 {
            return Err("proof is longer than the path");
        }
        if fn_ & 1 == 1 || fn_ == sn {
            r = node_hash(p, &r);
            if fn_ & 1 == 0 {
                while fn_ & 1 == 0 && fn_ != 0 {
                    fn_ >>= 1;
                    sn >>= 1;
                }
            }
        } else {
            r = node_hash(&r, p);
        }
        fn_ >>= 1;
        sn >>= 1;
    }
    if sn != 0 {
        return Err("proof is shorter than the path");
    }
    if r != *root {
        return Err("proof leads to another root");
    }
    Ok(())
}

/// RFC 9162 section 2.1.4.2: does `proof` show that the tree of `old` leaves with root
/// `old_root` is a prefix of the tree of `new` leaves with root `new_root`? For `old == new`
/// the proof must be empty and the roots equal; for `old == 0` the proof must be empty and
/// `old_root` the empty tree's root.
pub fn verify_consistency(
    old: u64,
    new: u64,
    old_root: &Hash,
    new_root: &Hash,
    proof: &[Hash],
) -> Result<(), ProofError> {
    if old > new {
        return Err("the old tree is larger than the new one");
    }
    if old == 0 || old == new {
        if !proof.is_empty() {
            return Err("a proof where none is due");
        }
        let expected = if old == 0 { empty_root() } else { *new_root };
        return if *old_root == expected { Ok(()) } else { Err("roots differ") };
    }
    let Some((first, rest)) = proof.split_first() else {
        return Err("empty proof");
    };
    // When the old tree is perfect its root is the path's start and the proof omits it.
    let (start, rest) = if old.is_power_of_two() { (old_root, proof) } else { (first, rest) };
    let (mut fn_, mut sn) = (old - 1, new - 1);
    while fn_ & 1 == 1 {
        fn_ >>= 1;
        sn >>= 1;
    }
    let (mut fr, mut sr) = (*start, *start);
    for c in rest {
        if sn == 0 {
            return Err("proof is longer than the path");
        }
        if fn_ & 1 == 1 || fn_ == sn {
            fr = node_hash(c, &fr);
            sr = node_hash(c, &sr);
            if fn_ & 1 == 0 {
                while fn_ & 1 == 0 && fn_ != 0 {
                    fn_ >>= 1;
                    sn >>= 1;
                }
            }
        } else {
            sr = node_hash(&sr, c);
        }
        fn_ >>= 1;
        sn >>= 1;
    }
    if sn != 0 {
        return Err("proof is shorter than the path");
    }
    if fr != *old_root {
        return Err("proof leads to another old root");
    }
    if sr != *new_root {
        return Err("proof leads to another new root");
    }
    Ok(())
}

/// A tree held in memory, as leaf hashes: the reference the log is tested against, and a
/// verifier's tool for small trees.
#[derive(Debug, Clone, Default)]
pub struct MemoryTree {
    /// The leaf hashes, in order.
    pub leaves: Vec<Hash>,
}

impl Subtrees for MemoryTree {
    type Error = std::convert::Infallible;
    fn perfect(&self, start: u64, level: u32) -> Result<Hash, Self::Error> {
        let lo = usize::try_from(start).unwrap_or(usize::MAX);
        Ok(perfect_of(&self.leaves[lo..lo + (1usize << level)]))
    }
}

/// The root of a perfect run of leaf hashes (a power-of-two count), bottom-up in a small buffer.
pub fn perfect_of(leaves: &[Hash]) -> Hash {
    let mut level: Vec<Hash> = leaves.to_vec();
    while level.len() > 1 {
        level = level.chunks_exact(2).map(|p| node_hash(&p[0], &p[1])).collect();
    }
    level[0]
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// RFC 9162's MTH written as its definition reads, on leaf data, independently of the
    /// perfect-subtree decomposition above.
    fn mth(d: &[Vec<u8>]) -> Hash {
        match d.len() {
            0 => empty_root(),
            1 => leaf_hash(&d[0]),
            n => {
                let k = usize::try_from(split(n as u64)).unwrap();
                node_hash(&mth(&d[..k]), &mth(&d[k..]))
            }
        }
    }

    fn tree(n: usize) -> (Vec<Vec<u8>>, MemoryTree) {
        let data: Vec<Vec<u8>> = (0..n).map(|i| (i as u64).to_be_bytes().to_vec()).collect();
        let t = MemoryTree { leaves: data.iter().map(|d| leaf_hash(d)).collect() };
        (data, t)
    }

    fn ok<T>(r: Result<T, std::convert::Infallible>) -> T {
        match r {
            Ok(v) => v,
            Err(e) => match e {},
        }
    }

    #[test]
    fn roots_match_the_definition() {
        for n in 0..70 {
            let (data, t) = tree(n);
            assert_eq!(ok(root(&t, n as u64)), mth(&data), "n = {n}");
        }
    }

    #[test]
    fn consistency_edge_cases() {
        let (_, t) = tree(5);
        let r5 = ok(root(&t, 5));
        let r0 = empty_root();
        verify_consistency(0, 5, &r0, &r5, &[]).unwrap();
        assert!(verify_consistency(0, 5, &r5, &r5, &[]).is_err());
        verify_consistency(5, 5, &r5, &r5, &[]).unwrap();
        assert!(verify_consistency(5, 5, &r5, &r5, &[r5]).is_err());
        assert!(verify_consistency(5, 4, &r5, &r5, &[]).is_err());
        let r3 = ok(root(&t, 3));
        assert!(verify_consistency(3, 5, &r3, &r5, &[]).is_err());
        assert!(verify_inclusion(0, 0, &t.leaves[0], &[], &r0).is_err());
    }

    fn flip(h: &mut Hash, bit: usize) {
        h[bit / 8 % 32] ^= 1 << (bit % 8);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// For every size n and leaf m < n: the proof verifies; any flipped bit in it, another
        /// index, another size, a dropped or an extra element, or another leaf does not.
        #[test]
        fn inclusion_proofs_verify_and_tampered_ones_do_not(n in 1u64..300, m in any::<prop::sample::Index>(), bit in 0usize..256) {
            let (_, t) = tree(n as usize);
            let m = m.index(n as usize) as u64;
            let r = ok(root(&t, n));
            let leaf = t.leaves[m as usize];
            let proof = ok(inclusion_proof(&t, m, n));
            prop_assert!(verify_inclusion(m, n, &leaf, &proof, &r).is_ok());

            for i in 0..proof.len() {
                let mut bad = proof.clone();
                flip(&mut bad[i], bit);
                prop_assert!(verify_inclusion(m, n, &leaf, &bad, &r).is_err());
            }
            let mut bad_leaf = leaf;
            flip(&mut bad_leaf, bit);
            prop_assert!(verify_inclusion(m, n, &bad_leaf, &proof, &r).is_err());
            if !proof.is_empty() {
                prop_assert!(verify_inclusion(m, n, &leaf, &proof[1..], &r).is_err());
                prop_assert!(verify_inclusion(m, n, &leaf, &proof[..proof.len() - 1], &r).is_err());
            }
            let mut longer = proof.clone();
            longer.push(r);
            prop_assert!(verify_inclusion(m, n, &leaf, &longer, &r).is_err());
            // Another index whose leaf differs (all leaves do here).
            if m + 1 < n {
                prop_assert!(verify_inclusion(m + 1, n, &leaf, &proof, &r).is_err());
            }
            prop_assert!(verify_inclusion(n, n, &leaf, &proof, &r).is_err());
        }

        /// For every m <= n the consistency proof verifies; a flipped bit, a wrong old root or a
        /// wrong size does not.
        #[test]
        fn consistency_proofs_verify_and_tampered_ones_do_not(n in 1u64..300, m in any::<prop::sample::Index>(), bit in 0usize..256) {
            let (_, t) = tree(n as usize);
            let m = m.index(n as usize + 1) as u64;
            let (rm, rn) = (ok(root(&t, m)), ok(root(&t, n)));
            let proof = ok(consistency_proof(&t, m, n));
            prop_assert!(verify_consistency(m, n, &rm, &rn, &proof).is_ok());
            for i in 0..proof.len() {
                let mut bad = proof.clone();
                flip(&mut bad[i], bit);
                prop_assert!(verify_consistency(m, n, &rm, &rn, &bad).is_err());
            }
            let mut bad_old = rm;
            flip(&mut bad_old, bit);
            prop_assert!(verify_consistency(m, n, &bad_old, &rn, &proof).is_err());
            // (Every tree extends the empty one: with m = 0 any new root is consistent.)
            if m > 0 {
                let mut bad_new = rn;
                flip(&mut bad_new, bit);
                prop_assert!(verify_consistency(m, n, &rm, &bad_new, &proof).is_err());
            }
            if m > 0 && m < n {
                prop_assert!(verify_consistency(m, n, &rm, &rn, &proof[..proof.len() - 1]).is_err());
            }
        }
    }

    /// Every (m, n) up to 40: exhaustive, beyond the sampled sizes above.
    #[test]
    fn all_small_sizes() {
        let (_, t) = tree(40);
        for n in 1..=40u64 {
            let rn = ok(root(&t, n));
            for m in 0..n {
                let p = ok(inclusion_proof(&t, m, n));
                verify_inclusion(m, n, &t.leaves[m as usize], &p, &rn).unwrap();
            }
            for m in 0..=n {
                let p = ok(consistency_proof(&t, m, n));
                verify_consistency(m, n, &ok(root(&t, m)), &rn, &p).unwrap();
            }
        }
    }
}
