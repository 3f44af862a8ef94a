"""The search: the driver that runs the passes to a fixpoint over one reduction problem.

``reducer`` (the problem object passes see, and the fixpoint), ``fold`` (merging the accepted
candidates of a round with several slots) and ``prefetch`` (final runs in a settled round's idle
slots).
"""
