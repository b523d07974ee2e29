// Package debugapi reaches the library's debug-only functions (c-api.md "Debug-only"): only a
// debug build exports them, and the header declares them under TOOLNEXUS_DEBUG_API. The
// binding never uses them; its tests do, against the repository's debug build (a separate
// package because cgo is not allowed in _test.go files).
package debugapi

/*
#include <stdlib.h>
#define TOOLNEXUS_DEBUG_API
#include "toolnexus.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// ForcePanic calls tn_debug_force_panic(msg) and returns its status with the last-error
// message read on the same OS thread (the library's status text when there is none).
func ForcePanic(msg string) (status int32, message string) {
	cmsg := C.CString(msg)
	defer C.free(unsafe.Pointer(cmsg))
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	st := C.tn_debug_force_panic(cmsg)
	if st == 0 {
		return 0, ""
	}
	if m := C.tn_last_error_message(); m != nil {
		message = C.GoString(m)
	}
	if message == "" {
		message = C.GoString(C.tn_status_str(st))
	}
	return int32(st), message
}
