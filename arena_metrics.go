package sketch

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
)

// ArenaMetrics publishes the Stats of every structure in an arena, and the
// arena's own, for monitoring: it is an expvar.Var (String returns JSON)
// and an http.Handler (it serves the same JSON), and its Stats method
// gives the same values typed, for exporters such as the prom module's
// collector. Make one with Arena.Metrics.
//
// It opens each structure once, with the kind's zero config (which
// attaches to what is stored), and keeps it open across scrapes: opening
// costs a mapping and, on a read-write arena, a lock token. Structures
// that other processes create later are opened at the scrape that first
// lists them, and a structure removed (Arena.Remove) is closed at the
// first scrape that no longer lists it, so that the metrics do not keep
// its room from being reused. A read-only arena (a monitor that may only read the file)
// opens its structures read-only, and nothing it does writes to the file.
// Every scrape walks each structure as its Stats does (the whole grid or
// bit array), so scrape an arena of large structures every few seconds at
// most. Scrapes run one at a time; an ArenaMetrics is safe for concurrent
// use.
type ArenaMetrics struct {
	a      *Arena
	mu     sync.Mutex
	opened map[string]kindHandle // by name
	// at is the offset each opened structure was listed at: a name listed
	// at another offset was removed and made again (the room of a
	// structure held open is never reused, so the same offset is the same
	// structure).
	at     map[string]uint64
	closed bool
}

// ArenaMetricsStats is one scrape of an arena: its stats, its lock and
// every structure's.
type ArenaMetricsStats struct {
	// Path is the arena's path, or "" for a memfd or memory arena.
	Path  string     `json:"path"`
	Arena ArenaStats `json:"arena"`
	// Lock is the state of the file's lock, as Inspect reads it (only
	// counting Bloom filters and creates take it); nil when it could not
	// be read, as after Close.
	Lock       *LockInfo         `json:"lock,omitempty"`
	Structures []ArenaEntryStats `json:"structures"`
}

// ArenaEntryStats is one structure of a scrape: its entry (name, kind,
// config) and its Stats.
type ArenaEntryStats struct {
	ArenaEntry
	// Stats is the kind's Stats, as its Stats method returns it: a
	// CountMinStats, BloomStats, CountingBloomStats, CountMinWindowStats
	// or BloomWindowStats. It is nil when Error is set.
	Stats any `json:"stats,omitempty"`
	// Error says why the structure could not be opened (its message names
	// the file and the structure), as after Close.
	Error string `json:"error,omitempty"`
}

// Metrics returns the arena's metrics: an expvar.Var and an http.Handler
// serving the Stats of the arena and of every structure in it as JSON.
//
//	expvar.Publish("sketch", arena.Metrics())
//	http.Handle("/debug/sketch", arena.Metrics())
//
// Each call returns a new ArenaMetrics with its own handles on the
// structures: make one and share it. Close it to release them; closing
// the arena does not (structures outlive their arena's Close), but a
// scrape after the arena's Close releases them as Close does.
func (a *Arena) Metrics() *ArenaMetrics {
	return &ArenaMetrics{a: a, opened: map[string]kindHandle{}, at: map[string]uint64{}}
}

// Stats scrapes the arena: its stats and lock, and every structure's Stats
// in the order the structures were created. A structure that cannot be
// opened is listed with its Error, and tried again at the next scrape.
func (m *ArenaMetrics) Stats() ArenaMetricsStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := ArenaMetricsStats{Path: m.a.Path(), Arena: m.a.Stats()}
	m.releaseAfterArena()
	entries := m.a.List()
	m.forgetRemoved(entries)
	s.Structures = make([]ArenaEntryStats, 0, len(entries))
	for _, e := range entries {
		s.Structures = append(s.Structures, m.scrape(e))
	}
	if !m.closed && !s.Arena.Closed {
		s.Lock = m.lock()
	}
	return s
}

// scrape reads one structure's Stats.
func (m *ArenaMetrics) scrape(e ArenaEntry) ArenaEntryStats {
	es := ArenaEntryStats{ArenaEntry: e}
	if st, err := m.structure(e); err != nil {
		es.Error = err.Error()
	} else {
		es.Stats = st.StatsVar().stats()
	}
	return es
}

// releaseAfterArena releases the cached handles once the arena is closed:
// they are all that would keep its file mapped.
func (m *ArenaMetrics) releaseAfterArena() {
	if !m.a.open.Load() {
		m.release()
	}
}

// structure returns the open handle on e, opening it at the first scrape
// that lists it.
func (m *ArenaMetrics) structure(e ArenaEntry) (kindHandle, error) {
	if m.closed || !m.a.open.Load() {
		return nil, m.a.errorf("metrics", e.Name, ErrClosed)
	}
	if st, ok := m.opened[e.Name]; ok {
		if m.at[e.Name] == e.Offset {
			return st, nil
		}
		st.Close() // removed, and the name made again elsewhere
		delete(m.opened, e.Name)
	}
	st, err := openMetered(m.a.Place(e.Name), e.Kind)
	if err != nil {
		return nil, err
	}
	m.opened[e.Name], m.at[e.Name] = st, e.Offset
	return st, nil
}

// forgetRemoved closes the opened structures whose names the listing no
// longer has.
func (m *ArenaMetrics) forgetRemoved(listed []ArenaEntry) {
	names := make(map[string]bool, len(listed))
	for _, e := range listed {
		names[e.Name] = true
	}
	for name, st := range m.opened {
		if !names[name] {
			st.Close()
			delete(m.opened, name)
		}
	}
}

// openMetered opens the structure at at with its kind's zero config, which
// attaches to whatever is stored.
func openMetered(at Place, kind Kind) (kindHandle, error) {
	info, ok := kindNamed(kind)
	if !ok {
		return nil, at.arena.errorf("metrics", at.name, fmt.Errorf("%w: no metrics for kind %q", ErrUnsupported, kind))
	}
	return info.open(at)
}

// lock reads the state of the arena's lock through a duplicate of its
// descriptor, so that it is this arena's file even where the path now
// names another.
func (m *ArenaMetrics) lock() *LockInfo {
	f, err := m.a.File()
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := Inspect(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
	if err != nil {
		return nil
	}
	return &fi.Lock
}

// String returns Stats as JSON, which makes an ArenaMetrics an
// expvar.Var.
func (m *ArenaMetrics) String() string {
	b, err := json.Marshal(m.Stats())
	if err != nil {
		return fmt.Sprintf("%q", err.Error())
	}
	return string(b)
}

// ServeHTTP serves Stats as JSON to GET and HEAD. With ?name=NAME it
// serves that structure's ArenaEntryStats alone, and walks only it (404
// when the arena holds no such name); it lets go of the structures removed
// since the last scrape, as a whole scrape does.
func (m *ArenaMetrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "sketch: metrics: only GET and HEAD", http.StatusMethodNotAllowed)
		return
	}
	var v any
	if r.URL.Query().Has("name") {
		es, ok := m.entryStats(r.URL.Query().Get("name"))
		if !ok {
			http.Error(w, fmt.Sprintf("sketch: metrics %s: no structure of that name", m.a.name()), http.StatusNotFound)
			return
		}
		v = es
	} else {
		v = m.Stats()
	}
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "sketch: metrics: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(append(b, '\n'))
}

// entryStats scrapes the structure named name alone. It closes the
// handles of structures removed since, as Stats does: a service scraped
// only by name would otherwise keep their rooms from reuse.
func (m *ArenaMetrics) entryStats(name string) (ArenaEntryStats, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.releaseAfterArena()
	entries := m.a.List()
	m.forgetRemoved(entries) // the room of a structure removed since is let go here too
	for _, e := range entries {
		if e.Name == name {
			return m.scrape(e), true
		}
	}
	return ArenaEntryStats{}, false
}

// Close releases the structures the metrics opened. Scrapes after it still
// report the arena's stats and list its structures, each with an Error
// saying so (ErrClosed's message). It is safe to call twice.
func (m *ArenaMetrics) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return m.release()
}

// release closes every cached handle.
func (m *ArenaMetrics) release() error {
	var first error
	for name, st := range m.opened {
		if err := st.Close(); err != nil && first == nil {
			first = err
		}
		delete(m.opened, name)
	}
	return first
}
