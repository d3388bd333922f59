package fleet

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmsketch/sketch"
	"github.com/shmsketch/sketch/fleet/internal/redistest"
)

// keysOf are the keys an agent of fleet for host uses for structure name:
// its description, its state (plain and a window's period 7), and its
// scratch key.
func keysOf(t *testing.T, fleet, name, host string) (shared []string, scratch string) {
	t.Helper()
	a, err := New(Config{Redis: redis.NewClient(&redis.Options{}), Fleet: fleet, Host: host})
	if err != nil {
		t.Fatalf("New(%q, %q): %v", fleet, host, err)
	}
	if err := validName("structure", name); err != nil {
		t.Fatalf("structure name %q: %v", name, err)
	}
	m := &member{name: name}
	k := a.keys(m, "or")
	return []string{k[0], k[1], a.keys(m, "or:7")[1], a.keys(m, "pfmerge")[1]}, k[2]
}

// TestKeys_StructuresDoNotShareKeys: two different structures (another
// fleet, or another name in the fleet) never use one Redis key, whatever
// printable names the fleets, structures and hosts have: a fleet named
// "a" with a structure "b/c" and a fleet "a/b" with a structure "c" are
// two fleets; a host named "y}:meta" pushing structure "x" must not
// overwrite and then delete the description of structure "x}:push:y".
func TestKeys_StructuresDoNotShareKeys(t *testing.T) {
	type id struct{ fleet, name, host string }
	for _, c := range []struct{ a, b id }{
		{id{"a", "b/c", "h"}, id{"a/b", "c", "h"}},
		{id{"f", "x", "y}:meta"}, id{"f", "x}:push:y", "h"}},
		{id{"f", "x", "y}:or"}, id{"f", "x}:push:y", "h"}},
	} {
		sa, pa := keysOf(t, c.a.fleet, c.a.name, c.a.host)
		sb, pb := keysOf(t, c.b.fleet, c.b.name, c.b.host)
		for _, ka := range append(sa, pa) {
			for _, kb := range append(sb, pb) {
				if ka == kb {
					t.Errorf("fleet %q structure %q (host %q) and fleet %q structure %q (host %q) share the key %q",
						c.a.fleet, c.a.name, c.a.host, c.b.fleet, c.b.name, c.b.host, ka)
				}
			}
		}
	}
}

// TestSync_FleetsDoNotShareState: two fleets on one Redis, "a" with a
// filter "b/c" and "a/b" with a filter "c", do not see each other's keys.
func TestSync_FleetsDoNotShareState(t *testing.T) {
	rs := redistest.Start(t)
	cfg := sketch.BloomConfig{Capacity: 1000, FPRate: 0.001, Seed: 5}
	var agents []*Agent
	var filters []*sketch.Bloom
	for _, f := range []struct{ fleet, name string }{{"a", "b/c"}, {"a/b", "c"}} {
		a, err := New(Config{Redis: rs.Client(t), Fleet: f.fleet, Host: "h", Timeout: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		b := mustOpen(t, sketch.OpenBloom, sketch.Memory(), cfg)
		if err := a.AddBloom(f.name, b); err != nil {
			t.Fatal(err)
		}
		agents, filters = append(agents, a), append(filters, b)
	}
	filters[0].AddString("only-in-fleet-a")
	mustSync(t, agents...)
	if filters[1].ContainsString("only-in-fleet-a") {
		t.Error(`fleet "a/b" finds a key added in fleet "a": the fleets share their keys`)
	}
}

// keySlot is Redis Cluster's hash slot of a key: CRC16 (XMODEM) of its
// hash tag (what is between the first '{' and the first '}' after it,
// when that is not empty) or of the whole key, modulo 16384.
func keySlot(key string) uint16 {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % 16384
}

// TestKeys_OneHashSlotPerStructure: every key of one structure is in one
// Redis Cluster hash slot (a script's keys must be), whatever printable
// names the fleet, structure and host have: a fleet named "}x" makes the
// hash tag empty, and Redis Cluster then hashes each whole key.
func TestKeys_OneHashSlotPerStructure(t *testing.T) {
	if keySlot("123456789") != 0x31c3%16384 || keySlot("{user1000}.following") != keySlot("{user1000}.followers") {
		t.Fatal("keySlot is not Redis Cluster's")
	}
	for _, c := range []struct{ fleet, name, host string }{
		{"f", "n", "h"},
		{"}x", "n", "h"},
		{"f", "}", "h"},
		{"{f", "n", "{h}"},
	} {
		shared, scratch := keysOf(t, c.fleet, c.name, c.host)
		want := keySlot(shared[0])
		for _, k := range append(shared, scratch) {
			if s := keySlot(k); s != want {
				t.Errorf("fleet %q structure %q host %q: key %q in slot %d, %q in slot %d", c.fleet, c.name, c.host, shared[0], want, k, s)
			}
		}
	}
}
