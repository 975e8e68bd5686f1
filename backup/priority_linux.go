package backup

import (
	"runtime"
	"syscall"
)

// backgroundNice is how much lower than the process's the CPU priority of
// a backup's copying is: at nice 10 against 0 a thread gets about a tenth
// of the time a busy core gives the service's threads, and all of what
// they leave.
const backgroundNice = 10

// lowerPriority runs the calling goroutine, from now until it ends, on an
// OS thread of its own at backgroundNice below the process's priority.
// Linux keeps a nice value for each thread; the goroutine stays locked to
// its thread, and the Go runtime ends a thread whose goroutine ends
// locked, so no other goroutine ever runs at the lowered priority. Where
// the priority cannot be changed the goroutine runs as before.
func lowerPriority() {
	runtime.LockOSThread()
	tid := syscall.Gettid()
	// The system call answers 20 - nice, so that it is never negative.
	raw, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
	if err != nil {
		return
	}
	syscall.Setpriority(syscall.PRIO_PROCESS, tid, min(20-raw+backgroundNice, 19))
}
