//! Config parsing (§2): whatever the text, it returns (a bad entry fails that server alone).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        toolnexus::fuzzing::config(text);
    }
});
