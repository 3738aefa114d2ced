package graph

var _ Store = (*Bolt)(nil)
