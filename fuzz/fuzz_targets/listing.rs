//! A `tools/list` page read by position gives the same tools (names, §0.1 renderings) and
//! cursor as the same page parsed into values.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolnexus::fuzzing::listing;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Some(fast) = listing(text, true) else {
        return;
    };
    let slow = listing(text, false).expect("a page read by position also parses");
    assert_eq!(fast, slow, "{text}");
});
