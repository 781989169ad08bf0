//! The configuration reference tables of docs/config.md, generated from the code: each key's
//! environment variable, flag, default, unit and meaning (the flag's help). Used by the
//! `config_reference` tests of both binaries, which fail when the document drifts from the
//! code and rewrite it when `UPDATE_CONFIG_REFERENCE` is set.

use std::path::Path;

/// What the table is made from.
#[derive(Debug)]
pub struct Reference<'a> {
    /// The flags (a command with the config flags flattened in).
    pub command: clap::Command,
    /// The scalar keys, in table order.
    pub keys: &'a [&'a str],
    /// The defaults, as the config serializes them; a key absent here has no default.
    pub defaults: toml::Table,
    /// Other defaults (`--dev`, say) and their label, shown where they differ.
    pub variant: Option<(&'a str, toml::Table)>,
    /// A key's unit ("bytes", "milliseconds", ...).
    pub unit: fn(&str) -> &'static str,
}

/// A value as a config file would hold it.
fn render(value: Option<&toml::Value>) -> String {
    value.map_or_else(|| "unset".into(), |v| format!("`{v}`"))
}

/// A value as help text says it: strings without quotes.
fn plain(value: Option<&toml::Value>) -> String {
    match value {
        None => "unset".into(),
        Some(toml::Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    }
}

/// The help text without its `[default: ...]` note, and the note.
fn split_help(help: &str) -> (String, Option<&str>) {
    match help.find(" [default: ") {
        Some(at) => {
            let note = help[at + " [default: ".len()..].trim_end_matches(']');
            (help[..at].trim().to_owned(), Some(note))
        }
        None => (help.trim().to_owned(), None),
    }
}

impl Reference<'_> {
    /// The Markdown table, or what in the code is inconsistent (a key without a flag, a flag
    /// whose `[default: ...]` help disagrees with the default).
    pub fn table(&self) -> Result<String, String> {
        let mut out = String::from(
            "| key | environment | flag | default | unit | meaning |\n|---|---|---|---|---|---|\n",
        );
        for key in self.keys {
            let arg = self
                .command
                .get_arguments()
                .find(|a| a.get_id().as_str() == *key)
                .ok_or_else(|| format!("config key {key} has no flag"))?;
            let flag = arg.get_long().ok_or_else(|| format!("{key}: no long flag"))?;
            if flag != key.replace('_', "-") {
                return Err(format!("the flag of {key} is --{flag}"));
            }
            let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
            let (meaning, note) = split_help(&help);
            if meaning.is_empty() {
                return Err(format!("--{flag} has no help"));
            }
            let default = self.defaults.get(*key);
            let variant = self.variant.as_ref().map(|(label, t)| (label, t.get(*key)));
            if let Some(note) = note {
                // "[default: X]" or "[default: X; <variant>: Y]" must match the code.
                let (said, said_variant) = match note.split_once("; ") {
                    Some((said, rest)) => (said, rest.split_once(": ").map(|(_, v)| v)),
                    None => (note, None),
                };
                if said != plain(default) {
                    return Err(format!(
                        "--{flag} help says {said:?}, the default is {}",
                        plain(default)
                    ));
                }
                if let (Some(said), Some((_, value))) = (said_variant, variant)
                    && said != plain(value)
                {
                    return Err(format!("--{flag} help says {said:?}, not {}", plain(value)));
                }
            }
            let mut shown = render(default);
            if let Some((label, value)) = variant
                && value != default
            {
                shown = format!("{shown} ({label}: {})", render(value));
            }
            let meaning = meaning.replace('<', "&lt;").replace('>', "&gt;");
            out.push_str(&format!(
                "| `{key}` | `ENTROPY_{}` | `--{flag}` | {shown} | {} | {meaning} |\n",
                key.to_uppercase(),
                (self.unit)(key)
            ));
        }
        Ok(out)
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
