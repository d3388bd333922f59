package main

import (
	"fmt"
	"strings"
	"time"
)

// A stopCase is one kind of holder stopped.
type stopCase struct {
	name string
	mode string // "write": the holder is inside Reset; "read": inside AddBatch
	loop bool   // the holder calls again at once after SIGCONT, competing with the waiter
}

// stopCases are the holders stopped: for writing (inside Reset) or reading
// (inside AddBatch), leaving after the call they were stopped in, or
// looping on, so that the waiter competes with the holder's next Clear.
var stopCases = []stopCase{
	{"write holder (Reset)", "write", false},
	{"read holder (AddBatch)", "read", false},
	{"write holder looping on", "write", true},
}

// A stopRound is one holder stopped inside its call, with a waiter of the
// other build waiting for the write lock.
type stopRound struct {
	c              stopCase
	holder, waiter string        // backends
	stops          int           // SIGSTOPs until one caught the holder inside the lock
	inWhileStopped bool          // the waiter got the lock from a live holder
	lostLock       bool          // Inspect no longer showed the lock taken at the end of the stop
	waiterErr      string        // the waiter gave up or failed
	resumed        time.Duration // SIGCONT to the waiter in
	finished       time.Duration // SIGCONT to the holder's call returning
}

// handover is the time from the holder's call returning, after SIGCONT,
// to the waiter in.
func (r stopRound) handover() time.Duration { return max(0, r.resumed-r.finished) }

// stopRow is the stop fault's row: a waiter that got in while the holder
// was stopped, a lock no longer taken at the end of a stop, a waiter that
// failed or gave up, and one that got in more than slowRecovery after the
// holder's call returned are violations. The holder's own call, resumed,
// takes what the machine's load gives it, which is not the lock's doing;
// and a holder that loops on competes with the waiter as any writer does
// (writers have no queue), so its hand-over is shown, not judged.
func stopRow(rounds []stopRound, hold time.Duration) row {
	bad, stops := 0, 0
	first := ""
	var cases []stopCase
	resumed, handover := map[string][]time.Duration{}, map[string][]time.Duration{}
	for _, r := range rounds {
		stops += r.stops
		what := ""
		switch {
		case r.inWhileStopped:
			what = "the waiter got in while the holder was stopped"
		case r.lostLock:
			what = "the lock was no longer taken at the end of the stop"
		case r.waiterErr != "":
			what = r.waiterErr
		case !r.c.loop && r.handover() > slowRecovery:
			what = fmt.Sprintf("the waiter got in %s after the holder's call returned", r.handover())
		}
		if what != "" {
			bad++
			if first == "" {
				first = fmt.Sprintf("%s (%s): %s", r.c.name, r.holder, what)
			}
		}
		if _, seen := resumed[r.c.name]; !seen {
			cases = append(cases, r.c)
			resumed[r.c.name] = nil
		}
		if r.waiterErr == "" && !r.inWhileStopped {
			resumed[r.c.name] = append(resumed[r.c.name], r.resumed)
			handover[r.c.name] = append(handover[r.c.name], r.handover())
		}
	}
	var per []string
	for _, c := range cases {
		h := distributionOf(handover[c.name])
		per = append(per, fmt.Sprintf("%s: %s (from the holder's call returning: median %s, max %s)", c.name, distributionOf(resumed[c.name]), ms(h.median), ms(h.most)))
	}
	return row{
		runs:       fmt.Sprintf("%d stops", len(rounds)),
		violations: bad,
		figure: fmt.Sprintf("each stop held %s with a writer waiting (it asks every 10 ms whether the holder lives, hears yes, and waits on: no lock path has a timeout); SIGCONT to waiter in, %s; %d SIGSTOPs to catch %d holders inside the lock%s",
			hold, strings.Join(per, "; "), stops, len(rounds), note(first)),
	}
}
