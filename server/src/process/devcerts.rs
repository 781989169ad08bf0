//! A throwaway CA and certificates for trying TLS and mTLS (`entropy-gateway dev-certs`).
//!
//! Writes into a directory: `ca.pem` (the CA certificate, to trust), `gateway.pem` and
//! `gateway.key` (a server certificate for the given host names), `collector.pem` and
//! `collector.key` (a client certificate for mTLS on the ingest listener). The CA's private
//! key is not written: no further certificates can be issued from it, by design. Keys are
//! written with mode 0600. For development and tests only.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

/// Paths of the files written.
#[derive(Debug, Clone)]
pub struct DevCerts {
    /// CA certificate (PEM).
    pub ca: PathBuf,
    /// Server certificate chain (PEM).
    pub server_cert: PathBuf,
    /// Server private key (PEM).
    pub server_key: PathBuf,
    /// Client certificate (PEM).
    pub client_cert: PathBuf,
    /// Client private key (PEM).
    pub client_key: PathBuf,
}

/// Why the certificates were not written.
#[derive(Debug, thiserror::Error)]
pub enum DevCertsError {
    /// rcgen could not make a key or a certificate.
    #[error("cannot make a certificate: {0}")]
    Certificate(#[from] rcgen::Error),
    /// A file or the directory could not be written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Others can write to the directory.
    #[error(
        "{}: others can write to this directory (mode {mode:o}), so they could replace the \
         keys written there; use a private directory (chmod go-w)",
        dir.display()
    )]
    SharedDir {
        /// The directory.
        dir: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The OS random generator failed (for a temporary file's name).
    #[error("the OS random generator failed: {0}")]
    Rng(getrandom::Error),
}

/// Generates a CA, a server certificate for `hosts` (DNS names or IP addresses) and a client
/// certificate, and writes them into `dir` (created if missing, mode 0700 whatever the umask;
/// an existing directory others can write to is refused: they could swap the files).
pub fn generate(dir: &Path, hosts: &[String]) -> Result<DevCerts, DevCertsError> {
    private_dir(dir)?;

    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.distinguished_name.push(DnType::CommonName, "Entropy Diode dev CA");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_cert = ca_params.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca_params, ca_key);

    let leaf = |names: Vec<String>,
                cn: &str,
                usage: ExtendedKeyUsagePurpose|
     -> Result<(String, String), DevCertsError> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(names)?;
        params.distinguished_name.push(DnType::CommonName, cn);
        params.extended_key_usages = vec![usage];
        let cert = params.signed_by(&key, &issuer)?;
        Ok((cert.pem(), key.serialize_pem()))
    };
    let (server_pem, server_key) =
        leaf(hosts.to_vec(), "entropy-gateway", ExtendedKeyUsagePurpose::ServerAuth)?;
    let (client_pem, client_key) = leaf(
        vec!["entropy-collector".into()],
        "entropy-collector",
        ExtendedKeyUsagePurpose::ClientAuth,
    )?;

    let out = DevCerts {
        ca: dir.join("ca.pem"),
        server_cert: dir.join("gateway.pem"),
        server_key: dir.join("gateway.key"),
        client_cert: dir.join("collector.pem"),
        client_key: dir.join("collector.key"),
    };
    write(&out.ca, &ca_cert.pem(), false)?;
    write(&out.server_cert, &server_pem, false)?;
    write(&out.server_key, &server_key, true)?;
    write(&out.client_cert, &client_pem, false)?;
    write(&out.client_key, &client_key, true)?;
    Ok(out)
}

/// Creates `dir` (and missing parents) with mode 0700, or checks that the existing one is not
/// writable by group or others.
fn private_dir(dir: &Path) -> Result<(), DevCertsError> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let shown = |source| DevCertsError::Io { path: dir.to_owned(), source };
    if !dir.exists() {
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(shown)?;
        // The umask may have taken bits away, never added them; set it exactly.
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(shown)?;
        return Ok(());
    }
    let mode = std::fs::metadata(dir).map_err(shown)?.permissions().mode() & 0o777;
    if mode & 0o022 != 0 {
        return Err(DevCertsError::SharedDir { dir: dir.to_owned(), mode });
    }
    Ok(())
}

/// Writes `text` to `path` through a new file in the same directory, renamed over `path`: an
/// existing file (a symlink included) is replaced, never written through, and the new file has
/// its mode (0600 for secrets) whatever the old one had.
fn write(path: &Path, text: &str, secret: bool) -> Result<(), DevCertsError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let shown = |source| DevCertsError::Io { path: path.to_owned(), source };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut suffix = [0u8; 8];
    getrandom::fill(&mut suffix).map_err(DevCertsError::Rng)?;
    let temp = path.with_file_name(format!(".{name}.{}.tmp", hex::encode(suffix)));
    let mut options = std::fs::OpenOptions::new();
    // create_new: fails rather than follow anything already at the temporary name.
    options.write(true).create_new(true).mode(if secret { 0o600 } else { 0o644 });
    let written = options.open(&temp).and_then(|mut file| {
        file.write_all(text.as_bytes())?;
        file.sync_all()
    });
    if let Err(e) = written.and_then(|()| std::fs::rename(&temp, path)) {
        let _ = std::fs::remove_file(&temp);
        return Err(shown(e));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::tls::{TlsFiles, server_config};

    #[test]
    fn writes_certificates_the_gateway_accepts() {
        let dir = tempfile::tempdir().expect("tempdir");
        let certs = generate(dir.path(), &["localhost".into(), "127.0.0.1".into()]).expect("certs");
        let files = TlsFiles {
            cert: &certs.server_cert,
            key: &certs.server_key,
            client_ca: Some(&certs.ca),
            allow_tls12: false,
        };
        server_config(&files).expect("a valid mTLS server config");
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&certs.server_key).expect("key").permissions(),
        );
        assert_eq!(mode & 0o777, 0o600, "private keys are not world-readable");
    }

    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::symlink_metadata(path).expect("metadata").permissions().mode() & 0o777
    }

    #[test]
    fn a_new_directory_is_private_and_a_directory_others_can_write_to_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().expect("tempdir");
        // Before: under umask 000 the directory was made world-writable (0777).
        let new = tmp.path().join("made/here");
        generate(&new, &["localhost".into()]).expect("generated");
        assert_eq!(mode(&new), 0o700, "a new key directory is private");
        let open = tmp.path().join("open");
        std::fs::create_dir(&open).expect("mkdir");
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        let err = generate(&open, &["localhost".into()]).expect_err("refused").to_string();
        assert!(err.contains("others can write") && err.contains("777"), "{err}");
        assert!(!open.join("gateway.key").exists(), "nothing written");
    }

    #[test]
    fn an_existing_key_file_gets_mode_0600_and_a_symlink_is_replaced_not_followed() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        // Before: an existing 0666 key file kept its mode, and a symlink was written through.
        let key = dir.path().join("gateway.key");
        std::fs::write(&key, "old").expect("write");
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o666)).expect("chmod");
        let elsewhere = dir.path().join("elsewhere.txt");
        std::fs::write(&elsewhere, "not a key").expect("write");
        let client_key = dir.path().join("collector.key");
        std::os::unix::fs::symlink(&elsewhere, &client_key).expect("symlink");

        let certs = generate(dir.path(), &["localhost".into()]).expect("certs");
        assert_eq!(certs.server_key, key);
        assert_eq!(mode(&certs.server_key), 0o600, "the existing key file is 0600 now");
        assert_eq!(mode(&certs.client_key), 0o600);
        assert!(!std::fs::symlink_metadata(&client_key).expect("meta").file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(&elsewhere).expect("read"), "not a key", "not followed");
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .expect("dir")
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "no temporary files left: {leftovers:?}");
    }
}
