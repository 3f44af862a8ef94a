"""Analysis: what one traced run and the sources say about the tree, before and during the search.

``trace`` (the files a run touches), ``v8coverage`` (the JavaScript a run never executed),
``refs`` (the reference graph of the sources), ``source_access`` (did a run reach SRC by its
absolute path) and ``semantic`` (the opt-in model client).
"""
