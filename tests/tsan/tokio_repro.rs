// A plain tokio program, nothing of toolnexus: connections made on the runtime's workers
// while its I/O driver dispatches events. Run under ThreadSanitizer.
use tokio::io::{AsyncReadExt, AsyncWriteExt};
fn main() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let mut s = s.unwrap();
            std::thread::spawn(move || {
                use std::io::{Read, Write};
                let mut b = [0u8; 4];
                while s.read_exact(&mut b).is_ok() {
                    if s.write_all(&b).is_err() {
                        break;
                    }
                }
            });
        }
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let mut hs = Vec::new();
        for _ in 0..8 {
            hs.push(tokio::spawn(async move {
                for _ in 0..50 {
                    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
                    s.write_all(b"ping").await.unwrap();
                    let mut b = [0u8; 4];
                    s.read_exact(&mut b).await.unwrap();
                }
            }));
        }
        for h in hs {
            h.await.unwrap();
        }
    });
    println!("done");
}
