//! The series tables of `docs/metrics.md`, checked both ways against what `/metrics` exposes:
//! every documented series is exposed with its type and labels, and every exposed series of
//! the program is documented.

use std::collections::BTreeSet;

use crate::exposition::Exposition;

/// A docs table row: `| name | type | labels | meaning |`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocRow {
    /// Series name.
    pub name: String,
    /// Its type.
    pub kind: String,
    /// Its label names.
    pub labels: BTreeSet<String>,
}

/// Checks the table under `heading` in `markdown` against `exposed`, both ways: every row is
/// exposed with its type and label names, and every exposed family whose name starts with
/// `prefix` has a row. The first mismatch, if any.
pub fn check_documented(
    exposed: &Exposition,
    markdown: &str,
    heading: &str,
    prefix: &str,
) -> Result<(), String> {
    let rows = doc_rows(markdown, heading);
    if rows.is_empty() {
        return Err(format!("no table under {heading:?}"));
    }
    for row in &rows {
        let kind = exposed.types.get(&row.name);
        if kind != Some(&row.kind) {
            return Err(format!(
                "{} is documented as {} but exposed as {kind:?}",
                row.name, row.kind
            ));
        }
        let labels = exposed.label_names(&row.name);
        if labels != row.labels {
            return Err(format!(
                "labels of {}: documented {:?}, exposed {labels:?}",
                row.name, row.labels
            ));
        }
    }
    let documented: BTreeSet<&str> = rows.iter().map(|r| r.name.as_str()).collect();
    for sample in &exposed.samples {
        let family = exposed.family_of(&sample.name);
        if family.starts_with(prefix) && !documented.contains(family) {
            return Err(format!("{family} is exposed but not documented"));
        }
    }
    Ok(())
}

/// The rows of the first Markdown table after the heading line `heading` in `markdown`, whose
/// first cell is a back-quoted series name.
pub fn doc_rows(markdown: &str, heading: &str) -> Vec<DocRow> {
    let mut lines = markdown.lines().skip_while(|l| l.trim() != heading).skip(1);
    let mut rows = Vec::new();
    let mut in_table = false;
    for line in lines.by_ref() {
        let line = line.trim();
        if !line.starts_with('|') {
            if in_table {
                break;
            }
            continue;
        }
        in_table = true;
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let Some(name) = cells.first().and_then(|c| c.strip_prefix('`')?.strip_suffix('`')) else {
            continue;
        };
        let labels = cells
            .get(2)
            .map(|c| {
                c.split(',')
                    .map(|l| l.trim().trim_matches('`'))
                    .filter(|l| !l.is_empty() && *l != "-")
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        rows.push(DocRow {
            name: name.to_owned(),
            kind: cells.get(1).map(|c| c.trim_matches('`').to_owned()).unwrap_or_default(),
            labels,
        });
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_docs_check_catches_drift_both_ways() {
        let text = "# TYPE t_total counter\nt_total{a=\"x\"} 1\n";
        let exposed = Exposition::parse(text).expect("parses");
        let docs = |rows: &str| {
            format!("## T\n\n| series | type | labels | meaning |\n|---|---|---|---|\n{rows}")
        };
        let good = docs("| `t_total` | counter | `a` | things |\n");
        assert_eq!(check_documented(&exposed, &good, "## T", "t_"), Ok(()));
        let missing =
            docs("| `t_total` | counter | `a` | things |\n| `t_other` | gauge | - | gone |\n");
        assert!(
            check_documented(&exposed, &missing, "## T", "t_").is_err(),
            "documented, not exposed"
        );
        let wrong_labels = docs("| `t_total` | counter | `b` | things |\n");
        assert!(check_documented(&exposed, &wrong_labels, "## T", "t_").is_err(), "labels differ");
        let wrong_kind = docs("| `t_total` | gauge | `a` | things |\n");
        assert!(check_documented(&exposed, &wrong_kind, "## T", "t_").is_err(), "type differs");
        let more =
            Exposition::parse(&format!("{text}# TYPE t_new gauge\nt_new 1\n")).expect("parses");
        assert!(check_documented(&more, &good, "## T", "t_").is_err(), "exposed, not documented");
    }

    #[test]
    fn doc_rows_read_the_table_under_a_heading() {
        let md = "## A\n\n| name | type | labels | meaning |\n|---|---|---|---|\n\
                  | `x_total` | counter | `k`, `m` | y |\n| `g` | gauge | - | z |\n\n## B\n";
        let rows = doc_rows(md, "## A");
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].labels.iter().cloned().collect::<Vec<_>>(), ["k", "m"]);
        assert!(rows[1].labels.is_empty());
    }
}
