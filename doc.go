// Package sketch holds probabilistic sketches in shared memory.
package sketch
