// Command sketch inspects and demonstrates shared Count-Min sketches.
//
//	sketch demo [-procs N] [-adds N] [-file PATH]   several processes count one stream
//	sketch check FILE                               validate a file, print its stats
//	sketch add FILE KEY [N]                         count KEY (N times), print the estimate
//	sketch estimate FILE KEY...                     print estimates with their error bound
//	sketch version                                  print the backend this binary uses
package main

import (
	"fmt"
	"os"

	"github.com/shmsketch/sketch"
)

const usage = `usage:
  sketch demo [-procs N] [-adds N] [-file PATH]  several processes count one skewed stream
  sketch check FILE                              validate a sketch file and print its stats
  sketch add FILE KEY [N]                        count KEY once (or N times), print the estimate
  sketch estimate FILE KEY...                    print each key's estimate and the error bound
  sketch version                                 print the backend (cgo or purego)
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "demo":
		err = runDemo(args)
	case demoWorkerCmd:
		err = runDemoWorker(args)
	case "check":
		err = runCheck(args)
	case "add":
		err = runAdd(args)
	case "estimate":
		err = runEstimate(args)
	case "version":
		fmt.Println("sketch backend:", sketch.Backend)
	case "help", "-h", "-help", "--help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "sketch: unknown command %q\n%s", cmd, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
