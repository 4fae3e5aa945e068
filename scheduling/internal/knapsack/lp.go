package knapsack

import "math"

// simplex is scratch space for lpMax, reused across calls.
type simplex struct {
	t     []float64
	basis []int
}

// lpMax solves maximise c·x subject to A·x ≤ b, x ≥ 0, with b ≥ 0, by a dense tableau simplex
// (Bland's rule, so it cannot cycle); A has len(b) rows of len(c) entries, flat. It is for
// small problems: the fractional knapsack that bounds a pattern search, with one row per
// resource and one per item's count cap.
func (s *simplex) lpMax(c, a, b []float64) float64 {
	m, n := len(b), len(c)
	w := n + m + 1
	s.t = append(s.t[:0], make([]float64, (m+1)*w)...)
	s.basis = append(s.basis[:0], make([]int, m)...)
	t, basis := s.t, s.basis
	for r := 0; r < m; r++ {
		row := t[r*w : (r+1)*w]
		copy(row, a[r*n:(r+1)*n])
		row[n+r] = 1
		row[w-1] = b[r]
		basis[r] = n + r
	}
	obj := t[m*w:]
	for j := 0; j < n; j++ {
		obj[j] = -c[j]
	}
	for iter := 0; iter < 20*(m+n); iter++ {
		enter := -1
		for j := 0; j < n+m; j++ {
			if obj[j] < -1e-12 {
				enter = j
				break
			}
		}
		if enter < 0 {
			break
		}
		leave := ratioTest(t, w, basis, enter)
		if leave < 0 {
			return math.Inf(1)
		}
		tableauPivot(t, w, m, leave, enter)
		basis[leave] = enter
	}
	return obj[w-1]
}

// ratioTest returns the row of tableau t (rows of width w, basis by row) that leaves when
// column enter enters, ties to the lowest basic index (Bland), or -1 when it is unbounded.
func ratioTest(t []float64, w int, basis []int, enter int) int {
	leave, ratio := -1, math.Inf(1)
	for r := range basis {
		if d := t[r*w+enter]; d > 1e-12 {
			q := t[r*w+w-1] / d
			if q < ratio-1e-12 || (q <= ratio+1e-12 && leave >= 0 && basis[r] < basis[leave]) {
				leave, ratio = r, q
			}
		}
	}
	return leave
}

// tableauPivot pivots tableau t (m constraint rows and the objective row, of width w) on
// row leave and column enter.
func tableauPivot(t []float64, w, m, leave, enter int) {
	pr := t[leave*w : (leave+1)*w]
	inv := 1 / pr[enter]
	for j := range pr {
		pr[j] *= inv
	}
	for r := 0; r <= m; r++ {
		if r == leave {
			continue
		}
		row := t[r*w : (r+1)*w]
		f := row[enter]
		if f == 0 {
			continue
		}
		for j := range row {
			row[j] -= f * pr[j]
		}
	}
}
