//! Hashes and model signatures through the crate, checked against coreutils' sha256sum and the
//! `tlio` command (keys made by the openssl command).
mod support;

use std::path::Path;
use std::process::Command;

use tlio::{hash_file, sign_folder, verify_signature, ErrorKind, File, OpenOptions};

fn sha256sum(path: &Path) -> String {
    let out = Command::new("sha256sum")
        .arg(path)
        .output()
        .expect("run sha256sum");
    String::from_utf8(out.stdout).unwrap()[..64].to_string()
}

fn openssl(args: &[&str]) {
    let ok = Command::new("openssl")
        .args(args)
        .status()
        .expect("run openssl")
        .success();
    assert!(ok, "openssl {:?}", args);
}

#[test]
fn hashes_equal_sha256sum() {
    let path = support::data().join("hf/worked_example.safetensors");
    let want = sha256sum(&path);
    assert_eq!(hash_file(&path, &OpenOptions::default()).unwrap(), want);
    let file = File::open(&path).unwrap();
    assert_eq!(file.sha256(None).unwrap(), want);
    assert_eq!(file.sha256(Some(&want.to_uppercase())).unwrap(), want);
    let e = file.sha256(Some(&"0".repeat(64))).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Verification);
    assert!(e.message().contains(&want), "{}", e.message());
    let missing = hash_file(
        support::data().join("no-such-file"),
        &OpenOptions::default(),
    )
    .unwrap_err();
    assert_eq!(missing.kind(), ErrorKind::Io);
}

#[test]
fn signatures_round_trip_with_the_cli_and_name_a_changed_file() {
    let dir = support::scratch("trust-sign");
    let model = dir.join("model");
    std::fs::create_dir_all(model.join("sub")).unwrap();
    std::fs::write(model.join("model.safetensors"), b"weights").unwrap();
    std::fs::write(model.join("sub/config.json"), b"{}").unwrap();
    let (key, public) = (dir.join("key.pem"), dir.join("key.pub"));
    openssl(&[
        "genpkey",
        "-algorithm",
        "EC",
        "-pkeyopt",
        "ec_paramgen_curve:P-521",
        "-out",
        key.to_str().unwrap(),
    ]);
    openssl(&[
        "pkey",
        "-in",
        key.to_str().unwrap(),
        "-pubout",
        "-out",
        public.to_str().unwrap(),
    ]);

    sign_folder(&model, &key, None).unwrap();
    let out = Command::new(support::tlio_cli())
        .args([
            "verify".as_ref(),
            model.as_os_str(),
            "--key".as_ref(),
            public.as_os_str(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let elsewhere = dir.join("elsewhere.sig");
    support::run_tlio(&[
        "sign".as_ref(),
        model.as_os_str(),
        "--key".as_ref(),
        key.as_os_str(),
        "--signature".as_ref(),
        elsewhere.as_os_str(),
    ]);
    verify_signature(&model, &public, Some(&elsewhere)).unwrap();

    std::fs::write(model.join("sub/config.json"), b"{ }").unwrap();
    let e = verify_signature(&model, &public, None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Verification);
    assert!(e.message().contains("sub/config.json"), "{}", e.message());
    let e = sign_folder(&model, &public, None).unwrap_err(); // a public key cannot sign
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
}
