// Command hello answers -version as nodeplan's programs do ("<program> <version> (<go>)"),
// from the build information the Go toolchain records.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime/debug"
)

func main() {
	version := flag.Bool("version", false, "print the version and exit")
	flag.Parse()
	info, ok := debug.ReadBuildInfo()
	if !*version || !ok {
		os.Exit(2)
	}
	fmt.Printf("hello %s (%s)\n", info.Main.Version, info.GoVersion)
}
