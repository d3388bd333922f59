package cells

import (
	"os"
	"strconv"
	"strings"
	"sync"
)

// L2Bytes returns the size of this CPU's level-2 cache, read once from
// sysfs, or 1 MiB when it cannot be read. A batch over a grid larger than
// that fetches keys ahead; below it the grid stays in L2 and fetching
// ahead only costs time.
var L2Bytes = sync.OnceValue(func() uint64 {
	const fallback = 1 << 20
	dir := "/sys/devices/system/cpu/cpu0/cache/"
	for i := 0; i < 8; i++ {
		idx := dir + "index" + strconv.Itoa(i) + "/"
		level, err1 := os.ReadFile(idx + "level")
		typ, err2 := os.ReadFile(idx + "type")
		if err1 != nil || err2 != nil {
			break
		}
		if strings.TrimSpace(string(level)) != "2" || strings.TrimSpace(string(typ)) == "Instruction" {
			continue
		}
		size, err := os.ReadFile(idx + "size")
		if err != nil {
			break
		}
		if n, ok := parseCacheSize(strings.TrimSpace(string(size))); ok {
			return n
		}
	}
	return fallback
})

// parseCacheSize reads sysfs cache sizes such as "2048K" or "1M".
func parseCacheSize(s string) (uint64, bool) {
	mult := uint64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n == 0 {
		return 0, false
	}
	return n * mult, true
}
