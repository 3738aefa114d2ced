//go:build !linux

package main

import (
	"net"
	"os"
)

// peerUID returns the user ID of the process at the other end of a Unix
// socket connection. Only Linux says (SO_PEERCRED); elsewhere the socket's
// mode (0600) and its directory keep other users out, and this returns
// this process's own user.
func peerUID(c net.Conn) (int, error) {
	if _, ok := c.(*net.UnixConn); !ok {
		return -1, errNotUnixConn
	}
	return os.Getuid(), nil
}
