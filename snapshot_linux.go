package sketch

// createNewPath builds the file for sp under no name and links it at
// path, which must not exist: a snapshot never attaches to what is there
// (an error wrapping fs.ErrExist).
func createNewPath(path string, sp spec, o options) (*mapping, error) {
	if path == "" {
		return nil, errEmptyPath
	}
	return createPath(path, sp, o)
}
