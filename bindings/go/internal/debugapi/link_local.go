//go:build toolnexus_local && !windows

package debugapi

// The library built in this repository (`cargo build`, a debug build), as in ../../link_local.go.

// #cgo CFLAGS: -I${SRCDIR}/../../../../include
// #cgo LDFLAGS: -L${SRCDIR}/../../../../target/debug -Wl,-rpath,${SRCDIR}/../../../../target/debug -ltoolnexus
import "C"
