"""The deletion searches the passes share (search-layer strategies: they shape their proposals
by how many candidates the search decides at once, so the passes that call them need not).

``learning`` (adaptive group testing over units, in batches), ``belief`` (how many units are
needed), ``split`` (splitting a rejected group), ``paths`` (a tree's paths level by level, or
flat), ``lockstep`` (several searches filling one batch, or one after another), ``chain`` (a
one-at-a-time search several proposals deep) and ``ddmin`` (chunks that halve, for passes
whose units have no priors).
"""
