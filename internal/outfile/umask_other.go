//go:build !unix

package outfile

import "os"

func umask() os.FileMode { return 0o022 }
