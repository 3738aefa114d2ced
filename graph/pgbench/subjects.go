package pgbench

import (
	"slices"
)

// Subjects are the nodes the questions ask about, chosen from the generated
// graph by rules that do not depend on either store.
type Subjects struct {
	// Hub is the package with the most dependents.
	Hub        int32
	HubInDeg   int
	Hubs20k    int // packages with 20,000 dependents or more
	MaxInDeg   []int
	Leaf       int32 // a package nobody depends on, with three or more dependencies
	PathFrom   int32 // a package whose shortest dependsOn path into Hub is PathLen long
	PathLen    int
	Maintainer int32  // the maintainer of the most packages
	Section    string // the section that holds most of Maintainer's packages
	Get        int32  // a package to get by ID
}

// Choose picks the subjects of the questions.
func (g *Graph) Choose() Subjects {
	in := make([]int, len(g.Packages))
	for i := range g.Packages {
		for _, t := range g.Packages[i].DependsOn {
			in[t]++
		}
	}
	var s Subjects
	for i, d := range in {
		if d > s.HubInDeg {
			s.Hub, s.HubInDeg = int32(i), d
		}
		if d >= 20000 {
			s.Hubs20k++
		}
	}
	top := slices.Clone(in)
	slices.SortFunc(top, func(a, b int) int { return b - a })
	s.MaxInDeg = top[:min(5, len(top))]

	// A leaf: the least popular package with no dependents and three
	// or more dependencies.
	s.Leaf = int32(len(g.Packages) - 1)
	for i := len(g.Packages) - 1; i >= 0; i-- {
		if in[i] == 0 && len(g.Packages[i].DependsOn) >= 3 {
			s.Leaf = int32(i)
			break
		}
	}

	// Distances into the hub along dependsOn, by a reverse breadth-first
	// search; the path question starts at the least popular package 3
	// hops away (or the farthest, if none is).
	rev := make([][]int32, len(g.Packages))
	for i := range g.Packages {
		for _, t := range g.Packages[i].DependsOn {
			rev[t] = append(rev[t], int32(i))
		}
	}
	dist := make([]int, len(g.Packages))
	for i := range dist {
		dist[i] = -1
	}
	dist[s.Hub] = 0
	frontier := []int32{s.Hub}
	for d := 1; len(frontier) > 0 && d <= 6; d++ {
		var next []int32
		for _, v := range frontier {
			for _, u := range rev[v] {
				if dist[u] < 0 {
					dist[u] = d
					next = append(next, u)
				}
			}
		}
		frontier = next
	}
	for want := 3; want >= 1 && s.PathLen == 0; want-- {
		for i := len(g.Packages) - 1; i >= 0; i-- {
			if dist[i] == want {
				s.PathFrom, s.PathLen = int32(i), want
				break
			}
		}
	}

	// The maintainer of the most packages, and their most common section.
	perM := make([]int, g.Maintainers)
	for i := range g.Packages {
		perM[g.Packages[i].Maintainer]++
	}
	s.Maintainer = int32(slices.Index(perM, slices.Max(perM)))
	perS := make([]int, len(g.Sections))
	for i := range g.Packages {
		if g.Packages[i].Maintainer == s.Maintainer {
			perS[g.Packages[i].Section]++
		}
	}
	s.Section = g.Sections[slices.Index(perS, slices.Max(perS))]
	s.Get = int32(len(g.Packages) / 3)
	return s
}
