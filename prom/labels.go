package prom

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/shmsketch/sketch"
)

// labelValue is a string from a file (a structure's name, a key) as a
// label value, always valid UTF-8: as it is when it is printable text,
// otherwise quoted with Go's escapes (strconv.Quote), as `sketch top`
// shows a key. Spaces stay as they are (a label value has no columns to
// break). A quoted value begins with a double quote and a value left as
// it is never does, so two strings never share a label value; the empty
// string is quoted too, as Prometheus reads an empty label as none.
// Client libraries refuse a label value that is not valid UTF-8, and a
// name or key is whatever bytes whoever wrote the file chose.
func labelValue(s string) string {
	if s == "" || s[0] == '"' || !utf8.ValidString(s) {
		return strconv.Quote(s)
	}
	for _, r := range s {
		if !strconv.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// heldKey is the part of a loud key its candidate table holds that is
// whole text: a key longer than the table keeps (HeavyHitter.Length
// larger than the key) is its first CandidateKeyBytes bytes, a cut that
// can fall inside a character, whose first bytes are dropped here.
func heldKey(h sketch.HeavyHitter) string {
	k := h.Key
	if h.Length <= len(k) {
		return k
	}
	for i := len(k) - 1; i >= 0 && i >= len(k)-utf8.UTFMax; i-- {
		if utf8.RuneStart(k[i]) {
			if !utf8.FullRuneInString(k[i:]) {
				return k[:i]
			}
			break
		}
	}
	return k
}

// keyLabel says what a loud key's series carries as its key label.
type keyLabel func(h sketch.HeavyHitter) string

// plainKey is the default: the key itself, as labelValue shows it. A
// key longer than the table keeps is its held prefix, always quoted, then
// its length, as sketch top shows it ("vvv"... (81 bytes)): a client
// whose key is another's first bytes gets a label of its own, and no
// whole key's label (never quoted at its start, or quoted to its end)
// can be the same.
func plainKey(h sketch.HeavyHitter) string {
	if h.Length > len(h.Key) {
		return strconv.Quote(heldKey(h)) + prefixMark(h)
	}
	return labelValue(h.Key)
}

// prefixMark is what follows a prefix key's label: its whole length.
func prefixMark(h sketch.HeavyHitter) string { return fmt.Sprintf("... (%d bytes)", h.Length) }

// hashedKey is WithHashedKeys' label: HashKey of the key, and a prefix
// key's length after it, so that a key that is another's first bytes
// does not share its label.
func hashedKey(secret []byte, h sketch.HeavyHitter) string {
	if h.Length > len(h.Key) {
		return HashKey(secret, h.Key) + prefixMark(h)
	}
	return HashKey(secret, h.Key)
}

// HashKey is the label WithHashedKeys gives a loud key: the first 16 hex
// digits (64 bits) of HMAC-SHA256 of the key under secret. A key longer
// than its table keeps (CandidateKeyBytes, 64 bytes by default) is
// labelled by the hash of the bytes kept, its first CandidateKeyBytes,
// followed by its length ("... (81 bytes)"): pass those bytes. With the secret, an operator finds a client's series (is
// "alice" loud?); without it, the label does not say who, even of a key
// from a small set such as e-mail addresses.
func HashKey(secret []byte, key string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(key))
	return hex.EncodeToString(m.Sum(nil)[:8])
}
