//go:build cgo && !purego

package sketch

func init() {
	bloomTestCores = append(bloomTestCores, bloomC{})
}
