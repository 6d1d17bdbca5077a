package lua

import (
	"maps"
	"slices"
)

// promptforge: this file is new (see doc.go).

// cloneEntries returns a new table holding tb's entries, in tb's key
// order: the array part, both hashes and the key order next walks are
// copied as they are (maps.Clone copies a map's buckets without hashing
// each key again). The values are shared, not copied, so a template whose
// values are meant to differ per state holds placeholders that the state
// overwrites; overwriting an existing key neither grows the table nor
// charges a meter. The copy has no metatable and no meter: SetMeter gives
// a state's global table its meter, and the caller charges the copied keys
// to it (they were not built by the state).
func (tb *LTable) cloneEntries() *LTable {
	return &LTable{
		Metatable: LNil,
		array:     slices.Clone(tb.array),
		dict:      maps.Clone(tb.dict),
		strdict:   maps.Clone(tb.strdict),
		keys:      slices.Clone(tb.keys),
		k2i:       maps.Clone(tb.k2i),
	}
}
