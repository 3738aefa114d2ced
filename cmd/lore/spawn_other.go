//go:build !unix

package main

// spawnHolder would start a background holder; sharing a store needs a
// Unix system.
func spawnHolder(bridgeOptions) (<-chan string, error) { return nil, errNotUnix }
