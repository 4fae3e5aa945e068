package scheduling

import (
	"math"
)

// master is the restricted master problem of the fluid relaxation, kept in revised-simplex form:
//
//	minimise Σ_c price_c·λ_c  subject to  Σ_c cover_cg·λ_c ≥ n_g (every group g),  λ ≥ 0
//
// where a column c is a fractional way to fill one node of some shape. Its dual values v_g are
// the price of one pod of group g; columns enter through knapsack pricing.
//
// The basis starts as one pure column per group, so B⁻¹ starts diagonal, and a pivot changes
// only the rows of B⁻¹ where the entering column's direction is non-zero: a few per pivot, and a
// few hundred over a whole column generation even with thousands of rows. A row is kept as its
// diagonal entry alone (binv[i] nil, diag[i]) until a pivot first changes it, and is then
// written out in full: the arithmetic is the dense inverse's, entry for entry, without its
// rows² memory (124 MB for the 3,934 rows of the drawn mix at 20,000 pods).
type master struct {
	g     int
	binv  [][]float64 // basis inverse by rows, g × g; nil: the row is diag[i] on the diagonal alone
	diag  []float64
	costs []float64
	xb    []float64
	surp  []bool // basic column i is the surplus of its row
	tag   []int  // the caller's name for basic column i (-1: none)
	// v are the duals, kept up to date by each pivot (a rank-one change, O(g)) and computed
	// afresh every dualRefresh pivots so rounding cannot accumulate.
	v       []float64
	pivots  int
	d, nz   []float64
	nzIndex []int
}

const dualRefresh = 64

// newMaster starts from one pure column per group: q[i] pods of group i alone on a node
// costing pureCost[i].
func newMaster(n, q, pureCost []float64) *master {
	g := len(n)
	m := &master{g: g, binv: make([][]float64, g), diag: make([]float64, g), costs: make([]float64, g), xb: make([]float64, g), surp: make([]bool, g), tag: make([]int, g)}
	for i := 0; i < g; i++ {
		m.diag[i] = 1 / q[i]
		m.costs[i] = pureCost[i]
		m.xb[i] = n[i] / q[i]
		m.tag[i] = i
	}
	m.v = make([]float64, g)
	m.refreshDuals()
	return m
}

// row returns row i of B⁻¹ written out in full (from then on it is kept so).
func (m *master) row(i int) []float64 {
	if m.binv[i] == nil {
		m.binv[i] = make([]float64, m.g)
		m.binv[i][i] = m.diag[i]
	}
	return m.binv[i]
}

func (m *master) refreshDuals() {
	v := m.v
	clear(v)
	// Row by row: binv is stored by rows.
	for i, c := range m.costs {
		if c == 0 {
			continue
		}
		row := m.binv[i]
		if row == nil {
			v[i] += c * m.diag[i]
			continue
		}
		for j, x := range row {
			v[j] += c * x
		}
	}
}

// duals returns v = c_B·B⁻¹.
func (m *master) duals(v []float64) {
	copy(v, m.v)
}

func (m *master) objective() float64 {
	s := 0.0
	for i, x := range m.xb {
		s += m.costs[i] * x
	}
	return s
}

// enter pivots a column (coverage col, cost) into the basis. It reports false when the column
// cannot enter (the ratio test finds no leaving row: numerically degenerate).
func (m *master) enter(col []float64, cost float64, surplus bool, tag int) bool {
	d := m.direction(col)
	leave, ratio := -1, math.Inf(1)
	for i := 0; i < m.g; i++ {
		if d[i] > 1e-9 {
			if q := m.xb[i] / d[i]; q < ratio-1e-12 {
				leave, ratio = i, q
			}
		}
	}
	if leave < 0 {
		return false
	}
	// The duals change by (cost − v·col)/d_leave times the leaving row of B⁻¹ (before it is
	// scaled): v' = c'_B·B'⁻¹ works out to exactly that.
	va := 0.0
	for _, j := range m.nzIndex {
		va += m.v[j] * col[j]
	}
	step := (cost - va) / d[leave]
	if lr := m.binv[leave]; lr != nil {
		for j, x := range lr {
			m.v[j] += step * x
		}
	} else {
		m.v[leave] += step * m.diag[leave]
	}
	m.pivot(d, leave)
	m.costs[leave] = cost
	m.surp[leave] = surplus
	m.tag[leave] = tag
	if m.pivots++; m.pivots%dualRefresh == 0 {
		m.refreshDuals()
	}
	return true
}

// direction returns d = B⁻¹·col, over col's few non-zeros (left in m.nzIndex).
func (m *master) direction(col []float64) []float64 {
	m.nzIndex = m.nzIndex[:0]
	for j, x := range col {
		if x != 0 {
			m.nzIndex = append(m.nzIndex, j)
		}
	}
	m.d = append(m.d[:0], make([]float64, m.g)...)
	d := m.d
	for i := 0; i < m.g; i++ {
		row := m.binv[i]
		if row == nil {
			d[i] = m.diag[i] * col[i]
			continue
		}
		s := 0.0
		for _, j := range m.nzIndex {
			s += row[j] * col[j]
		}
		d[i] = s
	}
	return d
}

// pivot updates B⁻¹ and the basic solution for the column with direction d entering at row
// leave.
func (m *master) pivot(d []float64, leave int) {
	inv := 1 / d[leave]
	lr := m.row(leave)
	for j := range lr {
		lr[j] *= inv
	}
	m.xb[leave] *= inv
	for i := 0; i < m.g; i++ {
		if i == leave || d[i] == 0 {
			continue
		}
		f := d[i]
		row := m.row(i)
		for j := range row {
			row[j] -= f * lr[j]
		}
		m.xb[i] -= f * m.xb[leave]
		if m.xb[i] < 0 && m.xb[i] > -1e-9 {
			m.xb[i] = 0
		}
	}
}
