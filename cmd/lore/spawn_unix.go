//go:build unix

package main

import (
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// sharing says whether lore mcp can share a store through a background
// holder on this system.
const sharing = true

// fileOwner returns the owner of a file.
func fileOwner(fi os.FileInfo) (int, bool) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), true
	}
	return 0, false
}

// spawnHolder starts lore hold for the bridge's store in the background,
// detached from the terminal (a session of its own), with its stderr in
// the store's holder log. The channel receives what the holder reports on
// its readiness pipe: "ready", "held by …" (another holder answered
// first) or "error: …"; "" if it exited without a word.
func spawnHolder(o bridgeOptions) (<-chan string, error) {
	if err := os.MkdirAll(o.store, 0o755); err != nil {
		return nil, err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(o.exe, append([]string{"hold", "--ready-fd", "3"}, o.hold...)...)
	cmd.Dir = "/" // keep no client's working directory busy
	if log := openHolderLog(o.store); log != nil {
		cmd.Stderr = log
		defer log.Close()
	}
	cmd.ExtraFiles = []*os.File{pw}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		return nil, err
	}
	go cmd.Wait() // reaps it if it ends while this process runs
	ch := make(chan string, 1)
	go func() {
		data, _ := io.ReadAll(io.LimitReader(pr, 64<<10))
		pr.Close()
		ch <- strings.TrimSpace(string(data))
	}()
	return ch, nil
}
