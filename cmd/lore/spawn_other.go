//go:build !unix

package main

import (
	"errors"
	"os"
)

// sharing says whether lore mcp can share a store through a background
// holder on this system: lore mcp serves the session itself here.
const sharing = false

// errNotUnix is returned where sharing needs a Unix system.
var errNotUnix = errors.New("sharing a store between processes needs a Unix system; run lore mcp --direct")

// fileOwner would return the owner of a file; this system does not say.
func fileOwner(os.FileInfo) (int, bool) { return 0, false }

// spawnHolder would start a background holder; sharing a store needs a
// Unix system.
func spawnHolder(bridgeOptions) (<-chan string, error) { return nil, errNotUnix }
