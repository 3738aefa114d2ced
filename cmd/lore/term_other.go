//go:build !linux

package main

import "os"

// isTerminalFile reports whether f is a character device, a terminal
// most likely.
func isTerminalFile(f *os.File) bool { return isTerminal(f) }
