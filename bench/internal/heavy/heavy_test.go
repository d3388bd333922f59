package heavy

import (
	"strconv"
	"testing"
)

// fixedList counts nothing and lists what it was given.
type fixedList []string

func (fixedList) Add([]byte)                {}
func (f fixedList) List() ([]string, error) { return f, nil }

func appendNumber(dst []byte, i uint64) []byte { return strconv.AppendUint(append(dst, 'k'), i, 10) }

// TestMeasure_Scores: keys 0, 1, 2 are added 3, 2 and 1 times; a list of
// the top 2 is scored against {k0, k1}.
func TestMeasure_Scores(t *testing.T) {
	keys := SpaceKeys(4, appendNumber)
	stream := []uint64{0, 1, 0, 2, 1, 0}
	lists := []fixedList{
		{"k0", "k1", "k2"}, // both, first two right
		{"k1", "k2", "k0"}, // both, one of the first two right
		{"k3", "k2"},       // neither
		{"k0"},             // one, of one listed
	}
	want := []Score{{Recall: 1, Precision: 1}, {Recall: 1, Precision: 0.5}, {}, {Recall: 0.5, Precision: 0.5}}
	var subjects []Subject
	for _, l := range lists {
		subjects = append(subjects, Subject{Lister: l, N: 2})
	}
	i := 0
	got, err := Measure(keys, func() uint64 { i++; return stream[i-1] }, len(stream), subjects)
	if err != nil {
		t.Fatal(err)
	}
	for j := range want {
		if got[j] != want[j] {
			t.Errorf("Measure of list %q = %+v, want %+v", lists[j], got[j], want[j])
		}
	}
}
