//! A parser of the Prometheus text exposition (as the exporter renders it), so tests assert
//! on what a scraper would read from `/metrics`, not on the registry's internals.

use std::collections::{BTreeMap, BTreeSet};

/// One sample line of an exposition.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Its name as written (`x_bucket`, `x_sum`, `x_count` for histograms).
    pub name: String,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
    /// Its value.
    pub value: f64,
}

/// A parsed text exposition: the declared types and every sample.
#[derive(Debug, Clone, Default)]
pub struct Exposition {
    /// Family name to type (`counter`, `gauge`, `histogram`), from `# TYPE` lines.
    pub types: BTreeMap<String, String>,
    /// Every sample, in order.
    pub samples: Vec<Sample>,
}

impl Exposition {
    /// Parses the Prometheus text format (as rendered by the exporter: one sample per line,
    /// label values without escaped quotes). Unknown `# TYPE`s and malformed lines are errors.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut out = Self::default();
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').ok_or_else(|| format!("bad: {line}"))?;
                if !matches!(kind, "counter" | "gauge" | "histogram") {
                    return Err(format!("unexpected type {kind:?} in {line}"));
                }
                out.types.insert(name.to_owned(), kind.to_owned());
                continue;
            }
            if line.starts_with('#') {
                continue;
            }
            let (series, value) = line.rsplit_once(' ').ok_or_else(|| format!("bad: {line}"))?;
            let value = match value {
                "+Inf" => f64::INFINITY,
                "-Inf" => f64::NEG_INFINITY,
                v => v.parse().map_err(|_| format!("bad value in {line}"))?,
            };
            let (name, labels) = match series.split_once('{') {
                None => (series.to_owned(), BTreeMap::new()),
                Some((name, rest)) => {
                    let body = rest.strip_suffix('}').ok_or_else(|| format!("bad: {line}"))?;
                    let mut labels = BTreeMap::new();
                    for pair in body.split("\",").filter(|p| !p.is_empty()) {
                        let (k, v) =
                            pair.split_once("=\"").ok_or_else(|| format!("bad label in {line}"))?;
                        labels.insert(k.to_owned(), v.trim_end_matches('"').to_owned());
                    }
                    (name.to_owned(), labels)
                }
            };
            out.samples.push(Sample { name, labels, value });
        }
        Ok(out)
    }

    /// The family a sample belongs to (`x_bucket` of histogram `x` belongs to `x`).
    pub fn family_of<'a>(&'a self, sample: &'a str) -> &'a str {
        for suffix in ["_bucket", "_sum", "_count"] {
            if let Some(base) = sample.strip_suffix(suffix)
                && self.types.get(base).is_some_and(|k| k == "histogram")
            {
                return base;
            }
        }
        sample
    }

    /// Label names seen on a family's samples (without a histogram's `le`).
    pub fn label_names(&self, family: &str) -> BTreeSet<String> {
        self.samples
            .iter()
            .filter(|s| self.family_of(&s.name) == family)
            .flat_map(|s| s.labels.keys().filter(|k| *k != "le").cloned())
            .collect()
    }

    /// The sum of `name`'s samples whose labels include every pair of `labels`.
    pub fn sum(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.samples
            .iter()
            .filter(|s| s.name == name)
            .filter(|s| labels.iter().all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(v)))
            .map(|s| s.value)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_and_labels_parse() {
        let text = "# TYPE t_seconds histogram\nt_seconds_bucket{le=\"0.1\"} 1\n\
                    t_seconds_bucket{le=\"+Inf\"} 2\nt_seconds_sum 0.3\nt_seconds_count 2\n\
                    # TYPE t_total counter\nt_total{a=\"x\",b=\"y\"} 3\nt_total{a=\"z\",b=\"y\"} 4\n";
        let e = Exposition::parse(text).expect("parses");
        assert_eq!(e.family_of("t_seconds_bucket"), "t_seconds");
        assert_eq!(e.family_of("t_total"), "t_total");
        assert_eq!(e.sum("t_total", &[("b", "y")]), 7.0);
        assert_eq!(e.sum("t_total", &[("a", "x")]), 3.0);
        assert_eq!(e.label_names("t_seconds"), BTreeSet::new(), "le is not a label name");
        assert_eq!(e.label_names("t_total").len(), 2);
        assert!(Exposition::parse("# TYPE x summary\n").is_err(), "unknown types are errors");
        assert!(Exposition::parse("x_total{a=\"1\" 2\n").is_err(), "malformed lines are errors");
    }
}
