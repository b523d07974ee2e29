//go:build toolnexus_local

package debugapi

// As ../../link_local_windows.go: the Windows build of this repository.

// #cgo CFLAGS: -I${SRCDIR}/../../../../include
// #cgo LDFLAGS: -L${SRCDIR}/../../../../target/x86_64-pc-windows-gnu/debug -ltoolnexus
import "C"
