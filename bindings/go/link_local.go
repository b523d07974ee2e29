//go:build !toolnexus_pkgconfig

package toolnexus

// Default: the library built in this repository (`cargo build`), found at run time through
// an rpath. Build with `-tags toolnexus_pkgconfig` to use an installed copy instead.

// #cgo CFLAGS: -I${SRCDIR}/../../include
// #cgo LDFLAGS: -L${SRCDIR}/../../target/debug -Wl,-rpath,${SRCDIR}/../../target/debug -ltoolnexus
import "C"
