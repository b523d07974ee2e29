//! The direct path's HTTP/1.1 response reader (heads through httparse, then the body framing):
//! no panic, and the same outcome however the bytes arrive. The first byte chooses how the
//! rest is cut into reads.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolnexus::fuzzing::http_response;

/// Read sizes from `seed`: 1 to 16 bytes, then whatever is left.
fn cuts(seed: u8, len: usize) -> Vec<usize> {
    let mut x = u32::from(seed) | 0x100;
    (0..len.min(512))
        .map(|_| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            1 + (x >> 16) as usize % 16
        })
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let Some((&seed, input)) = data.split_first() else {
        return;
    };
    let whole = http_response(input, &[]);
    let split = http_response(input, &cuts(seed, input.len()));
    assert_eq!(whole.head, split.head, "heads differ by cutting");
    assert_eq!(whole.body, split.body, "bodies differ by cutting");
    assert_eq!(whole.body_done, split.body_done);
    assert_eq!(whole.left_over, split.left_over);
    assert_eq!(whole.error.is_some(), split.error.is_some(), "{whole:?} / {split:?}");
    if let Some((status, framing, _)) = &whole.head {
        assert!((200..=999).contains(status), "an interim or odd status got through: {status}");
        if let Some(n) = framing.strip_prefix("Length(").and_then(|f| f.strip_suffix(')')) {
            let n: usize = n.parse().unwrap();
            assert!(whole.body.len() <= n, "a body longer than its Content-Length");
        }
    }
});
