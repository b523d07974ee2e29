//go:build toolnexus_local && !windows

package toolnexus

// Opt-in (`-tags toolnexus_local`): the library built in this checkout (`cargo build` →
// target/debug), found at run time through an rpath. The binding's own tests use it (they need
// the debug build's debug-only functions, see internal/debugapi).

// #cgo CFLAGS: -I${SRCDIR}/../../include
// #cgo LDFLAGS: -L${SRCDIR}/../../target/debug -Wl,-rpath,${SRCDIR}/../../target/debug -ltoolnexus
import "C"
