package sweep

import "context"

// ServerCPU reads the CPU time of a server on this machine: its
// postmaster and every child, as a sweep's steps are measured.
type ServerCPU struct {
	pid     int
	procDir string
}

// LocalServerCPU finds the server of dsn on this machine; the error says
// why its CPU cannot be read (a remote server, a role that may not read
// data_directory).
func LocalServerCPU(ctx context.Context, dsn string) (*ServerCPU, error) {
	pid, err := localPostmaster(ctx, dsn)
	if err != nil {
		return nil, err
	}
	return &ServerCPU{pid: pid, procDir: "/proc"}, nil
}

// Seconds is the CPU time the server used so far; the difference of two
// readings is what it used in between, backends that came and went
// included.
func (s *ServerCPU) Seconds() (float64, error) {
	return serverCPU(s.procDir, s.pid)
}
