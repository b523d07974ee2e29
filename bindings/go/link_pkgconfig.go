//go:build !toolnexus_local

package toolnexus

// Default: the installed library (`make install PREFIX=…`), flags from
// `pkg-config --cflags --libs toolnexus` (set PKG_CONFIG_PATH=PREFIX/lib/pkgconfig for a
// non-system prefix; its .pc file carries an rpath, so programs run without LD_LIBRARY_PATH).
// Build with `-tags toolnexus_local` to link this checkout's `cargo build` instead.

// #cgo pkg-config: toolnexus
import "C"
