package headroom

import "math"

// USL is the Universal Scalability Law fitted to a side's steps:
// throughput at load factor N is Lambda N / (1 + Sigma (N-1) + Kappa N (N-1)),
// Sigma the contention (the serial share) and Kappa the coherency cost
// (crosstalk) that makes throughput fall past a peak.
type USL struct {
	Lambda float64 `json:"lambda"`
	Sigma  float64 `json:"sigma"`
	Kappa  float64 `json:"kappa"`
	// PeakK is the load factor of the highest throughput the model
	// predicts, PeakX that throughput; PeakK is 0 when the model has no
	// peak (Kappa 0: throughput only flattens).
	PeakK float64 `json:"peak_k,omitempty"`
	PeakX float64 `json:"peak_statements_per_s,omitempty"`
	// R2 is the share of the throughput's variance the model explains.
	R2     float64 `json:"r2"`
	Points int     `json:"points"`
}

// Point is one step's load factor (asked) and throughput.
type Point struct{ K, X float64 }

// Predict is the model's throughput at load factor n.
func (u USL) Predict(n float64) float64 {
	return u.Lambda * n / (1 + u.Sigma*(n-1) + u.Kappa*n*(n-1))
}

// FitUSL fits the USL to points by least squares on its linear form
// N/X = (1 + Sigma (N-1) + Kappa N (N-1)) / Lambda, with Sigma and Kappa
// kept at 0 or above. ok is false with fewer than three distinct loads.
func FitUSL(points []Point) (USL, bool) {
	var ps []Point
	distinct := map[float64]bool{}
	for _, p := range points {
		if p.K > 0 && p.X > 0 {
			ps = append(ps, p)
			distinct[p.K] = true
		}
	}
	if len(distinct) < 3 {
		return USL{}, false
	}
	// y = a + b (N-1) + c N (N-1), a = 1/Lambda.
	fit := func(useB, useC bool) (a, b, c float64, ok bool) {
		cols := func(p Point) []float64 {
			row := []float64{1}
			if useB {
				row = append(row, p.K-1)
			}
			if useC {
				row = append(row, p.K*(p.K-1))
			}
			return row
		}
		n := 1
		if useB {
			n++
		}
		if useC {
			n++
		}
		m := make([][]float64, n)
		for i := range m {
			m[i] = make([]float64, n+1)
		}
		for _, p := range ps {
			r := cols(p)
			y := p.K / p.X
			for i := range n {
				for j := range n {
					m[i][j] += r[i] * r[j]
				}
				m[i][n] += r[i] * y
			}
		}
		sol, ok := solve(m)
		if !ok {
			return 0, 0, 0, false
		}
		a, i := sol[0], 1
		if useB {
			b, i = sol[i], i+1
		}
		if useC {
			c = sol[i]
		}
		return a, b, c, a > 0
	}
	var a, b, c float64
	ok := false
	for _, try := range [][2]bool{{true, true}, {true, false}, {false, true}, {false, false}} {
		a, b, c, ok = fit(try[0], try[1])
		if ok && b >= 0 && c >= 0 {
			break
		}
		ok = false
	}
	if !ok {
		return USL{}, false
	}
	u := USL{Lambda: 1 / a, Sigma: b / a, Kappa: c / a, Points: len(ps)}
	if u.Kappa > 0 && u.Sigma < 1 {
		u.PeakK = math.Sqrt((1 - u.Sigma) / u.Kappa)
		u.PeakX = u.Predict(u.PeakK)
	}
	var mean float64
	for _, p := range ps {
		mean += p.X
	}
	mean /= float64(len(ps))
	var ssr, sst float64
	for _, p := range ps {
		ssr += (p.X - u.Predict(p.K)) * (p.X - u.Predict(p.K))
		sst += (p.X - mean) * (p.X - mean)
	}
	if sst > 0 {
		u.R2 = 1 - ssr/sst
	}
	return u, true
}

// solve solves the augmented system m by Gaussian elimination with
// partial pivoting.
func solve(m [][]float64) ([]float64, bool) {
	n := len(m)
	for col := range n {
		p := col
		for r := col + 1; r < n; r++ {
			if math.Abs(m[r][col]) > math.Abs(m[p][col]) {
				p = r
			}
		}
		if math.Abs(m[p][col]) < 1e-12 {
			return nil, false
		}
		m[col], m[p] = m[p], m[col]
		for r := range n {
			if r == col {
				continue
			}
			f := m[r][col] / m[col][col]
			for j := col; j <= n; j++ {
				m[r][j] -= f * m[col][j]
			}
		}
	}
	out := make([]float64, n)
	for i := range n {
		out[i] = m[i][n] / m[i][i]
	}
	return out, true
}
