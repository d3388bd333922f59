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
}

// NewArenaCollector returns a collector over the arena's metrics
// (Arena.Metrics), which may serve expvar and JSON at the same time; close
// them when done. To collect several arenas into one registry, register
// each through prometheus.WrapRegistererWith with a label of its own.
func NewArenaCollector(m *sketch.ArenaMetrics) *ArenaCollector {
	c := &ArenaCollector{m: m, structure: map[*family]*prometheus.Desc{}, arena: map[*family]*prometheus.Desc{}}
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
		ch <- prometheus.MustNewConstMetric(c.arena[x.f], x.f.typ, x.v)
	}
	for _, e := range s.Structures {
		_, samples, ok := samplesOf(e.Stats)
		if !ok {
			continue // not opened (e.Error says why), or a kind without metrics
		}
		for _, x := range samples {
			ch <- prometheus.MustNewConstMetric(c.structure[x.f], x.f.typ, x.v, append([]string{e.Name, string(e.Kind)}, x.lv...)...)
		}
	}
}

// structureCollector collects one structure. It describes nothing (an
// unchecked collector): its descriptors are an ArenaCollector's, with the
// structure's name as a label value, and a registry refuses a descriptor
// registered twice, so described they would forbid a second structure or
// an arena beside it.
type structureCollector struct {
	name  string
	kind  sketch.Kind
	stats func() any
	descs map[*family]*prometheus.Desc
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
// only.
func NewCollector[S Stats](name string, stats func() S) prometheus.Collector {
	var zero S
	kind, _, _ := samplesOf(zero)
	c := &structureCollector{name: name, kind: kind, stats: func() any { return stats() }, descs: map[*family]*prometheus.Desc{}}
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
		ch <- prometheus.MustNewConstMetric(c.descs[x.f], x.f.typ, x.v, append([]string{c.name, string(c.kind)}, x.lv...)...)
	}
}
