//! The configuration reference tables of docs/config.md, generated from each binary's one
//! declaration of its keys (`entropy_ops::config_keys!`: key, unit, meaning) and its defaults.
//! Used by the `config_reference` tests of both binaries, which fail when the document drifts
//! from the code and rewrite it when `UPDATE_CONFIG_REFERENCE` is set.

use std::path::Path;

/// What the table is made from.
#[derive(Debug)]
pub struct Reference<'a> {
    /// Each key's name, unit and meaning, in table order (from `KEY_DOCS`).
    pub keys: Vec<(&'a str, &'a str, &'a str)>,
    /// The defaults, as the config serializes them; a key absent here has no default.
    pub defaults: toml::Table,
    /// Other defaults (`--dev`, say) and their label, shown where they differ.
    pub variant: Option<(&'a str, toml::Table)>,
}

/// A value as a config file would hold it.
fn render(value: Option<&toml::Value>) -> String {
    value.map_or_else(|| "unset".into(), |v| format!("`{v}`"))
}

impl Reference<'_> {
    /// The Markdown table.
    pub fn table(&self) -> String {
        let mut out = String::from(
            "| key | environment | flag | default | unit | meaning |\n|---|---|---|---|---|---|\n",
        );
        for (key, unit, help) in &self.keys {
            let default = self.defaults.get(*key);
            let mut shown = render(default);
            if let Some((label, values)) = &self.variant
                && values.get(*key) != default
            {
                shown = format!("{shown} ({label}: {})", render(values.get(*key)));
            }
            let meaning = help.replace('<', "&lt;").replace('>', "&gt;");
            out.push_str(&format!(
                "| `{key}` | `ENTROPY_{}` | `--{}` | {shown} | {unit} | {meaning} |\n",
                key.to_uppercase(),
                key.replace('_', "-"),
            ));
        }
        out
    }
}

/// Checks that `doc` holds `generated` between the markers named `name`; with
/// `UPDATE_CONFIG_REFERENCE` set, writes it there instead.
pub fn check_or_update(doc: &Path, name: &str, generated: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(doc).map_err(|e| format!("{}: {e}", doc.display()))?;
    let begin = format!("<!-- config-reference: {name} -->");
    let end = format!("<!-- end config-reference: {name} -->");
    let (start, stop) = match (text.find(&begin), text.find(&end)) {
        (Some(s), Some(e)) if s < e => (s + begin.len(), e),
        _ => return Err(format!("{} lacks the markers {begin:?} .. {end:?}", doc.display())),
    };
    let expected = format!("\n{generated}");
    if text[start..stop] == expected {
        return Ok(());
    }
    if std::env::var_os("UPDATE_CONFIG_REFERENCE").is_some() {
        let updated = format!("{}{expected}{}", &text[..start], &text[stop..]);
        return std::fs::write(doc, updated).map_err(|e| format!("{}: {e}", doc.display()));
    }
    Err(format!(
        "{} is out of date for {name}; run `UPDATE_CONFIG_REFERENCE=1 cargo test --workspace \
         --test config_reference`. Expected:\n{expected}",
        doc.display()
    ))
}
