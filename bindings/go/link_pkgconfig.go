//go:build toolnexus_pkgconfig

package toolnexus

// The installed library (`make install`): flags from `pkg-config --cflags --libs toolnexus`.

// #cgo pkg-config: toolnexus
import "C"
