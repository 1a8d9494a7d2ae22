//! Paths and helpers shared by the integration tests: the repository's test data, the `tlio`
//! command (the C++ reader and writer the crate is compared with), scratch folders.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn data() -> PathBuf {
    repo().join("tests/data")
}

/// The CLI: TLIO_CLI when set, else the repository's build/tlio.
pub fn tlio_cli() -> PathBuf {
    std::env::var_os("TLIO_CLI")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("build/tlio"))
}

pub fn run_tlio(args: &[&std::ffi::OsStr]) -> std::process::Output {
    let out = Command::new(tlio_cli())
        .args(args)
        .output()
        .expect("run the tlio command");
    assert!(
        out.status.success(),
        "tlio {:?} failed: {}",
        args,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A fresh folder under the target directory, per test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create a scratch folder");
    dir
}

/// Lines of tab-separated fields from tests/support/expected.py.
pub fn expected(kind: &str) -> Vec<Vec<String>> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/expected.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(kind)
        .arg(data())
        .arg(tlio_cli())
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "expected.py: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("UTF-8")
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

pub fn unhex(text: &str) -> Vec<u8> {
    if text == "-" {
        return Vec::new();
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
        .collect()
}

pub fn unhex_str(text: &str) -> String {
    String::from_utf8(unhex(text)).expect("UTF-8")
}

pub fn shape(text: &str) -> Vec<u64> {
    if text.is_empty() {
        Vec::new()
    } else {
        text.split(',')
            .map(|d| d.parse().expect("a dimension"))
            .collect()
    }
}
