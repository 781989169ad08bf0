//! Compiles `entropy/v1/*.proto` with protox (pure Rust, no protoc) into Rust types, tonic
//! stubs, and the encoded file descriptor set that server reflection serves; with the `json`
//! feature, also the types' proto3 JSON mapping (pbjson's serde impls).

use std::{env, fs, path::PathBuf};

use prost::Message;

const PROTO_FILES: &[&str] =
    &["entropy/v1/provenance.proto", "entropy/v1/entropy.proto", "entropy/v1/ingest.proto"];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // compile_fds prints no rerun-if-changed of its own (STACK.md): watch the folder.
    println!("cargo:rerun-if-changed=entropy");

    let mut fds = protox::compile(PROTO_FILES, ["."])?;
    // Keep source info so generated code carries the .proto comments as rustdoc.
    let out_dir = PathBuf::from(env::var("OUT_DIR")?);
    let encoded = fds.encode_to_vec();
    fs::write(out_dir.join("entropy_descriptor.bin"), &encoded)?;

    // Reflection clients ask for the well-known types too; protox includes imports in `fds`.
    fds.file.sort_by(|a, b| a.name.cmp(&b.name));
    tonic_prost_build::configure().build_client(true).build_server(true).compile_fds(fds)?;

    #[cfg(feature = "json")]
    pbjson_build::Builder::new().register_descriptors(&encoded)?.build(&[".entropy.v1"])?;
    Ok(())
}
