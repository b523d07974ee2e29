//! Generates the C header from `src/ffi/` with cbindgen into OUT_DIR. The committed copy in
//! `include/toolnexus.h` must equal it (a test checks; `scripts/regen-header` refreshes it).

fn main() {
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
