package main

import (
	"errors"
	"fmt"

	"github.com/shmsketch/sketch"
)

// runCheck validates a sketch file without creating or changing anything
// and prints its stats. It fails when the file is corrupt or when Check
// finds rows that disagree (an add interrupted by a killed process).
func runCheck(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: sketch check FILE")
	}
	c, err := sketch.OpenCountMin(args[0], sketch.CountMinConfig{}, sketch.ReadOnly())
	if err != nil {
		return err
	}
	defer c.Close()
	printStats(c.Stats())
	if err := c.Check(); err != nil {
		return err
	}
	fmt.Println("ok")
	return nil
}

func printStats(s sketch.CountMinStats) {
	fmt.Printf("shape       %d x %d (%d bytes mapped)\n", s.Rows, s.Width, s.Bytes)
	fmt.Printf("total       %d (add count %d)\n", s.Total, s.Adds)
	fmt.Printf("error bound %d (ε %.6f, confidence %.4f)\n", s.ErrorBound, s.ErrorRate, s.Confidence)
}
