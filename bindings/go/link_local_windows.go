//go:build toolnexus_local

package toolnexus

// As link_local.go, for Windows: this checkout's `cargo build --target
// x86_64-pc-windows-gnu`, linked through its import library (cgo with the mingw-w64 compiler:
// GOOS=windows CC=x86_64-w64-mingw32-gcc); toolnexus.dll goes beside the program or on PATH.

// #cgo CFLAGS: -I${SRCDIR}/../../include
// #cgo LDFLAGS: -L${SRCDIR}/../../target/x86_64-pc-windows-gnu/debug -ltoolnexus
import "C"
