//! Generates the C header from `src/ffi/` with cbindgen into OUT_DIR. The committed copy in
//! `include/toolnexus.h` must equal it (a test checks; `scripts/regen-header` refreshes it).

fn main() {
    // macOS: the shared library names itself `@rpath/libtoolnexus.dylib`, so a host
    // finds it through its own rpath (the .pc file and the CMake target give one), wherever
    // it is installed or bundled. Only the cdylib's link line gets it.
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("macos") {
        let version = std::env::var("CARGO_PKG_VERSION").expect("CARGO_PKG_VERSION");
        println!("cargo:rustc-cdylib-link-arg=-Wl,-install_name,@rpath/libtoolnexus.dylib");
        println!("cargo:rustc-cdylib-link-arg=-Wl,-current_version,{version}");
        println!(
            "cargo:rustc-cdylib-link-arg=-Wl,-compatibility_version,{}",
            compatibility(&version)
        );
    }
    // The whole tree: cbindgen reads every module, and a `pub` item anywhere can reach the header.
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    let crate_dir = std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR");
    let out_dir = std::env::var("OUT_DIR").expect("OUT_DIR");
    let config =
        cbindgen::Config::from_file(format!("{crate_dir}/cbindgen.toml")).expect("cbindgen.toml");
    match cbindgen::Builder::new()
        .with_crate(&crate_dir)
        .with_config(config)
        .generate()
    {
        Ok(b) => {
            b.write_to_file(format!("{out_dir}/toolnexus.h"));
        }
        Err(e) => panic!("cbindgen failed: {e}"),
    }
}

/// The Mach-O compatibility version: what a host linked against this library needs at least
/// (for 0.x the minor version, otherwise the major version, as the soname on Linux).
fn compatibility(version: &str) -> String {
    let mut parts = version.split('.');
    let major = parts.next().unwrap_or("0");
    let minor = parts.next().unwrap_or("0");
    if major == "0" {
        format!("0.{minor}.0")
    } else {
        format!("{major}.0.0")
    }
}
