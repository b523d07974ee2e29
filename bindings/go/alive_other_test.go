//go:build !windows

package toolnexus

import "syscall"

// processAlive: whether process pid exists (signal 0).
func processAlive(pid int) bool { return syscall.Kill(pid, 0) == nil }
