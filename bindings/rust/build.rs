//! Finds libtlio: TLIO_LIB_DIR when set, else `pkg-config tlio` (an installed tlio.pc), else the
//! repository's own `build/` (bindings/rust/../../build). The directory is also put in the
//! run-time search path, so tests and examples run without LD_LIBRARY_PATH.
use std::path::PathBuf;
use std::process::Command;

fn from_pkg_config() -> Option<Vec<PathBuf>> {
    let out = Command::new("pkg-config")
        .args(["--libs-only-L", "tlio"])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    let dirs: Vec<PathBuf> = text
        .split_whitespace()
        .filter_map(|flag| flag.strip_prefix("-L"))
        .map(PathBuf::from)
        .collect();
    // A tlio.pc in the default library path prints no -L: the linker finds it alone.
    Some(dirs)
}

fn main() {
    println!("cargo:rerun-if-env-changed=TLIO_LIB_DIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    let manifest = PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"),
    );
    let repo_build = manifest.join("../../build");
    let dirs: Vec<PathBuf> = if let Some(dir) = std::env::var_os("TLIO_LIB_DIR") {
        vec![PathBuf::from(dir)]
    } else if let Some(dirs) = from_pkg_config() {
        dirs
    } else if repo_build.join("libtlio.so").exists() {
        vec![repo_build]
    } else {
        panic!(
            "libtlio not found: set TLIO_LIB_DIR to the folder holding libtlio.so, install tlio \
             (pkg-config tlio), or build it in the repository first: cmake -S . -B build && \
             cmake --build build"
        );
    };
    for dir in &dirs {
        let dir = dir.canonicalize().unwrap_or_else(|_| dir.clone());
        println!("cargo:rustc-link-search=native={}", dir.display());
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
        let lib = dir.join("libtlio.so");
        if lib.exists() {
            println!("cargo:rerun-if-changed={}", lib.display());
        }
    }
    println!("cargo:rustc-link-lib=dylib=tlio");
}
