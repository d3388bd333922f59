//go:build linux

package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// keyLine is the key part of any --json line.
type keyLine struct {
	Key    string `json:"key"`
	Base64 []byte `json:"key_base64"`
}

// TestJSON_KeysNotText: keys whose bytes are not UTF-8 ("\xfe", "\xff"),
// which JSON strings would both carry as U+FFFD, reach every --json line
// with their exact bytes in "key_base64"; a key that is text has no such
// field.
func TestJSON_KeysNotText(t *testing.T) {
	keys := []string{"\xfe", "\xff", "plain"}
	check := func(what, out string) {
		t.Helper()
		var lines []keyLine
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var l keyLine
			if err := json.Unmarshal([]byte(line), &l); err != nil {
				t.Fatalf("%s: %v in %q", what, err, line)
			}
			lines = append(lines, l)
		}
		if len(lines) != len(keys) {
			t.Fatalf("%s: %d lines, want %d:\n%s", what, len(lines), len(keys), out)
		}
		for i, l := range lines {
			got := l.Key
			if l.Base64 != nil {
				got = string(l.Base64)
			}
			if got != keys[i] || (keys[i] == "plain") != (l.Base64 == nil) {
				t.Errorf("%s: line %d is %+v, want the key %q", what, i, l, keys[i])
			}
		}
		if strings.Count(out, "key_base64") != 2 {
			t.Errorf("%s: want key_base64 on the two keys that are not text:\n%s", what, out)
		}
	}

	cms := create(t, "k.cms", "--candidates", "4")
	check("add --json", sk(t, append([]string{"add", "--json", cms}, keys...)...).ok(t, "add"))
	check("query --json", sk(t, append([]string{"query", "--json", cms}, keys...)...).ok(t, "query"))
	// Counted 1, 2 and 3 times: top lists them loudest first, "plain" last.
	sk(t, "add", "-n", "2", cms, keys[0]).ok(t, "add")
	sk(t, "add", cms, keys[1]).ok(t, "add")
	check("top --json", sk(t, "top", "--json", cms).ok(t, "top"))

	bloom := create(t, "k.bloom", "--kind", "bloom", "--capacity", "100")
	check("bloom add --json", sk(t, append([]string{"add", "--json", bloom}, keys...)...).ok(t, "add"))
	check("bloom query --json", sk(t, append([]string{"query", "--json", bloom}, keys...)...).ok(t, "query"))

	cbf := create(t, "k.cbf", "--kind", "countingbloom", "--capacity", "100")
	check("add --if-absent --json", sk(t, append([]string{"add", "--if-absent", "--json", cbf}, keys...)...).ok(t, "add --if-absent"))
	check("del --json", sk(t, append([]string{"del", "--json", cbf}, keys...)...).ok(t, "del"))

	win := create(t, "k.cmw", "--kind", "countminwindow", "--period", "1h", "--keep", "1")
	check("allow --json", sk(t, append([]string{"allow", "--json", "--limit", "5", win}, keys...)...).ok(t, "allow"))
}
