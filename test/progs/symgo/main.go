// SPDX-License-Identifier: GPL-2.0-only
// Go workload for the symbolizer tests: "addrs" prints the entry address of
// main.fkGoHot and waits for stdin EOF; "spin SECS" burns CPU in it.
package main

import (
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"time"
)

var sink uint64

//go:noinline
func fkGoHot(n uint64) {
	for i := uint64(0); i < n; i++ {
		sink += i * 7
	}
}

func main() {
	if len(os.Args) > 2 && os.Args[1] == "spin" {
		secs, _ := strconv.ParseFloat(os.Args[2], 64)
		end := time.Now().Add(time.Duration(secs * float64(time.Second)))
		for time.Now().Before(end) {
			fkGoHot(1000000)
		}
		return
	}
	fmt.Printf("%x\n", reflect.ValueOf(fkGoHot).Pointer())
	io.Copy(io.Discard, os.Stdin)
}
