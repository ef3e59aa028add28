// SPDX-License-Identifier: GPL-2.0-only
// Go workload writing its own runtime/pprof profiles, for flamekit's pprof
// input tests. usage: gopprof DIR CPU-SECONDS RATIO
//   DIR/cpu.pprof   CPU profile of CPU-SECONDS of the process's CPU time (not
//                   wall time: a loaded host still gets ~100 samples per
//                   second of it): goHotThree gets RATIO units of work for
//                   each unit goHotOne gets (RATIO 3: a 3:1 split), the
//                   units in random order. Go's SIGPROF comes from a CPU
//                   timer the kernel checks at its scheduler tick, and a
//                   loaded host's time slices start and end at ticks too:
//                   with a fixed order (three goHotThree, then goHotOne)
//                   where a sample lands in the cycle decided the function,
//                   and the split moved with the load -- goHotThree 0.534
//                   of 148 samples in CI run 36, a mean of 0.806 over 16
//                   runs beside four busy loops by hand; in random order
//                   0.759 over the same 16 (0.69-0.83, binomial spread).
//   DIR/heap.pprof  heap profile (every allocation recorded): goAllocBig
//                   keeps 3 MiB live, goAllocSmall 1 MiB
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"syscall"
	"time"
)

var sink uint64
var keep [][]byte

// mix is small enough for the compiler to inline: the CPU profile's
// locations then carry inlined frames.
func mix(x uint64) uint64 { return x*6364136223846793005 + 1442695040888963407 }

//go:noinline
func goHotThree(n int) {
	x := sink
	for i := 0; i < n; i++ {
		x = mix(x)
	}
	sink = x
}

//go:noinline
func goHotOne(n int) {
	x := sink
	for i := 0; i < n; i++ {
		x = mix(x)
	}
	sink = x
}

//go:noinline
func goAllocBig() {
	for i := 0; i < 48; i++ {
		keep = append(keep, make([]byte, 64<<10))
	}
}

//go:noinline
func goAllocSmall() {
	for i := 0; i < 16; i++ {
		keep = append(keep, make([]byte, 64<<10))
	}
}

func die(err error) {
	fmt.Fprintln(os.Stderr, "gopprof:", err)
	os.Exit(1)
}

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: gopprof DIR CPU-SECONDS RATIO")
		os.Exit(2)
	}
	runtime.MemProfileRate = 1
	secs, err := strconv.ParseFloat(os.Args[2], 64)
	if err != nil {
		die(err)
	}
	ratio, err := strconv.Atoi(os.Args[3])
	if err != nil {
		die(err)
	}
	f, err := os.Create(filepath.Join(os.Args[1], "cpu.pprof"))
	if err != nil {
		die(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		die(err)
	}
	// the process's CPU time, with a wall-clock backstop of 30x
	cpu := func() float64 {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			die(err)
		}
		return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
	}
	start := cpu()
	backstop := time.Now().Add(time.Duration(30 * secs * float64(time.Second)))
	rnd := uint64(time.Now().UnixNano()) | 1
	for cpu()-start < secs && time.Now().Before(backstop) {
		for i := 0; i <= ratio; i++ {
			rnd ^= rnd << 13
			rnd ^= rnd >> 7
			rnd ^= rnd << 17
			if rnd%uint64(ratio+1) < uint64(ratio) {
				goHotThree(200000)
			} else {
				goHotOne(200000)
			}
		}
	}
	pprof.StopCPUProfile()
	if err := f.Close(); err != nil {
		die(err)
	}
	goAllocBig()
	goAllocSmall()
	runtime.GC()
	h, err := os.Create(filepath.Join(os.Args[1], "heap.pprof"))
	if err != nil {
		die(err)
	}
	if err := pprof.WriteHeapProfile(h); err != nil {
		die(err)
	}
	if err := h.Close(); err != nil {
		die(err)
	}
	runtime.KeepAlive(keep)
}
