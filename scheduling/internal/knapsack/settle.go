package knapsack

// Settling a capped bound without computing it.
//
// With shared caps a search node's bound under a surrogate is cappedBound's Lagrangian
//
//	L(λ) = λ·room⁺ + Σ_{r_j > 0, no cap} maxk_j·r_j + Σ_C (the best capLeft_C units of r_j in C),
//
// with r_j = v_j − λ·w_j and λ the density where greedyFill's fill (caps ignored) runs out of
// room: a pass over the items, a sort of the capped ones, and the caps' takes. When no cap
// binds, it need not be computed. Say the first cap of every capped item the fill reads has
// room for all the copies of the items from i on that count against it first (greedyFill's
// feasible). Then each item with r_j > 0 — the items the fill reads before it stops, whose
// density is at least λ; an item after them ties λ at most, r_j = 0 but for rounding — counts
// maxk_j·r_j in L, as if it had no cap, and in exact arithmetic
//
//	L(λ) = λ·(Σ take_j·w_j + left) + Σ maxk_j·(v_j − λ·w_j) = add + Σ rest_j·v_j − λ·Σ rest_j·w_j + λ·left,
//
// where the fill took take_j of item j (rest_j = maxk_j − take_j short of all of it), came to
// add and left room left. λ·left vanishes: λ > 0 only once the room ran out, after a take that
// leaves left a rounding away from 0, or at the first weighed item when the room was not
// positive (then no weighed item was taken, and L(λ) = add, λ·room⁺ being 0).
//
// greedyFill returns Σ rest_j·v_j − λ·Σ rest_j·w_j as rest. The search computes L in floating point,
// off from this by roundings in sums whose terms are at most value, best, add, λ·room ≤
// dmax·room and the items' whole values (λ·rest_j·w_j ≤ rest_j·v_j at density ≥ λ); prunes
// allows marginScale of their scale (as surelyPruned does, far more than any rounding), and
// takes the estimate's word only when it is that far from best either way: the node then
// passes or is pruned under that surrogate exactly as the computed bound would have it.
// Negative weights (a negative request) would add terms this does not count: their
// surrogates are not settled.
//
// Shortcuts.NoSettle turns the settling off (a test checks that it changes nothing).
