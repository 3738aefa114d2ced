package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// openPTY opens a pseudo-terminal: its controller and the terminal end.
func openPTY(t *testing.T) (ctl, term *os.File) {
	t.Helper()
	ctl, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, ctl.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatal(e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, ctl.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatal(e)
	}
	term, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctl.Close(); term.Close() })
	return ctl, term
}

// onTerminal runs lore with stdout on a terminal and returns what it
// printed there.
func onTerminal(t *testing.T, args ...string) string {
	t.Helper()
	ctl, term := openPTY(t)
	cmd := exec.Command(loreBin, args...)
	cmd.Env = testEnv(t)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = term, &stderr
	read := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(ctl) // ends with EIO once no process has the terminal open
		read <- b
	}()
	err := cmd.Run()
	term.Close()
	out := <-read
	if err != nil {
		t.Fatalf("lore %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.ReplaceAll(string(out), "\r\n", "\n")
}

// TestTerminalGetsTheHumanView: with stdout on a terminal, a read command
// prints its human view by default, also when the store's holder runs it
// (the client tells it stdout is a terminal); --json still prints JSON.
func TestTerminalGetsTheHumanView(t *testing.T) {
	store := exampleStore(t)
	check := func(how string) {
		if out := onTerminal(t, "get", "--store", store, "team/payments"); !strings.HasPrefix(out, "Team  team/payments  Payments\n") {
			t.Errorf("%s: get on a terminal printed %q", how, out)
		}
		if out := onTerminal(t, "get", "--json", "--store", store, "team/payments"); !strings.HasPrefix(out, "{\n") {
			t.Errorf("%s: get --json on a terminal printed %q", how, out)
		}
	}
	check("in process")
	startHold(t, store, "--idle", "1h")
	check("through the holder")
}
