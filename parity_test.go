package sketch

// cores lists every core this test binary has: the pure-Go core always,
// the C core when built with cgo.
func cores() []cmsCore {
	cs := []cmsCore{goCore{}}
	if defaultCore.name() != "purego" {
		cs = append(cs, defaultCore)
	}
	return cs
}
