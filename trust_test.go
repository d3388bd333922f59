//go:build linux

package sketch

// Tests of whose files a process attaches to (trust_linux.go) and of the
// files it refuses to initialise.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

const nobodyUID = 65534

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to give files to another user")
	}
}

// trustedBase returns a fresh directory whose ancestors are all owned by
// root and writable by nobody else, as a private directory of a service
// would be; it skips when the machine has none.
func trustedBase(t *testing.T) string {
	t.Helper()
	for _, base := range []string{"/run", "/var/lib", "/var/cache"} {
		dir, err := os.MkdirTemp(base, "sketch-test-")
		if err != nil {
			continue
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		var o options
		if privateDirOf(filepath.Join(dir, "x"), 0, &o) {
			return dir
		}
	}
	t.Skip("no directory here has only root-owned, unshared ancestors")
	return ""
}

// otGiveAway makes a valid sketch file at path owned by nobody, mode 0644,
// as another local user could plant it (one every user may write is
// ErrLooseMode whoever owns it: TestOpen_WorldWritableFile).
func otGiveAway(t *testing.T, path string) []byte {
	t.Helper()
	_, tmpl := otMakeFile(t, otCfg)
	if err := os.WriteFile(path, tmpl, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, nobodyUID, nobodyUID); err != nil {
		t.Fatal(err)
	}
	return tmpl
}

// TestOpen_OwnerInStickyDirectory: a valid sketch planted by another user
// in a directory where anyone may create names (as /dev/shm is) is refused
// by default, untouched, and attached when its owner is trusted.
func TestOpen_OwnerInStickyDirectory(t *testing.T) {
	requireRoot(t)
	dir := filepath.Join(t.TempDir(), "shm")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o1777); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "requests.cms")
	tmpl := otGiveAway(t, path)

	err := otOpenErr(t, path, otCfg)
	otWantErr(t, err, path, ErrNotOwner)
	for _, want := range []string{"uid 65534", "WithOwner(65534)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, tmpl) {
		t.Errorf("a refused file was changed")
	}
	// Another trusted uid does not vouch for this one.
	otWantErr(t, otOpenErr(t, path, otCfg, WithOwner(1234)), path, ErrNotOwner)

	c := mustOpen(t, path, otCfg, WithOwner(nobodyUID))
	otWorks(t, c)
}

// TestOpen_OwnerOfPrivateDirectory: a file of another user in that user's
// own directory, which nobody else can write and whose ancestors are root's,
// is trusted without WithOwner; once the directory is shared, it is not.
func TestOpen_OwnerOfPrivateDirectory(t *testing.T) {
	requireRoot(t)
	dir := filepath.Join(trustedBase(t), "service")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, nobodyUID, nobodyUID); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "requests.cms")
	otGiveAway(t, path)

	c := mustOpen(t, path, otCfg)
	otWorks(t, c)
	c.Close()

	for _, mode := range []os.FileMode{0o775, 0o757} {
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		otWantErr(t, otOpenErr(t, path, otCfg), path, ErrNotOwner)
	}
	// A directory of yet another user does not vouch for nobody's file.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 1234, 1234); err != nil {
		t.Fatal(err)
	}
	otWantErr(t, otOpenErr(t, path, otCfg), path, ErrNotOwner)
}

// TestOpen_ErrHardLinked: an empty or all-zero file with a second name is
// never initialised, so opening a link to someone's file cannot overwrite
// it, and the file keeps its contents and mode.
func TestOpen_ErrHardLinked(t *testing.T) {
	_, tmpl := otMakeFile(t, otCfg)
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"all zero", make([]byte, len(tmpl))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			victim := filepath.Join(dir, "victim")
			if err := os.WriteFile(victim, tc.data, 0o600); err != nil {
				t.Fatal(err)
			}
			evil := filepath.Join(dir, "evil.cms")
			if err := os.Link(victim, evil); err != nil {
				t.Fatal(err)
			}
			otWantErr(t, otOpenErr(t, evil, otCfg), evil, ErrHardLinked)
			fi, err := os.Stat(victim)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(victim)
			if fi.Mode() != 0o600 || !bytes.Equal(got, tc.data) {
				t.Errorf("the linked file changed: mode %v, %d bytes", fi.Mode(), len(got))
			}
			// With the other name gone, the file is the caller's to adopt.
			if err := os.Remove(victim); err != nil {
				t.Fatal(err)
			}
			otWorks(t, mustOpen(t, evil, otCfg))
		})
	}
}

// TestOpen_ModeFromTheStart: a file created for sharing carries its
// exact mode from the moment it appears at the path (it is built under no
// name first), whatever the umask.
func TestOpen_ModeFromTheStart(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	path := tempPath(t, "cms")
	c := mustOpen(t, path, otCfg, WithMode(0o664))
	defer c.Close()
	if got := otMode(t, path); got != 0o664 {
		t.Errorf("mode = %v, want 0664", got)
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v, want only the sketch (no temporary files)", names)
	}
}

// TestOpen_SymlinkIntoPrivateDirectory: a symlink in a shared directory
// that points into another user's private directory does not make that
// user's file trusted; a symlink that root put in a directory of its own
// does.
func TestOpen_SymlinkIntoPrivateDirectory(t *testing.T) {
	requireRoot(t)
	base := trustedBase(t)
	service := filepath.Join(base, "service")
	if err := os.Mkdir(service, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(service, nobodyUID, nobodyUID); err != nil {
		t.Fatal(err)
	}
	otGiveAway(t, filepath.Join(service, "requests.cms"))

	shm := filepath.Join(t.TempDir(), "shm")
	if err := os.Mkdir(shm, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shm, 0o1777); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(service, filepath.Join(shm, "app")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(shm, "app", "requests.cms")
	otWantErr(t, otOpenErr(t, path, otCfg), path, ErrNotOwner)

	if err := os.Symlink(service, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	otWorks(t, mustOpen(t, filepath.Join(base, "link", "requests.cms"), otCfg))
}

// TestOpen_ErrLooseMode: an empty file prepared with a mode that lets
// others write it is not adopted under a stricter requested mode (they may
// hold it open already); asked for that mode, it is. One that lets every
// user write it is adopted under no mode, since none may be asked for.
func TestOpen_ErrLooseMode(t *testing.T) {
	prepare := func(t *testing.T, mode os.FileMode) string {
		path := tempPath(t, "cms")
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		return path
	}
	path := prepare(t, 0o660)
	otWantErr(t, otOpenErr(t, path, otCfg), path, ErrLooseMode)
	otWantErr(t, otOpenErr(t, path, otCfg, WithMode(0o640)), path, ErrLooseMode)
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 || fi.Mode() != 0o660 {
		t.Fatalf("the refused file changed: %v, %v", fi, err)
	}
	otWorks(t, mustOpen(t, path, otCfg, WithMode(0o660)))

	path = prepare(t, 0o666)
	otWantErr(t, otOpenErr(t, path, otCfg, WithMode(0o664)), path, ErrLooseMode)
}

// TestOpen_WorldWritableMode: a mode that lets every user write the file
// is refused before anything is created, with a message that says why and
// what to use instead.
func TestOpen_WorldWritableMode(t *testing.T) {
	for _, m := range []os.FileMode{0o666, 0o777, 0o602, 0o662} {
		t.Run(fmt.Sprintf("%#o", uint32(m)), func(t *testing.T) {
			path := tempPath(t, "cms")
			_, err := OpenCountMin(Path(path), otCfg, WithMode(m))
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("OpenCountMin(WithMode(%#o)) = %v, want ErrInvalidConfig", uint32(m), err)
			}
			for _, want := range []string{path, "every user", "SIGBUS", "0660"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if _, err := os.Lstat(path); !os.IsNotExist(err) {
				t.Errorf("a refused mode left a file behind: %v", err)
			}
			if _, err := OpenCountMin(Memfd("m"), otCfg, WithMode(m)); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("OpenCountMin(Memfd, WithMode(%#o)) = %v, want ErrInvalidConfig", uint32(m), err)
			}
		})
	}
}

// TestOpen_LongName: the names a create or an Unlink uses beside the
// sketch's own fit in a directory whatever the sketch's name.
func TestOpen_LongName(t *testing.T) {
	path := filepath.Join(t.TempDir(), strings.Repeat("n", 250)+".cms")
	c := mustOpen(t, path, otCfg)
	otWorks(t, c)
	if err := c.Unlink(); err != nil {
		t.Fatalf("Unlink of a 254-byte name: %v", err)
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("after Unlink, Lstat = %v", err)
	}
}
