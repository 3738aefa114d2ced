//go:build unix

package bolt

import (
	"os"
	"syscall"
)

// canRewrite says whether rewriteFile works on this system: it opens the
// new file under the name it will have after the rename (reopenAs), and
// renames it over the open store's file.
const canRewrite = true

// reopenAs returns a second handle to f's file that calls itself name, and
// closes f.
func reopenAs(f *os.File, name string) (*os.File, error) {
	fd, err := syscall.Dup(int(f.Fd()))
	f.Close()
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}
