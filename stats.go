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
