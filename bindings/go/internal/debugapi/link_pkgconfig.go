//go:build toolnexus_pkgconfig

package debugapi

// The installed library, as in ../../link_pkgconfig.go (a release build lacks the debug API).

// #cgo pkg-config: toolnexus
import "C"
