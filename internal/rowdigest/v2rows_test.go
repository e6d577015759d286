package rowdigest

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/proctest"
)

// addRowsV2 is AddRows as it was in V2 (a row over 64 bytes hashed by
// RowV1's chain), for BenchmarkAddRowsV2; TestAddRowsV2 holds it to
// AddVersion of V2.
func (d *Digest) addRowsV2(msgs []byte) (n, rows int) {
	ordered, unordered := d.Ordered, d.Unordered
	w := uint64(d.Rows) * orderPrime // a row's weight, less its | 1
	for len(msgs)-n >= 5 && msgs[n] == 'D' {
		l := int(binary.BigEndian.Uint32(msgs[n+1:]))
		if l < 4 || l >= len(msgs)-n {
			break
		}
		body := msgs[n+5 : n+1+l]
		n += 1 + l
		rows++
		var h uint64
		s := uint64(len(body)) ^ p0
		switch k := len(body); {
		case k > shortMax:
			h = RowV1(body)
		case k > 32:
			e := body[k-32:]
			h = mix(binary.LittleEndian.Uint64(body)^p1, binary.LittleEndian.Uint64(body[8:])^s) ^
				mix(binary.LittleEndian.Uint64(body[16:])^p2, binary.LittleEndian.Uint64(body[24:])^s) ^
				mix(binary.LittleEndian.Uint64(e)^p1, binary.LittleEndian.Uint64(e[8:])^s^p2) ^
				mix(binary.LittleEndian.Uint64(e[16:])^p2, binary.LittleEndian.Uint64(e[24:])^s^p1)
		case k > 16:
			h = mix(binary.LittleEndian.Uint64(body)^p1, binary.LittleEndian.Uint64(body[8:])^s) ^
				mix(binary.LittleEndian.Uint64(body[k-16:])^p2, binary.LittleEndian.Uint64(body[k-8:])^s)
		case k >= 8:
			h = mix(binary.LittleEndian.Uint64(body)^p1, binary.LittleEndian.Uint64(body[k-8:])^s)
		default:
			h = short(body, k)
		}
		w += orderPrime
		ordered += h * (w | 1)
		unordered += h
	}
	d.Rows += int64(rows)
	d.Ordered, d.Unordered = ordered, unordered
	return n, rows
}

// TestAddRowsV2: addRowsV2 digests as AddVersion of V2 does, row by row.
func TestAddRowsV2(t *testing.T) {
	for _, shape := range []string{"narrow", "wide", "filler", "mixed"} {
		msgs := dataRows(300, shape)
		var got, want Digest
		if n, _ := got.addRowsV2(msgs); n != len(msgs) {
			t.Fatal(n)
		}
		for m := msgs; len(m) > 5; {
			n := 1 + int(binary.BigEndian.Uint32(m[1:]))
			want.AddVersion(V2, m[5:n])
			m = m[n:]
		}
		if got != want {
			t.Errorf("%s: addRowsV2 %+v, AddVersion V2 %+v", shape, got, want)
		}
	}
}

// BenchmarkAddRowsV2 is AddRows of V2 (before) and of the current
// version (after) by turns, which first alternating, and the framing
// alone: the CPU time per row of each less the framing, and their ratio.
//
//	go test -run '^$' -bench AddRowsV2 -benchtime 100x -count 3 ./internal/rowdigest
func BenchmarkAddRowsV2(b *testing.B) {
	for _, shape := range []string{"narrow", "wide", "filler", "mixed"} {
		msgs := dataRows(10_000, shape)
		b.Run(shape, func(b *testing.B) {
			d := new(Digest)
			var cpu [3]time.Duration // framed only, V2, current
			i := 0
			for b.Loop() {
				i++
				for _, how := range [][3]int{{0, 1, 2}, {0, 2, 1}}[i%2] {
					c0 := proctest.ProcessCPU(b)
					for range 10 {
						*d = Digest{}
						switch how {
						case 0:
							for m := msgs; len(m) > 5; {
								d.Rows += int64(m[5])
								m = m[1+int(binary.BigEndian.Uint32(m[1:])):]
							}
						case 1:
							d.addRowsV2(msgs)
						case 2:
							d.AddRows(msgs)
						}
					}
					cpu[how] += proctest.ProcessCPU(b) - c0
				}
			}
			rows := float64(b.N * 10 * 10_000)
			b.ReportMetric(float64((cpu[1]-cpu[0]).Nanoseconds())/rows, "v2-cpu-ns/row")
			b.ReportMetric(float64((cpu[2]-cpu[0]).Nanoseconds())/rows, "current-cpu-ns/row")
			b.ReportMetric(float64(cpu[2]-cpu[0])/float64(cpu[1]-cpu[0]), "current/v2")
		})
	}
}
