package cluster

import (
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/uuid"

	"lightbox/testsupport/seed"
)

// allPairs is the grouping closePairs replaces: every pair compared.
func allPairs(ps []Photo, maxBits int) [][]uuid.UUID {
	parent := make([]int, len(ps))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			i = parent[i]
		}
		return i
	}
	for i := range ps {
		for j := i + 1; j < len(ps); j++ {
			if bits.OnesCount64(ps[i].PHash^ps[j].PHash) <= maxBits {
				parent[find(j)] = find(i)
			}
		}
	}
	sets := map[int][]uuid.UUID{}
	var roots []int
	for i, p := range ps {
		r := find(i)
		if _, ok := sets[r]; !ok {
			roots = append(roots, r)
		}
		sets[r] = append(sets[r], p.ID)
	}
	var out [][]uuid.UUID
	for _, r := range roots {
		if len(sets[r]) >= 2 {
			out = append(out, sets[r])
		}
	}
	return out
}

func ids(sets [][]Photo) [][]uuid.UUID {
	out := make([][]uuid.UUID, len(sets))
	for i, s := range sets {
		for _, p := range s {
			out[i] = append(out[i], p.ID)
		}
	}
	return out
}

// variants makes n photos from bases: copies a few bits apart, shots of a
// scene some more, and unrelated hashes.
func variants(rng *rand.Rand, bases []uint64, n int) []Photo {
	ps := make([]Photo, n)
	for i := range ps {
		h := bases[rng.IntN(len(bases))]
		switch rng.IntN(4) {
		case 0:
			h = rng.Uint64()
		case 1:
			h = flip(rng, h, rng.IntN(5))
		default:
			h = flip(rng, h, rng.IntN(30))
		}
		ps[i] = Photo{ID: uuid.New(), PHash: h}
	}
	return ps
}

func flip(rng *rand.Rand, h uint64, k int) uint64 {
	for _, b := range rng.Perm(64)[:k] {
		h ^= 1 << b
	}
	return h
}

func checkSameGroups(t *testing.T, ps []Photo) {
	t.Helper()
	for _, maxBits := range []int{0, 3, 4, 7, 10, 12, 15, 16, 20} {
		got, want := ids(duplicateSets(ps, maxBits)), allPairs(ps, maxBits)
		if !slices.EqualFunc(got, want, slices.Equal) {
			t.Fatalf("%d photos, %d bits: %d groups, all pairs give %d", len(ps), maxBits, len(got), len(want))
		}
		if maxBits == 10 && len(want) == 0 {
			t.Fatal("no groups at all: the test proves nothing")
		}
	}
}

func TestBucketedGroupingEqualsAllPairsOnRandomHashes(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for _, n := range []int{50, 2500, 6000} {
		bases := make([]uint64, n/20)
		for i := range bases {
			bases[i] = rng.Uint64()
		}
		checkSameGroups(t, variants(rng, bases, n))
	}
}

func TestBucketedGroupingEqualsAllPairsOnTheCorpus(t *testing.T) {
	var bases []uint64
	for _, p := range seed.Photos(t) {
		bases = append(bases, p.Result.PHash)
	}
	rng := rand.New(rand.NewPCG(3, 5))
	checkSameGroups(t, variants(rng, bases, 4000))
}
