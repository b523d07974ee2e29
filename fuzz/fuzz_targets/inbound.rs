//! One inbound line on a live connection with a resolver (§4, §5): classified by `method`
//! first, server requests bridged, responses to unknown ids and junk skipped; never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    toolnexus::fuzzing::inbound_line(data);
});
