package postgres_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// cpuMeter measures the CPU time a load costs: Lore's process
// (getrusage) and the PostgreSQL processes serving the load's database,
// found in /proc by their title (backends name their database; parallel
// workers name their leader's PID), sampled every 50 ms so that a
// short-lived parallel worker is seen (its last sample is its total, less
// at most 50 ms). The server's shared processes (checkpointer, background
// writer, WAL writer) are measured apart: they also serve other
// databases. On a machine without /proc it measures Lore only.
type cpuMeter struct {
	db         string
	lore0      time.Duration
	stop, done chan struct{}
	mu         sync.Mutex
	first      map[int]time.Duration // backend or worker -> CPU when first seen
	last       map[int]time.Duration // -> CPU when last seen
	shared0    map[int]time.Duration // shared process -> CPU at start
	class      map[int]int           // pid -> what it is (see classify)
	self       time.Duration         // the meter's own CPU time
}

// cpuUsage is what a cpuMeter measured.
type cpuUsage struct {
	lore, pg, shared time.Duration
	procs            int // PostgreSQL processes seen serving the load
}

func (u cpuUsage) String() string {
	return fmt.Sprintf("CPU: Lore %.2f s, PostgreSQL %.2f s (%d processes), total %.2f s; shared server processes %.2f s",
		u.lore.Seconds(), u.pg.Seconds(), u.procs, (u.lore + u.pg).Seconds(), u.shared.Seconds())
}

func selfCPU() time.Duration { return rusage(syscall.RUSAGE_SELF) }

// threadCPU is the calling thread's CPU time (RUSAGE_THREAD).
func threadCPU() time.Duration { return rusage(1) }

func rusage(who int) time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(who, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procTitle returns a process's title.
func procTitle(pid int) (string, bool) {
	title, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return "", false
	}
	return string(bytes.TrimRight(title, "\x00")), true
}

// procCPU returns a process's CPU time (utime+stime).
func procCPU(pid int) (time.Duration, bool) {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, false
	}
	// pid (comm) state ppid ... field 14 utime, 15 stime
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	const hz = 100 // USER_HZ on Linux
	return time.Duration(ut+st) * time.Second / hz, true
}

// startCPU starts measuring the CPU time of Lore and of the PostgreSQL
// processes serving database db.
func startCPU(db string) *cpuMeter {
	m := &cpuMeter{db: db, lore0: selfCPU(), stop: make(chan struct{}), done: make(chan struct{}),
		first: map[int]time.Duration{}, last: map[int]time.Duration{}, shared0: map[int]time.Duration{}, class: map[int]int{}}
	m.scan(true)
	go func() {
		defer close(m.done)
		// The meter's own CPU time is not the load's: it runs on a
		// thread of its own, whose time end subtracts.
		runtime.LockOSThread()
		defer func() { m.self = threadCPU() }()
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-m.stop:
				m.scan(false)
				return
			case <-t.C:
				m.scan(false)
			}
		}
	}()
	return m
}

func isShared(title string) bool {
	for _, s := range []string{": checkpointer", ": background writer", ": walwriter"} {
		if strings.Contains(title, s) {
			return true
		}
	}
	return false
}

// scan samples the processes; at the start it notes the CPU the load's
// backends and the shared processes had already used. It reads the
// title of a process until it knows whose it is.
func (m *cpuMeter) scan(start bool) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || m.class[pid] == ignore {
			continue
		}
		c, known := m.class[pid]
		if !known {
			title, ok := procTitle(pid)
			if !ok {
				continue
			}
			c = m.classify(title)
			if c == unknown {
				continue
			}
			m.class[pid] = c
		}
		cpu, ok := procCPU(pid)
		if !ok {
			continue
		}
		switch c {
		case shared:
			if start {
				m.shared0[pid] = cpu
			} else if _, ok := m.shared0[pid]; ok {
				m.last[-pid] = cpu // shared processes are kept by -pid
			}
		case mine:
			if _, seen := m.first[pid]; !seen {
				if start {
					m.first[pid] = cpu
				} else {
					m.first[pid] = 0 // a process started during the load
				}
			}
			m.last[pid] = cpu
		}
	}
}

// Classes of processes.
const (
	unknown = iota // not yet known (a PostgreSQL process still starting)
	ignore
	mine   // serves the load's database
	shared // a shared server process
)

func (m *cpuMeter) classify(title string) int {
	rest, ok := strings.CutPrefix(title, "postgres: ")
	switch {
	case !ok && strings.Contains(title, "/bin/postgres"):
		return unknown // the postmaster's title before the backend sets its own
	case !ok:
		return ignore
	case isShared(title):
		return shared
	case strings.Contains(rest, " "+m.db+" "):
		return mine
	}
	if i := strings.Index(rest, "parallel worker for PID "); i >= 0 {
		leader, _ := strconv.Atoi(strings.Fields(rest[i+len("parallel worker for PID "):])[0])
		if m.class[leader] == mine {
			return mine
		}
		return ignore
	}
	if strings.Count(rest, " ") >= 3 { // user database host activity
		return ignore
	}
	return unknown
}

// now returns what the meter measured so far (Lore's time includes the
// meter's).
func (m *cpuMeter) now() cpuUsage {
	m.scan(false)
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.usage(selfCPU() - m.lore0)
}

// end stops the meter and returns what it measured.
func (m *cpuMeter) end() cpuUsage {
	close(m.stop)
	<-m.done
	lore := selfCPU() - m.lore0 - m.self
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.usage(lore)
}

func (m *cpuMeter) usage(lore time.Duration) cpuUsage {
	u := cpuUsage{lore: lore}
	for pid, c := range m.last {
		if pid < 0 {
			u.shared += c - m.shared0[-pid]
			continue
		}
		u.pg += c - m.first[pid]
		u.procs++
	}
	return u
}
