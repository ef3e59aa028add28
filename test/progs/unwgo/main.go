// SPDX-License-Identifier: GPL-2.0-only
// Go workload for the unwinding tests: main.main -> main.unwMid -> a leaf
// with no frame of its own (main.unwLeaf). A frame-pointer walk skips the
// leaf's caller; CFI (.debug_frame or .gopclntab) keeps it.
// usage: unwgo SECONDS
package main

import (
	"os"
	"strconv"
	"time"
)

var sink uint64

//go:noinline
func unwLeaf(x uint64) uint64 {
	return x*2654435761 ^ (x >> 7)
}

//go:noinline
func unwMid(n int) uint64 {
	var s uint64
	for i := 0; i < n; i++ {
		s += unwLeaf(uint64(i) + s)
	}
	return s
}

func main() {
	secs := 2.0
	if len(os.Args) > 1 {
		secs, _ = strconv.ParseFloat(os.Args[1], 64)
	}
	end := time.Now().Add(time.Duration(secs * float64(time.Second)))
	for time.Now().Before(end) {
		sink += unwMid(200000)
	}
}
