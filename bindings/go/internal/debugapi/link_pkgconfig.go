//go:build !toolnexus_local

package debugapi

// The installed library, as in ../../link_pkgconfig.go (a release build lacks the debug API:
// the binding's tests build with -tags toolnexus_local).

// #cgo pkg-config: toolnexus
import "C"
