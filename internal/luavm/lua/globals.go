package lua

import (
	"maps"
	"slices"
)

// promptforge: this file is new (see doc.go).

// cloneEntries returns a new table holding tb's entries, in tb's key
// order: the array part and both hashes are copied as they are
// (maps.Clone copies a map's buckets without hashing each key again). The
// key order next walks (keys, k2i) is shared with tb until the copy gets a
// key tb does not have (ownOrder): a state's globals are mostly
// overwritten, not added to, and copying the order's interface-keyed map
// was about a third of the copy. So tb must not change after it has been
// cloned. The values are shared, not copied, so a template whose values
// are meant to differ per state holds placeholders that the state
// overwrites; overwriting an existing key neither grows the table nor
// charges a meter. The copy has no metatable and no meter: SetMeter gives
// a state's global table its meter, and the caller charges the copied keys
// to it (they were not built by the state).
func (tb *LTable) cloneEntries() *LTable {
	return &LTable{
		Metatable:   LNil,
		array:       slices.Clone(tb.array),
		dict:        maps.Clone(tb.dict),
		strdict:     maps.Clone(tb.strdict),
		keys:        tb.keys[:len(tb.keys):len(tb.keys)],
		k2i:         tb.k2i,
		sharedOrder: tb.k2i != nil,
	}
}

// ownOrder gives the table a key order of its own before a key is added
// to it (cloneEntries).
func (tb *LTable) ownOrder() {
	if tb.sharedOrder {
		tb.keys = append(make([]LValue, 0, len(tb.keys)+4), tb.keys...)
		tb.k2i = maps.Clone(tb.k2i)
		tb.sharedOrder = false
	}
}
