package prom

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/shmsketch/sketch"
)

// labels are a structure's labels: its name in the arena and its kind.
// Both are bounded: an arena holds at most 4096 structures, and there are
// few kinds.
var labels = []string{"structure", "kind"}

// ArenaCollector is a prometheus.Collector of every structure of an arena,
// labelled with its name and kind, and of the arena's file and lock. Each
// scrape is one ArenaMetrics.Stats: structures created later appear when
// first listed, and a structure that cannot be opened has no series.
type ArenaCollector struct {
	m         *sketch.ArenaMetrics
	structure map[*family]*prometheus.Desc
	arena     map[*family]*prometheus.Desc
	opts      options
}

// NewArenaCollector returns a collector over the arena's metrics
// (Arena.Metrics), which may serve expvar and JSON at the same time; close
// them when done. To collect several arenas into one registry, register
// each through prometheus.WrapRegistererWith with a label of its own.
//
// Names and keys come from the file, whose writers chose them: a label
// value is the name or key as it is when it is printable UTF-8, else
// quoted with Go's escapes (strconv.Quote), and a key kept as a prefix is
// cut at a character's start, so that no file can make a scrape fail. Of
// the options, WithHashedKeys and WithoutKeys keep client keys out of the
// labels.
func NewArenaCollector(m *sketch.ArenaMetrics, opts ...Option) *ArenaCollector {
	c := &ArenaCollector{m: m, structure: map[*family]*prometheus.Desc{}, arena: map[*family]*prometheus.Desc{}, opts: collectorOptions(opts)}
	for _, f := range structureFamilies {
		c.structure[f] = prometheus.NewDesc(f.name, f.help, append(labels[:len(labels):len(labels)], f.extra...), nil)
	}
	for _, f := range arenaFamilies {
		c.arena[f] = prometheus.NewDesc(f.name, f.help, nil, nil)
	}
	return c
}

// Describe sends the descriptors of every metric the collector may send.
func (c *ArenaCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, f := range structureFamilies {
		ch <- c.structure[f]
	}
	for _, f := range arenaFamilies {
		ch <- c.arena[f]
	}
}

// Collect scrapes the arena and sends its metrics and every structure's.
func (c *ArenaCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.m.Stats()
	for _, x := range arenaSamples(s) {
		send(ch, c.arena[x.f], x, nil)
	}
	for _, e := range s.Structures {
		kind, samples, ok := samplesOf(e.Stats)
		if !ok {
			continue // not opened (e.Error says why), or a kind without metrics
		}
		name := labelValue(e.Name)
		for _, x := range samples {
			send(ch, c.structure[x.f], x, c.opts.labelValues(name, kind, x))
		}
	}
}

// labelValues are a structure's sample's label values, in the order of
// labels and its family's extra labels.
func (o options) labelValues(name string, kind sketch.Kind, x sample) []string {
	lv := append([]string{name, string(kind)}, x.lv...)
	if x.hit != nil {
		lv = append(lv, o.key(*x.hit))
	}
	return lv
}

// send sends one sample. A sample the client library refuses is dropped:
// label values are valid UTF-8 and as many as the descriptor's labels, so
// none is, and a collector must not panic (Gather runs it in a goroutine
// of its own, where a panic ends the process).
func send(ch chan<- prometheus.Metric, d *prometheus.Desc, x sample, lv []string) {
	m, err := prometheus.NewConstMetric(d, x.f.typ, x.v, lv...)
	if err != nil {
		return
	}
	ch <- m
}

// structureCollector collects one structure. It describes nothing (an
// unchecked collector): its descriptors are an ArenaCollector's, with the
// structure's name as a label value, and a registry refuses a descriptor
// registered twice, so described they would forbid a second structure or
// an arena beside it.
type structureCollector struct {
	name  string // as a label value
	kind  sketch.Kind
	stats func() any
	descs map[*family]*prometheus.Desc
	opts  options
}

// NewCollector returns a collector of one structure, standalone or in an
// arena, from its Stats method, under the name given:
//
//	prometheus.MustRegister(prom.NewCollector("requests", cms.Stats))
//
// Its series carry the same names and labels (structure and kind) as an
// ArenaCollector's, so any number of them and of arena collectors share a
// registry, as long as no two structures have the same name (Gather
// reports the duplicate). The lock's state comes with an ArenaCollector
// only. Every kind's Stats is one (Stats); names and keys are label
// values as NewArenaCollector makes them, and the options are its.
func NewCollector[S Stats](name string, stats func() S, opts ...Option) prometheus.Collector {
	var zero S
	kind, _, _ := samplesOf(zero)
	c := &structureCollector{name: labelValue(name), kind: kind, stats: func() any { return stats() }, descs: map[*family]*prometheus.Desc{}, opts: collectorOptions(opts)}
	for _, f := range structureFamilies {
		c.descs[f] = prometheus.NewDesc(f.name, f.help, append(labels[:len(labels):len(labels)], f.extra...), nil)
	}
	return c
}

// Describe sends nothing: see structureCollector.
func (c *structureCollector) Describe(chan<- *prometheus.Desc) {}

func (c *structureCollector) Collect(ch chan<- prometheus.Metric) {
	_, samples, _ := samplesOf(c.stats())
	for _, x := range samples {
		send(ch, c.descs[x.f], x, c.opts.labelValues(c.name, c.kind, x))
	}
}
