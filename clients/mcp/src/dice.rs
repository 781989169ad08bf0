//! Dice notation: `NdM`, optionally `+K` or `-K` (`3d6`, `d20`, `2d8+3`), parsed into bounds.

use std::fmt;

/// Most dice in one roll.
pub const MAX_DICE: u32 = 100;
/// Most faces on a die (a die has at least 2).
pub const MAX_FACES: u32 = 1_000_000;
/// Largest modifier, either way.
pub const MAX_MODIFIER: i64 = 1_000_000;

/// A parsed roll: `count` dice of `faces` faces, plus `modifier` added to their sum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dice {
    /// How many dice, 1..=[`MAX_DICE`].
    pub count: u32,
    /// Faces per die, 2..=[`MAX_FACES`].
    pub faces: u32,
    /// Added to the sum of the rolls, within ±[`MAX_MODIFIER`].
    pub modifier: i64,
}

impl fmt::Display for Dice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}d{}", self.count, self.faces)?;
        match self.modifier {
            0 => Ok(()),
            m if m > 0 => write!(f, "+{m}"),
            m => write!(f, "{m}"),
        }
    }
}

/// Why a text is not a roll; the message says which part is wrong and its bound.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DiceError {
    /// Not of the form `NdM`, `dM`, `NdM+K` or `NdM-K`; holds the text as given.
    #[error(
        "{0:?} is not dice notation: use NdM (N dice with M faces), e.g. \"3d6\", \"d20\" or \
         \"2d8+3\""
    )]
    Notation(String),
    /// The number of dice is outside 1..=[`MAX_DICE`] (saturated at `u64::MAX`).
    #[error("number of dice is {0}, must be 1..={MAX_DICE}")]
    Count(u64),
    /// The faces per die are outside 2..=[`MAX_FACES`] (saturated at `u64::MAX`).
    #[error("faces per die is {0}, must be 2..={MAX_FACES}")]
    Faces(u64),
    /// The modifier is beyond ±[`MAX_MODIFIER`] (its magnitude saturated at `i64::MAX`).
    #[error("modifier is {0:+}, must be within -{MAX_MODIFIER}..=+{MAX_MODIFIER}")]
    Modifier(i64),
}

impl Dice {
    /// Parses `NdM`, `dM`, `NdM+K` or `NdM-K` (spaces ignored, `D` accepted). The error says
    /// which part is wrong and its bound.
    pub fn parse(text: &str) -> Result<Self, DiceError> {
        let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let lower = compact.to_ascii_lowercase();
        let shape = || DiceError::Notation(text.to_owned());
        let (count, rest) = lower.split_once('d').ok_or_else(shape)?;
        let (faces, modifier) = match rest.find(['+', '-']) {
            Some(at) => (&rest[..at], Some(&rest[at..])),
            None => (rest, None),
        };
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !(count.is_empty() || digits(count)) || !digits(faces) {
            return Err(shape());
        }
        let count: u64 = if count.is_empty() { 1 } else { count.parse().unwrap_or(u64::MAX) };
        if !(1..=u64::from(MAX_DICE)).contains(&count) {
            return Err(DiceError::Count(count));
        }
        let faces: u64 = faces.parse().unwrap_or(u64::MAX);
        if !(2..=u64::from(MAX_FACES)).contains(&faces) {
            return Err(DiceError::Faces(faces));
        }
        let modifier = match modifier {
            None => 0,
            Some(m) => {
                let (sign, magnitude) = m.split_at(1);
                if !digits(magnitude) {
                    return Err(shape());
                }
                let magnitude: i64 = magnitude.parse().unwrap_or(i64::MAX);
                let modifier = if sign == "-" { -magnitude } else { magnitude };
                if magnitude > MAX_MODIFIER {
                    return Err(DiceError::Modifier(modifier));
                }
                modifier
            }
        };
        // In range by the checks above.
        Ok(Self { count: count as u32, faces: faces as u32, modifier })
    }

    /// The total of `rolls` with the modifier. Cannot overflow: at most 100 × 10^6 + 10^6.
    pub fn total(&self, rolls: &[i64]) -> i64 {
        rolls.iter().sum::<i64>() + self.modifier
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_usual_forms() {
        let d = |count, faces, modifier| Dice { count, faces, modifier };
        assert_eq!(Dice::parse("3d6"), Ok(d(3, 6, 0)));
        assert_eq!(Dice::parse("d20"), Ok(d(1, 20, 0)));
        assert_eq!(Dice::parse(" 2D8 + 3 "), Ok(d(2, 8, 3)));
        assert_eq!(Dice::parse("4d10-2"), Ok(d(4, 10, -2)));
        assert_eq!(Dice::parse("100d1000000+1000000"), Ok(d(100, 1_000_000, 1_000_000)));
        assert_eq!(Dice::parse("1d2-1000000").map(|d| d.modifier), Ok(-1_000_000));
    }

    #[test]
    fn displays_canonically() {
        for text in ["3d6", "1d20", "2d8+3", "4d10-2"] {
            assert_eq!(Dice::parse(text).map(|d| d.to_string()), Ok(text.to_owned()));
        }
        assert_eq!(Dice::parse("d6").map(|d| d.to_string()), Ok("1d6".to_owned()));
    }

    #[test]
    fn errors_name_the_part_and_its_bound() {
        let err = |t: &str| Dice::parse(t).expect_err(t).to_string();
        assert!(err("0d6").contains("number of dice is 0, must be 1..=100"));
        assert!(err("101d6").contains("must be 1..=100"));
        assert!(err("99999999999999999999999d6").contains("must be 1..=100"));
        assert!(err("2d1").contains("faces per die is 1, must be 2..=1000000"));
        assert!(err("2d1000001").contains("2..=1000000"));
        assert!(err("2d6+1000001").contains("modifier is +1000001"));
        for shape in
            ["", "6", "d", "2d", "xd6", "2d6+", "2d6+-1", "2d6*2", "-2d6", "2d6d6", "1.5d6"]
        {
            assert!(err(shape).contains("not dice notation"), "{shape}: {}", err(shape));
        }
    }

    #[test]
    fn modifier_and_notation_errors_read_in_full() {
        let err = |t: &str| Dice::parse(t).expect_err(t).to_string();
        assert_eq!(err("2d6+1000001"), "modifier is +1000001, must be within -1000000..=+1000000");
        assert_eq!(err("2d6-1000001"), "modifier is -1000001, must be within -1000000..=+1000000");
        assert_eq!(
            err("1d6-99999999999999999999"),
            "modifier is -9223372036854775807, must be within -1000000..=+1000000"
        );
        assert_eq!(
            err(" 2x6"),
            "\" 2x6\" is not dice notation: use NdM (N dice with M faces), e.g. \"3d6\", \"d20\" \
             or \"2d8+3\""
        );
    }

    #[test]
    fn total_adds_the_modifier() {
        let dice = Dice::parse("3d6-2").expect("valid");
        assert_eq!(dice.total(&[1, 6, 4]), 9);
    }
}
