package main

import (
	"flag"
	"fmt"
)

var listCmd = &command{
	name:       "list",
	opensFiles: true,
	args:       "FILE[:NAME]",
	summary:    "print every key an exact set holds, one a line",
	details: `
List prints every key an exact set holds (a set window: those of the
periods it covers), one a line, in byte order; a key that is not
printable text without spaces is quoted in Go syntax, as top quotes
keys. Keys added or removed while it runs may be listed or not; a key
held throughout is listed once. With --json, each line is {"key"}, with
"key_base64" too when the key is not UTF-8 (as top --json). It opens
the file read-only and takes no lock.`,
	example: `sketch list /dev/shm/web.arena:banned
sketch list --json /dev/shm/web.arena:nonces | jq -r .key`,
	setup: func(fs *flag.FlagSet) func([]string) error {
		jsonOut := fs.Bool("json", false, `print JSON Lines: {"key"} a key, with "key_base64" when the key is not UTF-8`)
		return onOne(false, func(s structure, t target) error {
			e, ok := s.(exactKeys)
			if !ok {
				return fmt.Errorf("%s: %w", t, errNotSupported("list of its keys (only a set or setwindow holds its keys)", s.describe()))
			}
			keys, err := e.keys()
			if err != nil {
				return err
			}
			for _, k := range keys {
				if *jsonOut {
					printJSON(stdout, keyOf(string(k)))
					continue
				}
				fmt.Fprintln(stdout, quoteKey(string(k)))
			}
			return nil
		})
	},
}
