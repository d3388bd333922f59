package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/shmsketch/sketch"
)

// owners are the users named with --owner, whose files the commands open
// as the library opens those of sketch.WithOwner: a file owned by anyone
// else (but the caller and root) could be truncated under the command, so
// the library refuses it (sketch.ErrNotOwner).
var owners ownerList

// ownerList is --owner: numeric uids, the flag repeated or a comma list.
type ownerList []int

func (l *ownerList) String() string {
	if l == nil {
		return ""
	}
	s := make([]string, len(*l))
	for i, uid := range *l {
		s[i] = strconv.Itoa(uid)
	}
	return strings.Join(s, ",")
}

func (l *ownerList) Set(v string) error {
	for _, f := range strings.Split(v, ",") {
		uid, err := strconv.ParseUint(strings.TrimSpace(f), 10, 31)
		if err != nil {
			return fmt.Errorf("%q is not a numeric uid", f)
		}
		*l = append(*l, int(uid))
	}
	return nil
}

// options are the sketch options --owner gives.
func (l ownerList) options() []sketch.Option {
	var opts []sketch.Option
	for _, uid := range l {
		opts = append(opts, sketch.WithOwner(uid))
	}
	return opts
}
