package main

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/shmsketch/sketch"
)

// runAdd counts a key in an existing sketch and prints the new estimate.
func runAdd(args []string) error {
	if len(args) != 2 && len(args) != 3 {
		return errors.New("usage: sketch add FILE KEY [N]")
	}
	n := uint64(1)
	if len(args) == 3 {
		var err error
		if n, err = strconv.ParseUint(args[2], 10, 64); err != nil {
			return fmt.Errorf("sketch add: count %q: %w", args[2], err)
		}
	}
	c, err := sketch.OpenCountMin(args[0], sketch.CountMinConfig{}, sketch.WithoutCreate())
	if err != nil {
		return err
	}
	defer c.Close()
	est, err := c.AddN([]byte(args[1]), n)
	if err != nil {
		return err
	}
	fmt.Println(est)
	return nil
}

// runEstimate prints each key's estimate as a range: the estimate is never
// low, and high by at most the error bound with the sketch's confidence.
func runEstimate(args []string) error {
	if len(args) < 2 {
		return errors.New("usage: sketch estimate FILE KEY...")
	}
	c, err := sketch.OpenCountMin(args[0], sketch.CountMinConfig{}, sketch.ReadOnly())
	if err != nil {
		return err
	}
	defer c.Close()
	bound := c.Stats().ErrorBound
	for _, k := range args[1:] {
		n := c.EstimateString(k)
		fmt.Printf("%s\t%d\t(between %d and %d)\n", k, n, n-min(n, bound), n)
	}
	return nil
}
