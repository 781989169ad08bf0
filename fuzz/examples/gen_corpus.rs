//! Writes the seed corpus (`corpus/<target>/<name>`) from [`entropy_fuzz::seeds`].
//!
//! `cargo run --release --example gen_corpus` in `fuzz/`. Existing seeds of the same name are
//! overwritten; inputs the fuzzer added are left alone.

use std::path::Path;

fn main() -> std::io::Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    for (target, seeds) in entropy_fuzz::seeds::all() {
        let dir = root.join(target);
        std::fs::create_dir_all(&dir)?;
        for (name, bytes) in seeds {
            std::fs::write(dir.join(format!("seed-{name}")), &bytes)?;
        }
        println!("{}: written", dir.display());
    }
    Ok(())
}
