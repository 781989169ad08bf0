//! NIST CAVP known-answer tests: every `[SHA-256]` case of the three HMAC_DRBG response files
//! and every `[AES-256 use df]` case of the three CTR_DRBG response files (no reseed, reseed
//! without prediction resistance, prediction resistance), run through the public API exactly
//! as the CAVP readmes and SP 800-90A describe. Where the vectors came from and how they were
//! cut: `testdata/README.md`.
//!
//! The two mechanisms share one parser and one runner: the files have the same layout and the
//! same call sequences, and only the section name (`[SHA-256]`, `[AES-256 use df]`) and the
//! DRBG behind the calls (the `Mechanism` trait) differ.
//!
//! The parser accepts only the field sequences the three files use, in their order, and the
//! tests count the cases they ran against a plain count of `COUNT = ` lines in each file, so a
//! case the parser skipped or misread fails the test instead of passing unnoticed.

// Test harness code panics on malformed vectors by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use entropy_drbg::{CtrDrbg, DrbgError, HmacDrbg};

const HMAC_NO_RESEED: &str = include_str!("../testdata/HMAC_DRBG_SHA-256_no_reseed.rsp");
const HMAC_PR_FALSE: &str = include_str!("../testdata/HMAC_DRBG_SHA-256_pr_false.rsp");
const HMAC_PR_TRUE: &str = include_str!("../testdata/HMAC_DRBG_SHA-256_pr_true.rsp");

const CTR_NO_RESEED: &str = include_str!("../testdata/CTR_DRBG_AES-256_use_df_no_reseed.rsp");
const CTR_PR_FALSE: &str = include_str!("../testdata/CTR_DRBG_AES-256_use_df_pr_false.rsp");
const CTR_PR_TRUE: &str = include_str!("../testdata/CTR_DRBG_AES-256_use_df_pr_true.rsp");

/// Cases per file, in all six: 16 sections (the four combinations of personalization string
/// and additional input, 0 or 256 bits, each four times) of 15 cases each.
const CASES_PER_FILE: usize = 16 * 15;

/// What the runner needs of a DRBG: the three calls, through the crate's public API, and the
/// name of the response-file sections that test it.
trait Mechanism: Sized {
    /// The section header naming the mechanism, without brackets.
    const SECTION: &'static str;
    fn instantiate(entropy: &[u8], nonce: &[u8], personalization: &[u8])
    -> Result<Self, DrbgError>;
    fn reseed(&mut self, entropy: &[u8], additional: &[u8]) -> Result<(), DrbgError>;
    fn generate(&mut self, out: &mut [u8], additional: &[u8]) -> Result<(), DrbgError>;
}

impl Mechanism for HmacDrbg {
    const SECTION: &'static str = "SHA-256";
    fn instantiate(
        entropy: &[u8],
        nonce: &[u8],
        personalization: &[u8],
    ) -> Result<Self, DrbgError> {
        HmacDrbg::instantiate(entropy, nonce, personalization)
    }
    fn reseed(&mut self, entropy: &[u8], additional: &[u8]) -> Result<(), DrbgError> {
        HmacDrbg::reseed(self, entropy, additional)
    }
    fn generate(&mut self, out: &mut [u8], additional: &[u8]) -> Result<(), DrbgError> {
        HmacDrbg::generate(self, out, additional)
    }
}

impl Mechanism for CtrDrbg {
    const SECTION: &'static str = "AES-256 use df";
    fn instantiate(
        entropy: &[u8],
        nonce: &[u8],
        personalization: &[u8],
    ) -> Result<Self, DrbgError> {
        CtrDrbg::instantiate(entropy, nonce, personalization)
    }
    fn reseed(&mut self, entropy: &[u8], additional: &[u8]) -> Result<(), DrbgError> {
        CtrDrbg::reseed(self, entropy, additional)
    }
    fn generate(&mut self, out: &mut [u8], additional: &[u8]) -> Result<(), DrbgError> {
        CtrDrbg::generate(self, out, additional)
    }
}

/// One test case, with its inputs in the order the DRBG consumes them.
#[derive(Debug)]
enum Case {
    /// `drbgvectors_no_reseed`: instantiate, generate, generate.
    NoReseed {
        count: u32,
        entropy: Vec<u8>,
        nonce: Vec<u8>,
        personalization: Vec<u8>,
        additional: [Vec<u8>; 2],
        returned: Vec<u8>,
    },
    /// `drbgvectors_pr_false`: instantiate, reseed, generate, generate.
    Reseed {
        count: u32,
        entropy: Vec<u8>,
        nonce: Vec<u8>,
        personalization: Vec<u8>,
        entropy_reseed: Vec<u8>,
        additional_reseed: Vec<u8>,
        additional: [Vec<u8>; 2],
        returned: Vec<u8>,
    },
    /// `drbgvectors_pr_true`: instantiate, then twice a generate with prediction resistance.
    PredictionResistance {
        count: u32,
        entropy: Vec<u8>,
        nonce: Vec<u8>,
        personalization: Vec<u8>,
        additional: [Vec<u8>; 2],
        entropy_pr: [Vec<u8>; 2],
        returned: Vec<u8>,
    },
}

/// A section's header: the lengths of every case in it, in bits.
#[derive(Debug)]
struct Section {
    entropy_input_bits: usize,
    nonce_bits: usize,
    personalization_bits: usize,
    additional_input_bits: usize,
    returned_bits: usize,
}

impl Section {
    /// Checks that a case's values have the lengths its section declares.
    fn check_lengths(&self, case: &Case) {
        let bits = |v: &[u8]| v.len() * 8;
        let (entropy, nonce, personalization, additional, returned) = match case {
            Case::NoReseed { entropy, nonce, personalization, additional, returned, .. }
            | Case::PredictionResistance {
                entropy,
                nonce,
                personalization,
                additional,
                returned,
                ..
            } => (entropy, nonce, personalization, additional, returned),
            Case::Reseed {
                entropy,
                nonce,
                personalization,
                additional,
                returned,
                entropy_reseed,
                additional_reseed,
                ..
            } => {
                assert_eq!(bits(entropy_reseed), self.entropy_input_bits, "{case:?}");
                assert_eq!(bits(additional_reseed), self.additional_input_bits, "{case:?}");
                (entropy, nonce, personalization, additional, returned)
            }
        };
        if let Case::PredictionResistance { entropy_pr, .. } = case {
            for e in entropy_pr {
                assert_eq!(bits(e), self.entropy_input_bits, "{case:?}");
            }
        }
        assert_eq!(bits(entropy), self.entropy_input_bits, "{case:?}");
        assert_eq!(bits(nonce), self.nonce_bits, "{case:?}");
        assert_eq!(bits(personalization), self.personalization_bits, "{case:?}");
        for a in additional {
            assert_eq!(bits(a), self.additional_input_bits, "{case:?}");
        }
        assert_eq!(bits(returned), self.returned_bits, "{case:?}");
    }
}

/// The file's kind, which fixes the field sequence of each case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    NoReseed,
    PrFalse,
    PrTrue,
}

impl Kind {
    fn fields(self) -> &'static [&'static str] {
        match self {
            Kind::NoReseed => &[
                "COUNT",
                "EntropyInput",
                "Nonce",
                "PersonalizationString",
                "AdditionalInput",
                "AdditionalInput",
                "ReturnedBits",
            ],
            Kind::PrFalse => &[
                "COUNT",
                "EntropyInput",
                "Nonce",
                "PersonalizationString",
                "EntropyInputReseed",
                "AdditionalInputReseed",
                "AdditionalInput",
                "AdditionalInput",
                "ReturnedBits",
            ],
            Kind::PrTrue => &[
                "COUNT",
                "EntropyInput",
                "Nonce",
                "PersonalizationString",
                "AdditionalInput",
                "EntropyInputPR",
                "AdditionalInput",
                "EntropyInputPR",
                "ReturnedBits",
            ],
        }
    }
}

/// Parses a response file into its sections for mechanism `M` and their cases. Panics on
/// anything it does not expect: another hash or cipher, a field out of order, a count out of
/// sequence.
fn parse<M: Mechanism>(text: &str, kind: Kind) -> Vec<(Section, Vec<Case>)> {
    let mut sections: Vec<(Section, Vec<Case>)> = Vec::new();
    let mut header: Vec<(String, String)> = Vec::new();
    let mut fields: Vec<(&str, &str)> = Vec::new();

    // A blank line (or the end) closes a case or a header.
    for line in text.lines().map(str::trim_end).chain(std::iter::once("")) {
        if line.starts_with('#') {
            continue;
        }
        if let Some(inner) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let (key, value) = inner.split_once(" = ").unwrap_or((inner, ""));
            header.push((key.to_owned(), value.to_owned()));
            continue;
        }
        if line.is_empty() {
            if !header.is_empty() {
                sections.push((section_from(&header, kind, M::SECTION), Vec::new()));
                header.clear();
            }
            if !fields.is_empty() {
                let (_, cases) = sections.last_mut().expect("a case before any section header");
                let case = case_from(&fields, kind);
                let count = match &case {
                    Case::NoReseed { count, .. }
                    | Case::Reseed { count, .. }
                    | Case::PredictionResistance { count, .. } => *count,
                };
                assert_eq!(count as usize, cases.len(), "COUNT out of sequence");
                cases.push(case);
                fields.clear();
            }
            continue;
        }
        let (name, value) = line
            .split_once(" =")
            .map(|(n, v)| (n, v.trim()))
            .unwrap_or_else(|| panic!("not a field: {line:?}"));
        fields.push((name, value));
    }
    assert!(header.is_empty() && fields.is_empty(), "unterminated block");
    sections
}

fn section_from(header: &[(String, String)], kind: Kind, mechanism: &str) -> Section {
    let names: Vec<&str> = header.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        names,
        [
            mechanism,
            "PredictionResistance",
            "EntropyInputLen",
            "NonceLen",
            "PersonalizationStringLen",
            "AdditionalInputLen",
            "ReturnedBitsLen"
        ],
        "unexpected section header"
    );
    let number = |i: usize| header[i].1.parse::<usize>().unwrap();
    let prediction_resistance = match header[1].1.as_str() {
        "True" => true,
        "False" => false,
        other => panic!("PredictionResistance = {other}"),
    };
    assert_eq!(prediction_resistance, kind == Kind::PrTrue, "file of the wrong kind");
    Section {
        entropy_input_bits: number(2),
        nonce_bits: number(3),
        personalization_bits: number(4),
        additional_input_bits: number(5),
        returned_bits: number(6),
    }
}

fn case_from(fields: &[(&str, &str)], kind: Kind) -> Case {
    let names: Vec<&str> = fields.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, kind.fields(), "unexpected fields in case {fields:?}");
    let count = fields[0].1.parse().unwrap();
    let bytes = |i: usize| hex::decode(fields[i].1).unwrap();
    match kind {
        Kind::NoReseed => Case::NoReseed {
            count,
            entropy: bytes(1),
            nonce: bytes(2),
            personalization: bytes(3),
            additional: [bytes(4), bytes(5)],
            returned: bytes(6),
        },
        Kind::PrFalse => Case::Reseed {
            count,
            entropy: bytes(1),
            nonce: bytes(2),
            personalization: bytes(3),
            entropy_reseed: bytes(4),
            additional_reseed: bytes(5),
            additional: [bytes(6), bytes(7)],
            returned: bytes(8),
        },
        Kind::PrTrue => Case::PredictionResistance {
            count,
            entropy: bytes(1),
            nonce: bytes(2),
            personalization: bytes(3),
            additional: [bytes(4), bytes(6)],
            entropy_pr: [bytes(5), bytes(7)],
            returned: bytes(8),
        },
    }
}

/// Runs one case and returns the output of its second generate call.
fn run<M: Mechanism>(case: &Case) -> Vec<u8> {
    match case {
        Case::NoReseed { entropy, nonce, personalization, additional, returned, .. } => {
            let mut drbg = M::instantiate(entropy, nonce, personalization).unwrap();
            let mut out = vec![0; returned.len()];
            drbg.generate(&mut out, &additional[0]).unwrap();
            drbg.generate(&mut out, &additional[1]).unwrap();
            out
        }
        Case::Reseed {
            entropy,
            nonce,
            personalization,
            entropy_reseed,
            additional_reseed,
            additional,
            returned,
            ..
        } => {
            let mut drbg = M::instantiate(entropy, nonce, personalization).unwrap();
            drbg.reseed(entropy_reseed, additional_reseed).unwrap();
            let mut out = vec![0; returned.len()];
            drbg.generate(&mut out, &additional[0]).unwrap();
            drbg.generate(&mut out, &additional[1]).unwrap();
            out
        }
        Case::PredictionResistance {
            entropy,
            nonce,
            personalization,
            additional,
            entropy_pr,
            returned,
            ..
        } => {
            // SP 800-90A §9.3.1 step 7, prediction resistance requested: reseed with fresh
            // entropy input and the call's additional input, then generate with the additional
            // input set to Null. CAVP supplies that entropy as EntropyInputPR, one per call.
            let mut drbg = M::instantiate(entropy, nonce, personalization).unwrap();
            let mut out = vec![0; returned.len()];
            for (entropy_pr, additional) in entropy_pr.iter().zip(additional) {
                drbg.reseed(entropy_pr, additional).unwrap();
                drbg.generate(&mut out, &[]).unwrap();
            }
            out
        }
    }
}

/// Runs every case of a file through mechanism `M` and returns how many ran; panics listing any
/// that failed.
fn run_file<M: Mechanism>(text: &str, kind: Kind) -> usize {
    let sections = parse::<M>(text, kind);
    let mut ran = 0;
    let mut failures = Vec::new();
    for (section, cases) in &sections {
        for case in cases {
            section.check_lengths(case);
            let returned = match case {
                Case::NoReseed { returned, .. }
                | Case::Reseed { returned, .. }
                | Case::PredictionResistance { returned, .. } => returned,
            };
            if run::<M>(case) != *returned {
                failures.push(format!("{section:?} {case:?}"));
            }
            ran += 1;
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {ran} {} {kind:?} cases failed; the first:\n{}",
        failures.len(),
        M::SECTION,
        failures[0]
    );
    ran
}

/// Cases in a file by a count that shares nothing with the parser.
fn count_lines(text: &str) -> usize {
    text.lines().filter(|line| line.starts_with("COUNT = ")).count()
}

#[test]
fn hmac_no_reseed_sha256_all_cases() {
    assert_eq!(count_lines(HMAC_NO_RESEED), CASES_PER_FILE);
    assert_eq!(run_file::<HmacDrbg>(HMAC_NO_RESEED, Kind::NoReseed), CASES_PER_FILE);
}

#[test]
fn hmac_pr_false_sha256_all_cases() {
    assert_eq!(count_lines(HMAC_PR_FALSE), CASES_PER_FILE);
    assert_eq!(run_file::<HmacDrbg>(HMAC_PR_FALSE, Kind::PrFalse), CASES_PER_FILE);
}

#[test]
fn hmac_pr_true_sha256_all_cases() {
    assert_eq!(count_lines(HMAC_PR_TRUE), CASES_PER_FILE);
    assert_eq!(run_file::<HmacDrbg>(HMAC_PR_TRUE, Kind::PrTrue), CASES_PER_FILE);
}

#[test]
fn ctr_no_reseed_aes256_df_all_cases() {
    assert_eq!(count_lines(CTR_NO_RESEED), CASES_PER_FILE);
    assert_eq!(run_file::<CtrDrbg>(CTR_NO_RESEED, Kind::NoReseed), CASES_PER_FILE);
}

#[test]
fn ctr_pr_false_aes256_df_all_cases() {
    assert_eq!(count_lines(CTR_PR_FALSE), CASES_PER_FILE);
    assert_eq!(run_file::<CtrDrbg>(CTR_PR_FALSE, Kind::PrFalse), CASES_PER_FILE);
}

#[test]
fn ctr_pr_true_aes256_df_all_cases() {
    assert_eq!(count_lines(CTR_PR_TRUE), CASES_PER_FILE);
    assert_eq!(run_file::<CtrDrbg>(CTR_PR_TRUE, Kind::PrTrue), CASES_PER_FILE);
}

/// The sorted, distinct (personalization, additional input) lengths of a file's sections.
fn combinations<M: Mechanism>(text: &str, kind: Kind) -> Vec<(usize, usize)> {
    let mut combinations: Vec<(usize, usize)> = parse::<M>(text, kind)
        .iter()
        .map(|(s, _)| (s.personalization_bits, s.additional_input_bits))
        .collect();
    combinations.sort_unstable();
    combinations.dedup();
    combinations
}

#[test]
fn every_combination_of_personalization_and_additional_input_is_covered() {
    // Each file has all four combinations of a 0- or 256-bit personalization string and
    // additional input, so the empty (Null) and non-empty paths of update (and, for CTR_DRBG,
    // of the derivation function on additional input) are both exercised.
    let all = [(0, 0), (0, 256), (256, 0), (256, 256)];
    for (text, kind) in [
        (HMAC_NO_RESEED, Kind::NoReseed),
        (HMAC_PR_FALSE, Kind::PrFalse),
        (HMAC_PR_TRUE, Kind::PrTrue),
    ] {
        assert_eq!(combinations::<HmacDrbg>(text, kind), all, "HMAC_DRBG {kind:?}");
    }
    for (text, kind) in [
        (CTR_NO_RESEED, Kind::NoReseed),
        (CTR_PR_FALSE, Kind::PrFalse),
        (CTR_PR_TRUE, Kind::PrTrue),
    ] {
        assert_eq!(combinations::<CtrDrbg>(text, kind), all, "CTR_DRBG {kind:?}");
    }
}
