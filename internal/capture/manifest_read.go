package capture

// ReadManifest reads the manifest (capture.json) of the capture directory
// dir, which its writer wrote when it closed it; an error wrapping
// fs.ErrNotExist when it has none (it was never finalized).
func ReadManifest(dir string) (*Manifest, error) { return readManifest(dir) }
