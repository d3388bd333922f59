package prom

import (
	"slices"

	"github.com/shmsketch/sketch"
)

// Option changes what a collector exports: NewArenaCollector and
// NewCollector take any number of them. Without options, the collectors
// export what this package always has.
type Option func(*options)

// options are a collector's settings.
type options struct {
	key keyLabel
}

// collectorOptions applies opts to the defaults.
func collectorOptions(opts []Option) options {
	o := options{key: plainKey}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// WithHashedKeys labels each loud key of sketch_heavy_hitter_estimate
// with HashKey(secret, key) rather than the key: keys come from clients
// (addresses, e-mails, session ids), and whoever reads the metrics, or
// stores them for months, reads the keys. Keep the secret as secret as
// the keys (32 random bytes, the same on every host, so that a loud
// client has one label across the fleet); an empty secret still hashes,
// but then anyone can hash a guess and compare.
func WithHashedKeys(secret []byte) Option {
	secret = slices.Clone(secret)
	return func(o *options) {
		o.key = func(h sketch.HeavyHitter) string { return hashedKey(secret, h) }
	}
}

// WithoutKeys leaves the key label of sketch_heavy_hitter_estimate empty,
// which Prometheus stores as no label: a table's loud keys are told apart
// by rank alone, and their estimates stay.
func WithoutKeys() Option {
	return func(o *options) {
		o.key = func(sketch.HeavyHitter) string { return "" }
	}
}
