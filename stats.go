package sketch

import (
	"encoding/json"
	"strconv"
)

// StatsVar is a structure's Stats as an expvar.Var: String returns them as
// JSON.
type StatsVar struct{ stats func() any }

// String returns the current stats as a JSON object.
func (v StatsVar) String() string {
	b, err := json.Marshal(v.stats())
	if err != nil {
		return strconv.Quote(err.Error())
	}
	return string(b)
}

// FileStats is what every structure's Stats reports of its file and its
// handle, under the same names for every kind; each kind's Stats embeds it.
type FileStats struct {
	// Bytes is the size of the file, or for a structure in an arena its
	// own region (so that an arena's structures sum to no more than the
	// file).
	Bytes uint64 `json:"bytes"`
	// Frozen is set once the file is sealed (Freeze).
	Frozen bool `json:"frozen"`
	// ReadOnly is set when the handle does not write: opened with
	// WithReadOnly, or the handle that froze the file.
	ReadOnly bool `json:"read_only"`
	// Closed is set once the handle was closed; then the kind's answers
	// read as its closed handle answers (a Count-Min total of
	// ClosedEstimate, a filter full).
	Closed bool `json:"closed"`
}
