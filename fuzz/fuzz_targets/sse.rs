//! The one SSE parser (every HTTP path reads events through it): no panic, no event past the
//! cap, the same events and verdict however the bytes arrive, and every message it passes on
//! is one a connection's reader takes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolnexus::fuzzing::{messages, refused_by_reader, sse};

fuzz_target!(|data: &[u8]| {
    let Some((&seed, input)) = data.split_first() else {
        return;
    };
    let max = 16 + usize::from(seed) * 4;
    let (whole, e1) = sse(input, max, &[]);
    let cuts: Vec<usize> = (0..input.len().min(256))
        .map(|i| 1 + (i * 7 + usize::from(seed)) % 13)
        .collect();
    let (split, e2) = sse(input, max, &cuts);
    assert_eq!(whole, split, "events differ by cutting");
    assert_eq!(e1, e2, "verdicts differ by cutting");
    for ev in &whole {
        if let Some(d) = &ev.data {
            assert!(d.len() <= max, "an event past the cap got through");
            for m in messages(d) {
                assert!(!refused_by_reader(m.as_bytes()), "passed on what the reader refuses: {m}");
            }
        }
    }
});
