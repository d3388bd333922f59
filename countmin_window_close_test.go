//go:build linux

package sketch

import (
	"sync"
	"testing"
	"time"
)

// TestCountMinWindow_CloseDuringRotate: a handle closed while its
// goroutines Rotate (holding the file's read lock) must leave the file's
// lock usable: another handle's Rotate and Freeze then finish.
func TestCountMinWindow_CloseDuringRotate(t *testing.T) {
	for i := range 30 {
		path := tempPath(t, "win")
		cfg := CountMinConfig{Rows: 4, Width: 1 << 12}
		other := mustOpenWindow(t, path, Window{Keep: 2}, cfg)
		w, err := OpenCountMinWindow(Path(path), CountMinWindowConfig{Window: Window{Keep: 2}, CountMin: cfg})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for w.Rotate() == nil {
				}
			}()
		}
		time.Sleep(time.Duration(i%5) * 200 * time.Microsecond)
		w.Close()
		wg.Wait()
		done := make(chan error, 1)
		go func() {
			if err := other.Rotate(); err != nil {
				done <- err
				return
			}
			done <- other.Freeze()
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("round %d: %v", i, err)
			}
		case <-time.After(patience):
			t.Fatalf("round %d: Rotate and Freeze through another handle did not finish within %v of a Close that raced Rotate", i, patience)
		}
	}
}
