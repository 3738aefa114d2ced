package pgbench

import (
	"bufio"
	"fmt"
	"io"
	"iter"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// A Graph is a generated package index, held in memory so that both stores
// load exactly the same elements and the questions' subjects can be chosen
// from it. Generate makes one.
//
// Packages are numbered by popularity rank (0 is the most depended-on); a
// package depends only on packages of a lower rank, chosen with a
// Zipf–Mandelbrot weight, so dependsOn is acyclic and its in-degrees follow
// a power law: at 100,000 nodes the first few packages have 20,000 or more
// dependents each, as the core libraries of a real index do, and the most
// popular packages mostly depend on nothing. With seed 1 at 100,000 nodes
// the hub has about 29,800 direct dependents (30% of the packages), 40,700
// within 2 hops and 43,700 within 3, close to the shares issue 18 measured
// on a real package index (22%, 37%, 45%).
type Graph struct {
	Seed        uint64
	Packages    []Package
	Maintainers int
	Sections    []string

	stride uint64 // package i is named p((i·stride + 7) mod len(Packages))
}

// A Package is one generated package.
type Package struct {
	Name       string
	Section    int32
	Maintainer int32
	Size       int64
	Version    string
	DependsOn  []int32 // ranks of the packages it depends on
	Suggests   []int32
}

// Shape of the generated index.
const (
	maintainerEvery = 25   // one maintainer per this many nodes
	depsZipfS       = 1.4  // exponent of the dependency target weights
	depsZipfC       = 3.5  // offset of the dependency target weights: flattens the very top
	depsMean        = 4.2  // mean number of dependencies of a package that has any
	noDeps          = 0.1  // share of packages without dependencies
	coreNoDeps      = 0.85 // added to noDeps for the most popular packages, fading with rank
	coreShare       = 0.03 // the rank (share of packages) where the added share has fallen by 1/e
	maxDeps         = 60
	suggestsMean    = 0.4
)

// sectionNames are the sections, the most populated first.
var sectionNames = []string{"libs", "utils", "devel", "python", "net", "admin", "web", "perl", "text", "misc",
	"science", "graphics", "javascript", "golang", "rust", "x11", "doc", "sound", "database", "java",
	"games", "math", "libdevel", "interpreters", "editors", "kernel", "mail", "video", "shells", "vcs",
	"ruby", "php", "httpd", "fonts", "debug", "comm", "tex", "embedded", "electronics", "hamradio",
	"lisp", "ocaml", "news", "localization", "gnome", "kde", "xfce", "otherosfs", "oldlibs", "zope"}

// Generate returns a package index of about n nodes (packages,
// maintainers and sections), the same for the same n and seed.
func Generate(n int, seed uint64) *Graph {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	g := &Graph{Seed: seed, Sections: sectionNames[:max(1, min(len(sectionNames), n/200))]}
	g.Maintainers = max(1, n/maintainerEvery)
	np := max(2, n-g.Maintainers-len(g.Sections))
	g.Packages = make([]Package, np)

	deps := newZipf(np, depsZipfS, depsZipfC)
	maint := newZipf(g.Maintainers, 1.0, 5)
	sect := newZipf(len(g.Sections), 1.0, 2)
	// Names are a permutation of the ranks, so that popularity does not
	// follow the order of IDs.
	stride := coprime(np)
	g.stride = stride
	var picked []int32
	for i := range g.Packages {
		p := &g.Packages[i]
		p.Name = "p" + strconv.Itoa(int((uint64(i)*stride+7)%uint64(np)))
		p.Section = int32(sect.sample(rng, len(g.Sections)))
		p.Maintainer = int32(maint.sample(rng, g.Maintainers))
		p.Size = int64(math.Exp(10.5+1.6*rng.NormFloat64())) + 1
		p.Version = fmt.Sprintf("%d.%d.%d", rng.IntN(5), rng.IntN(20), rng.IntN(10))
		// The most popular packages are mostly free of dependencies, as
		// the core libraries of a real index are.
		if i == 0 || rng.Float64() < noDeps+coreNoDeps*math.Exp(-float64(i)/(coreShare*float64(np))) {
			continue
		}
		d := min(i, maxDeps, 1+geometric(rng, depsMean-1))
		picked = picked[:0]
		for tries := 0; len(picked) < d && tries < 20*d; tries++ {
			t := int32(deps.sample(rng, i))
			if !slices.Contains(picked, t) {
				picked = append(picked, t)
			}
		}
		p.DependsOn = slices.Clone(picked)
		slices.Sort(p.DependsOn)
		for range geometric(rng, suggestsMean) {
			t := int32(deps.sample(rng, np))
			if int(t) != i && !slices.Contains(p.Suggests, t) {
				p.Suggests = append(p.Suggests, t)
			}
		}
	}
	return g
}

// geometric returns a count with the given mean (failures before a success).
func geometric(rng *rand.Rand, mean float64) int {
	p := 1 / (1 + mean)
	return int(math.Log(1-rng.Float64()) / math.Log(1-p))
}

// rank returns the rank of the package with ID id.
func (g *Graph) rank(id string) (int32, bool) {
	k, err := strconv.ParseUint(strings.TrimPrefix(id, "package/p"), 10, 64)
	np := uint64(len(g.Packages))
	if err != nil || k >= np {
		return 0, false
	}
	i := (k + np - 7%np) % np * modInverse(g.stride, np) % np
	return int32(i), g.PackageID(int32(i)) == id
}

// modInverse returns x with a·x ≡ 1 (mod n), for a coprime with n.
func modInverse(a, n uint64) uint64 {
	t, newT := int64(0), int64(1)
	r, newR := int64(n), int64(a%n)
	for newR != 0 {
		q := r / newR
		t, newT = newT, t-q*newT
		r, newR = newR, r-q*newR
	}
	if t < 0 {
		t += int64(n)
	}
	return uint64(t)
}

// coprime returns a stride near 0.618·n that is coprime with n.
func coprime(n int) uint64 {
	s := uint64(float64(n)*0.6180339887) | 1
	for gcd(s, uint64(n)) != 1 {
		s += 2
	}
	return s
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// zipf samples ranks with weight (r+c)^-s, from a prefix of the ranks.
type zipf struct{ cum []float64 }

func newZipf(n int, s, c float64) zipf {
	cum := make([]float64, n+1)
	for r := range n {
		cum[r+1] = cum[r] + math.Pow(float64(r)+c, -s)
	}
	return zipf{cum}
}

// sample returns a rank below limit.
func (z zipf) sample(rng *rand.Rand, limit int) int {
	u := rng.Float64() * z.cum[limit]
	r := sort.SearchFloat64s(z.cum[1:limit+1], u)
	return min(r, limit-1)
}

// IDs of the generated nodes.
func (g *Graph) PackageID(rank int32) string { return "package/" + g.Packages[rank].Name }

// MaintainerID returns the ID of maintainer m.
func (g *Graph) MaintainerID(m int32) string { return "maintainer/m" + strconv.Itoa(int(m)) }

// SectionID returns the ID of section s.
func (g *Graph) SectionID(s int32) string { return "section/" + g.Sections[s] }

// Nodes and Edges count the elements.
func (g *Graph) Nodes() int { return len(g.Packages) + g.Maintainers + len(g.Sections) }

// Edges counts the edges of every label.
func (g *Graph) Edges() int {
	n := 0
	for i := range g.Packages {
		n += len(g.Packages[i].DependsOn) + len(g.Packages[i].Suggests) + 2 // maintains, inSection
	}
	return n
}

// An element is one node or edge as both loaders write it.
type element struct {
	node            bool
	id, typ         string
	props           []byte // JSON
	from, label, to string
}

// nodes yields every node, edges every edge, as both loaders write them:
// the node properties are the same JSON on both sides. The element is
// reused between calls.
func (g *Graph) nodes() iter.Seq[*element] {
	return func(yield func(*element) bool) {
		var e element
		node := func(id, typ string, props []byte) bool {
			e = element{node: true, id: id, typ: typ, props: props}
			return yield(&e)
		}
		for s, name := range g.Sections {
			if !node(g.SectionID(int32(s)), "Section", fmt.Appendf(nil, `{"name":%q}`, name)) {
				return
			}
		}
		for m := range g.Maintainers {
			if !node(g.MaintainerID(int32(m)), "Maintainer", fmt.Appendf(nil, `{"name":"Maintainer %d","email":"m%d@example.org"}`, m, m)) {
				return
			}
		}
		for i := range g.Packages {
			p := &g.Packages[i]
			props := fmt.Appendf(nil, `{"name":%q,"version":%q,"section":%q,"size":%d,"description":"%s, a package in %s"}`,
				p.Name, p.Version, g.Sections[p.Section], p.Size, p.Name, g.Sections[p.Section])
			if !node(g.PackageID(int32(i)), "Package", props) {
				return
			}
		}
	}
}

func (g *Graph) edges() iter.Seq[*element] {
	return func(yield func(*element) bool) {
		var e element
		edge := func(from, label, to string) bool {
			e = element{from: from, label: label, to: to}
			return yield(&e)
		}
		for i := range g.Packages {
			p := &g.Packages[i]
			id := g.PackageID(int32(i))
			for _, t := range p.DependsOn {
				if !edge(id, "dependsOn", g.PackageID(t)) {
					return
				}
			}
			for _, t := range p.Suggests {
				if !edge(id, "suggests", g.PackageID(t)) {
					return
				}
			}
			if !edge(g.MaintainerID(p.Maintainer), "maintains", id) || !edge(id, "inSection", g.SectionID(p.Section)) {
				return
			}
		}
	}
}

// WriteNDJSON writes the graph in Lore's NDJSON import format.
func (g *Graph) WriteNDJSON(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	for e := range g.nodes() {
		fmt.Fprintf(bw, `{"kind":"node","id":%q,"type":%q,"properties":%s}`+"\n", e.id, e.typ, e.props)
	}
	for e := range g.edges() {
		fmt.Fprintf(bw, `{"kind":"edge","from":%q,"label":%q,"to":%q}`+"\n", e.from, e.label, e.to)
	}
	return bw.Flush()
}
