// Package procstat reads a running process's CPU time and memory from
// /proc, and records its call stacks with perf, for benchmarks that report
// what a server or worker process spent beside their figures.
package procstat

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// CPU is the user and system CPU time pid has used so far; 0 when it
// cannot be read.
func CPU(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command's closing parenthesis (the command may hold
	// spaces); utime and stime are the 12th and 13th of them, in clock
	// ticks, 100 a second on Linux.
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// MachineCPU is the CPU time every process and the kernel on this machine
// have used since boot, summed over its cores (time not idle or waiting for
// the disk); 0 when it cannot be read. Work done for a process by others
// (the kernel's writeback, Postgres, Redis) counts too.
func MachineCPU() time.Duration {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	// The first line sums the cores: cpu user nice system idle iowait irq
	// softirq steal ..., in clock ticks.
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		n, _ := strconv.ParseInt(f[i], 10, 64)
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// Memory reads a kB field of /proc/pid/status (VmRSS, VmHWM), in bytes;
// 0 when it cannot be read.
func Memory(pid int, field string) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// Perf samples pid's call stacks with `perf record -g` into file until
// the returned function is called; with no file it does nothing. Read the
// result with `perf report -i file`.
func Perf(tb testing.TB, pid int, file string) (stop func()) {
	tb.Helper()
	if file == "" {
		return func() {}
	}
	cmd := exec.Command("perf", "record", "-F", "499", "-g", "-p", strconv.Itoa(pid), "-o", file)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatalf("perf: %v", err)
	}
	return func() {
		cmd.Process.Signal(syscall.SIGINT)
		cmd.Wait()
	}
}
