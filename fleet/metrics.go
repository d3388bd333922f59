package fleet

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// ServeHTTP serves the agent's state in Prometheus's text format (0.0.4),
// for a scrape: how many rounds ran, and for each structure its state,
// its good and failed rounds, when it last synced, and how many hosts'
// counts its last good round summed from the agent's memory.
//
//	sketch_fleet_rounds_total
//	sketch_fleet_state{structure="…",kind="…",state="synced|local|refused|idle"} 1 for its state, 0 for the others
//	sketch_fleet_syncs_total{structure="…",kind="…"}
//	sketch_fleet_failures_total{structure="…",kind="…"}
//	sketch_fleet_last_sync_timestamp_seconds{structure="…",kind="…"} (0 before a good round)
//	sketch_fleet_remembered_hosts{structure="…",kind="…"} (StructureStats.Remembered)
//	sketch_fleet_refused_keys{structure="…",kind="…"} (StructureStats.Refused)
//
// Structure names come from files, whose writers chose them: label values
// are escaped as the format says (a backslash, a double quote and a line
// feed), and a name that is not UTF-8 was refused when it was added.
func (a *Agent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	a.WriteMetrics(w)
}

// WriteMetrics writes what ServeHTTP serves.
func (a *Agent) WriteMetrics(out io.Writer) error {
	s := a.Stats()
	w := bufio.NewWriter(out)
	family := func(name, typ, help string) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	family("sketch_fleet_rounds_total", "counter", "Rounds the agent ran (Sync), good or not.")
	fmt.Fprintf(w, "sketch_fleet_rounds_total %d\n", s.Rounds)
	family("sketch_fleet_state", "gauge", "1 for the structure's state: synced (the last round pushed and pulled), local (it failed: answers are this host's and the fleet's as of the last good round), refused (the fleet holds another kind, shape or seed), idle (no round yet).")
	for _, st := range s.Structures {
		for _, state := range []string{StateSynced, StateLocal, StateRefused, StateIdle} {
			v := 0
			if st.State == state {
				v = 1
			}
			fmt.Fprintf(w, "sketch_fleet_state{%s,state=%q} %d\n", labels(st), state, v)
		}
	}
	family("sketch_fleet_syncs_total", "counter", "Rounds that pushed the structure and merged the fleet's state back.")
	for _, st := range s.Structures {
		fmt.Fprintf(w, "sketch_fleet_syncs_total{%s} %d\n", labels(st), st.Syncs)
	}
	family("sketch_fleet_failures_total", "counter", "Rounds that failed for the structure.")
	for _, st := range s.Structures {
		fmt.Fprintf(w, "sketch_fleet_failures_total{%s} %d\n", labels(st), st.Failures)
	}
	family("sketch_fleet_last_sync_timestamp_seconds", "gauge", "When the structure's last good round ended, in Unix seconds; 0 before one.")
	for _, st := range s.Structures {
		var ts float64
		if !st.LastSync.IsZero() {
			ts = float64(st.LastSync.UnixNano()) / 1e9
		}
		fmt.Fprintf(w, "sketch_fleet_last_sync_timestamp_seconds{%s} %.3f\n", labels(st), ts)
	}
	family("sketch_fleet_remembered_hosts", "gauge", "Other hosts whose counts the structure's last good round summed from the agent's memory, their keys gone from Redis (it lost its data, or the host was retired and not forgotten); 0 when Redis held every host's, and for kinds that do not combine by addition.")
	for _, st := range s.Structures {
		fmt.Fprintf(w, "sketch_fleet_remembered_hosts{%s} %d\n", labels(st), st.Remembered)
	}
	family("sketch_fleet_refused_keys", "gauge", "Keys of the fleet's exact set the structure's last round could not add, the set holding its capacity (none evicted; retried each round); 0 for the other kinds.")
	for _, st := range s.Structures {
		fmt.Fprintf(w, "sketch_fleet_refused_keys{%s} %d\n", labels(st), st.Refused)
	}
	return w.Flush()
}

// labels are a structure's labels, escaped as the text format wants.
func labels(st StructureStats) string {
	return fmt.Sprintf(`structure="%s",kind="%s"`, escapeLabel(st.Name), escapeLabel(st.Kind))
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func escapeLabel(s string) string { return labelEscaper.Replace(s) }
