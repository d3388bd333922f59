package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// machine is what the report says about where it ran.
type machine struct {
	CPU       string // model name
	CPUs      int
	Virtual   string // "KVM guest" etc., empty on bare metal
	Caches    []cache
	Memory    string
	Kernel    string
	THP       string // transparent huge pages: anonymous / shmem settings
	Go        string
	CC        string // the C compiler's first line of --version, for the cgo build
	LoadStart string
	Date      string
}

type cache struct {
	Level  int
	Type   string // Data, Instruction, Unified
	Bytes  int64
	Shared int // CPUs sharing it
}

func (c cache) String() string {
	name := fmt.Sprintf("L%d", c.Level)
	switch c.Type {
	case "Data":
		name += "d"
	case "Instruction":
		name += "i"
	}
	who := "per core"
	if c.Shared > 1 {
		who = fmt.Sprintf("shared by %d CPUs", c.Shared)
	}
	return fmt.Sprintf("%s %s %s", name, sizeString(c.Bytes), who)
}

func readMachine() machine {
	m := machine{CPUs: runtime.NumCPU(), Go: runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH, Date: time.Now().UTC().Format("2006-01-02 15:04 UTC")}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			switch {
			case k == "model name" && m.CPU == "":
				m.CPU = v
			case k == "flags" && strings.Contains(" "+v+" ", " hypervisor "):
				m.Virtual = "virtual machine"
			}
		}
	}
	if out, err := exec.Command("lscpu").Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "Hypervisor vendor" {
				m.Virtual = strings.TrimSpace(v) + " guest"
			}
		}
	}
	m.Caches = readCaches()
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil {
					m.Memory = sizeString(kb << 10)
				}
			}
		}
	}
	m.Kernel = readTrim("/proc/sys/kernel/osrelease")
	m.THP = fmt.Sprintf("anonymous %s, shmem %s", thpSetting("enabled"), thpSetting("shmem_enabled"))
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "gcc"
	}
	if out, err := exec.Command(cc, "--version").Output(); err == nil {
		m.CC, _, _ = strings.Cut(string(out), "\n")
	}
	m.LoadStart = loadAverage()
	return m
}

// readCaches reads cpu0's caches from sysfs.
func readCaches() []cache {
	var cs []cache
	for i := 0; ; i++ {
		dir := fmt.Sprintf("/sys/devices/system/cpu/cpu0/cache/index%d/", i)
		level, err := strconv.Atoi(readTrim(dir + "level"))
		if err != nil {
			return cs
		}
		size, ok := parseSize(readTrim(dir + "size"))
		if !ok {
			continue
		}
		cs = append(cs, cache{Level: level, Type: readTrim(dir + "type"), Bytes: size, Shared: cpuCount(readTrim(dir + "shared_cpu_list"))})
	}
}

// dataCache returns the size of the data or unified cache of a level, or 0.
func (m machine) dataCache(level int) int64 {
	for _, c := range m.Caches {
		if c.Level == level && c.Type != "Instruction" {
			return c.Bytes
		}
	}
	return 0
}

// where says which level of the memory hierarchy holds n bytes.
func (m machine) where(n int64) string {
	for _, lvl := range []int{1, 2, 3} {
		if c := m.dataCache(lvl); c > 0 && n <= c {
			return fmt.Sprintf("L%d", lvl)
		}
	}
	return "DRAM"
}

// CacheList is the caches in one line.
func (m machine) CacheList() string {
	var s []string
	for _, c := range m.Caches {
		s = append(s, c.String())
	}
	return strings.Join(s, ", ")
}

func readTrim(path string) string {
	b, _ := os.ReadFile(path)
	return strings.TrimSpace(string(b))
}

// thpSetting is the selected value of a transparent_hugepage setting.
func thpSetting(name string) string {
	s := readTrim("/sys/kernel/mm/transparent_hugepage/" + name)
	if i := strings.Index(s, "["); i >= 0 {
		if j := strings.Index(s[i:], "]"); j > 0 {
			return s[i+1 : i+j]
		}
	}
	if s == "" {
		return "unknown"
	}
	return s
}

// parseSize reads sysfs sizes such as "512K" or "32M".
func parseSize(s string) (int64, bool) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, false
	}
	return n * mult, true
}

// cpuCount counts the CPUs of a list such as "0-1,4".
func cpuCount(list string) int {
	n := 0
	for _, part := range strings.Split(list, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				continue
			}
		}
		n += b - a + 1
	}
	return n
}

// loadAverage is /proc/loadavg's first three fields.
func loadAverage() string {
	f := strings.Fields(readTrim("/proc/loadavg"))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// sizeString writes a size in B, KiB, MiB or GiB.
func sizeString(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
