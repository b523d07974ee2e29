//! The committed header must equal a fresh cbindgen run (c-api.md: the header is generated
//! from src/ffi and committed). Fix drift with `scripts/regen-header`.

#[test]
fn committed_header_matches_cbindgen() {
    let fresh = include_str!(concat!(env!("OUT_DIR"), "/toolnexus.h"));
    let committed = include_str!("../include/toolnexus.h");
    assert!(
        fresh == committed,
        "include/toolnexus.h differs from a fresh cbindgen run: run scripts/regen-header and commit"
    );
}
